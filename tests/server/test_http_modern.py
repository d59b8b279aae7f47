"""The server's own entry for current-protocol requests (server/http_modern.py) answers as the SDK's does.

Every request below is sent to two real servers on 127.0.0.1: ours, and the same app whose modern
entry is the SDK's own (``StreamableHTTPSessionManager.handle_request``); status, content type and
body must match. Then what the entry does in the request's own task: a client that goes away
cancels its call; a silent call commits the event stream and pings.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from server import BenchmarkMount, ToolServer, create_app, http_modern, serve_in_background
from server.http_modern import ModernEntry
from tool_specs import StaticCatalog, ToolSpec

VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
           "mcp-protocol-version": VERSION}
events: dict[str, Any] = {}


async def _pay(spec: Any, arguments: dict[str, Any], ctx: Any) -> str:
    return f"paid {arguments.get('book_info')}"


async def _wait(spec: Any, arguments: dict[str, Any], ctx: Any) -> str:
    events["started"].set()
    try:
        await asyncio.sleep(arguments.get("seconds", 30))
    except asyncio.CancelledError:
        events["cancelled"].set()
        raise
    return "waited"


PAY = ToolSpec(name="pay", description="Pay a booking.", executor=_pay,
               input_schema={"type": "object", "properties": {"book_info": {"type": "string"}}})
ROUTE = ToolSpec(name="route", description="Route a booking.", executor=_pay, input_schema={
    "type": "object", "properties": {"book_info": {"type": "string", "x-mcp-header": "Book"}}})
NOTE = ToolSpec(name="note", description="Take a note.", executor=_pay, input_schema={"type": "object"})
WAIT = ToolSpec(name="wait", description="Wait.", executor=_wait,
                input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}})


def _tool_server() -> ToolServer:
    return ToolServer([BenchmarkMount(StaticCatalog("shop", {"t1": [PAY, WAIT, ROUTE], "t2": [NOTE]}))])


def _call(method: str, params: dict[str, Any] | None = None, *, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**(params or {}), "_meta": {**META, **(meta or {})}}}


def _post(body: Any, headers: dict[str, str] | None = None, *, method: str | None = None) -> dict[str, Any]:
    h = dict(HEADERS)
    if isinstance(body, dict) and "method" in body:
        h["mcp-method"] = body["method"]
        name = (body.get("params") or {}).get("name")
        if isinstance(name, str):
            h["mcp-name"] = name
    h.update(headers or {})
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return {"method": method or "POST", "headers": {k: v for k, v in h.items() if v}, "content": content}


CASES: dict[str, dict[str, Any]] = {
    "a call": _post(_call("tools/call", {"name": "pay", "arguments": {"book_info": "b1"}})),
    "a call asking for log messages": _post(_call("tools/call", {"name": "pay", "arguments": {"book_info": "b1"}},
                                                  meta={"io.modelcontextprotocol/logLevel": "debug"})),
    "a bad argument": _post(_call("tools/call", {"name": "pay", "arguments": {"book_info": 5}})),
    "non-object arguments": _post(_call("tools/call", {"name": "pay", "arguments": [1, 2]})),
    "an unknown tool": _post(_call("tools/call", {"name": "nope", "arguments": {}})),
    "a routed call with its header": _post(_call("tools/call", {"name": "route", "arguments": {"book_info": "b2"}}),
                                           {"mcp-param-book": "b2"}),
    "a routed call whose header disagrees": _post(
        _call("tools/call", {"name": "route", "arguments": {"book_info": "b2"}}), {"mcp-param-book": "b3"}),
    "a routed call without its header": _post(_call("tools/call", {"name": "route", "arguments": {"book_info": "b2"}})),
    "a listing": _post(_call("tools/list")),
    "a bad cursor": _post(_call("tools/list", {"cursor": "x"})),
    "no tool name": _post(_call("tools/call", {"arguments": {}})),
    "an unknown method": _post(_call("foo/bar")),
    "inputResponses null": _post(_call("tools/call", {"name": "pay", "arguments": {}, "inputResponses": None})),
    "a method header that disagrees": _post(_call("tools/call", {"name": "pay", "arguments": {}}),
                                            {"mcp-method": "tools/list"}),
    "no envelope": _post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
    "bad JSON": _post(b"{not json"),
    "a batch": _post([_call("tools/list")]),
    "a notification": _post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    "a GET": _post(b"", method="GET"),
    "Accept without JSON": _post(_call("tools/list"), {"accept": "text/plain"}),
    "a foreign Host": _post(_call("tools/list"), {"host": "evil.example"}),
    "a foreign Origin": _post(_call("tools/list"), {"origin": "http://evil.example"}),
    "an unknown protocol version": _post(_call("tools/list"), {"mcp-protocol-version": "2099-01-01"}),
}


def _answer(r: httpx2.Response) -> tuple[int, str, Any]:
    kind = r.headers.get("content-type", "").split(";")[0]
    if kind == "text/event-stream":
        body: Any = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:")]
    elif kind == "application/json":
        body = r.json()
    else:
        body = r.text
    return r.status_code, kind, body


@contextlib.asynccontextmanager
async def _served(json_response: bool) -> AsyncIterator[str]:
    app = create_app(_tool_server(), json_response=json_response)
    async with serve_in_background(app) as url:
        yield url


@pytest.mark.parametrize("json_response", [False, True])
async def test_modern_requests_are_answered_as_the_sdks_entry_answers(json_response: bool, monkeypatch) -> None:
    answers: dict[str, dict[str, tuple[int, str, Any]]] = {}
    async with httpx2.AsyncClient(timeout=10) as http:
        async with _served(json_response) as url:
            answers["ours"] = {k: _answer(await http.request(url=url + "/mcp/shop/t1", **v)) for k, v in CASES.items()}
        with monkeypatch.context() as m:
            async def sdk_entry(self: ModernEntry, scope: Any, receive: Any, send: Any) -> None:
                await self.manager.handle_request(scope, receive, send)

            m.setattr(ModernEntry, "__call__", sdk_entry)
            async with _served(json_response) as url:
                answers["sdk"] = {k: _answer(await http.request(url=url + "/mcp/shop/t1", **v)) for k, v in CASES.items()}
    for case in CASES:
        assert answers["ours"][case] == answers["sdk"][case], case
    ours = answers["ours"]
    assert ours["a call"][:2] == (200, "application/json")
    assert ours["a call"][2]["result"]["content"][0]["text"] == "paid b1"
    assert ours["a bad argument"][2]["result"]["isError"] is True
    assert ours["non-object arguments"][2]["result"]["isError"] is True
    assert ours["a routed call with its header"][2]["result"]["content"][0]["text"] == "paid b2"
    assert ours["a routed call whose header disagrees"][0] == 400
    assert ours["a foreign Host"][0] >= 400 and ours["bad JSON"][0] == 400 and ours["a notification"][0] == 202
    logged = ours["a call asking for log messages"]
    if json_response:  # no stream to carry them: dropped
        assert logged[1] == "application/json"
    else:  # the log message, then the result, on one event stream
        assert logged[1] == "text/event-stream"
        assert [m.get("method") for m in logged[2]] == ["notifications/message", None]
        assert logged[2][-1]["result"]["content"][0]["text"] == "paid b1"


async def test_a_client_that_goes_away_cancels_its_call() -> None:
    events.update(started=asyncio.Event(), cancelled=asyncio.Event())
    async with _served(False) as url:
        http = httpx2.AsyncClient(timeout=10)
        call = asyncio.create_task(http.request(url=url + "/mcp/shop/t1", **_post(
            _call("tools/call", {"name": "wait", "arguments": {"seconds": 30}}))))
        await asyncio.wait_for(events["started"].wait(), 10)
        call.cancel()  # the client closes its connection mid-call
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await http.aclose()
        await asyncio.wait_for(events["cancelled"].wait(), 10)


async def test_a_silent_call_commits_the_stream_and_pings(monkeypatch) -> None:
    monkeypatch.setattr(http_modern, "SSE_PING_INTERVAL", 0.1)
    events.update(started=asyncio.Event(), cancelled=asyncio.Event())
    async with _served(False) as url, httpx2.AsyncClient(timeout=10) as http:
        r = await http.request(url=url + "/mcp/shop/t1", **_post(
            _call("tools/call", {"name": "wait", "arguments": {"seconds": 0.5}})))
    assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
    assert ": ping" in r.text
    status, _, messages = _answer(r)
    assert messages[-1]["id"] == 7 and messages[-1]["result"]["content"][0]["text"] == "waited"
    assert not events["cancelled"].is_set()


PATHS = ["/mcp/shop/t1", "/mcp/shop", "/mcp/shop/", "/mcp/shop/t1/", "/mcp/nope", "/mcp/shop/nope", "/mcp", "/mcp/",
         "/mcp//t1", "/health", "/mcp/shop/t1?session=a"]


async def test_endpoint_requests_are_routed_as_starlettes_routes_route_them() -> None:
    """The app hands endpoint requests to the endpoint itself (server.http._App); with that off, Starlette's
    router does: every path and method answers the same."""
    answers: dict[str, list[tuple[int, str, Any]]] = {}
    async with httpx2.AsyncClient(timeout=10) as http:
        for how in ("ours", "starlette"):
            app = create_app(_tool_server())
            if how == "starlette":
                app.endpoint = None  # type: ignore[attr-defined]
            async with serve_in_background(app) as url:
                answers[how] = [_answer(await http.request(url=url + path, **_post(_call("tools/list"), method=method)))
                                for path in PATHS for method in ("POST", "GET", "PUT")]
    assert answers["ours"] == answers["starlette"]
    listed = answers["ours"][0]
    assert listed[0] == 200 and [t["name"] for t in listed[2]["result"]["tools"]] == ["pay", "wait", "route"]
    playground = answers["ours"][PATHS.index("/mcp/shop") * 3]
    assert [t["name"] for t in playground[2]["result"]["tools"]] == ["pay", "wait", "route", "note"]
    assert answers["ours"][PATHS.index("/mcp/nope") * 3][0] == 404
