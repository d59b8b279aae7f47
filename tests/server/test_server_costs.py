"""What one episode costs the server: no 40 ms stalls per response, no hidden tools/list per call."""

from __future__ import annotations

import asyncio
import socket

import httpx2
import pytest

from client.mcp_session import connect, list_all_tools
from server import ToolServer, create_app, serve_in_background
from server.core import EndpointRef
from server.http import bind_socket

TASK = "KGMTUbench_0"


async def test_responses_are_not_held_back_by_nagle() -> None:
    """The listening socket must be a TCP socket as far as asyncio knows, so accepted connections get
    TCP_NODELAY; otherwise each response's body waits for the client's delayed ACK (~40 ms). Checked on
    the accepted socket itself (the latency is measured by ``bench/``, not asserted here)."""
    sock, url = bind_socket("127.0.0.1", 0)
    nodelay: list[int] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nodelay.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=sock)
    async with server:
        _, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
        for _ in range(3000):  # up to 30 s: a loaded machine may take a while to run the accept callback
            if nodelay:
                break
            await asyncio.sleep(0.01)
        writer.close()
    assert nodelay and nodelay[0] != 0, "accepted connections do not have TCP_NODELAY"


@pytest.mark.parametrize("json_response", [False, True])
async def test_tool_calls_do_not_list_the_tools_again(tool_server: ToolServer, monkeypatch, json_response) -> None:
    """The SDK checks ``Mcp-Param-*`` headers against the tool's input schema; the server hands it the
    schema directly instead of letting it run (and serialise) a whole tools/list for every call."""
    listed = []
    original = ToolServer._list_tools

    def counting(self, ref, params):  # noqa: ANN001, ANN202
        listed.append(ref)
        return original(self, ref, params)

    monkeypatch.setattr(ToolServer, "_list_tools", counting)
    async with serve_in_background(create_app(tool_server, json_response=json_response)) as url:
        async with connect(f"{url}/mcp/familytool-b/{TASK}") as client:
            await list_all_tools(client)
            for _ in range(3):
                res = await client.call_tool("kg_neighbors", {"entity": "Bob"})
                assert not res.is_error
    assert listed == [EndpointRef("familytool-b", TASK)]


def test_input_schema_lookup_follows_the_endpoint(tool_server: ToolServer) -> None:
    from server.core import current_endpoint

    lookup = tool_server.server.get_tool_input_schema
    assert lookup is not None
    assert lookup("kg_search_path") is None  # no endpoint: nothing to validate
    token = current_endpoint.set(EndpointRef("familytool-b", TASK))
    try:
        assert lookup("kg_search_path") == tool_server.endpoint_tools(EndpointRef("familytool-b", TASK))["kg_search_path"].input_schema
        assert lookup("no_such_tool") is None
    finally:
        current_endpoint.reset(token)


async def test_sessions_share_discovery_and_output_validators(tool_server: ToolServer) -> None:
    """With a shared HTTP client and a ``discovery_key``, only the first session sends server/discover;
    every session reuses the process's compiled output-schema validators (and results are still
    validated against them)."""
    import json

    from client import mcp_session
    from client.mcp_session import make_http_client
    from evals.benchmarks.familytool.data import load_tasks

    task_id = "KGMTUbench_4"  # its gold tool (SearchHouse) declares an output schema
    gold = next(t for t in load_tasks("b") if t.id == task_id).gold_calls[0]
    methods: list[str] = []

    async def record(request: httpx2.Request) -> None:
        methods.append(json.loads(request.content).get("method") if request.content else request.method)

    validators = []
    async with serve_in_background(create_app(tool_server, json_response=True)) as url:
        async with make_http_client() as http:
            http.event_hooks["request"].append(record)
            for _ in range(3):
                async with connect(f"{url}/mcp/familytool-b/{task_id}", http_client=http, discovery_key=url) as client:
                    await list_all_tools(client)
                    res = await client.call_tool(gold.name, gold.arguments)
                    assert not res.is_error and res.structured_content is not None
                    session = client.session
                    assert session.protocol_version is not None
                    schema = session._tool_output_schemas[gold.name]  # noqa: SLF001
                    assert schema is not None
                    validators.append(session._output_schema_validator(gold.name, schema))  # noqa: SLF001
            async with connect(f"{url}/mcp/familytool-b/{TASK}", http_client=http) as client:  # no key: discovers
                await list_all_tools(client)
    assert methods.count("server/discover") == 2 and methods.count("tools/call") == 3
    assert validators[0] is validators[1] is validators[2]
    assert list(validators[0].iter_errors(res.structured_content)) == []
    assert list(validators[0].iter_errors({"unexpected": "shape"}))  # it does validate
    with pytest.raises(RuntimeError, match="Invalid schema for tool t"):
        mcp_session.shared_output_validator("t", {"type": 12})


