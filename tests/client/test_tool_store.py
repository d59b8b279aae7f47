"""tools.jsonl: each tool list of a run kept once, traces referring to it; old run folders (tools in
the traces) still read the same; traces.jsonl read header by header, events on access."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from client._runs.jsonl import EVENTS_KEPT, StoredRecord, scan_jsonl
from client.messages import ToolDef
from client.runs import SCHEMA_VERSION, EpisodeRecorder, RunDir, ToolLists, read_traces, request_history
from evals.view.index import RunIndex

SEARCH = {"name": "search", "description": "find things " * 20, "input_schema": {"type": "object"}}
LOOKUP = {"name": "lookup", "description": "look one up " * 20,
          "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}}
OTHER = {"name": "other", "description": "something else", "input_schema": {"type": "object"}}


def _episode(rec: EpisodeRecorder, tool_lists: list[list[Any]]) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"question of {rec.task_id}"}]
    for turn, tools in enumerate(tool_lists):
        rec.model_request(messages, tools, turn=turn)
        rec.model_response({"text": f"answer {turn}", "tool_calls": []}, latency_s=0.0, cost_usd=0.0)
        messages = [*messages, {"role": "assistant", "content": f"answer {turn}"}]
    rec.final_answer("done")
    return rec.build_record("completed")


# what each episode offers, turn by turn: the same list again, a changed list, a list back again
EPISODES = {
    "a": [[SEARCH, LOOKUP], [SEARCH, LOOKUP], [SEARCH]],
    "b": [[SEARCH, LOOKUP], [SEARCH, LOOKUP, OTHER], [SEARCH, LOOKUP]],
    "c": [[], [SEARCH]],
}


def _write(path: Path, *, store: bool) -> RunDir:
    run = RunDir(path, {"benchmark": "b", "model": "m"})
    with run:
        for task_id, lists in EPISODES.items():
            rec = run.new_recorder(task_id) if store else EpisodeRecorder(task_id)
            run.append_trace(_episode(rec, lists))
    return run


def _history(trace: Any) -> list[Any]:
    return [(r["tools"], r["messages"], r.get("turn")) for r in request_history(trace)]


def test_each_tool_list_and_tool_is_kept_once_per_run_and_the_traces_refer_to_it(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", store=True)
    lines = [json.loads(line) for line in (run.path / "tools.jsonl").read_text().splitlines()]
    tools = [line["spec"] for line in lines if "tool" in line]
    lists = [line for line in lines if "tools_hash" in line]
    assert sorted(t["name"] for t in tools) == ["lookup", "other", "search"]  # each tool once
    assert len(lists) == 4  # [search, lookup], [search], [search, lookup, other], []
    raw = (run.path / "traces.jsonl").read_text()
    assert '"tools": [' not in raw and "find things" not in raw  # no trace holds a list
    assert all(json.loads(line)["schema_version"] == SCHEMA_VERSION == 2 for line in raw.splitlines())
    # read back, every request has its tools, as a recorder without the store wrote them
    embedded = _write(tmp_path / "embedded", store=False)
    assert not (embedded.path / "tools.jsonl").exists()
    assert "find things" in (embedded.path / "traces.jsonl").read_text()
    ours, theirs = RunDir.open(run.path).latest_traces(), RunDir.open(embedded.path).latest_traces()
    for task_id, lists in EPISODES.items():
        history = _history(ours[task_id])
        assert history == _history(theirs[task_id])
        assert [tools for tools, _, _ in history] == lists
    # a trace parsed by hand finds its lists through the run's tool_lists
    line = json.loads(raw.splitlines()[1])
    assert request_history(line)[1]["tools"] is None  # "b"'s second list is in tools.jsonl only
    assert [r["tools"] for r in request_history(line, run.tool_lists)] == EPISODES["b"]
    # the viewer's transcript reads its tools back too
    index = RunIndex.open(run.path)
    trace = index.trace("b")
    assert trace is not None
    assert [e["tools"] for e in trace["events"] if e["kind"] == "model_request" and "tools" in e] == \
        [EPISODES["b"][0], EPISODES["b"][1], EPISODES["b"][2]]


def test_a_resumed_run_adds_only_new_lists_and_tooldefs_are_stored_once(tmp_path: Path) -> None:
    defs = [ToolDef(t["name"], t["description"], t["input_schema"]) for t in (SEARCH, LOOKUP)]
    run = RunDir(tmp_path / "run", {"benchmark": "b", "model": "m"})
    with run:
        for task_id in ("a", "b"):
            run.append_trace(_episode(run.new_recorder(task_id), [defs, defs]))
    size = (run.path / "tools.jsonl").stat().st_size
    again = RunDir(tmp_path / "run", {"benchmark": "b", "model": "m"})
    with again:
        again.append_trace(_episode(again.new_recorder("c"), [defs]))
        assert (run.path / "tools.jsonl").stat().st_size == size  # known from the file: not written again
        again.append_trace(_episode(again.new_recorder("d"), [[OTHER]]))
    assert (run.path / "tools.jsonl").read_text().count("\n") == 3 + 2  # search, lookup, their list; other, its list
    traces = RunDir.open(run.path).latest_traces()
    assert [r["tools"] for r in request_history(traces["c"])] == [[d.to_dict() for d in defs]]
    assert [r["tools"] for r in request_history(traces["d"])] == [[OTHER]]


def test_a_torn_tools_line_is_cut_and_kept_and_a_lost_list_reads_as_missing(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", store=True)
    tools = run.path / "tools.jsonl"
    text = tools.read_text()
    # a crash after the tools of "c"'s lists were written, before their list lines: the last line torn
    kept, torn = text.rsplit("\n", 2)[0] + "\n", text.rsplit("\n", 2)[1][:10]
    tools.write_text(kept + torn)
    latest = RunDir.open(run.path).latest_traces()  # a reader skips the torn line
    assert [r["tools"] for r in request_history(latest["a"])] == EPISODES["a"]
    lost = [e for e in latest["c"]["events"] if e.get("tools_missing")]
    assert len(lost) == 1 and lost[0]["tools"] is None  # the list never reached the file: named, not guessed
    with RunDir(run.path, {"benchmark": "b", "model": "m"}) as again:  # the writer cuts it and keeps a copy
        again.append_trace(_episode(again.new_recorder("d"), [[OTHER]]))
    assert tools.read_text().startswith(kept) and json.loads((run.path / "tools.torn.jsonl").read_text())["text"] == torn
    assert [r["tools"] for r in request_history(RunDir.open(run.path).latest_traces()["d"])] == [[OTHER]]


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_tools_file_deleted_or_replaced_during_a_run_is_written_again_with_every_list(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The lists later traces refer to (stored before the file went) are back at ``tools.jsonl``
    before the next trace line, whether or not a new list comes; a file that took its place keeps
    its own lines."""
    path = tmp_path / "run"
    with RunDir(path, {"benchmark": "b", "model": "m"}) as run:  # a resumed run: its lists were stored earlier
        run.append_trace(_episode(run.new_recorder("a"), EPISODES["a"]))
    tools = path / "tools.jsonl"
    with RunDir(path, {"benchmark": "b", "model": "m"}) as run:
        run.append_trace(_episode(run.new_recorder("b"), EPISODES["b"]))
        stored = tools.read_bytes()
        other = b'{"tool": "0000000000000000", "spec": {"name": "theirs"}}\n{"torn'  # no newline at its end
        tools.unlink()
        if how == "replaced":
            tools.write_bytes(other)
        with caplog.at_level("WARNING"):
            run.append_trace(_episode(run.new_recorder("c"), [EPISODES["a"][0]]))  # no new list: refers to "a"'s
        assert f"tools.jsonl was {how} while the run was writing it" in caplog.text
        after = tools.read_bytes()
        assert after == (stored if how == "deleted" else other + b"\n" + stored)
        run.append_trace(_episode(run.new_recorder("d"), [[OTHER]]))  # a new list goes to the new file
        assert tools.read_bytes().startswith(after) and len(tools.read_bytes()) > len(after)
    latest = RunDir.open(path).latest_traces()
    for task_id, lists in {**EPISODES, "c": [EPISODES["a"][0]], "d": [[OTHER]]}.items():
        assert [r["tools"] for r in request_history(latest[task_id])] == lists, task_id
        assert not any(e.get("tools_missing") for e in latest[task_id]["events"])


