"""Run directories, trace files and the episode recorder, on real files in tmp_path."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from client.adapters.errors import AttemptRecord, ModelError
from client.messages import ModelResponse, ToolCall, ToolDef, Usage, UserMessage
from client.runs import (
    EpisodeOutcome,
    EpisodeRecorder,
    RunConfigMismatch,
    RunDir,
    RunLocked,
    config_hash,
    error_info,
    request_history,
)

CONFIG = {
    "benchmark": "toolhop",
    "model": "openai:gpt-4o-mini",
    "strategy": "agent",
    "options": {"temperature": 0.0, "max_turns": 8},
    "concurrency": 4,
    "limit": 20,
}


def record(task_id: str, status: str = "completed", **extra: object) -> dict[str, object]:
    return {"task_id": task_id, "status": status, "totals": {"input_tokens": 10, "output_tokens": 5}, **extra}


# ---- config -----------------------------------------------------------------------------------


def test_config_written_once_with_metadata(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run", CONFIG)
    stored = json.loads((tmp_path / "run" / "config.json").read_text())
    assert stored["benchmark"] == "toolhop" and stored["options"] == {"temperature": 0.0, "max_turns": 8}
    assert stored["config_hash"] == run.config_hash == config_hash(CONFIG, stored["hash_keys"])
    assert stored["hash_keys"] == ["benchmark", "model", "strategy", "options"]
    assert stored["package_version"] and stored["created_at"]
    before = (tmp_path / "run" / "config.json").read_bytes()
    # Concurrency and limit do not change results: re-opening with other values is fine and keeps the file.
    again = RunDir(tmp_path / "run", {**CONFIG, "concurrency": 32, "limit": None})
    assert again.config_hash == run.config_hash
    assert (tmp_path / "run" / "config.json").read_bytes() == before
    assert RunDir.open(tmp_path / "run").config == stored


def test_config_mismatch_names_the_keys(tmp_path: Path) -> None:
    RunDir(tmp_path / "run", CONFIG)
    changed = {**CONFIG, "model": "openai:gpt-4o", "options": {"temperature": 0.7, "max_turns": 8}}
    with pytest.raises(RunConfigMismatch) as info:
        RunDir(tmp_path / "run", changed)
    message = str(info.value)
    assert "'model'" in message and "openai:gpt-4o-mini" in message and "'options.temperature'" in message
    assert "--run-dir" in message and "force" not in message and "max_turns" not in message
    assert set(info.value.differences) == {"model", "options.temperature"}


def test_config_mismatch_with_caller_hash_keys_and_force(tmp_path: Path) -> None:
    keys = ("benchmark", "model")
    run = RunDir(tmp_path / "run", CONFIG, hash_keys=keys)
    RunDir(tmp_path / "run", {**CONFIG, "strategy": "direct"}, hash_keys=keys)  # strategy not a hash key here
    with pytest.raises(RunConfigMismatch, match='\'benchmark\' is "toolhop" there but "nestools" now'):
        RunDir(tmp_path / "run", {**CONFIG, "benchmark": "nestools"})  # the stored hash keys are used
    forced = RunDir(tmp_path / "run", {**CONFIG, "benchmark": "nestools"}, force=True)
    assert forced.config_hash != run.config_hash
    assert json.loads((tmp_path / "run" / "config.json").read_text())["benchmark"] == "toolhop"
    history = [
        json.loads(line) for line in (tmp_path / "run" / "config.history.jsonl").read_text().splitlines()
    ]
    assert history[0]["differences"] == ["benchmark"] and history[0]["config"]["benchmark"] == "nestools"
    forced.append_trace(record("t1"))
    forced.close()


def test_open_rejects_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        RunDir.open(tmp_path)


def test_tuples_and_lists_compare_equal(tmp_path: Path) -> None:
    RunDir(tmp_path / "run", {**CONFIG, "options": {"stop": ("a", "b")}})
    RunDir(tmp_path / "run", {**CONFIG, "options": {"stop": ["a", "b"]}})


# ---- traces -----------------------------------------------------------------------------------


def test_append_and_read_back_newest_wins(tmp_path: Path) -> None:
    with RunDir(tmp_path / "run", CONFIG) as run:
        run.append_trace(record("a", "errored", error={"type": "X", "message": "m", "retryable": False}))
        run.append_trace(record("b"))
        run.append_trace(record("a"))
        run.append_trace(
            record("c", "errored", error={"type": "ModelError", "message": "429", "retryable": True})
        )
    assert [r["task_id"] for r in run.iter_traces(dedupe=False)] == ["a", "b", "a", "c"]
    latest = run.latest_traces()
    assert list(latest) == ["a", "b", "c"] and latest["a"]["status"] == "completed"
    # c errored with a transient error: not finished (resume runs it again).
    assert run.finished_task_ids() == {"a", "b"}
    summary = run.summary()
    assert (summary.tasks, summary.completed, summary.errored, summary.superseded) == (3, 2, 1, 1)
    assert summary.totals.total_tokens == 45 and summary.spent.total_tokens == 60
    assert summary.errors_by_type == {"ModelError": 1}


def test_traces_written_with_what_they_read_back_as_are_their_scan_while_the_file_is_unchanged(tmp_path: Path) -> None:
    kept = {**record("a"), "outcome": {"x": [1, 2.5, None]}}
    odd = {**record("b"), "outcome": {"x": ("t",), "y": "\ud800"}}  # a tuple and a lone surrogate: parsed from the line
    with RunDir(tmp_path / "run", CONFIG) as run:
        run.append_traces([kept, odd], read_back=[kept, None])
    again = RunDir.open(tmp_path / "run")
    again.share_scan(run)
    scan = again.latest_traces()
    assert scan["a"] is kept  # handed over, not read back
    assert scan["b"]["outcome"] == {"x": ["t"], "y": "\ufffd"}  # as the file holds it
    assert {k: dict(v) for k, v in RunDir.open(tmp_path / "run").latest_traces().items()} == \
        {k: dict(v) for k, v in scan.items()}
    with RunDir(tmp_path / "run", CONFIG) as run2:
        run2.append_trace(record("c"))
    assert list(again.latest_traces()) == ["a", "b", "c"]  # the file changed: read again
    with RunDir(tmp_path / "run", CONFIG) as run3:  # into a file that is not empty: not kept, read
        d = record("d")
        run3.append_traces([d], read_back=[d])
    scan3 = run3.latest_traces()
    assert list(scan3) == ["a", "b", "c", "d"] and scan3["d"] is not d  # the whole file read, not the handed record


def test_reader_skips_and_reports_a_torn_last_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    run = RunDir(tmp_path / "run", CONFIG)
    good = json.dumps(record("a")) + "\n" + json.dumps(record("b")) + "\n"
    torn = json.dumps(record("c"))[:25].encode()
    (run.traces_path).write_bytes(good.encode() + torn)
    scan = run.scan_traces()
    assert [r["task_id"] for r in scan.records] == ["a", "b"] and scan.torn_tail == torn
    assert "torn last line" in caplog.text
    assert run.summary().torn_tail_bytes == len(torn)
    # Writing repairs the file first: the torn bytes move to traces.torn.jsonl, the next line starts fresh.
    run.append_trace(record("c"))
    run.close()
    assert run.traces_path.read_bytes() == good.encode() + (json.dumps(record("c")) + "\n").encode()
    kept = json.loads(run.torn_path.read_text())
    assert base64.b64decode(kept["bytes_b64"]) == torn and kept["offset"] == len(good.encode())
    assert kept["source"] == "traces.jsonl" and kept["text"] == torn.decode()
    scan = run.scan_traces()
    assert scan.torn_tail is None and [r["task_id"] for r in scan.records] == ["a", "b", "c"]


def test_a_whole_record_missing_only_its_newline_is_kept(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.traces_path.write_text(json.dumps(record("a")) + "\n" + json.dumps(record("b")))
    run.append_trace(record("c"))
    run.close()
    assert [r["task_id"] for r in run.iter_traces()] == ["a", "b", "c"]
    assert not run.torn_path.exists()


def test_torn_tail_without_any_newline_and_multibyte_cut(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    torn = json.dumps({"task_id": "é"}, ensure_ascii=False).encode()[:13]  # cut inside the 2-byte "é"
    run.traces_path.write_bytes(torn)
    run.open_for_writing()
    run.close()
    assert run.traces_path.read_bytes() == b""
    assert base64.b64decode(json.loads(run.torn_path.read_text())["bytes_b64"]) == torn


def test_bad_complete_lines_are_skipped_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = RunDir(tmp_path / "run")
    run.traces_path.write_text(
        json.dumps(record("a")) + "\nnot json\n[1, 2]\n\n" + json.dumps(record("b")) + "\n"
    )
    scan = run.scan_traces()
    assert [r["task_id"] for r in scan.records] == ["a", "b"]
    assert [n for n, _ in scan.bad_lines] == [2, 3]
    assert "traces.jsonl:2" in caplog.text and run.summary().bad_lines == 2


def test_trace_lines_must_be_single_lines(tmp_path: Path) -> None:
    with RunDir(tmp_path / "run") as run, pytest.raises(ValueError, match="single line"):
        run.append_trace('{"task_id": "a",\n"status": "completed"}')


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    first = RunDir(tmp_path / "run", CONFIG)
    first.open_for_writing()
    second = RunDir(tmp_path / "run", CONFIG)
    with pytest.raises(RunLocked, match="being written by another process"):
        second.open_for_writing()
    first.close()
    second.open_for_writing()  # released on close
    second.close()


# ---- recorder ---------------------------------------------------------------------------------


def test_recorder_totals_events_and_record(tmp_path: Path) -> None:
    lines: list[str] = []
    usage: list[tuple[int, float]] = []
    rec = EpisodeRecorder(
        "t1", run_attempt=2, config_hash="abc", sink=lines.append, on_usage=lambda t, c: usage.append((t, c))
    )
    messages = [UserMessage("call my mom's restaurant")]
    tools = [ToolDef("BookRestaurant", "book", {"type": "object"})]
    rec.model_request(messages, tools, model="gpt-4o-mini", options={"temperature": 0})
    response = ModelResponse(
        text=None,
        tool_calls=[ToolCall.from_arguments("c1", "BookRestaurant", {"name": "r3"})],
        reasoning=None,
        usage=Usage(input_tokens=100, output_tokens=20, cache_read_tokens=50),
        stop_reason="tool_calls",
        latency_s=0.5,
        model="gpt-4o-mini",
        raw={"id": "x"},
    )
    rec.model_response(response, cost_usd=0.0012)
    rec.tool_call("BookRestaurant", {"name": "r3"}, "booked", {"ok": True}, False, 0.01, call_id="c1")
    rec.tool_call("BookRestaurant", {"name": 3}, "name must be a string", None, True, 0.001)
    err = ModelError("rate_limit", "slow down", status=429, retry_after=1.0)
    rec.attempt_failed(1, err, 1.5)
    rec.attempt_failed(2, AttemptRecord(2, "server_error", 500, "boom", True, None, None, 3.0), None)
    rec.model_error(err)
    messages.append(response.to_assistant_message())  # mutating after recording changes nothing recorded
    rec.model_request(messages, tools)
    rec.model_response({"text": "done", "usage": {"prompt_tokens": 7, "completion_tokens": 3}}, latency_s=0.2)
    rec.note("switching strategy", reason="test")
    rec.event("kg_update", added=[("a", "mother", "b")])
    rec.final_answer("restaurant_0003")

    totals = rec.totals.to_dict()
    assert totals["input_tokens"] == 107 and totals["output_tokens"] == 23 and totals["total_tokens"] == 130
    assert totals["cache_read_tokens"] == 50 and totals["cost_usd"] == pytest.approx(0.0012)
    assert totals["cost_known"] is False  # the second response had no cost estimate
    assert (totals["turns"], totals["tool_calls"], totals["tool_errors"]) == (2, 2, 1)
    assert (totals["model_errors"], totals["retries"]) == (1, 1)
    assert usage == [(120, 0.0012), (10, 0.0)]

    with pytest.raises(RuntimeError, match="build_record"):
        rec.record_view()
    line = rec.build_record("completed", outcome=EpisodeOutcome(data={"calls": [{"name": ("x", 1)}]}))
    trace = json.loads(line)
    view = rec.record_view()  # what a progress score reads: the line's fields, events parsed on demand
    assert view["outcome"] == {"calls": [{"name": ["x", 1]}]}  # as JSON gives it: a tuple is a list
    assert list(view) == list(trace) and len(view) == len(trace)
    assert dict(view) == trace and view.get("events") == trace["events"]
    trace = json.loads(rec.build_record("completed", outcome=EpisodeOutcome(data={"calls": [{"name": "x"}]})))
    assert trace["task_id"] == "t1" and trace["run_attempt"] == 2 and trace["config_hash"] == "abc"
    assert trace["final_answer"] == "restaurant_0003" and trace["error"] is None
    assert trace["outcome"] == {"calls": [{"name": "x"}]}
    kinds = [e["kind"] for e in trace["events"]]
    assert kinds == [
        "model_request",
        "model_response",
        "tool_call",
        "tool_call",
        "attempt_failed",
        "attempt_failed",
        "model_error",
        "model_request",
        "model_response",
        "note",
        "kg_update",
        "final_answer",
    ]
    assert [e["seq"] for e in trace["events"]] == list(range(12))
    first, second = trace["events"][0], trace["events"][7]
    assert (
        first["messages_from"] == 0
        and len(first["messages"]) == 1
        and first["tools"][0]["name"] == "BookRestaurant"
    )
    assert second["messages_from"] == 1 and second["message_count"] == 2 and "tools" not in second
    assert trace["events"][1]["response"]["tool_calls"][0]["arguments"] == {"name": "r3"}
    assert trace["events"][1]["latency_s"] == 0.5
    assert trace["events"][3]["is_error"] is True and trace["events"][2]["call_id"] == "c1"
    assert trace["events"][4]["error"]["details"]["status"] == 429 and trace["events"][4]["delay"] == 1.5
    assert trace["events"][5]["error"]["kind"] == "server_error"

    history = request_history(trace)
    assert len(history) == 2 and history[0]["model"] == "gpt-4o-mini"
    assert [m["role"] for m in history[1]["messages"]] == ["user", "assistant"]
    assert history[1]["tools"] == history[0]["tools"]

    # Every event also went to the sink as it happened, tagged with the episode.
    assert len(lines) == 12
    tagged = [json.loads(line) for line in lines]
    assert {t["episode_id"] for t in tagged} == {rec.episode_id} and tagged[-1]["text"] == "restaurant_0003"


def test_recorder_takes_a_message_object_at_its_place_as_unchanged() -> None:
    """A message of client.messages at the same place as in the previous request is not written again
    (an agent loop passes its conversation every turn); a message put in as a new object is read, even
    one of the same type at that place, and a dict is read every time."""
    from client.messages import AssistantMessage, UserMessage

    rec = EpisodeRecorder("t1")
    first, reply = UserMessage("a"), AssistantMessage(text="b", tool_calls=[])
    rec.model_request([first, reply])
    rec.model_request([first, reply, UserMessage("c")])
    rec.model_request([UserMessage("A"), reply, UserMessage("c")])  # a new object at place 0
    rec.model_request([{"role": "user", "text": "A"}, reply])
    events = rec.events
    assert [(e["messages_from"], e["message_count"]) for e in events] == [(0, 2), (2, 3), (0, 3), (2, 2)]
    history = request_history({"events": events})
    assert [m["text"] for m in history[2]["messages"]] == ["A", "b", "c"]


def test_recorder_rejects_reserved_event_keys() -> None:
    rec = EpisodeRecorder("t1")
    with pytest.raises(ValueError, match=r"reserved key\(s\) \['seq'\]"):
        rec.event("custom", seq=3)


def test_recorder_changed_history_and_tools_are_logged_in_full() -> None:
    rec = EpisodeRecorder("t1")
    rec.model_request([{"role": "user", "text": "a"}, {"role": "assistant", "text": "b"}], [{"name": "x"}])
    rec.model_request(
        [{"role": "user", "text": "EDITED"}, {"role": "assistant", "text": "b"}], [{"name": "y"}]
    )
    events = rec.events
    assert (
        events[1]["messages_from"] == 0
        and len(events[1]["messages"]) == 2
        and events[1]["tools"] == [{"name": "y"}]
    )
    history = request_history({"events": events})
    assert history[1]["messages"][0]["text"] == "EDITED" and history[1]["tools"] == [{"name": "y"}]


def _old_tools_hash(tools: list) -> str:
    """``tools_hash`` as the recorder has always defined it: sha256 of the canonical JSON, 16 hex digits."""
    import hashlib

    from client.runs import canonical_json, to_jsonable

    return hashlib.sha256(canonical_json([to_jsonable(t) for t in tools]).encode("utf-8")).hexdigest()[:16]


def test_recorder_stores_a_tool_list_when_it_changes_and_not_again() -> None:
    """The same ToolDef objects turn after turn are not serialised again; a changed tool (a new object),
    a different list, or a dict edited in place is recorded in full; lines read as dumps_line writes them."""
    from client._runs.jsonutil import dumps_line

    book = ToolDef("BookRestaurant", "book", {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}})
    find = ToolDef("FindRestaurant", "find", {"type": "object"})
    tools = [book, find]
    rec = EpisodeRecorder("t1", sink=lambda _: None)
    rec.model_request([UserMessage("hi")], tools, tool_choice="auto", turn=0)
    rec.model_request([UserMessage("hi")], tools, tool_choice="auto", turn=1)  # the agent loop's case
    rec.model_request([UserMessage("hi")], list(tools), turn=2)  # another list, the same objects
    changed = [book, ToolDef("FindRestaurant", "find a restaurant", {"type": "object"})]
    rec.model_request([UserMessage("hi")], changed, turn=3)
    rec.model_request([UserMessage("hi")], tools, turn=4)  # back to the first list
    as_dicts = [{"name": "x", "input_schema": {"type": "object"}}]
    rec.model_request([UserMessage("hi")], as_dicts, turn=5)
    as_dicts[0]["input_schema"]["required"] = ["y"]  # dicts are read every time
    rec.model_request([UserMessage("hi")], as_dicts, turn=6)
    events = rec.events
    assert ["tools" in e for e in events] == [True, False, False, True, True, True, True]
    assert [e["tools_hash"] for e in events] == [_old_tools_hash(tools)] * 3 + [_old_tools_hash(changed)] + [
        _old_tools_hash(tools), _old_tools_hash([{"name": "x", "input_schema": {"type": "object"}}]), _old_tools_hash(as_dicts)
    ]
    assert events[0]["tools"] == [t.to_dict() for t in tools] and events[3]["tools"][1]["description"] == "find a restaurant"
    assert events[6]["tools"][0]["input_schema"]["required"] == ["y"]
    assert (events[0]["tool_choice"], events[1]["turn"]) == ("auto", 1)
    history = request_history({"events": events})
    assert [h["tools"][1]["description"] for h in history[:5]] == ["find", "find", "find", "find a restaurant", "find"]
    for line in rec.event_lines:  # spliced lines are exactly what serialising the whole event gives
        assert line == dumps_line(json.loads(line))
    # another episode (new objects, same content) gets the same hash and its own copy of the list
    other = EpisodeRecorder("t2")
    other.model_request([UserMessage("hi")], [ToolDef(t.name, t.description, dict(t.input_schema)) for t in tools])
    assert other.events[0]["tools_hash"] == events[0]["tools_hash"] and other.events[0]["tools"] == events[0]["tools"]
    with pytest.raises(TypeError, match="multiple values"):
        rec.model_request([UserMessage("hi")], changed, tools_hash="x")


def test_recorder_response_is_recorded_as_it_was() -> None:
    from client._runs.jsonutil import dumps_line

    rec = EpisodeRecorder("t1")
    response = ModelResponse(
        text="hi", tool_calls=[], reasoning=None, usage=Usage(input_tokens=3, output_tokens=2),
        stop_reason="stop", latency_s=0.25, model="m", raw={"id": "x", "choices": [{"finish_reason": "stop"}]},
    )
    rec.model_response(response, cost_usd=0.5, cached=False)
    response.raw["id"] = "changed later"
    response.usage.input_tokens = 100
    event = rec.events[0]
    assert event["response"] == {**response.to_dict(), "raw": {"id": "x", "choices": [{"finish_reason": "stop"}]},
                                 "usage": Usage(input_tokens=3, output_tokens=2).to_dict()}
    assert event["latency_s"] == 0.25 and event["usage"]["input_tokens"] == 3 and event["cached"] is False
    assert rec.event_lines[0] == dumps_line(event) and rec.totals.input_tokens == 3
    rec.model_response({"text": "ok", "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "latency_s": 2})
    assert rec.events[1]["latency_s"] == 2.0 and rec.totals.output_tokens == 3


def test_recorder_events_of_reads_only_the_kinds_asked_for() -> None:
    rec = EpisodeRecorder("t1")
    rec.model_request([UserMessage("hi")], [ToolDef("x", "", {"type": "object"})])
    rec.tool_call("x", {"a": 1}, "r", {"ok": True}, call_id="c1")
    rec.note("n")
    rec.tool_call("x", {"a": 2}, "s", None, True)
    assert rec.events_of("tool_call") == [e for e in rec.events if e["kind"] == "tool_call"]
    assert [e["kind"] for e in rec.events_of("note", "model_request")] == ["model_request", "note"]
    parent = EpisodeRecorder("t1", episode_id=rec.episode_id)
    parent.adopt_events(rec.event_lines[:2], log=False)  # lines from a worker: their kinds are in the lines
    parent.adopt_events(rec.event_lines[2:])
    assert parent.events_of("tool_call") == rec.events_of("tool_call")


def test_error_info_keeps_attempts_and_retryable() -> None:
    err = ModelError("server_error", "bad gateway", status=502)
    err.attempts.append(AttemptRecord(1, "server_error", 502, "bad gateway", True, None, 0.5, 0.1))
    try:
        raise err
    except ModelError as exc:
        info = error_info(exc)
    assert info["type"] == "ModelError" and info["retryable"] is True and info["attempts"][0]["status"] == 502
    assert "bad gateway" in info["message"] and "Traceback" in info["traceback"]
    assert error_info(ValueError("x"))["retryable"] is False
    assert error_info(TimeoutError())["retryable"] is True


# ---- trace fsyncs off the event loop (group commit) --------------------------------------------


async def test_append_trace_async_group_commits_and_is_durable_on_return(tmp_path: Path, monkeypatch) -> None:
    import asyncio
    import os
    import threading
    import time

    run = RunDir(tmp_path / "run", CONFIG)
    run.open_for_writing()
    calls: list[int] = []
    real_fsync = os.fsync
    loop_thread = threading.get_ident()

    def slow_fsync(fd: int) -> None:
        assert threading.get_ident() != loop_thread or fd != run._traces_fd  # trace fsyncs leave the loop
        calls.append(fd)
        time.sleep(0.02)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    written_before_first_yield = []

    async def finish(i: int) -> None:
        task = asyncio.ensure_future(run.append_trace_async(record(f"t{i}")))
        await asyncio.sleep(0)  # the write happened before the coroutine first yielded
        written_before_first_yield.append((tmp_path / "run" / "traces.jsonl").read_bytes().count(b"\n") > 0)
        written = run._traces_written
        await task
        assert run._traces_synced >= min(written, i + 1)  # our line, at least, is on disk

    await asyncio.gather(*(finish(i) for i in range(20)))
    assert all(written_before_first_yield)
    assert run._traces_synced == run._traces_written == 20
    assert 1 <= len(calls) < 20  # shared fsyncs, not one per line
    assert set(run.latest_traces()) == {f"t{i}" for i in range(20)}
    run.close()


async def test_cancelled_while_syncing_keeps_the_line_and_close_syncs_it(tmp_path: Path, monkeypatch) -> None:
    import asyncio
    import os
    import time

    run = RunDir(tmp_path / "run", CONFIG)
    real_fsync = os.fsync
    # a slow fsync (2 s): still in flight when the task is cancelled, even on a loaded machine
    monkeypatch.setattr(os, "fsync", lambda fd: (time.sleep(2.0), real_fsync(fd))[1])
    task = asyncio.ensure_future(run.append_trace_async(record("t1")))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    run.close()  # waits for the fsync in flight, then fsyncs and closes
    assert set(RunDir(tmp_path / "run").latest_traces()) == {"t1"}
    assert run._traces_synced == run._traces_written == 1


def test_now_iso_is_datetime_isoformat_with_milliseconds() -> None:
    import re
    from datetime import UTC, datetime

    from client._runs.jsonutil import now_iso

    before = datetime.now(UTC)
    stamps = [now_iso() for _ in range(3)]
    after = datetime.now(UTC)
    for stamp in stamps:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", stamp), stamp
        parsed = datetime.fromisoformat(stamp)
        assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= parsed <= after
    assert stamps == sorted(stamps)
