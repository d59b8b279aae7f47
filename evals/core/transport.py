"""How an episode's MCP session reaches the tool server: ``evals run --transport memory|http|stdio``.

Every transport carries real MCP requests to the same server code (:class:`server.ToolServer`), and
every episode gets a session of its own, with its own executor state (placeholder handles, replayed
calls):

* ``memory`` (the default for a server the run starts itself): the MCP SDK's in-process transport.
  Each session is a client connected to a low-level server made for it alone
  (:meth:`~server.ToolServer.mcp_server` bound to the episode's endpoint), in the run's own process:
  no sockets, no HTTP stack, no JSON text, the same request and result messages (validated on both
  sides as over a wire), the same handlers. Fastest: ``bench/bench_harness.py`` measures it.
* ``http``: streamable HTTP to a server on 127.0.0.1 (the run's own, or ``--server-url``'s, which
  is always HTTP); each session names itself with ``?session=<id>``.
* ``stdio``: each session starts the benchmark's server as a child process and talks to it over its
  stdin/stdout (the way assistant clients run MCP servers). Correct but slow (a process, and the
  benchmark's data, per episode): for checking that path, not for large runs.

The transport does not change results (the tests run the oracle over each and compare the traces);
it is recorded in the run's config (``run.transport``), not matched on resume.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import DiscoverResult

    from client.mcp_session import HTTPClientPool
    from server import ToolServer

    from .run_options import RunOptions

__all__ = ["TRANSPORTS", "HTTPSessions", "MemorySessions", "Sessions", "StdioSessions", "resolve_transport"]

TRANSPORTS = ("memory", "http", "stdio")
OPTIONS_ENV = "EVALS_STDIO_SERVER_OPTIONS"  # the run's options, for a stdio server child (internal)


def resolve_transport(opts: RunOptions) -> str:
    """The transport a run uses: ``opts.transport``, checked, or the default for its server."""
    given = opts.transport
    if given is not None and given not in TRANSPORTS:
        raise ValueError(f"unknown --transport {given!r}; choose one of: {', '.join(TRANSPORTS)}")
    if opts.server_url:
        flag = "--server-url"
        if given not in (None, "http"):
            raise ValueError(
                f"{flag} serves over HTTP; --transport {given} needs the server the run starts itself "
                f"(drop {flag}, or use --transport http)"
            )
        return "http"
    return given or "memory"


class Sessions(Protocol):
    """Opens one episode's MCP session at an endpoint (a task's tools, or the benchmark's playground)."""

    def session(self, benchmark: str, task_id: str | None = None) -> contextlib.AbstractAsyncContextManager[Client]: ...


@dataclasses.dataclass
class HTTPSessions:
    """Streamable HTTP; the URL names the session (``?session=<random id>``) so that the server keeps
    this episode's executor state apart from every other episode's."""

    base_url: str
    http: HTTPClientPool  # each session borrows an HTTP client of its own
    # the MCP client name of this run's sessions: drawn per run, so that no other client can take it and
    # share this run's place in the server's fair queue (the SDK's default, "mcp", is everyone's)
    client_name: str = dataclasses.field(default_factory=lambda: f"evals-run-{uuid.uuid4().hex}")

    def url(self, benchmark: str, task_id: str | None = None) -> str:
        return f"{self.base_url}/mcp/{benchmark}" + (f"/{task_id}" if task_id else "")

    @contextlib.asynccontextmanager
    async def session(self, benchmark: str, task_id: str | None = None) -> AsyncIterator[Client]:
        from client.mcp_session import connect

        url = f"{self.url(benchmark, task_id)}?session={uuid.uuid4().hex}"
        async with self.http.borrow() as http, connect(url, http_client=http, discovery_key=self.base_url,
                                                                 client_name=self.client_name) as session:
            yield session


@dataclasses.dataclass
class MemorySessions:
    """The SDK's in-process transport to a low-level server made for each session (its own state).

    Only the first session asks for ``server/discover``; later ones adopt its result (the servers of
    one :class:`~server.ToolServer` differ only in their endpoint, which discovery does not name).
    """

    tool_server: ToolServer
    _discoveries: dict[str, tuple[str, DiscoverResult]] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @contextlib.asynccontextmanager
    async def session(self, benchmark: str, task_id: str | None = None) -> AsyncIterator[Client]:
        from client.mcp_session import connect
        from server import EndpointRef

        server = self.tool_server.mcp_server(EndpointRef(benchmark, task_id))
        async with connect(server, discovery_key="tool_server", discoveries=self._discoveries) as session:
            yield session


@dataclasses.dataclass
class StdioSessions:
    """A server child process per session (``python -m evals.core.server_process --stdio``), over stdin/stdout."""

    opts: RunOptions

    @contextlib.asynccontextmanager
    async def session(self, benchmark: str, task_id: str | None = None) -> AsyncIterator[Client]:
        from mcp import StdioServerParameters

        from client.mcp_session import connect

        options = dataclasses.replace(self.opts, server_token=None).encode()  # the child needs no secret
        env = {**os.environ, OPTIONS_ENV: options, "PYTHONUNBUFFERED": "1"}
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "evals.core.server_process", "--stdio", benchmark, task_id or ""], env=env,
        )
        async with connect(params) as session:
            yield session
