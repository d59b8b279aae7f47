"""A hostile MCP server for the tests, over stdio, with the MCP SDK's low-level server (which lists
whatever tools it is given, as any server may). ``HOSTILE_MODE`` in its environment says how:

* ``ref``: one tool, ``lookup``, whose input schema has ``{"$ref": HOSTILE_REF}`` (a URL on a local
  HTTP server the test runs, or a ``file://`` URL);
* ``output_ref``: the same ``$ref`` in the tool's output schema;
* ``names``: tools named with ``/``, ``../``, a space, ``<`` and a Cyrillic look-alike letter, and
  one with an invalid schema (``type: strng``);
* ``big``: one tool, ``big``, that answers with ``HOSTILE_RESULT_BYTES`` bytes of text;
* ``stderr``: writes ``HOSTILE_STDERR_BYTES`` bytes on stderr before serving, then one more line,
  ``HOSTILE_STDERR_LAST``; its tool ``ping`` answers ``pong``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

MODE = os.environ.get("HOSTILE_MODE", "ref")
OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def _tools() -> list[types.Tool]:
    ref = os.environ.get("HOSTILE_REF", "http://127.0.0.1:9/schema.json")
    if MODE == "ref":
        return [types.Tool(name="lookup", description="Look a thing up.", input_schema={
            "type": "object", "properties": {"thing": {"$ref": ref}}, "required": ["thing"]})]
    if MODE == "output_ref":
        return [types.Tool(name="lookup", description="Look a thing up.", input_schema=OBJECT,
                           output_schema={"type": "object", "properties": {"found": {"$ref": ref}}})]
    if MODE == "names":
        names = ["files/read", "../../etc/passwd", "has space", "<script>", "l\u043eokup"]  # U+043E: Cyrillic o
        return [*(types.Tool(name=n, input_schema=OBJECT) for n in names),
                types.Tool(name="typo", input_schema={"type": "object", "properties": {"q": {"type": "strng"}}})]
    if MODE == "big":
        return [types.Tool(name="big", description="A large answer.", input_schema=OBJECT)]
    return [types.Tool(name="ping", description="Answers pong.", input_schema=OBJECT)]


async def _list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_tools())


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if MODE == "big":
        text = "x" * int(os.environ.get("HOSTILE_RESULT_BYTES", str(20 << 20)))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    return types.CallToolResult(content=[types.TextContent(type="text", text="pong" if MODE == "stderr" else "called")])


def main() -> None:
    if MODE == "stderr":
        left = int(os.environ.get("HOSTILE_STDERR_BYTES", str(20 << 20)))
        line = b"noise " * 170 + b"\n"  # about 1 KB
        while left > 0:
            left -= os.write(2, line[:left])
        os.write(2, os.environ.get("HOSTILE_STDERR_LAST", "the last line").encode() + b"\n")
    server: Server[Any] = Server("hostile", on_list_tools=_list_tools, on_call_tool=_call_tool)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    sys.exit(main())
