"""A model that sends 10 MB tool-call arguments (issue 26, item 5): each argument is stored once, a
trace keeps at most --trace-max-value-bytes of one value (the cut marked, the length kept, the flag
in config.json), and ``evals run`` ends. The model is the real OpenAI SDK against the scripted local
stand-in (tests/client/fake_providers.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from fake_providers import FakeProviderServer, openai_chat, tool_call

from client.adapters.openai_adapter import OpenAIAdapter
from client.agent import AgentConfig, run_agent
from client.mcp_session import connect
from client.runner import run_episodes
from client.runs import RunDir, request_history
from server import BenchmarkMount, EndpointRef, ToolServer
from tool_specs import StaticCatalog, ToolSpec

SIZE = 10_000_000


def _big(n: int) -> str:
    return f"HUGE-ARGUMENT-{n}-" + "y" * SIZE


def _calls_three_times(body: dict[str, Any]) -> dict[str, Any]:
    """Calls ``store`` with a new 10 MB argument on each of three turns, then answers."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if turn >= 3:
        return openai_chat(text="stored", usage=(10, 2))
    return openai_chat(tool_calls=[tool_call("store", _raw(turn), id=f"call-{turn}")], usage=(10, 2))


def _raw(turn: int) -> str:
    """The argument text as the model writes it: with spaces, then compact (as most real models do)."""
    return json.dumps({"blob": _big(turn)}, separators=(",", ":") if turn == 1 else None)


async def _ok(spec: Any, arguments: dict[str, Any], ctx: Any) -> str:
    return f"stored {len(arguments['blob'])} characters"


def _server() -> ToolServer:
    store = ToolSpec(name="store", description="Store a blob.", executor=_ok,
                     input_schema={"type": "object", "properties": {"blob": {"type": "string"}}})
    return ToolServer([BenchmarkMount(StaticCatalog("big", {"t1": [store]}))])


async def _run(tmp_path, max_value_bytes):  # noqa: ANN001, ANN202
    ts = _server()
    run_dir = RunDir(tmp_path / "run", {"benchmark": "big"}, max_value_bytes=max_value_bytes)
    with FakeProviderServer() as fake:
        fake.openai.respond_with(_calls_three_times)
        model = OpenAIAdapter("m", base_url=fake.openai_base_url, timeout=120.0)

        async def episode(task_id, recorder):  # noqa: ANN001, ANN202
            async with connect(ts.mcp_server(EndpointRef("big", task_id))) as session:
                return await run_agent(model, session, "store them", recorder, AgentConfig(max_turns=5))

        result = await run_episodes(run_dir, ["t1"], episode, progress=False)
        await model.aclose()
    assert result.completed == 1
    return run_dir


async def test_each_huge_argument_is_stored_once_and_the_requests_can_be_rebuilt(tmp_path):
    run_dir = await _run(tmp_path, None)  # no cap: only the sharing
    traces = (tmp_path / "run" / "traces.jsonl").read_bytes()
    events = (tmp_path / "run" / "events.jsonl").read_bytes()
    trace = run_dir.latest_traces()["t1"]
    for n in range(3):
        marker = f"HUGE-ARGUMENT-{n}-".encode()
        # once in the events (the tool_call event; the model_response and later requests refer to it),
        # once in the outcome the scorers read (its calls: arguments, no second raw copy); was 9 copies
        assert traces.count(marker) == 2, (n, traces.count(marker))
        assert json.dumps(trace["events"]).count(marker.decode()) == 1
        assert events.count(marker) == 0  # the event log elides long strings
    assert len(traces) < 2 * 3 * SIZE * 1.05
    calls = [e for e in trace["events"] if e["kind"] == "tool_call"]
    assert [c["arguments"]["blob"] for c in calls] == [_big(n) for n in range(3)]  # what scorers read
    requests = request_history(trace)
    assert len(requests) == 4
    last = requests[-1]["messages"]
    sent = [tc for m in last if m.get("role") == "assistant" for tc in m.get("tool_calls") or []]
    assert [tc["arguments"] for tc in sent] == [{"blob": _big(n)} for n in range(3)]
    assert [tc["raw_arguments"] for tc in sent] == [_raw(n) for n in range(3)]  # exactly as the model wrote it


async def test_a_trace_keeps_at_most_the_cap_of_one_value_and_marks_the_cut(tmp_path):
    run_dir = await _run(tmp_path, 100_000)
    size = (tmp_path / "run" / "traces.jsonl").stat().st_size
    assert size < 2_000_000, size  # 3 x 10 MB sent; at most a few capped copies kept
    trace = run_dir.latest_traces()["t1"]
    calls = [e for e in trace["events"] if e["kind"] == "tool_call"]
    blob = calls[0]["arguments"]["blob"]
    assert blob.startswith("HUGE-ARGUMENT-0-yyy") and len(blob.encode()) < 100_200
    assert blob.endswith(f"…[cut by --trace-max-value-bytes 100000: the value had {SIZE + 16} characters "
                         f"({SIZE + 16} bytes)]")


def test_evals_run_records_the_cap_keeps_traces_small_and_ends(data_dir, tmp_path):
    run = tmp_path / "run"

    def huge_call(body: dict[str, Any]) -> dict[str, Any]:
        fn = body["tools"][0]["function"]
        name = next(iter((fn.get("parameters") or {}).get("properties") or {"x": 0}))
        return openai_chat(tool_calls=[tool_call(fn["name"], {name: _big(0)})], usage=(10, 2))

    with FakeProviderServer() as fake:
        fake.openai.respond_with(huge_call)
        proc = subprocess.run(
            [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "openai:m", "--base-url",
             fake.openai_base_url, "--limit", "3", "--concurrency", "3", "--run-dir", str(run), "--no-progress",
             "--trace-max-value-bytes", "200000"],
            capture_output=True, text=True, timeout=600)  # ends: it does not hang once the episodes are done
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    config = json.loads((run / "config.json").read_text())
    assert config["options"]["trace_max_value_bytes"] == 200_000
    size = (run / "traces.jsonl").stat().st_size
    assert size < 3 * 10 * 200_000, size  # each of 3 episodes: a few capped copies, never 10 MB
    assert (run / "traces.jsonl").read_bytes().count(b"[cut by --trace-max-value-bytes 200000: the value had") >= 3
    default = RunDir.open(run).config
    assert default is not None