async def test_concurrent_sessions_borrow_http_clients_of_their_own(tool_server: ToolServer) -> None:
    """Each open session has an HTTP client (and connection pool) to itself; clients are reused by later
    sessions, share one discover result, and are closed with the pool."""
    import asyncio
    import json

    from client.mcp_session import HTTPClientPool

    methods: list[str] = []

    async def record(request: httpx2.Request) -> None:
        methods.append(json.loads(request.content).get("method") if request.content else request.method)

    borrowed: list[httpx2.AsyncClient] = []
    async with serve_in_background(create_app(tool_server, json_response=True)) as url:
        async with HTTPClientPool() as pool:

            async def session() -> None:
                async with pool.borrow() as http:
                    assert http not in in_use
                    in_use.add(http)
                    if record not in http.event_hooks["request"]:
                        http.event_hooks["request"].append(record)
                    borrowed.append(http)
                    async with connect(f"{url}/mcp/familytool-b/{TASK}", http_client=http, discovery_key=url) as client:
                        assert [t.name for t in await list_all_tools(client)]
                        await all_open.wait()  # all of them open at once, however slow the machine
                    in_use.discard(http)

            in_use: set[httpx2.AsyncClient] = set()
            all_open = asyncio.Barrier(6)  # resets once the six have passed: the second round uses it again
            await asyncio.gather(*(session() for _ in range(6)))
            assert pool.size == 6 and len(set(borrowed)) == 6
            first_discovers = methods.count("server/discover")
            assert 1 <= first_discovers <= 6
            await asyncio.gather(*(session() for _ in range(6)))
            assert pool.size == 6  # the same clients again
            assert methods.count("server/discover") == first_discovers  # later sessions adopt the result
            assert methods.count("tools/list") == 12
    assert all(http.is_closed for http in borrowed)
    with pytest.raises(RuntimeError, match="closed"):
        async with pool.borrow():
            pass


def test_copies_of_one_spec_share_their_listing_entry() -> None:
    """A benchmark that makes a task's tools as copies of one spec per function (another executor, other
    annotations: BFCL's multi-turn tasks) has each listing entry dumped once, not once per task; a copy
    that lists differently (another name, description or title) gets its own entry."""
    from server import BenchmarkMount
    from tool_specs import StaticCatalog, ToolSpec

    template = ToolSpec(name="ls", description="list", input_schema={"type": "object", "properties": {"a": {"type": "string"}}})
    tasks = {f"t{i}": [template.model_copy(update={"annotations": {"task_id": f"t{i}"}})] for i in range(3)}
    renamed = template.model_copy(update={"name": "dir"})
    tasks["t3"] = [renamed, template.model_copy(update={"title": "List"})]
    server = ToolServer([BenchmarkMount(catalog=StaticCatalog("b", tasks))])
    listings = [server._endpoint(EndpointRef("b", t))[1] for t in tasks]
    assert listings[0][0] is listings[1][0] is listings[2][0]  # one dump for the three copies
    assert listings[3][0]["name"] == "dir" and listings[3][1]["title"] == "List" and "title" not in listings[0][0]
    assert all(entry["inputSchema"] == template.input_schema for listing in listings for entry in listing)