def test_a_tools_file_deleted_between_two_runs_is_written_again_on_resume(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Deleted while no run held it, ``tools.jsonl`` is back as soon as the resumed run opens the folder
    (even if no episode runs), with a warning; each list the resumed episodes offer goes to it, and the
    lists of the episodes finished before read as missing, named, never guessed."""
    path = tmp_path / "run"
    _write(path, store=True)
    tools = path / "tools.jsonl"
    tools.unlink()
    with caplog.at_level("WARNING"), RunDir(path, {"benchmark": "b", "model": "m"}) as run:
        run.open_for_writing()
        assert tools.exists() and tools.read_bytes() == b""
        assert "tools.jsonl is missing though the run's traces refer to its tool lists" in caplog.text
        run.append_trace(_episode(run.new_recorder("d"), [EPISODES["a"][0], [OTHER]]))
    assert tools.read_text().count("\n") == 2 + 1 + 2  # search, lookup, their list; other, its list
    latest = RunDir.open(path).latest_traces()
    assert [r["tools"] for r in request_history(latest["d"])] == [EPISODES["a"][0], [OTHER]]
    assert any(e.get("tools_missing") for e in latest["a"]["events"])
    caplog.clear()
    with caplog.at_level("WARNING"), RunDir(path, {"benchmark": "b", "model": "m"}) as run:
        run.open_for_writing()  # the file is there: nothing to say
    assert "is missing" not in caplog.text
    old = tmp_path / "old"  # traces that hold their own lists never had a tools.jsonl: none is made
    _write(old, store=False)
    assert not (old / "tools.jsonl").exists()
    with caplog.at_level("WARNING"), RunDir(old, {"benchmark": "b", "model": "m"}) as run:
        run.open_for_writing()
    assert not (old / "tools.jsonl").exists() and "is missing" not in caplog.text


def test_a_resume_with_workers_auto_reads_the_traces_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run takes the traces ``--workers auto`` read (``read_traces``, ``RunDir(traces_read=...)``):
    the runner's scan is that one, events and tool lists included, unless the file changed in between."""
    from client._runs import rundir

    path = tmp_path / "run"
    _write(path, store=True)
    scans: list[Path] = []
    real_scan = rundir.scan_jsonl
    monkeypatch.setattr(rundir, "scan_jsonl", lambda p, tools=None: scans.append(p) or real_scan(p, tools))
    seen = read_traces(path)
    assert seen.pending(["a", "b", "c", "d"]) == ["d"] and len(scans) == 1
    with RunDir(path, {"benchmark": "b", "model": "m"}, traces_read=seen) as run:
        run.open_for_writing()
        scan = run.scan_traces()
        assert scan is seen.scan and len(scans) == 1  # not read again
        assert [r["tools"] for r in request_history(scan.latest()["b"])] == EPISODES["b"]  # lists from tools.jsonl
        run.append_trace(_episode(run.new_recorder("d"), [[OTHER]]))
        assert [r["task_id"] for r in run.scan_traces().records] == ["a", "b", "c", "d"] and len(scans) == 2  # changed


def test_adopted_lines_of_a_worker_move_their_tools_to_the_store(tmp_path: Path) -> None:
    worker = EpisodeRecorder("a")  # a worker process's recorder: no store, the lists in its lines
    _episode(worker, EPISODES["b"])
    assert sum('"tools": [' in line for line in worker.event_lines) == 3
    run = RunDir(tmp_path / "run", {"benchmark": "b", "model": "m"})
    with run:
        rec = run.new_recorder("a", run_attempt=1)
        rec.adopt_events(worker.event_lines)
        run.append_trace(rec.build_record("completed"))
        assert [r["tools"] for r in request_history(rec.record_view())] == EPISODES["b"]
    assert '"tools": [' not in (run.path / "traces.jsonl").read_text()
    assert [r["tools"] for r in request_history(RunDir.open(run.path).latest_traces()["a"])] == EPISODES["b"]


def test_a_scan_keeps_headers_and_only_the_last_read_events(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run", {"benchmark": "b", "model": "m"})
    with run:
        for n in range(3 * EVENTS_KEPT):
            run.append_trace(_episode(run.new_recorder(f"t{n}"), [[SEARCH]] * 3))
    scan = scan_jsonl(run.traces_path, ToolLists(run.path / "tools.jsonl"))
    assert len(scan.records) == 3 * EVENTS_KEPT and all(isinstance(r, StoredRecord) for r in scan.records)
    for record in scan.records:
        assert len(record["events"]) == 7 and record["events"][0]["tools"] == [SEARCH]
    cache = scan.records[0]._cache  # type: ignore[attr-defined]
    assert len(cache._kept) == EVENTS_KEPT  # the events of the last EVENTS_KEPT records only
    assert scan.records[5]["final_answer"] == "done" and scan.records[5] == json.loads(
        run.traces_path.read_text().splitlines()[5]) | {"events": scan.records[5]["events"]}
    assert json.loads(json.dumps(scan.records[5], default=lambda o: o.to_dict()))["task_id"] == "t5"
    # the file replaced under a scan: its records say so instead of reading another file's bytes
    run.traces_path.rename(tmp_path / "moved.jsonl")
    run.traces_path.write_bytes((tmp_path / "moved.jsonl").read_bytes())
    with pytest.raises(ValueError, match="replaced"):
        scan.records[1]["events"]


def test_tool_lines_spelled_otherwise_are_read_and_damaged_ones_are_missing(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    ids = ["a" * 16, "b" * 16]
    path.write_text(
        json.dumps({"tool": ids[0], "spec": SEARCH}, separators=(",", ":")) + "\n"  # compact: parsed at once
        + json.dumps({"tool": ids[1], "spec": LOOKUP}) + "\n"  # as the writer spells it: parsed when asked for
        + json.dumps({"tools_hash": "h" * 16, "tools": ids}) + "\n"
        + json.dumps({"tools_hash": "d" * 16, "tools": [ids[0], "c" * 16]}) + "\n"  # names a tool the file lacks
        + '{"tools_hash": "' + "e" * 16 + '", "tools": [not json]}\n'
        + "garbage\n")
    lists = ToolLists(path)
    assert lists.get("h" * 16) == [SEARCH, LOOKUP]
    assert lists.get("d" * 16) is None and lists.get("e" * 16) is None and lists.get("x" * 16) is None
