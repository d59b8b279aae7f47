"""`evals view` without a browser: reading run directories, transcripts, paired statistics, the leaderboard."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import numpy as np
import pytest

from client.runs import EpisodeRecorder
from evals.view.compare import compare_runs, mcnemar_exact, paired_bootstrap
from evals.view.export import static_name
from evals.view.index import RunIndex
from evals.view.leaderboard import leaderboard_groups, render_leaderboard
from evals.view.runs import RunView
from evals.view.site import Site
from evals.view.transcript import transcript_items


def _trace(task_id: str, *, answer: str = "ok", fail: bool = False) -> str:
    rec = EpisodeRecorder(task_id)
    rec.model_request([{"role": "system", "text": "sys"}, {"role": "user", "text": f"question of {task_id}"}], [])
    if fail:
        rec.model_error(RuntimeError("context too long"))
        return rec.build_record("errored", error=RuntimeError("context too long"))
    rec.model_response({"text": None, "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"x": 1}}]}, latency_s=0.2)
    rec.tool_call("lookup", {"x": 1}, "not found", is_error=True, latency_s=0.01, call_id="c1")
    rec.note("a strategy note", step=1)
    rec.final_answer(answer)
    return rec.build_record("completed")


def _write_run(path: Path, model: str, right: dict[str, bool], *, errored: tuple[str, ...] = ()) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"benchmark": "my-own-bench", "model": model, "strategy": "agent",
                                                  "created_at": "2026-01-01T00:00:00", "run": {"limit": len(right)}}))
    with open(path / "traces.jsonl", "w") as f:
        for tid in right:
            f.write(_trace(tid, fail=tid in errored) + "\n")
    with open(path / "scores.jsonl", "w") as f:
        for tid, ok in right.items():
            f.write(json.dumps({"task_id": tid, "judge": [], "score": {
                "samples": {"accuracy": [float(ok), 1.0], "params": [2.0 if ok else 1.0, 3.0]},
                "groups": {"hops": "2" if tid < "t5" else "3"}, "details": {}}}) + "\n")
    return path


def test_the_index_reads_headers_without_the_events_and_queries_and_transcripts_on_demand(tmp_path):
    run = _write_run(tmp_path / "r", "m", {"t1": True, "t2": False}, errored=("t2",))
    index = RunIndex.open(run)
    assert list(index.traces) == ["t1", "t2"]
    assert index.traces["t1"].query is None and "events" not in index.traces["t1"].head  # read on demand
    assert index.query("t1") == "question of t1" and index.queries() == {"t1": "question of t1", "t2": "question of t2"}
    assert index.traces["t2"].head["status"] == "errored"
    full = index.trace("t1")
    assert full is not None and full["task_id"] == "t1" and any(e["kind"] == "tool_call" for e in full["events"])
    # a line written by another writer (keys sorted: the events are not last) is read in full
    other = json.loads(_trace("t3"))
    with open(run / "traces.jsonl", "a") as f:
        f.write(json.dumps(other, sort_keys=True) + "\n")
        f.write('{"task_id": "t4", "status": "completed"')  # a line being written: not read yet
    assert index.refresh()
    assert index.traces["t3"].query == "question of t3" and "t4" not in index.traces  # read with the line
    with open(run / "traces.jsonl", "a") as f:
        f.write(', "events": []}\n')
        f.write(_trace("t1", answer="again") + "\n")  # the newest line of a task wins
        f.write("not json\n")
    index.refresh()
    assert list(index.traces) == ["t2", "t3", "t4", "t1"]
    trace = index.trace("t1")
    assert trace is not None and trace["final_answer"] == "again"
    assert index.bad_lines == [f"{run / 'traces.jsonl'}:6: Expecting value: line 1 column 1 (char 0)"]
    assert not index.refresh()


def test_a_run_whose_lock_is_held_is_in_progress(tmp_path):
    run = _write_run(tmp_path / "r", "m", {"t1": True})
    index = RunIndex.open(run)
    assert not index.in_progress()
    fd = os.open(run / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert index.in_progress()
    finally:
        os.close(fd)
    assert not index.in_progress()


def test_transcript_items_follow_the_events():
    items = transcript_items(json.loads(_trace("t1", answer="<b>bold</b>")))
    assert [i["kind"] for i in items] == ["message", "message", "response", "tool", "note", "answer"]
    assert items[2]["calls"][0]["name"] == "lookup" and items[3]["is_error"] and items[3]["result"] == "not found"
    assert items[5]["text"] == "<b>bold</b>" and items[3]["turn"] == 1
    failed = transcript_items(json.loads(_trace("t2", fail=True)))
    assert failed[-1]["kind"] == "error" and "context too long" in failed[-1]["message"]


def test_an_unregistered_benchmark_summarised_from_its_stored_scores(tmp_path):
    right = {f"t{i}": i % 3 != 0 for i in range(1, 10)}
    site = Site([_write_run(tmp_path / "runs" / "a", "m", right)], load_benchmarks=False)
    listing = site.runs()["runs"][0]
    acc = next(h for h in listing["headline"] if h["key"] == "accuracy")
    assert acc["value"] == round(100 * 6 / 9, 2) and acc["stderr"] is not None and listing["tasks"] == 9
    tasks = site.tasks("a")["tasks"]
    assert [t["id"] for t in tasks if t["passed"]["accuracy"] is False] == ["t3", "t6", "t9"]
    assert tasks[0]["query"] == "question of t1" and tasks[0]["turns"] == 1
    page = site.run("a")
    assert set(page["breakdowns"]["hops"]) == {"2", "3"}


def test_mcnemar_exact_and_the_paired_bootstrap():
    # 1 task only the baseline got right, 9 only the other: 2 * (C(10,0) + C(10,1)) / 2^10
    assert mcnemar_exact(1, 9) == pytest.approx(2 * 11 / 1024)
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(5, 5) == 1.0
    a = np.array([[1, 1]] * 30 + [[0, 1]] * 20, dtype=float)
    b = np.array([[1, 1]] * 45 + [[0, 1]] * 5, dtype=float)
    low, high, p = paired_bootstrap(a, b, 100.0)
    assert low <= 30.0 <= high and low > 0 and p < 0.01
    assert paired_bootstrap(a, b, 100.0) == (low, high, p)  # a fixed seed: the same page every time
    same = paired_bootstrap(a, a, 100.0)
    assert same[:2] == (0.0, 0.0) and same[2] == 1.0


def test_compare_lists_flips_and_tests_each_metric(tmp_path):
    base = {f"t{i}": i < 5 for i in range(1, 9)}
    other = {f"t{i}": i < 7 for i in range(1, 9)}
    site = Site([_write_run(tmp_path / "a", "m1", base), _write_run(tmp_path / "b", "m2", other)], load_benchmarks=False)
    data = site.compare(["a", "b"])
    flipped = [t["id"] for t in data["tasks"] if len(set(t["passed"]["accuracy"])) > 1]
    assert flipped == ["t5", "t6"]
    rows = {m["key"]: m for m in data["comparisons"][0]["metrics"]}
    assert rows["accuracy"]["test"] == "McNemar (exact)" and rows["accuracy"]["only_other"] == 2
    assert rows["accuracy"]["p_value"] == pytest.approx(mcnemar_exact(0, 2))
    assert rows["accuracy"]["difference"] == 25.0
    assert rows["params"]["test"] == "paired bootstrap"  # not a pass/fail sample: 2 of 3 parameters
    with pytest.raises(ValueError, match="two runs"):
        compare_runs([site.view("a")])


def test_leaderboard_one_row_per_model_best_first(tmp_path):
    runs = tmp_path / "runs"
    _write_run(runs / "a", "m1", {"t1": True, "t2": False})
    _write_run(runs / "b", "m2", {"t1": True, "t2": True})
    _write_run(runs / "nested" / "c", "m1", {"t1": False, "t2": False})
    site = Site([runs], load_benchmarks=False)
    groups = leaderboard_groups(list(site.views.values()))
    assert len(groups) == 1 and [r["model"] for r in groups[0]["rows"]] == ["m2", "m1"]
    assert next(r for r in groups[0]["rows"] if r["model"] == "m1")["runs"] == 2
    data = json.loads(render_leaderboard(groups, "json"))
    assert data["groups"][0]["rows"][0]["metrics"]["accuracy"]["value"] == 100.0
    csv_text = render_leaderboard(groups, "csv").splitlines()
    assert csv_text[0].startswith("benchmark,setting,rank,model") and len(csv_text) == 3


def test_static_names_are_distinct_file_names():
    names = {static_name(p) for p in ("run/a/episode/x_y", "run/a/episode/x/y", "run/a/episode/x y", "run/a/episode/é")}
    assert len(names) == 4 and all(n.replace("_", "").replace("-", "").isalnum() for n in names)


def test_a_run_view_recomputes_only_when_its_files_change(tmp_path):
    run = _write_run(tmp_path / "r", "m", {"t1": True})
    view = RunView("r", RunIndex.open(run))
    first = view.summary()
    assert view.summary() == first and first["scored"] == 1
    with open(run / "traces.jsonl", "a") as f:
        f.write(_trace("t2") + "\n")
    view.index.refresh()
    assert view.summary()["traced"] == 2


def test_view_says_when_its_port_is_taken(tmp_path):
    import socket
    import subprocess
    import sys

    run = _write_run(tmp_path / "r", "m", {"t1": True})
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "evals.cli", "view", str(run), "--port", str(port)],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}")
    assert "Traceback" not in proc.stderr
