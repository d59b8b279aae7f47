"""A run folder is untrusted input: no reader of its JSON Lines files (``traces.jsonl``, ``tools.jsonl``,
``scores.jsonl``, a replay file) reads a line past ``MAX_LINE_BYTES``; a longer line is a
one-line error naming FILE:LINE (exit 2 at the CLI), never a MemoryError or the whole line read."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from client._runs.jsonl import repair_torn_tail, scan_jsonl
from client.runs import LineTooLong, RunDir, iter_jsonl
from evals.core.scoring import read_scores
from evals.view.index import RunIndex
from tool_specs import bounded_read as lines

BOUND = 1 << 16


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", BOUND)
    return BOUND


def _run(path: Path, *extra: bytes) -> Path:
    """A run folder with two traces (written by the recorder), then ``extra`` appended to traces.jsonl."""
    with RunDir(path, {"benchmark": "x"}) as run:
        for task_id in ("a", "b"):
            rec = run.new_recorder(task_id)
            rec.model_request([{"role": "user", "content": "q"}], [{"name": "t", "description": "d", "input_schema": {}}])
            rec.final_answer("done")
            run.append_trace(rec.build_record("completed"))
    with open(path / "traces.jsonl", "ab") as f:
        for data in extra:
            f.write(data)
    return path


def _sparse_line(path: Path, size: int, *, newline: bool = True) -> None:
    """Append a line of ``size`` NUL bytes without writing them (a sparse file: no disk, no memory)."""
    with open(path, "r+b") as f:
        end = f.seek(0, 2)
        f.truncate(end + size)
        if newline:
            f.seek(end + size)
            f.write(b"\n")


def test_lines_up_to_the_bound_are_read_and_a_longer_one_is_refused_by_its_line(small_bound, tmp_path):
    ok = json.dumps({"task_id": "c", "status": "completed", "pad": "x" * (small_bound - 100)}).encode()
    ok = ok[:-2] + b" " * (small_bound - 1 - len(ok)) + ok[-2:] + b"\n"  # exactly the bound, newline included
    assert len(ok) == small_bound
    run = _run(tmp_path / "run", ok)
    assert [r["task_id"] for r in scan_jsonl(run / "traces.jsonl").records] == ["a", "b", "c"]
    with open(run / "traces.jsonl", "ab") as f:
        f.write(b'{"task_id": "d", "pad": "' + b"y" * small_bound + b'"}\n')
    with pytest.raises(LineTooLong) as caught:
        RunDir.open(run).scan_traces()
    message = str(caught.value)
    assert message.startswith(f"{run / 'traces.jsonl'}:4: a line longer than {small_bound} bytes") and "\n" not in message
    assert isinstance(caught.value, ValueError)  # the CLI's exit 2


def test_a_huge_line_is_refused_without_being_read(small_bound, tmp_path):
    """A 256 MiB line (sparse: it costs no disk) is refused having read at most the bound of it."""
    run = _run(tmp_path / "run")
    _sparse_line(run / "traces.jsonl", 256 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(LineTooLong, match=r"traces\.jsonl:3: "):
            scan_jsonl(run / "traces.jsonl")
        with pytest.raises(LineTooLong, match=r"traces\.jsonl:3: "):
            RunIndex.open(run)  # the viewer's reader too
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * small_bound, peak


def test_a_torn_tail_longer_than_a_line_is_neither_read_nor_cut(small_bound, tmp_path):
    """Resuming repairs a torn last line, keeping a copy: one past the bound is refused instead (the
    file is left as it is), and so is a tools.jsonl line past it."""
    run = _run(tmp_path / "run")
    traces = run / "traces.jsonl"
    _sparse_line(traces, 4 * small_bound, newline=False)
    size = traces.stat().st_size
    with pytest.raises(LineTooLong, match=r"traces\.jsonl:3: "):
        repair_torn_tail(traces, run / "traces.torn.jsonl")
    with pytest.raises(LineTooLong, match=r"traces\.jsonl:3: "):
        RunDir(run).open_for_writing()
    assert traces.stat().st_size == size and not (run / "traces.torn.jsonl").exists()

    other = _run(tmp_path / "other")
    tools = other / "tools.jsonl"
    n = len(tools.read_bytes().splitlines())
    with open(tools, "ab") as f:
        f.write(b'{"tool": "' + b"0" * small_bound + b'"}\n')
    with pytest.raises(LineTooLong, match=rf"tools\.jsonl:{n + 1}: "):
        RunDir(other).open_for_writing()  # the writer reads the lists the run holds
    fresh = scan_jsonl(other / "traces.jsonl", RunDir(other).tool_lists).records
    with pytest.raises(LineTooLong, match=rf"tools\.jsonl:{n + 1}: "):
        fresh[0]["events"]  # noqa: B018 - a reader putting a trace's tool list back


def test_a_replay_file_and_the_viewers_scores_are_bounded_too(small_bound, tmp_path):
    replay = tmp_path / "replay.jsonl"
    replay.write_bytes(b'{"a": 1}\n' + b'{"b": "' + b"z" * small_bound + b'"}\n')
    with pytest.raises(LineTooLong, match=rf"^replay file {replay}:2: "):
        list(iter_jsonl(replay, label="replay file "))
    run = _run(tmp_path / "run")
    (run / "scores.jsonl").write_bytes(b'{"task_id": "a", "pad": "' + b"s" * small_bound + b'"}\n')
    with pytest.raises(LineTooLong, match=r"scores\.jsonl:1: "):
        RunIndex.open(run)
    with pytest.raises(LineTooLong, match=r"scores\.jsonl:1: "):
        read_scores(RunDir.open(run))  # evals score's stored judge decisions, evals report


def test_evals_score_on_a_line_past_the_real_bound_exits_2_naming_it(data_dir, tmp_path):
    """The CLI with the real bound: a 65 MiB line (sparse) is a one-line error and exit 2, no traceback."""
    run = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle", "--limit", "2",
                           "--run-dir", str(run), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    _sparse_line(run / "traces.jsonl", lines.MAX_LINE_BYTES + 1)
    for args in (["score", str(run)], ["run", "familytool-b", "--model", "oracle", "--limit", "3", "--run-dir", str(run),
                                        "--no-progress"]):
        proc = subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, (args, proc.stderr)
        error = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(error) == 1 and f"traces.jsonl:3: a line longer than {lines.MAX_LINE_BYTES} bytes" in error[0], proc.stderr
        assert "Traceback" not in proc.stderr
