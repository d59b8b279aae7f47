"""`evals view`, `evals leaderboard` and `--export` against web pages and damaged runs (issue 36, items 3, 11, 14).

A real ``evals view`` process on 127.0.0.1 is asked over HTTP (httpx) what a web page elsewhere could
send it: a rebound DNS name in ``Host``, another site's ``Origin``, a comparison naming thousands of
runs. Run directories are written as ``evals run`` writes them (:class:`client.runs.EpisodeRecorder`),
then damaged the ways a crash, a hand edit or a buggy scorer leaves them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from client.runs import EpisodeRecorder
from evals.view.compare import MAX_COMPARED_RUNS
from evals.view.export import static_name

ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
LONG_ID = "task/" + "é" * 150 + "-" + "x" * 200  # 500+ bytes: longer than any file name may be


def _strict_json(text: str) -> Any:
    """JSON as a browser reads it: ``NaN`` and ``Infinity`` are errors."""
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


def _trace(task_id: str, **head: Any) -> str:
    rec = EpisodeRecorder(task_id)
    rec.model_request([{"role": "user", "text": f"question of {task_id}"}], [])
    rec.model_response({"text": "answer", "tool_calls": []}, latency_s=0.1)
    rec.final_answer("answer")
    line = json.loads(rec.build_record("completed"))
    line.update(head)
    return json.dumps(line)  # NaN written as NaN, as Python's json writes it


def _write_run(path: Path, model: str, tasks: dict[str, float], *, created: str = "2026-01-01T00:00:00",
               trace_head: dict[str, Any] | None = None) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"benchmark": "my-own-bench", "model": model, "strategy": "agent",
                                                  "created_at": created}))
    with open(path / "traces.jsonl", "w") as f:
        for tid in tasks:
            f.write(_trace(tid, **(trace_head or {})) + "\n")
    with open(path / "scores.jsonl", "w") as f:
        for tid, right in tasks.items():
            f.write(json.dumps({"task_id": tid, "judge": [], "score": {"samples": {"accuracy": [right, 1.0]},
                                                                        "groups": {}, "details": {}}}) + "\n")
    return path


@pytest.fixture()
def sound_runs(tmp_path: Path) -> Path:
    """Two sound runs."""
    root = tmp_path / "runs"
    _write_run(root / "good-a", "model-a", {"t1": 1.0, "t2": 0.0})
    _write_run(root / "good-b", "model-b", {"t1": 1.0, "t2": 1.0})
    return root


@pytest.fixture()
def runs(sound_runs: Path) -> Path:
    """The two sound runs, one whose trace header holds NaN (still shown), and three damaged ones."""
    root = sound_runs
    _write_run(root / "nan-latency", "model-c", {"t1": 1.0, "t2": 0.0}, trace_head={"duration_s": float("nan")})
    (_write_run(root / "bad-config", "model-d", {"t1": 1.0}) / "config.json").write_text('{"benchmark": "my-own-bench", ')
    with open(_write_run(root / "bad-line", "model-e", {"t1": 1.0}) / "scores.jsonl", "a") as f:
        f.write('{"task_id": "t9", "score": \n')
    with open(_write_run(root / "nan-score", "model-f", {"t1": 1.0}) / "scores.jsonl", "a") as f:
        f.write('{"task_id": "t2", "score": {"samples": {"accuracy": [NaN, 1.0]}}}\n')
    return root


DAMAGED = {"bad-config": "config.json: not valid JSON", "bad-line": "scores.jsonl:2: not a scores record",
           "nan-score": "scores.jsonl:2: not a scores record (NaN is not a number)"}


def _assert_damaged_listed(damaged: list[dict[str, str]]) -> None:
    assert {Path(d["run_dir"]).name: d["reason"] for d in damaged}.keys() == DAMAGED.keys()
    for d in damaged:
        assert DAMAGED[Path(d["run_dir"]).name] in d["reason"], d


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, env=ENV,
                          timeout=120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _serve(runs: Path) -> Iterator[str]:
    """A real ``evals view`` process on 127.0.0.1; yields its ``host:port``."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "evals.cli", "view", str(runs), "--port", str(port),
                             "--no-benchmark-views"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    where = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate(timeout=10)
            try:
                httpx.get(f"http://{where}/", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "evals view did not start"
                time.sleep(0.2)
        yield where
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture()
def viewer(sound_runs: Path) -> Iterator[str]:
    with _serve(sound_runs) as where:
        yield where


@pytest.fixture()
def damaged_viewer(runs: Path) -> Iterator[str]:
    with _serve(runs) as where:
        yield where


def _get(where: str, path: str, **headers: str) -> httpx.Response:
    return httpx.get(f"http://{where}{path}", headers=headers, timeout=60)


# ---- item 3: web pages reaching the viewer ---------------------------------------------------------
def test_the_viewer_answers_only_a_loopback_host_as_the_mcp_server_does(viewer):
    port = viewer.rsplit(":", 1)[1]
    assert _get(viewer, "/api/runs").status_code == 200
    assert _get(viewer, "/api/runs", Host=f"localhost:{port}").status_code == 200
    for path in ("/api/runs", "/api/run/good-a/episode/t1", "/", "/static/app.js"):
        r = _get(viewer, path, Host=f"rebound.example:{port}")  # a page whose DNS name now points here
        assert r.status_code == 421, (path, r.status_code)
        assert "t1" not in r.text and "model-a" not in r.text


async def test_a_public_bind_still_refuses_a_dns_name_a_page_could_rebind(sound_runs):
    """``--host 0.0.0.0`` (no token, unlike ``evals serve``): addresses and localhost answer, DNS names do
    not. The app is built for that bind and served on 127.0.0.1 (tests reach nothing beyond loopback)."""
    from evals.view.app import make_app
    from evals.view.site import Site
    from server import serve_in_background

    async with serve_in_background(make_app(Site([sound_runs]), "0.0.0.0")) as url:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            port = url.rsplit(":", 1)[1]
            for host in (f"192.168.1.5:{port}", f"[fe80::1]:{port}", "10.0.0.2", f"localhost:{port}", f"127.0.0.1:{port}"):
                assert (await client.get("/api/runs", headers={"Host": host})).status_code == 200, host
            for host in (f"rebound.example:{port}", "rebound.example", f"cafe.bad:{port}"):
                assert (await client.get("/api/runs", headers={"Host": host})).status_code == 421, host


def test_the_viewer_api_refuses_requests_made_by_other_sites_pages(viewer):
    port = viewer.rsplit(":", 1)[1]
    assert _get(viewer, "/api/runs", Origin=f"http://127.0.0.1:{port}").status_code == 200  # its own page
    assert _get(viewer, "/api/runs", **{"Sec-Fetch-Site": "same-origin"}).status_code == 200
    for headers in ({"Origin": "https://attacker.example"},
                    {"Origin": f"http://127.0.0.1:{int(port) + 1}"},  # another local server's page
                    {"Origin": "null"},  # a sandboxed frame or a file
                    {"Sec-Fetch-Site": "cross-site"},  # an <img>/<script>/no-cors fetch: no Origin sent
                    {"Sec-Fetch-Site": "same-site"}):
        r = _get(viewer, "/api/compare/good-a,good-b", **headers)
        assert r.status_code == 403, (headers, r.status_code)
        assert "model-a" not in r.text and "comparisons" not in r.text
    assert _get(viewer, "/", **{"Sec-Fetch-Site": "cross-site"}).status_code == 200  # a link to the page itself


def test_a_comparison_is_bounded_before_any_work(viewer):
    many = ",".join(["good-a", "good-b"] * 1500)  # 3,000 ids: once ~55 s of the viewer's only lock
    r = _get(viewer, f"/api/compare/{many}")
    assert r.status_code == 400 and f"at most {MAX_COMPARED_RUNS}" in r.json()["error"]
    r = _get(viewer, "/api/compare/" + ",".join(f"no-such-run-{i}" for i in range(MAX_COMPARED_RUNS + 1)))
    assert r.status_code == 400 and f"at most {MAX_COMPARED_RUNS}" in r.json()["error"]  # refused before lookups
    r = _get(viewer, "/api/compare/good-a,good-a")
    assert r.status_code == 400 and "named twice" in r.json()["error"]
    r = _get(viewer, "/api/compare/good-a,good-b")
    assert r.status_code == 200 and [x["id"] for x in r.json()["runs"]] == ["good-a", "good-b"]


# ---- item 11: damaged runs ------------------------------------------------------------------------
def test_the_viewer_lists_damaged_runs_shows_the_others_and_never_sends_nan(damaged_viewer, runs):
    viewer = damaged_viewer
    r = _get(viewer, "/api/runs")
    assert r.status_code == 200
    data = _strict_json(r.text)
    assert sorted(x["id"] for x in data["runs"]) == ["good-a", "good-b", "nan-latency"]
    _assert_damaged_listed(data["damaged"])
    r = _get(viewer, "/api/run/nan-latency/tasks")  # NaN in a trace header: shown, as null
    assert r.status_code == 200
    assert [t["latency_s"] for t in _strict_json(r.text)["tasks"]] == [None, None]
    r = _get(viewer, "/api/run/nan-latency/episode/t1")
    assert r.status_code == 200 and _strict_json(r.text)["duration_s"] is None
    leaders = _strict_json(_get(viewer, "/api/leaderboard").text)
    assert {row["model"] for g in leaders["groups"] for row in g["rows"]} == {"model-a", "model-b", "model-c"}
    # a run damaged while the viewer runs is left out from the next look on; the others stay
    with open(runs / "good-b" / "scores.jsonl", "a") as f:
        f.write("[1, 2]\n")
    data = _strict_json(_get(viewer, "/api/runs").text)
    assert sorted(x["id"] for x in data["runs"]) == ["good-a", "nan-latency"]
    assert any(d["run_dir"].endswith("good-b") and "scores.jsonl:3" in d["reason"] for d in data["damaged"])


def test_leaderboard_skips_damaged_runs_and_its_json_is_json(runs):
    proc = _cli("leaderboard", str(runs), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = _strict_json(proc.stdout)
    assert {row["model"] for g in data["groups"] for row in g["rows"]} == {"model-a", "model-b", "model-c"}
    _assert_damaged_listed(data["damaged"])
    assert "Traceback" not in proc.stderr
    assert sum("warning: skipping the damaged run" in line for line in proc.stderr.splitlines()) == 3
    table = _cli("leaderboard", str(runs))
    assert table.returncode == 0 and "model-a" in table.stdout and "model-f" not in table.stdout


def test_export_skips_damaged_runs_and_writes_the_others(runs, tmp_path):
    out = tmp_path / "site"
    proc = _cli("view", str(runs), "--export", str(out), "--no-benchmark-views")
    assert proc.returncode == 0, proc.stderr
    assert "3 run(s), 6 episode(s)" in proc.stderr and "bad-config" in proc.stderr
    listing = (out / "data" / f"{static_name('runs')}.js").read_text(encoding="utf-8")
    data = _strict_json(listing[listing.index(", ") + 2:listing.rindex(");")])
    assert sorted(x["id"] for x in data["runs"]) == ["good-a", "good-b", "nan-latency"]
    _assert_damaged_listed(data["damaged"])


def test_every_run_damaged_is_a_clear_error(tmp_path):
    root = tmp_path / "runs"
    (_write_run(root / "only", "m", {"t1": 1.0}) / "config.json").write_text("[]")
    proc = _cli("leaderboard", str(root))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{root / 'only' / 'config.json'}: not a JSON object" in proc.stderr


# ---- item 14: export file names -------------------------------------------------------------------
def test_export_names_files_by_a_hash_whatever_the_task_ids(tmp_path):
    root = tmp_path / "runs"
    _write_run(root / "r1", "m", {LONG_ID: 1.0, "../../escape": 0.0, "t/1": 1.0})
    out = tmp_path / "site"
    proc = _cli("view", str(root), "--export", str(out), "--no-benchmark-views")
    assert proc.returncode == 0, proc.stderr
    assert "1 run(s), 3 episode(s)" in proc.stderr
    names = [p.name for p in (out / "data").iterdir()]
    assert all(len(n) <= 40 for n in names), names
    assert not (tmp_path / "escape.js").exists()
    for tid in (LONG_ID, "../../escape", "t/1"):
        path = f"run/r1/episode/{tid}"
        text = (out / "data" / f"{static_name(path)}.js").read_text(encoding="utf-8")
        assert text.startswith(f"EVALS_DATA({json.dumps(path)}, ")
        assert _strict_json(text[text.index(", ") + 2:text.rindex(");")])["task_id"] == tid


def test_the_page_computes_the_names_the_export_writes():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    app_js = Path(__file__).resolve().parents[2] / "evals" / "view" / "static" / "app.js"
    script = ("const fs = require('fs'); const src = fs.readFileSync(process.argv[1], 'utf8');"
              "const body = src.slice(src.indexOf('// BEGIN staticName'), src.indexOf('// END staticName'));"
              "const staticName = new Function(body + '; return staticName;')();"
              "process.stdout.write(JSON.stringify(JSON.parse(fs.readFileSync(0, 'utf8')).map(staticName)));")
    paths = ["runs", "leaderboard", f"run/r1/episode/{LONG_ID}", "compare/a,b", "run/x/episode/😀 \u2028 \"'<>",
             "x" * 55, "x" * 56, "x" * 64, "y" * 5000, "run/r/episode/a\ud800b"]
    proc = subprocess.run([node, "-e", script, str(app_js)], input=json.dumps(paths), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [static_name(p) for p in paths]


def test_nan_in_a_run_never_reaches_json(sound_runs):
    """NaN alone (no other damage): a trace header's NaN is shown as null, a NaN score leaves its run out."""
    _write_run(sound_runs / "nan-latency", "model-c", {"t1": 1.0}, trace_head={"duration_s": float("inf")})
    with open(_write_run(sound_runs / "nan-score", "model-f", {"t1": 1.0}) / "scores.jsonl", "a") as f:
        f.write('{"task_id": "t2", "score": {"samples": {"accuracy": [NaN, 1.0]}}}\n')
    proc = _cli("leaderboard", str(sound_runs), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = _strict_json(proc.stdout)
    assert {row["model"] for g in data["groups"] for row in g["rows"]} == {"model-a", "model-b", "model-c"}
    with _serve(sound_runs) as where:
        r = _get(where, "/api/run/nan-latency/tasks")
        assert r.status_code == 200 and _strict_json(r.text)["tasks"][0]["latency_s"] is None
        assert _get(where, "/api/run/nan-score").status_code == 404
