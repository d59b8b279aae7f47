"""``evals run --transport memory|http|stdio``: the same traces and numbers over each; each session its own state."""

from __future__ import annotations

import json

import pytest

from client.agent import result_text
from evals.core.run import RunOptions, run_benchmark
from evals.core.transport import MemorySessions, resolve_transport
from server import BenchmarkMount, ToolServer
from tool_specs import StaticCatalog, ToolSpec


async def _run(run_traces, tmp_path, benchmark: str, transport: str | None, limit: int, **kw: object) -> tuple[dict, dict, dict]:
    run = tmp_path / f"{benchmark}-{transport}"
    opts = RunOptions(benchmark=benchmark, model="oracle", limit=limit, concurrency=3, run_dir=run,
                      progress=False, transport=transport, **kw)  # type: ignore[arg-type]
    result, summary = await run_benchmark(opts)
    assert result.completed == limit and result.errored == 0
    traces = run_traces(run)
    assert len(traces) == limit
    return traces, summary["metrics"], json.loads((run / "config.json").read_text())


@pytest.mark.parametrize("benchmark,limit,stdio_limit", [("familytool-b", 8, 2), ("nestools", 8, 0)])
async def test_every_transport_gives_the_same_traces_and_numbers(data_dir, run_traces, tmp_path, benchmark, limit, stdio_limit):
    memory, numbers, config = await _run(run_traces, tmp_path, benchmark, None, limit)
    assert config["run"]["transport"] == "memory"  # the default for a server the run starts itself
    http, http_numbers, http_config = await _run(run_traces, tmp_path, benchmark, "http", limit)
    assert http_config["run"]["transport"] == "http"
    assert http == memory and http_numbers == numbers
    if stdio_limit:  # a server process per session: slow, so fewer tasks
        stdio, _, stdio_config = await _run(run_traces, tmp_path, benchmark, "stdio", stdio_limit)
        assert stdio_config["run"]["transport"] == "stdio"
        assert stdio == {k: v for k, v in memory.items() if k in stdio} and len(stdio) == stdio_limit
    assert all(t["status"] == "completed" for t in memory.values())


def test_transport_flags_that_do_not_go_together_are_refused():
    def opts(**kw: object) -> RunOptions:
        return RunOptions(benchmark="b", model="oracle", **kw)  # type: ignore[arg-type]

    assert resolve_transport(opts()) == "memory"
    assert resolve_transport(opts(server_url="http://127.0.0.1:1")) == "http"
    assert resolve_transport(opts(transport="stdio")) == "stdio"
    with pytest.raises(ValueError, match="--server-url serves over HTTP; --transport memory"):
        resolve_transport(opts(server_url="http://127.0.0.1:1", transport="memory"))
    with pytest.raises(ValueError, match="--server-url serves over HTTP; --transport stdio"):
        resolve_transport(opts(server_url="http://127.0.0.1:1", transport="stdio"))
    with pytest.raises(ValueError, match="unknown --transport 'pigeon'"):
        resolve_transport(opts(transport="pigeon"))


BOOK = ToolSpec(
    name="book_hotel",
    description="Book a hotel.",
    input_schema={"type": "object", "properties": {"hotel": {"type": "string"}}, "required": ["hotel"]},
    output_schema={"type": "object", "properties": {"book_details": {"type": "string"}, "availability": {"type": "string"}}},
    executor={"kind": "placeholder"},
)


async def test_memory_sessions_of_one_endpoint_keep_their_own_executor_state():
    sessions = MemorySessions(ToolServer([BenchmarkMount(StaticCatalog("nested", {"t1": [BOOK]}))]))
    async with sessions.session("nested", "t1") as a, sessions.session("nested", "t1") as b:
        first = await a.call_tool("book_hotel", {"hotel": "Ritz"})
        assert first.structured_content == {"book_details": "API_call_0", "availability": "API_call_1"}
        # b's numbering starts at 0; a goes on where it was
        assert (await b.call_tool("book_hotel", {"hotel": "Ritz"})).structured_content["book_details"] == "API_call_0"
        assert (await a.call_tool("book_hotel", {"hotel": "Ritz"})).structured_content["book_details"] == "API_call_2"
        bad = await a.call_tool("book_hotel", {"hotel": 3})  # a malformed argument: an error result, not a crash
        assert bad.is_error and "hotel" in result_text(bad)
    async with sessions.session("nested", "t1") as c:  # a new session starts from scratch
        assert (await c.call_tool("book_hotel", {"hotel": "Ritz"})).structured_content["book_details"] == "API_call_0"


async def test_memory_sessions_ask_for_server_discover_once():
    """Later sessions adopt the first one's ``server/discover`` result (one per MemorySessions, i.e. per run)."""
    from client.mcp_session import list_all_tools

    methods: list[str] = []

    class Count:
        async def __call__(self, ctx, call_next):  # noqa: ANN001, ANN204
            methods.append(ctx.method)
            return await call_next(ctx)

    class Counting(ToolServer):
        def mcp_server(self, default=None):  # noqa: ANN001, ANN201
            server = super().mcp_server(default)
            server.middleware.append(Count())
            return server

    tool_server = Counting([BenchmarkMount(StaticCatalog("nested", {"t1": [BOOK], "t2": [BOOK]}))])
    sessions = MemorySessions(tool_server)
    versions = []
    for task_id in ("t1", "t2", "t1"):
        async with sessions.session("nested", task_id) as session:
            assert [t.name for t in await list_all_tools(session)] == ["book_hotel"]
            result = await session.call_tool("book_hotel", {"hotel": "Ritz"})
            assert result.structured_content == {"book_details": "API_call_0", "availability": "API_call_1"}
            versions.append(session.session.protocol_version)
    assert methods.count("server/discover") == 1 and methods.count("tools/list") == 3 and methods.count("tools/call") == 3
    assert versions[0] is not None and len(set(versions)) == 1
    async with MemorySessions(tool_server).session("nested", "t1") as session:  # another run discovers again
        await list_all_tools(session)
    assert methods.count("server/discover") == 2
