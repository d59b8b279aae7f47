"""Streamable HTTP transport: a Starlette app (served by uvicorn) around a :class:`ToolServer`.

Routes:
- ``GET /health``: liveness plus what is served (no auth, no secrets; on a loopback bind its Host
  header is checked as ``/mcp``'s is, against DNS rebinding);
- ``/mcp/<benchmark>``: the benchmark's playground; ``/mcp/<benchmark>/<task_id>``: one task;
- ``/mcp`` itself, or an unknown endpoint: HTTP 404 with a JSON-RPC error listing the endpoints.

Binding to anything but a loopback address requires a bearer token; every ``/mcp`` request must
then carry ``Authorization: Bearer <token>``.

Clients are untrusted. :class:`HTTPLimits` bounds what one can hold: connections (the oldest idle one
is closed to admit a new one), the time to send a request's headers and its body, and keep-alive
idleness. Sessions of clients that use the handshake protocol (``Mcp-Session-Id``) are capped per
endpoint and in total (:class:`~server.core.SessionLimits`, shared with the named sessions of
:class:`~server.core.ToolServer`): at a cap the least recently used idle session is closed rather
than the new one refused, idle sessions expire, and a session answers only on the endpoint that
opened it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hmac
import logging
import resource
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from mcp import types
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from tool_specs import shown_name

from .core import EndpointNotFound, EndpointRef, SessionLimits, ToolServer, current_endpoint
from .http_errors import BareMCP, rpc_not_found
from .http_modern import ModernEntry
from .loopback import bind_host, host_security, is_loopback

__all__ = [
    "TOKEN_ENV",
    "HTTPLimits",
    "ServerConfigError",
    "bind_socket",
    "check_bind",
    "check_token",
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


def check_token(token: str | None) -> None:
    """Refuse a bearer token that is empty, blank or has whitespace at either end (a client cannot send it)."""
    if token is not None and (not token.strip() or token != token.strip()):
        raise ServerConfigError(
            "the bearer token is empty or blank, or starts or ends with whitespace: pass a real secret "
            f"(--token or {TOKEN_ENV}), e.g. the output of `python -c 'import secrets; print(secrets.token_urlsafe())'`"
        )


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a bearer token, and a blank token anywhere."""
    check_token(token)
    if not is_loopback(host) and not token:
        raise ServerConfigError(
            f"refusing to listen on {host!r} without authentication: a non-loopback address needs a bearer "
            f"token (pass --token or set {TOKEN_ENV}); use --host 127.0.0.1 to stay local"
        )


