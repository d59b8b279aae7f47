"""stdio transport: one MCP session bound to the endpoint chosen by flags (for assistant clients)."""

from __future__ import annotations

from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from .core import ToolServer

__all__ = ["serve_stdio"]


def _parse_error_reply(exc: Exception) -> SessionMessage:
    """The JSON-RPC error (``id`` null) that answers a line that is not a JSON-RPC message.

    JSON-RPC 2.0: a line that is not JSON is a parse error (-32700); JSON that is not a valid
    request, notification or response is an invalid request (-32600).
    """
    not_json = isinstance(exc, ValidationError) and any(e.get("type") == "json_invalid" for e in exc.errors())
    if not_json:
        error = ErrorData(code=PARSE_ERROR, message="Parse error: the line is not valid JSON")
    else:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        error = ErrorData(code=INVALID_REQUEST, message=f"Invalid request: not a JSON-RPC 2.0 message ({detail[:200]})")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))


async def _answer_malformed(
    read: MemoryObjectReceiveStream[Any],
    forward: MemoryObjectSendStream[Any],
    write: MemoryObjectSendStream[SessionMessage],
) -> None:
    """Pass messages on to the server; answer each malformed line (the SDK drops it silently)."""
    async with forward:
        async for item in read:
            if isinstance(item, Exception):
                await write.send(_parse_error_reply(item))
            else:
                await forward.send(item)


async def serve_stdio(tool_server: ToolServer) -> None:
    """Serve one client over stdin/stdout until it disconnects. Logs must go to stderr."""
    if tool_server.default is None:
        raise ValueError("stdio needs a bound endpoint: pass --benchmark (and optionally --task)")
    async with stdio_server() as (read, write):
        forward, messages = anyio.create_memory_object_stream[Any](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_answer_malformed, read, forward, write)
            await tool_server.server.run(messages, write, tool_server.server.create_initialization_options())
            tg.cancel_scope.cancel()
