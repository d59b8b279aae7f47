"""Tool output that cannot be sent as JSON must not break the protocol (issue 26, item 3).

A tool (real code in the sandbox) returns a string with a lone surrogate, a dict with a surrogate
in a key, or a dict nested 900 deep. Over every transport (stdio, streamable HTTP, in-process) the
MCP SDK's real client must get a tool result with ``isError`` and a message naming the problem,
and the session must go on: the next call on it works. (On 8c496d6 HTTP answered 500 with a
JSON-RPC id of null, and the others a JSON-RPC error with code 0.)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from client.agent import result_text
from client.mcp_session import connect
from server import BenchmarkMount, EndpointRef, ToolServer, create_app, serve_in_background
from tool_specs import StaticCatalog, ToolSpec
from tool_specs.sandbox import SandboxExecutor, SandboxPool

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the sandbox needs Linux")

CODE = '''
def bad(kind):
    if kind == "surrogate":
        return "half a pair: \\ud800 here"
    if kind == "surrogate_key":
        return {"ok": 1, "key \\udc80": 2}
    if kind == "deep":
        value = {}
        for _ in range(900):
            value = {"a": value}
        return value
    return {"fine": kind}
'''
SPEC = dict(
    name="bad",
    description="Returns output that cannot be encoded.",
    input_schema={"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]},
    executor={"kind": "sandbox", "function": "bad", "code": CODE},
)
STDIO_SERVER = (
    "import asyncio\n"
    "from server import BenchmarkMount, EndpointRef, ToolServer, serve_stdio\n"
    "from tool_specs import StaticCatalog, ToolSpec\n"
    f"spec = ToolSpec(**{SPEC!r})\n"
    "ts = ToolServer([BenchmarkMount(StaticCatalog('odd', {'t1': [spec]}))], default=EndpointRef('odd', 't1'))\n"
    "asyncio.run(serve_stdio(ts))\n"
)
# what the error message must name, per kind of bad output
NAMED = {"surrogate": "surrogate", "surrogate_key": "surrogate", "deep": "nest"}


def tool_server(pool: SandboxPool, default: EndpointRef | None = None) -> ToolServer:
    """In this process: the tool on a pool of the test's own (closed after it)."""
    spec = ToolSpec(**{**SPEC, "executor": SandboxExecutor(CODE, "bad", pool=pool)})  # type: ignore[arg-type]
    return ToolServer([BenchmarkMount(StaticCatalog("odd", {"t1": [spec]}))], default=default)


@contextlib.asynccontextmanager
async def session(transport: str) -> AsyncIterator[Client]:
    if transport == "stdio":
        async with connect(StdioServerParameters(command=sys.executable, args=["-c", STDIO_SERVER])) as c:
            yield c
        return
    with SandboxPool(1) as pool:
        if transport == "http":
            async with serve_in_background(create_app(tool_server(pool))) as url, connect(url + "/mcp/odd/t1") as c:
                yield c
        else:
            async with connect(tool_server(pool, EndpointRef("odd", "t1")).server) as c:
                yield c


def _text(result: Any) -> str:
    return result_text(result)


@pytest.mark.parametrize("transport", ["stdio", "http", "memory"])
async def test_unencodable_output_is_an_error_result_and_the_session_goes_on(transport):
    async with session(transport) as c:
        first = await c.call_tool("bad", {"kind": "fine"})
        assert not first.is_error and first.structured_content == {"fine": "fine"}
        for kind, word in NAMED.items():
            result = await c.call_tool("bad", {"kind": kind})
            assert result.is_error, (kind, result)
            text = _text(result)
            assert word in text.lower() and "bad" in text, (kind, text)
            after = await c.call_tool("bad", {"kind": f"after {kind}"})
            assert not after.is_error and after.structured_content == {"fine": f"after {kind}"}, (kind, after)