@dataclass(frozen=True)
class HTTPLimits:
    """What one HTTP client may hold of the server (operational settings: results do not depend on them).

    Attributes:
        max_connections: open connections at most; a new one beyond it closes the connection that has
            been idle (no request in progress) the longest, or is itself closed when none is idle.
            Lowered to fit the process's file-descriptor limit.
        header_timeout: seconds a connection may take to send a request's headers (from its opening,
            or from the end of its previous response); slower ones are closed (slowloris).
        body_timeout: seconds a request may take to send its body once its headers are in.
        keep_alive_timeout: seconds an idle keep-alive connection is kept open.
    """

    max_connections: int = 1024
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keep_alive_timeout: float = 5.0

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections}")
        for name in ("header_timeout", "body_timeout", "keep_alive_timeout"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")

    def effective_max_connections(self) -> int:
        """``max_connections``, lowered to leave 64 descriptors of the process's limit for everything else."""
        try:
            soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        except (OSError, ValueError):  # pragma: no cover - no such limit
            return self.max_connections
        if soft == resource.RLIM_INFINITY:
            return self.max_connections
        return max(1, min(self.max_connections, soft - 64))


class _GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a connection limit and header and body deadlines.

    uvicorn times out only an idle keep-alive connection; one that never finishes its headers, or its
    body, is kept forever (and each holds a file descriptor). Which phase a connection is in comes
    from h11's view of the client (``their_state``): ``IDLE`` while headers are awaited,
    ``SEND_BODY`` while the body is.
    """

    limits: HTTPLimits = HTTPLimits()
    max_connections: int = HTTPLimits().max_connections

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._deadline: asyncio.TimerHandle | None = None
        self._phase: Any = None
        self._idle_since = time.monotonic()
        self._refused = len(self.connections) >= self.max_connections and not self._close_oldest_idle()
        if self._refused:
            log.warning("refusing a connection: %d connections are open and none is idle", len(self.connections))
            transport.close()
            return
        super().connection_made(transport)  # type: ignore[arg-type]
        self._watch()

    def _close_oldest_idle(self) -> bool:
        idle = [c for c in self.connections if isinstance(c, _GuardedH11Protocol) and c._is_idle()]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: c._idle_since)
        log.info("closing the connection idle the longest to admit a new one (%d open)", len(self.connections))
        oldest.connections.discard(oldest)  # room now: the transport reports its loss later
        oldest.transport.close()
        return True

    def _is_idle(self) -> bool:
        return (self.cycle is None or self.cycle.response_complete) and self.conn.their_state is h11.IDLE

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        self._idle_since = time.monotonic()
        self._phase = None  # the next request's header deadline starts now
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        if self._refused:  # closed in connection_made: uvicorn never saw it
            return
        super().connection_lost(exc)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _watch(self) -> None:
        """Arm the deadline of the phase the client is in (headers or body), once per phase."""
        if self.transport is None or self.transport.is_closing():
            self._cancel_deadline()
            return
        state = self.conn.their_state
        if state is h11.IDLE and not (self.cycle is not None and not self.cycle.response_complete):
            phase, timeout = "headers", self.limits.header_timeout
        elif state is h11.SEND_BODY:
            phase, timeout = "body", self.limits.body_timeout
        else:  # the request is in; the application answers in its own time
            self._phase = None
            self._cancel_deadline()
            return
        if phase != self._phase:
            self._cancel_deadline()
            self._phase = phase
            self._deadline = self.loop.call_later(timeout, self._expire, phase, timeout)

    def _expire(self, phase: str, timeout: float) -> None:
        self._deadline = None
        if self._phase != phase or self.transport.is_closing():
            return
        log.info("closing a connection that did not send its request %s within %.3g s", phase, timeout)
        self.transport.close()


def _protocol_class(limits: HTTPLimits) -> type[_GuardedH11Protocol]:
    return type(
        "GuardedH11Protocol",
        (_GuardedH11Protocol,),
        {"limits": limits, "max_connections": limits.effective_max_connections()},
    )


class _SessionGuard:
    """Caps, expiry and endpoint binding for the SDK's handshake-protocol sessions (``Mcp-Session-Id``).

    The SDK's manager refuses every new session (503) once it holds ``max_sessions`` and keeps idle
    ones for 30 minutes: a client that opens sessions and never closes them locks everyone else out.
    Here a new session that would pass a cap (per endpoint, or in total) first closes the least
    recently used session that has no request in flight (within its endpoint when that cap is the
    one reached); only when all of them are busy is the new one refused.
    """

    def __init__(self, manager: StreamableHTTPSessionManager, limits: SessionLimits):
        self.manager = manager
        self.limits = limits
        self.endpoint: dict[str, EndpointRef] = {}
        self.last_used: dict[str, float] = {}
        self.in_flight: dict[str, int] = {}
        self._lock = asyncio.Lock()

    def _live(self) -> dict[str, Any]:
        live: dict[str, Any] = self.manager._server_instances  # the SDK's session table (no public view)
        for sid in [s for s in self.endpoint if s not in live]:
            self._forget(sid)
        return live

    def _forget(self, sid: str) -> None:
        self.endpoint.pop(sid, None)
        self.last_used.pop(sid, None)
        self.in_flight.pop(sid, None)

    async def _close(self, sid: str) -> None:
        transport = self.manager._server_instances.get(sid)
        self._forget(sid)
        if transport is not None:
            await self.manager._discard_session(sid, transport)

    async def make_room(self, ref: EndpointRef) -> bool:
        """Close sessions until a new one on ``ref`` fits the caps; False when every candidate is busy."""
        async with self._lock:
            live = self._live()
            while True:
                same = [s for s, r in self.endpoint.items() if r == ref]
                if len(same) >= self.limits.max_sessions_per_endpoint:
                    pool = same
                elif len(live) >= self.limits.max_sessions:
                    pool = [s for s in live if s in self.endpoint] or list(live)
                else:
                    return True
                idle = [s for s in pool if not self.in_flight.get(s)]
                if not idle:
                    return False
                victim = min(idle, key=lambda s: self.last_used.get(s, 0.0))
                log.info("closing session %s (least recently used) to admit a new one on %s", victim[:16], ref.path)
                await self._close(victim)

    def opened(self, sid: str, ref: EndpointRef) -> None:
        if sid in self.manager._server_instances:
            self.endpoint[sid] = ref
            self.last_used[sid] = time.monotonic()

    @contextlib.contextmanager
    def using(self, sid: str) -> Any:
        """Count a request of session ``sid`` as in flight (the SDK answers 404 to an unknown id)."""
        if sid not in self.endpoint:
            yield
            return
        self.in_flight[sid] = self.in_flight.get(sid, 0) + 1
        try:
            yield
        finally:
            left = self.in_flight.pop(sid, 0) - 1
            if left > 0:
                self.in_flight[sid] = left
            if sid in self.last_used:
                self.last_used[sid] = time.monotonic()


class _MCPEndpoint:
    """ASGI app for the ``/mcp/...`` routes: checks the endpoint and the token, then hands over to MCP."""

    def __init__(
        self, tool_server: ToolServer, manager: StreamableHTTPSessionManager, token: str | None, guard: _SessionGuard
    ):
        self.tool_server = tool_server
        self.manager = manager
        self.token = token
        self.guard = guard
        self.modern = ModernEntry(manager)

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
            await rpc_not_found(self.tool_server, str(exc), scope, receive, send)
            return
        token = current_endpoint.set(ref)
        try:
            await self._handle(ref, scope, receive, send)
        finally:
            current_endpoint.reset(token)

    async def _handle(self, ref: EndpointRef, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1") or None
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:  # the modern protocol: no sessions
            await self.modern(scope, receive, send)
            return
        sid = headers.get(b"mcp-session-id", b"").decode("latin-1") or None
        if sid is not None:
            opened_on = self.guard.endpoint.get(sid)
            if opened_on is not None and opened_on != ref:
                await _session_error(
                    f"session {shown_name(sid)} was opened on {opened_on.path}; it cannot be used on {ref.path} "
                    "(open a session on this endpoint)", 404,
                )(scope, receive, send)
                return
            with self.guard.using(sid):
                await self.manager.handle_request(scope, receive, send)
            return
        if scope["method"] == "POST" and not await self.guard.make_room(ref):
            limits = self.guard.limits
            await _session_error(
                f"too many open sessions ({limits.max_sessions} in total, {limits.max_sessions_per_endpoint} per "
                "endpoint) and every one has a request in flight; retry later", 503,
            )(scope, receive, send)
            return

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", []):
                    if key.lower() == b"mcp-session-id":
                        self.guard.opened(value.decode("latin-1"), ref)
            await send(message)

        await self.manager.handle_request(scope, receive, watch)


class _App(Starlette):
    """The Starlette app, with the requests of an endpoint (``/mcp/<benchmark>[/<task_id>]``, GET, POST
    or DELETE: nearly every request) handed straight to the endpoint's app with the path parameters
    Starlette's routes would give, past its error and exception middleware and its router (which
    cost each request four calls and a regular expression per route tried); the rest, lifespan
    included, goes through Starlette. An exception gets uvicorn's 500, as Starlette's would."""

    endpoint: Any = None  # the ASGI app of /mcp/{benchmark} and /mcp/{benchmark}/{task_id:path}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and self.endpoint is not None and scope["method"] in _ENDPOINT_METHODS
                and not scope.get("root_path")):  # mounted under a prefix: Starlette's routing strips it
            path: str = scope["path"]
            if path.startswith("/mcp/"):
                benchmark, slash, task_id = path[5:].partition("/")
                if benchmark:
                    scope["app"], scope["router"], scope["endpoint"] = self, self.router, self.endpoint
                    scope["path_params"] = {"benchmark": benchmark, "task_id": task_id} if slash else {"benchmark": benchmark}
                    await self.endpoint(scope, receive, send)
                    return
        await super().__call__(scope, receive, send)


_ENDPOINT_METHODS = frozenset({"GET", "POST", "DELETE"})


def _session_error(message: str, status: int) -> JSONResponse:
    code = types.INVALID_REQUEST if status < 500 else types.INTERNAL_ERROR
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status_code=status)


def create_app(
    tool_server: ToolServer,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    json_response: bool = False,
) -> Starlette:
    """Build the Starlette app. Raises :class:`ServerConfigError` for an unauthenticated public bind.

    Session caps and the idle timeout are ``tool_server.session_limits``.
    """
    check_bind(host, token)
    limits = tool_server.session_limits
    security = host_security(host)  # a public bind is protected by the bearer token
    manager = StreamableHTTPSessionManager(
        app=tool_server.server,
        json_response=json_response,
        security_settings=security,
        session_idle_timeout=limits.idle_timeout,
        max_sessions=None,  # _SessionGuard caps them, closing idle ones instead of refusing new ones
    )
    mcp_app = _MCPEndpoint(tool_server, manager, token, _SessionGuard(manager, limits))

    host_check = TransportSecurityMiddleware(security)

    async def health(request: Request) -> Response:
        refused = await host_check.validate_request(request)  # the Host check /mcp has (DNS rebinding)
        if refused is not None:
            return refused
        return JSONResponse({"status": "ok", "server": tool_server.server.name, "benchmarks": tool_server.describe()})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    methods = sorted(_ENDPOINT_METHODS)
    routes = [  # _App serves the first two itself; they stay for anything that reads the routes
        Route("/mcp/{benchmark}/{task_id:path}", mcp_app, methods=methods),
        Route("/mcp/{benchmark}", mcp_app, methods=methods),
        Route("/health", health, methods=["GET"]),
        Route("/", health, methods=["GET"]),
        Route("/mcp", BareMCP(tool_server), methods=methods),
        Route("/mcp/", BareMCP(tool_server), methods=methods),
    ]
    app = _App(routes=routes, lifespan=lifespan)
    app.endpoint = mcp_app
    return app


def uvicorn_config(
    app: Starlette, host: str, port: int, log_level: str, *, limits: HTTPLimits | None = None, **kw: Any
) -> uvicorn.Config:
    """uvicorn's configuration for the app, with :class:`HTTPLimits` (the defaults when ``None``)."""
    limits = limits or HTTPLimits()
    return uvicorn.Config(
        app, host=bind_host(host), port=port, log_level=log_level, lifespan="on", access_log=False,
        http=_protocol_class(limits), timeout_keep_alive=limits.keep_alive_timeout,  # type: ignore[arg-type]
        **kw,
    )


def serve(
    app: Starlette, host: str = "127.0.0.1", port: int = 8765, log_level: str = "info", *, limits: HTTPLimits | None = None
) -> None:
    """Run the app in the foreground until interrupted.

    What start-up built (catalogs, tool specs, the KG's adjacency: most of the process's objects) is
    moved out of the garbage collector's generations first (:func:`gc.freeze`), so that its
    collections, triggered by every request's allocations, no longer walk it (issue 32)."""
    gc.collect()
    gc.freeze()
    uvicorn.Server(uvicorn_config(app, host, port, log_level, limits=limits)).run()


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> tuple[socket.socket, str]:
    """A listening TCP socket for uvicorn (``port=0`` picks a free port) and its base URL."""
    host = bind_host(host)
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
    app: Starlette, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning", *, limits: HTTPLimits | None = None
) -> AsyncIterator[str]:
    """Run the app on the current event loop; yields its base URL (``port=0`` picks a free port)."""
    sock, url = bind_socket(host, port)
    server = uvicorn.Server(uvicorn_config(app, host, sock.getsockname()[1], log_level, limits=limits))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_started(server, task)
        yield url
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=10)
        sock.close()
