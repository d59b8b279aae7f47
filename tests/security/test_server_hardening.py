"""A hostile client against the real HTTP/stdio server (issue 16, items 4-7): every attack here got
through once. Caps and timeouts are set small so each test takes a second or less; 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import time
from collections.abc import AsyncIterator

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from client.agent import result_text
from client.mcp_session import connect
from server import (
    BenchmarkMount,
    HTTPLimits,
    ServerConfigError,
    SessionLimits,
    ToolServer,
    check_bind,
    create_app,
    serve_in_background,
)
from tool_specs import StaticCatalog, ToolSpec

PAY = ToolSpec(
    name="pay",
    description="Pay a booking.",
    input_schema={"type": "object", "properties": {"book_info": {"type": "string"}}},
    executor={"kind": "placeholder"},
)
CATALOG = StaticCatalog("shop", {"t1": [PAY], "t2": [PAY]})
LEGACY = "2025-06-18"  # a handshake-era protocol version: the session lives on the server (Mcp-Session-Id)
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def tool_server(**limits: float) -> ToolServer:
    return ToolServer([BenchmarkMount(CATALOG)], session_limits=SessionLimits(**limits))  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def served(ts: ToolServer, **http: float) -> AsyncIterator[str]:
    async with serve_in_background(create_app(ts, json_response=True), limits=HTTPLimits(**http)) as url:  # type: ignore[arg-type]
        yield url


async def open_legacy(http: httpx2.AsyncClient, url: str) -> str:
    """Open a handshake-protocol session the way an old client does, and never close it."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}}
    r = await http.post(url, json=body, headers=HEADERS)
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                        headers={**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": LEGACY})
    assert r.status_code == 202, r.text
    return sid


async def legacy_call(http: httpx2.AsyncClient, url: str, sid: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "pay", "arguments": {}}}
    return await http.post(url, json=body, headers={**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": LEGACY})


# ---- 4. session exhaustion ------------------------------------------------------------------------
async def test_never_closed_sessions_do_not_lock_out_new_clients():
    ts = tool_server(max_sessions=4, max_sessions_per_endpoint=3, idle_timeout=60)
    async with served(ts) as url, httpx2.AsyncClient(timeout=10) as http:
        other = await open_legacy(http, url + "/mcp/shop/t2")
        flood = [await open_legacy(http, url + "/mcp/shop/t1") for _ in range(20)]
        # a well-behaved client still gets in (the SDK alone answers 503 once its cap is reached)
        async with Client(streamable_http_client(url + "/mcp/shop/t1", http_client=http), mode="legacy") as c:
            assert result_text(await c.call_tool("pay", {})) == '{"result": "API_call_0"}'
        # the oldest idle sessions made room; the newest are still served
        assert (await legacy_call(http, url + "/mcp/shop/t1", flood[0])).status_code == 404
        assert (await legacy_call(http, url + "/mcp/shop/t1", flood[-1])).status_code == 200
        # flooding one endpoint (its own cap: 3) never closed the session of another
        assert (await legacy_call(http, url + "/mcp/shop/t2", other)).status_code == 200


async def test_idle_handshake_sessions_expire():
    # idle_timeout long enough that a loaded machine makes the first call in time; the sleep well past it
    ts = tool_server(idle_timeout=3.0)
    async with served(ts) as url, httpx2.AsyncClient(timeout=60) as http:
        sid = await open_legacy(http, url + "/mcp/shop/t1")
        assert (await legacy_call(http, url + "/mcp/shop/t1", sid)).status_code == 200
        await asyncio.sleep(4.0)
        assert (await legacy_call(http, url + "/mcp/shop/t1", sid)).status_code == 404


async def test_named_sessions_are_capped_with_a_clear_error():
    ts = tool_server(max_sessions=3, max_sessions_per_endpoint=2, idle_timeout=60)
    async with served(ts) as url:
        async with connect(url + "/mcp/shop/t1?session=a") as a:
            assert result_text(await a.call_tool("pay", {})) == '{"result": "API_call_0"}'
            for name in ("b", "c"):  # two more on t1: its cap is 2, so a (the least recently used) goes
                async with connect(url + f"/mcp/shop/t1?session={name}") as s:
                    await s.call_tool("pay", {})
            with pytest.raises(Exception, match="session .*a.* is closed .*cap"):  # never a silently fresh state
                await a.call_tool("pay", {})
        for name in ("d", "e"):  # 2 on t1 + 2 on t2 > 3 in total: the oldest (b) goes
            async with connect(url + f"/mcp/shop/t2?session={name}") as s:
                await s.call_tool("pay", {})
        async with connect(url + "/mcp/shop/t1?session=b") as b:
            with pytest.raises(Exception, match="session .*b.* is closed .*3 sessions is the cap"):
                await b.call_tool("pay", {})
    assert len(ts._session_states) <= 3


async def test_idle_named_sessions_expire_with_a_clear_error():
    ts = tool_server(idle_timeout=3.0)  # long enough for a loaded machine's first call; the sleeps well past it
    async with served(ts) as url:
        async with connect(url + "/mcp/shop/t2?session=d") as d:
            await d.call_tool("pay", {})
            await asyncio.sleep(4.0)
            with pytest.raises(Exception, match="idle for more than 3 s"):
                await d.call_tool("pay", {})
        async with connect(url + "/mcp/shop/t2") as shared:  # requests that name no session share a state
            assert result_text(await shared.call_tool("pay", {})) == '{"result": "API_call_0"}'
            await asyncio.sleep(4.0)
            assert result_text(await shared.call_tool("pay", {})) == '{"result": "API_call_0"}'  # expired: anew


@pytest.mark.parametrize("flag", [["--max-sessions", "0"], ["--header-timeout", "0"], ["--session-idle-timeout", "-1"]])
def test_serve_refuses_limits_that_cannot_work(flag, capsys):
    from evals.cli import main

    assert main(["serve", "--port", "1", *flag]) == 2
    assert "error:" in capsys.readouterr().err


# ---- 5. slow and idle connections -----------------------------------------------------------------
def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``sock`` within ``seconds`` (whatever it sends first is skipped)."""
    sock.settimeout(0.1)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except ConnectionResetError:
            return True
    return False


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=2)


async def test_slow_headers_slow_bodies_and_silent_connections_are_closed():
    async with served(tool_server(), header_timeout=0.3, body_timeout=0.3, keep_alive_timeout=0.3) as url:
        silent, slow_head, slow_body = _connect(url), _connect(url), _connect(url)
        slow_head.sendall(b"POST /mcp/shop/t1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        slow_body.sendall(b"POST /mcp/shop/t1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 1000\r\n\r\n{\"jsonrpc\":")
        try:
            closed = await asyncio.gather(*(asyncio.to_thread(_closed_within, s, 30.0) for s in (silent, slow_head, slow_body)))
            assert closed == [True, True, True]
        finally:
            for s in (silent, slow_head, slow_body):
                s.close()
        # a normal request is unaffected
        async with httpx2.AsyncClient() as http:
            assert (await http.get(url + "/health")).status_code == 200


async def test_connection_limit_closes_the_oldest_idle_connection():
    async with served(tool_server(), max_connections=4, header_timeout=30, keep_alive_timeout=30) as url:
        idle = [_connect(url) for _ in range(4)]
        try:
            await asyncio.sleep(0.1)
            async with httpx2.AsyncClient() as http:  # a fifth client still gets in
                assert (await http.get(url + "/health")).status_code == 200
            assert await asyncio.to_thread(_closed_within, idle[0], 30.0)  # the oldest idle one made room
        finally:
            for s in idle:
                s.close()


async def test_at_the_connection_limit_with_every_connection_busy_a_new_one_is_closed():
    async with served(tool_server(), max_connections=2, body_timeout=30) as url:
        busy = [_connect(url) for _ in range(2)]
        try:
            for s in busy:  # each is sending a request body: not idle
                s.sendall(b"POST /mcp/shop/t1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
            await asyncio.sleep(1.0)
            extra = _connect(url)
            assert await asyncio.to_thread(_closed_within, extra, 30.0)
            extra.close()
        finally:
            for s in busy:
                s.close()
        async with httpx2.AsyncClient(timeout=60) as http:  # room again once they are gone (the server may
            for _ in range(300):  # take a moment to see them closed on a loaded machine)
                with contextlib.suppress(httpx2.HTTPError):
                    if (await http.get(url + "/health")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
            assert (await http.get(url + "/health")).status_code == 200


# ---- 6. CPU amplification through a long tool name ------------------------------------------------
async def test_a_long_unknown_tool_name_gets_no_suggestion():
    ts = tool_server()
    async with served(ts) as url, httpx2.AsyncClient(timeout=30) as http, Client(
        streamable_http_client(url + "/mcp/shop/t1", http_client=http), mode="legacy"  # the name in the body
    ) as c:
        near = await c.call_tool("Pay", {})
        assert near.is_error and "Did you mean: pay?" in result_text(near)
        # squashed, this name is "pay": it used to be compared with every tool, at a cost that grows
        # with its length; past 128 characters no comparison is made
        long = await c.call_tool("pay" + "_" * 500_000, {})
        text = result_text(long)
        assert long.is_error and "Did you mean" not in text and "Unknown tool 'pay____" in text
        assert len(text) < 1000


# ---- 7. smaller ones ------------------------------------------------------------------------------
@pytest.mark.parametrize("token", ["", " ", "\t\n", " secret", "secret "])
def test_a_blank_or_padded_token_is_refused(token):
    with pytest.raises(ServerConfigError, match="blank"):
        check_bind("0.0.0.0", token)
    with pytest.raises(ServerConfigError, match="blank"):
        create_app(tool_server(), host="127.0.0.1", token=token)


async def test_a_session_is_bound_to_the_endpoint_that_opened_it():
    async with served(tool_server()) as url, httpx2.AsyncClient(timeout=10) as http:
        sid = await open_legacy(http, url + "/mcp/shop/t1")
        assert (await legacy_call(http, url + "/mcp/shop/t1", sid)).status_code == 200
        moved = await legacy_call(http, url + "/mcp/shop/t2", sid)
        assert moved.status_code == 404
        assert "was opened on /mcp/shop/t1" in moved.json()["error"]["message"]


STDIO_SERVER = (
    "import asyncio\n"
    "from server import BenchmarkMount, EndpointRef, ToolServer, serve_stdio\n"
    "from tool_specs import StaticCatalog, ToolSpec\n"
    "pay = ToolSpec(name='pay', description='Pay.', input_schema={'type': 'object'}, executor={'kind': 'placeholder'})\n"
    "ts = ToolServer([BenchmarkMount(StaticCatalog('shop', {'t1': [pay]}))], default=EndpointRef('shop', 't1'))\n"
    "asyncio.run(serve_stdio(ts))\n"
)


def test_malformed_stdio_lines_get_a_json_rpc_error_and_the_session_goes_on():
    import subprocess

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}}
    lines = [b"this is not json", b'{"jsonrpc": "2.0", "id": 7, "method": 5}', json.dumps(initialize).encode()]
    proc = subprocess.run([sys.executable, "-c", STDIO_SERVER], input=b"\n".join(lines) + b"\n",
                          capture_output=True, timeout=60)
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [(r["id"], r.get("error", {}).get("code")) for r in replies] == [(None, -32700), (None, -32600), (1, None)]
    assert replies[2]["result"]["serverInfo"]["name"] == "mcp-multihop-evals"


async def test_stdio_serves_a_well_behaved_client():
    async with connect(StdioServerParameters(command=sys.executable, args=["-c", STDIO_SERVER])) as c:
        assert result_text(await c.call_tool("pay", {})) == '{"result": "API_call_0"}'


# ---- issue 36, item 16: a huge id or name is never echoed whole ----------------------------------
HUGE = "x" * 20_000  # far past what a message shows, well within what a URL or request may carry


def _cut(message: str) -> bool:
    """A message that shows a huge name cut short, with its length."""
    return len(message) < 1000 and " chars)" in message


async def test_huge_ids_and_names_are_cut_in_errors():
    from mcp.shared.exceptions import MCPError

    ts = tool_server(max_sessions=1, idle_timeout=60)
    async with served(ts) as url, httpx2.AsyncClient(timeout=30) as http:
        async with connect(url + f"/mcp/shop/t1?session={HUGE}") as c:
            await c.call_tool("pay", {})
            for uri in (f"task://shop/{HUGE}", f"kg://shop/entity/{HUGE}"):
                with pytest.raises(MCPError) as unknown:
                    await c.read_resource(uri)
                assert _cut(str(unknown.value)), str(unknown.value)[:300]
            with pytest.raises(MCPError) as cursor:
                await c.list_tools(cursor=HUGE)
            assert _cut(str(cursor.value)), str(cursor.value)[:300]
            tool = await c.call_tool(HUGE, {})
            assert tool.is_error and _cut(result_text(tool)), result_text(tool)[:300]
            async with connect(url + "/mcp/shop/t1?session=other") as o:  # the cap of 1 closes the huge one
                await o.call_tool("pay", {})
            with pytest.raises(MCPError) as closed:
                await c.call_tool("pay", {})
            assert _cut(str(closed.value)), str(closed.value)[:300]
        r = await http.post(url + f"/mcp/shop/{HUGE}", headers=HEADERS,
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert _cut(r.text), r.text[:300]


async def test_a_huge_entity_name_in_a_resource_uri_is_cut(tmp_path):
    """The KG's "unknown entity" message quoted the name whole; the server cuts what it relays."""
    from mcp.shared.exceptions import MCPError

    from kg_store import KGStore
    from server import KGConfig

    store = KGStore.from_triples(tmp_path / "db", [("Bob", "mother", "Ann")])
    ts = ToolServer([BenchmarkMount(StaticCatalog("fam", {"t1": [PAY]}), kg=KGConfig(store))])
    async with served(ts) as url, connect(url + "/mcp/fam/t1") as c:
        with pytest.raises(MCPError) as unknown:
            await c.read_resource(f"kg://fam/entity/{HUGE}")
        assert _cut(str(unknown.value)), str(unknown.value)[:300]
        with pytest.raises(MCPError, match="unknown entity 'Bobb'"):  # a short name is quoted whole
            await c.read_resource("kg://fam/entity/Bobb")
