"""``evals run --server-process``: the benchmark's server in a child process, reached over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from client.runs import RunDir
from evals.core.run import RunOptions, run_benchmark
from evals.core.server_process import ServerProcessError, _decode_options, _encode_options


def _server_children(parent: int) -> list[int]:
    """Living ``evals.core.server_process`` processes whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[1]) == parent and b"evals.core.server_process" in cmdline and stat[0] != "Z":
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return stat[0] != "Z"


def test_options_travel_to_the_child_unchanged(tmp_path):
    opts = RunOptions(benchmark="familytool-e", model="oracle:0.1", strategy="kgetool", run_dir=tmp_path / "r",
                      cache=tmp_path / "c.sqlite", adapter_options={"seed": 3},
                      benchmark_options={"inductive": True, "top_k": 5})
    assert _decode_options(_encode_options(opts)) == opts
    with pytest.raises(ValueError, match="unknown run options"):
        _decode_options(json.dumps({"benchmark": "x", "model": "y", "no_such_option": 1}))


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
async def test_oracle_scores_100_with_the_server_in_a_child_process(data_dir, tmp_path):
    opts = RunOptions(benchmark="familytool-b", model="oracle", limit=40, concurrency=8,
                      run_dir=tmp_path / "run", progress=False, server_process=True)
    result, summary = await run_benchmark(opts)
    assert summary["completed"] == 40 and summary["errored"] == 0
    assert summary["metrics"]["tool_em"] == summary["metrics"]["value_acc"] == 100.0
    # the calls went through the child's server: every trace has its KG look-ups and the gold call
    for trace in RunDir.open(tmp_path / "run").iter_traces():
        calls = [e for e in trace["events"] if e["kind"] == "tool_call"]
        assert len(calls) >= 2 and not any(c["is_error"] for c in calls)
    assert _server_children(os.getpid()) == []  # stopped and reaped


async def test_inductive_prepare_writes_to_the_childs_private_kg(data_dir, tmp_path):
    opts = RunOptions(benchmark="familytool-e", model="oracle", strategy="kgetool", limit=30,
                      benchmark_options={"inductive": True}, concurrency=8, run_dir=tmp_path / "run", progress=False, server_process=True)
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 30
    assert summary["metrics"]["kg_em"] == summary["metrics"]["tool_em"] == 100.0


async def test_a_server_that_cannot_start_says_why(data_dir, tmp_path, monkeypatch):
    # the child cannot build its KG database: the cache directory is a file; the parent says why
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("EVALS_CACHE_DIR", str(blocker))
    opts = RunOptions(benchmark="familytool-b", model="oracle", limit=2,
                      run_dir=tmp_path / "run", progress=False, server_process=True)
    with pytest.raises(ServerProcessError, match="failed to start: (NotADirectoryError|FileExistsError)"):
        await run_benchmark(opts)
    assert _server_children(os.getpid()) == []


async def test_server_url_and_server_process_exclude_each_other(data_dir, tmp_path):
    opts = RunOptions(benchmark="familytool-b", model="oracle", run_dir=tmp_path / "run", progress=False,
                      server_process=True, server_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="give one of them"):
        await run_benchmark(opts)


def _start(run: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle:0.3", "--limit", "60",
            "--concurrency", "2", "--run-dir", str(run), "--no-progress", "--server-process"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _wait_for_episodes(proc: subprocess.Popen, run: Path, n: int) -> int:
    """Wait until ``n`` traces are written; returns the server child's pid."""
    traces = run / "traces.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
        if traces.exists() and traces.read_bytes().count(b"\n") >= n:
            children = _server_children(proc.pid)
            assert len(children) == 1, children
            return children[0]
        time.sleep(0.05)
    raise AssertionError("no episodes finished within 120 s")


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_ctrl_c_stops_the_run_and_its_server_and_the_run_resumes(data_dir, tmp_path):
    run = tmp_path / "run"
    proc = _start(run)
    child = _wait_for_episodes(proc, run, 4)
    os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole foreground group
    rc = proc.wait(timeout=60)
    assert rc == 130, proc.stderr.read().decode()[-3000:] if proc.stderr else rc  # a clean stop, as documented
    assert _gone_within(child, 20), "the server process outlived the run"
    done = subprocess.run([sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle:0.3",
                           "--limit", "60", "--concurrency", "8", "--run-dir", str(run), "--no-progress",
                           "--server-process", "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["completed"] == 60 and summary["metrics"]["tool_em"] == 100.0
    ids = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False)]
    assert len(ids) == len(set(ids)) == 60


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_the_server_process_stops_when_the_run_is_killed(data_dir, tmp_path):
    run = tmp_path / "run"
    proc = _start(run)
    child = _wait_for_episodes(proc, run, 2)
    os.kill(proc.pid, signal.SIGKILL)  # no clean-up code runs in the parent
    proc.wait(timeout=30)
    assert _gone_within(child, 20), "the server process outlived a killed run"
