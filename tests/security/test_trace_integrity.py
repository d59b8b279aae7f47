"""traces.jsonl deleted or replaced while a run writes it (issue 26, item 4): the run notices (the
file's identity before each write), stops with a message that says what happened, and keeps every
finished episode in a fresh file. Real ``evals run`` with the oracle model; the test deletes or
replaces the file once a few episodes are in it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from client.runs import RunDir, RunTracesLost

TASKS = 40


def _args(run: Path) -> list[str]:
    return [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle:0.3", "--limit", str(TASKS),
            "--concurrency", "2", "--run-dir", str(run), "--no-progress"]


def _start_and_wait(run: Path, lines: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(_args(run), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    traces = run / "traces.jsonl"
    deadline = time.monotonic() + 300
    while not (traces.exists() and traces.read_bytes().count(b"\n") >= lines):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the run did not write {lines} traces: {proc.communicate()[1][-3000:]}")
        time.sleep(0.05)
    return proc


def _records(path: Path) -> list[dict]:
    lines = path.read_bytes().splitlines(keepends=True)
    assert all(line.endswith(b"\n") for line in lines)
    return [json.loads(line) for line in lines]


def _resume_to_the_end(run: Path) -> None:
    done = subprocess.run(_args(run), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    ids = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False)]
    assert len(ids) == len(set(ids)) == TASKS


def test_deleted_traces_stop_the_run_and_every_finished_episode_is_written_to_a_fresh_file(data_dir, tmp_path):
    run = tmp_path / "run"
    proc = _start_and_wait(run, 3)
    seen = _records(run / "traces.jsonl")
    os.unlink(run / "traces.jsonl")
    _, err = proc.communicate(timeout=300)
    message = " ".join(err.split())
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert "traces.jsonl' was deleted while the run was writing it; the run stopped" in message, message[-2000:]
    assert "0 of" not in message and "completed" not in message, message[-2000:]  # no count of an empty file
    kept = _records(run / "traces.jsonl")  # a fresh file with everything the run held
    assert f"the {len(kept)} finished episode(s) the run held are kept" in message
    assert kept[: len(seen)] == seen and len(kept) < TASKS
    assert len({r["task_id"] for r in kept}) == len(kept)
    _resume_to_the_end(run)


def test_replaced_traces_are_left_alone_and_what_the_run_held_goes_to_a_kept_file(data_dir, tmp_path):
    run = tmp_path / "run"
    proc = _start_and_wait(run, 3)
    seen = _records(run / "traces.jsonl")
    other = run / "other.jsonl"
    other.write_text("")
    os.replace(other, run / "traces.jsonl")  # e.g. an editor's save, or a copy put in its place
    _, err = proc.communicate(timeout=300)
    message = " ".join(err.split())
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert "traces.jsonl' was replaced while the run was writing it; the run stopped" in message, message[-2000:]
    assert (run / "traces.jsonl").read_bytes() == b""  # the file put in its place is not touched
    [kept_file] = run.glob("traces.kept-*.jsonl")
    assert f"written to {kept_file.name}" in message and "move" in message
    kept = _records(kept_file)
    assert kept[: len(seen)] == seen and len(kept) < TASKS
    os.replace(kept_file, run / "traces.jsonl")  # as the message says
    _resume_to_the_end(run)


def test_deleted_after_the_last_write_is_noticed_before_the_run_reports(tmp_path):
    run = RunDir(tmp_path / "run", {"benchmark": "b"})
    run.open_for_writing()
    run.append_trace({"task_id": "t1", "status": "completed"})
    run.verify_traces()  # the same file: nothing to say
    os.unlink(run.traces_path)
    with pytest.raises(RunTracesLost, match="was deleted") as info:
        run.verify_traces()
    assert info.value.records == 1 and info.value.kept_in == run.traces_path
    run.append_trace({"task_id": "t2", "status": "completed"})  # a late episode goes to the fresh file
    run.close()
    assert [r["task_id"] for r in _records(tmp_path / "run" / "traces.jsonl")] == ["t1", "t2"]
