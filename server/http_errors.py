"""What the HTTP server answers where there is no endpoint: JSON-RPC errors that list the endpoints."""

from __future__ import annotations

import json
from typing import Any

from mcp import types
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from .core import ToolServer

__all__ = ["BareMCP", "rpc_not_found"]


def _endpoints(tool_server: ToolServer) -> list[str]:
    return [f"/mcp/{name}" for name in tool_server.mounts]


async def _request_id(scope: Scope, receive: Receive) -> Any:
    """The JSON-RPC id of a POSTed request (None when there is none or the body is not one request)."""
    if scope.get("method") != "POST":
        return None
    body, more = b"", True
    while more and len(body) <= 65536:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    try:
        rid = json.loads(body).get("id")
    except (ValueError, AttributeError):
        return None
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


async def rpc_not_found(tool_server: ToolServer, message: str, scope: Scope, receive: Receive, send: Send) -> None:
    """HTTP 404 with a JSON-RPC error body that a client shows: what was wrong (with its "did you
    mean") and, in ``data``, the endpoints this server has."""
    endpoints = _endpoints(tool_server)
    body = {
        "jsonrpc": "2.0",
        "id": await _request_id(scope, receive),
        "error": {
            "code": types.INVALID_REQUEST,
            "message": message,
            "data": {"endpoints": endpoints, "task_endpoint": "/mcp/<benchmark>/<task_id>"},
        },
    }
    await JSONResponse(body, status_code=404)(scope, receive, send)


class BareMCP:
    """``/mcp`` itself is no endpoint (older MCP Inspector versions post there): a JSON-RPC error
    listing the endpoints to connect to."""

    def __init__(self, tool_server: ToolServer):
        self.tool_server = tool_server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoints = _endpoints(self.tool_server)
        message = (
            "/mcp is not an endpoint of this server: connect to a benchmark's playground, one of "
            + (", ".join(endpoints) or "(none served)")
            + ", or to one task's endpoint, /mcp/<benchmark>/<task_id>"
        )
        await rpc_not_found(self.tool_server, message, scope, receive, send)
