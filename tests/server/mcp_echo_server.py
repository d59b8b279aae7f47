"""A small third-party-style MCP server for the tests, over stdio: ``echo`` and ``add``.

With ``ECHO_DIE_AFTER=N`` in its environment it exits abruptly on the call after its N-th (a server
that dies mid-run); with ``ECHO_FAIL_AT_START`` it writes that text on stderr and exits at once.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel


class Echoed(BaseModel):
    text: str
    length: int


class Sum(BaseModel):
    total: float


def main() -> None:
    if os.environ.get("ECHO_FAIL_AT_START"):
        print(os.environ["ECHO_FAIL_AT_START"], file=sys.stderr, flush=True)
        sys.exit(3)
    die_after = int(os.environ.get("ECHO_DIE_AFTER", "0") or 0)
    calls = [0]
    server = MCPServer("echo-test")

    def count() -> None:
        calls[0] += 1
        if die_after and calls[0] > die_after:
            os._exit(1)

    @server.tool(name="echo", description="Echo a text back with its length.")
    def echo(text: str) -> Echoed:
        count()
        return Echoed(text=text, length=len(text))

    @server.tool(name="add", description="Add two numbers.")
    def add(a: float, b: float) -> Sum:
        count()
        return Sum(total=a + b)

    import anyio

    anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
