"""First use: `evals serve` / `evals run` download the missing data from a local stand-in for the host.

The stand-in is an HTTP server on 127.0.0.1 serving a directory laid out like the upstream
repositories (the paths after the pinned commit) with copies of the real files, so the pinned
sha256 checksums are checked for real. ``$EVALS_DATA_URL_PREFIX`` points the commands at it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2
import pytest
from loopback_http import serve_directory

from evals.cli import ensure_benchmark_data
from evals.core import fetch as fetch_mod
from evals.core.data import DataNotFound
from evals.core.fetch import ChecksumMismatch, HostUnreachable, ensure_data, fetch, needed_files, sources
from evals.core.registry import all_benchmarks


def _mirror(data_dir: Path, root: Path, names=("familytool", "toolhop-subset")) -> Path:
    """A directory laid out like the upstream paths (after the commit), holding the real files."""
    for name in names:
        for f in sources()[name]:
            target = root / f.mirror_url("").lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(data_dir / f.dest, target)
    return root


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def subset_data(data_dir) -> Path:
    if not (data_dir / sources()["toolhop-subset"][0].dest).is_file():
        pytest.skip("the ToolHop subset is not in the data directory")
    return data_dir


def _env(data: Path, prefix: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    return env | {"EVALS_DATA_DIR": str(data), "EVALS_DATA_URL_PREFIX": prefix, "COLUMNS": "200"} | extra


def _cli(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, env=env, timeout=timeout)


def _checksums_ok(data: Path, name: str) -> bool:
    return all(hashlib.sha256((data / f.dest).read_bytes()).hexdigest() == f.sha256 for f in sources()[name])


def test_the_subset_source_is_the_manifest_blob():
    (f,) = sources()["toolhop-subset"]
    assert f.url.startswith("https://raw.githubusercontent.com/local-bench/local-bench/f0ce8cf352feb051fc82eee81d47e40a17453e96/")
    assert f.mirror_url("http://m") == "http://m/suite/v1/toolhop.jsonl"
    assert (f.dest, f.size, f.sha256[:8]) == ("toolhop/toolhop_subset100_localbench.jsonl", 1637318, "bfa19188")


def test_run_on_an_empty_data_dir_fetches_then_runs(data_dir, tmp_path):
    data = tmp_path / "data"
    with serve_directory(_mirror(data_dir, tmp_path / "mirror", ["familytool"])) as prefix:
        env = _env(data, prefix)
        proc = _cli("run", "familytool-b", "--model", "oracle", "--limit", "2", "--run-dir", str(tmp_path / "run"),
                    "--no-progress", "--json", env=env)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout.strip().splitlines()[-1])["completed"] == 2
        # it says where the data goes, where from, and how to use a copy instead
        assert f"not in {data}" in proc.stderr and prefix in proc.stderr and "EVALS_DATA_DIR" in proc.stderr
        assert "fetched  familytool/familytool-b.jsonl (3872306 bytes, sha256 ok)" in proc.stderr
        # only what familytool-b needs; files readable by others (not mkstemp's 0600)
        assert sorted(p.name for p in (data / "familytool").iterdir()) == ["familykg-b.txt", "familytool-b.jsonl"]
        assert (data / "familytool/familytool-b.jsonl").stat().st_mode & 0o044
        again = _cli("run", "familytool-b", "--model", "oracle", "--limit", "2", "--run-dir", str(tmp_path / "run"),
                     "--no-progress", env=env)
    assert again.returncode == 0, again.stderr
    assert "Downloading" not in again.stderr  # second use: nothing to fetch


def test_serve_on_an_empty_data_dir_fetches_every_benchmark_and_serves(subset_data, tmp_path):
    data = tmp_path / "data"
    port = _dead_port()
    with serve_directory(_mirror(subset_data, tmp_path / "mirror")) as prefix:
        proc = subprocess.Popen([sys.executable, "-m", "evals.cli", "serve", "--port", str(port)],
                                env=_env(data, prefix), stderr=subprocess.PIPE, text=True)
        try:
            health = None
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    health = httpx2.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                    break
                except httpx2.HTTPError:
                    time.sleep(0.3)
            assert health is not None, proc.stderr.read() if proc.poll() is not None else "server did not start"
            assert {k: v["tasks"] for k, v in health["benchmarks"].items()} == {
                "familytool-b": 483, "familytool-e": 455, "toolhop": 100}
        finally:
            proc.terminate()
            stderr = proc.communicate(timeout=30)[1]
    # the mirror holds FamilyTool's and the ToolHop subset's files: those are fetched and served; every
    # other benchmark is named with the command that fetches it, and the server starts without it
    flat = " ".join(stderr.split())
    assert "Saved in" in flat and flat.count("sha256 ok") == len(sources()["familytool"]) + 1
    others = {n for n, b in all_benchmarks().items() if b.served_by_default} - {"familytool-b", "familytool-e", "toolhop"}
    for name in others:
        assert f"warning: not serving {name}:" in flat, name
    assert _checksums_ok(data, "familytool") and _checksums_ok(data, "toolhop-subset")


def test_unreachable_host_fails_with_the_fetch_command_and_exit_2(tmp_path):
    data = tmp_path / "data"
    env = _env(data, f"http://127.0.0.1:{_dead_port()}")
    run = _cli("run", "familytool-b", "--model", "oracle", "--limit", "2", "--run-dir", str(tmp_path / "run"), env=env)
    assert run.returncode == 2
    flat = " ".join(run.stderr.split())
    assert "the network is unreachable" in flat and "/datasets/familytool-b.jsonl" in flat
    assert "`evals data fetch familytool`" in flat and "EVALS_DATA_DIR" in flat and str(data) in flat
    serve = _cli("serve", "--port", str(_dead_port()), env=env)  # every benchmark unavailable: no server
    assert serve.returncode == 2
    flat = " ".join(serve.stderr.split())
    assert "`evals data fetch familytool`" in flat and "`evals data fetch toolhop-subset`" in flat
    assert not list(data.rglob("*.json*"))  # nothing half-written


def test_a_checksum_mismatch_is_refused(data_dir, tmp_path):
    data = tmp_path / "data"
    mirror = _mirror(data_dir, tmp_path / "mirror", ["familytool"])
    (mirror / "KG/familykg-b.txt").write_text("['Bob', 'mother', 'Mallory']\n")
    with serve_directory(mirror) as prefix:
        proc = _cli("run", "familytool-b", "--model", "oracle", "--limit", "1", "--run-dir", str(tmp_path / "run"),
                    env=_env(data, prefix))
    assert proc.returncode == 2
    flat = " ".join(proc.stderr.split())
    assert "refused and nothing was saved" in flat and "sha256" in flat and "EVALS_DATA_URL_PREFIX" in flat
    assert "network is unreachable" not in flat
    assert not (data / "familytool/familykg-b.txt").exists()


def test_default_serve_leaves_out_what_cannot_be_had_required_ones_fail(data_dir, tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    with serve_directory(_mirror(data_dir, tmp_path / "mirror", ["familytool"])) as prefix:  # no ToolHop on the host
        monkeypatch.setenv("EVALS_DATA_DIR", str(data))
        monkeypatch.setenv("EVALS_DATA_URL_PREFIX", prefix)
        served = ensure_benchmark_data(["familytool-b", "familytool-e", "toolhop"], required=False)
        assert served == ["familytool-b", "familytool-e"]
        assert "not serving toolhop" in " ".join(capsys.readouterr().err.split())
        with pytest.raises(DataNotFound, match="HTTP 404"):
            ensure_benchmark_data(["toolhop"], required=True)


def test_needed_files_follow_the_toolhop_loader(tmp_path):
    full, subset = sources()["toolhop"][0], sources()["toolhop-subset"][0]
    assert needed_files("toolhop", tmp_path) == [("toolhop-subset", subset)]  # small and sandbox-runnable
    assert needed_files("toolhop", tmp_path, {"dataset": "full"}) == [("toolhop", full)]
    (tmp_path / "toolhop").mkdir()
    (tmp_path / full.dest).write_text("[]")
    assert needed_files("toolhop", tmp_path, {"dataset": "full"}) == []
    assert needed_files("toolhop", tmp_path, {"dataset": "subset"}) == [("toolhop-subset", subset)]
    assert needed_files("toolhop", tmp_path, {"dataset": "auto"}) == []  # the full file is there
    assert [f.dest for _, f in needed_files("familytool-e", tmp_path)] == [
        "familytool/familytool-e.jsonl", "familytool/familykg-e.txt"]
    assert ensure_data(["toolhop"], tmp_path) == {}  # nothing missing: no download tried


def test_a_second_fetch_waits_for_the_first(data_dir, tmp_path):
    """Two processes fetching into one directory: the second waits on the lock, then finds the files."""
    data = tmp_path / "data"
    data.mkdir()
    with serve_directory(_mirror(data_dir, tmp_path / "mirror", ["familytool"])) as prefix:
        msgs: list[str] = []
        result: list = []
        with open(data / ".fetch.lock", "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # another process is downloading
            t = threading.Thread(target=lambda: result.append(fetch("familytool", data, url_prefix=prefix, report=msgs.append)))
            t.start()
            deadline = time.monotonic() + 60
            while not msgs and time.monotonic() < deadline:
                time.sleep(0.05)
            assert msgs and msgs[0].startswith("waiting for another download") and not result
            shutil.copytree(data_dir / "familytool", data / "familytool",  # what the other one saved
                            ignore=lambda _d, names: [n for n in names if n == "mtu-bench" or "familytool-e" in n])
            fcntl.flock(held, fcntl.LOCK_UN)
        t.join(30)
    assert len(result[0]) == 4 and _checksums_ok(data, "familytool")
    assert sum("already present" in m for m in msgs) == 3 and any("fetched  familytool/familytool-e.jsonl" in m for m in msgs)
    assert not [p for p in (data / "familytool").iterdir() if p.name.startswith(".")]  # no temporary file left


def test_fetch_errors_are_told_apart(tmp_path):
    with pytest.raises(HostUnreachable, match="cannot reach http://127.0.0.1:"):
        fetch("familytool", tmp_path, url_prefix=f"http://127.0.0.1:{_dead_port()}")
    assert issubclass(ChecksumMismatch, fetch_mod.FetchError) and not issubclass(ChecksumMismatch, HostUnreachable)
