"""Streamable HTTP transport: a Starlette app (served by uvicorn) around a :class:`ToolServer`.

Routes:
- ``GET /health``: liveness plus what is served (no auth, no secrets);
- ``/mcp/<benchmark>``: the benchmark's playground; ``/mcp/<benchmark>/<task_id>``: one task.

Binding to anything but a loopback address requires a bearer token; every ``/mcp`` request must
then carry ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .core import EndpointNotFound, EndpointRef, ToolServer, current_endpoint

__all__ = [
    "TOKEN_ENV",
    "ServerConfigError",
    "bind_socket",
    "check_bind",
    "create_app",
    "is_loopback",
    "serve",
    "serve_in_background",
    "uvicorn_config",
    "wait_started",
]

log = logging.getLogger(__name__)

TOKEN_ENV = "EVALS_SERVER_TOKEN"


class ServerConfigError(ValueError):
    """The server was asked to start in a way that is unsafe or impossible."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a bearer token."""
    if not is_loopback(host) and not token:
        raise ServerConfigError(
            f"refusing to listen on {host!r} without authentication: a non-loopback address needs a bearer "
            f"token (pass --token or set {TOKEN_ENV}); use --host 127.0.0.1 to stay local"
        )


class _MCPEndpoint:
    """ASGI app for the ``/mcp/...`` routes: checks the endpoint and the token, then hands over to MCP."""

    def __init__(self, tool_server: ToolServer, manager: StreamableHTTPSessionManager, token: str | None):
        self.tool_server = tool_server
        self.manager = manager
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is not None:
            request = Request(scope)
            given = request.headers.get("authorization", "")
            expected = f"Bearer {self.token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                resp = JSONResponse(
                    {"error": "unauthorized", "message": "missing or wrong bearer token"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await resp(scope, receive, send)
                return
        params = scope.get("path_params", {})
        ref = EndpointRef(params["benchmark"], params.get("task_id") or None)
        try:
            self.tool_server.check_endpoint(ref)
        except EndpointNotFound as exc:
            await JSONResponse({"error": "not_found", "message": str(exc)}, status_code=404)(scope, receive, send)
            return
        token = current_endpoint.set(ref)
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            current_endpoint.reset(token)


def create_app(
    tool_server: ToolServer,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    json_response: bool = False,
    session_idle_timeout: float | None = 1800,
) -> Starlette:
    """Build the Starlette app. Raises :class:`ServerConfigError` for an unauthenticated public bind."""
    check_bind(host, token)
    if is_loopback(host):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    else:  # the bearer token protects a public bind; Host headers vary with proxies
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    manager = StreamableHTTPSessionManager(
        app=tool_server.server,
        json_response=json_response,
        security_settings=security,
        session_idle_timeout=session_idle_timeout,
    )
    mcp_app = _MCPEndpoint(tool_server, manager, token)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "server": tool_server.server.name, "benchmarks": tool_server.describe()})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    methods = ["GET", "POST", "DELETE"]
    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/", health, methods=["GET"]),
        Route("/mcp/{benchmark}", mcp_app, methods=methods),
        Route("/mcp/{benchmark}/{task_id:path}", mcp_app, methods=methods),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def uvicorn_config(app: Starlette, host: str, port: int, log_level: str, **kw: Any) -> uvicorn.Config:
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on", access_log=False, **kw)


def serve(app: Starlette, host: str = "127.0.0.1", port: int = 8765, log_level: str = "info") -> None:
    """Run the app in the foreground until interrupted."""
    uvicorn.Server(uvicorn_config(app, host, port, log_level)).run()


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> tuple[socket.socket, str]:
    """A listening TCP socket for uvicorn (``port=0`` picks a free port) and its base URL."""
    # ``proto=IPPROTO_TCP`` matters: asyncio sets TCP_NODELAY only on accepted sockets whose protocol
    # says TCP, and without it every response (headers and body are separate writes) waits ~40 ms
    # for the client's delayed ACK (Nagle's algorithm).
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{sock.getsockname()[1]}"


async def wait_started(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    """Return once ``server`` (served by ``task``) accepts connections; raise if it stopped first."""
    while not server.started:
        if task.done():
            task.result()  # raises the start-up error
            raise RuntimeError("HTTP server stopped during start-up")
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def serve_in_background(
    app: Starlette, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"
) -> AsyncIterator[str]:
    """Run the app on the current event loop; yields its base URL (``port=0`` picks a free port)."""
    sock, url = bind_socket(host, port)
    server = uvicorn.Server(uvicorn_config(app, host, sock.getsockname()[1], log_level))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_started(server, task)
        yield url
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=10)
        sock.close()
