"""stdio transport: one MCP session bound to the endpoint chosen by flags (for assistant clients)."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from .core import ToolServer

__all__ = ["serve_stdio"]


async def serve_stdio(tool_server: ToolServer) -> None:
    """Serve one client over stdin/stdout until it disconnects. Logs must go to stderr."""
    if tool_server.default is None:
        raise ValueError("stdio needs a bound endpoint: pass --benchmark (and optionally --task)")
    async with stdio_server() as (read, write):
        await tool_server.server.run(read, write, tool_server.server.create_initialization_options())
