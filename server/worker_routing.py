"""One HTTP port served by several processes, each MCP session kept on the process that holds it.

``evals serve --workers N`` runs N processes of the same server, each listening on the one port
with ``SO_REUSEPORT`` (the kernel spreads new connections between them). A connection can carry the
requests of several sessions one after another (a client's connection pool), so a connection is
not a session: before the server reads a request, :class:`RoutingProtocol` looks at its head for
the session it belongs to, and a request for a session of another process hands the whole
connection over to that process (its file descriptor and the bytes read so far, over a Unix socket:
``SCM_RIGHTS``), which then serves it and the connection's next requests. No request is proxied:
a hand-off costs a ``sendmsg`` and happens when a connection switches sessions, not per request.

Which process owns a session is a function of its id that every process computes alike, without
shared state: a keyed hash (BLAKE2b with a secret drawn per server, so a client cannot steer its
sessions onto one process) modulo N. A named session (``?session=<id>``, chosen by the client) is
owned by the process its id hashes to; a handshake session (``Mcp-Session-Id``, chosen by the
server) gets an id that hashes to the process that created it. A request that names no session (a
handshake ``initialize``, ``/health``, a request of the current protocol without ``?session=``) is
served where it arrived.

When the owner of a session is gone (its process was killed), its requests get HTTP 503 with a
JSON-RPC error that says so; the sessions of the other processes go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import os
import socket
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tool_specs import shown_name

from .http import HTTPLimits, _GuardedH11Protocol, _protocol_class, uvicorn_config, wait_started

__all__ = ["WORKER_HEADER", "Router", "reuseport_socket", "serve_routed"]

log = logging.getLogger(__name__)

WORKER_HEADER = "x-evals-worker"  # on every HTTP response of a multi-process server: the serving process's index
_MAX_HEAD = 65536  # a request head longer than this is left to the HTTP parser (which refuses it)
_FRAME = struct.Struct("!I")


@dataclass(frozen=True)
class Router:
    """Where a request's session lives: process ``index`` of ``workers``, peers' sockets in ``peers_dir``."""

    index: int
    workers: int
    secret: bytes
    peers_dir: Path

    def owner(self, session: str) -> int:
        digest = hashlib.blake2b(session.encode("utf-8", "surrogateescape"), key=self.secret, digest_size=8).digest()
        return int.from_bytes(digest, "big") % self.workers

    def owner_of_head(self, head: bytes) -> tuple[str, int] | None:
        """The session a request head names (``?session=`` first, then ``Mcp-Session-Id``) and its owner."""
        line_end = head.find(b"\r\n")
        target = head[:line_end].split(b" ")
        session = None
        if len(target) == 3 and b"session=" in target[1]:
            query = target[1].partition(b"?")[2].decode("latin-1")
            named = parse_qs(query).get("session")
            session = named[-1] if named else None  # the last one, as the server reads the query
        if session is None:
            at = head.lower().find(b"\r\nmcp-session-id:")
            if at >= 0:
                value_end = head.find(b"\r\n", at + 2)
                session = head[at + 17: value_end if value_end >= 0 else None].strip().decode("latin-1") or None
        return None if session is None else (session, self.owner(session))

    def peer_path(self, index: int) -> str:
        return str(self.peers_dir / f"w{index}.sock")

    def new_session_id(self) -> uuid.UUID:
        """A random session id that this process owns (for the SDK's ``Mcp-Session-Id``)."""
        while True:
            candidate = uuid.uuid4()
            if self.owner(candidate.hex) == self.index:
                return candidate

    def own_session_ids(self) -> None:
        """Make the SDK's session manager draw ids this process owns (it calls ``uuid4().hex``)."""
        from mcp.server import streamable_http_manager

        streamable_http_manager.uuid4 = self.new_session_id  # type: ignore[attr-defined]


def reuseport_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` with ``SO_REUSEPORT`` (``port=0`` picks one), not yet listening."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _gone_response(session: str, owner: int, workers: int) -> bytes:
    message = (f"session {shown_name(session)} is held by server process {owner} of {workers}, which has exited: "
               "its state is lost; open a new session")
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": message}}).encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))


class RoutingProtocol(_GuardedH11Protocol):
    """The guarded HTTP/1.1 protocol that first hands a request for another process's session over to it.

    Set :attr:`router` and :attr:`handoff` on a subclass (see :class:`Handoff`)."""

    router: Router
    handoff: Handoff

    initial = b""  # set on a connection handed over by another process: the bytes it had read

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._head = b""
        self._routing = True  # at the start of a request: its head decides where it is served
        super().connection_made(transport)
        if self.initial and not transport.is_closing():
            self.data_received(self.initial)  # before the transport reads the socket (asyncio starts that later)

    def data_received(self, data: bytes) -> None:
        if not self._routing:
            super().data_received(data)
            return
        buf = self._head + data
        end = buf.find(b"\r\n\r\n")
        if end < 0 and len(buf) < _MAX_HEAD:
            self._head = buf
            return
        self._head = b""
        found = self.router.owner_of_head(buf[:end + 2]) if end >= 0 else None
        if found is None or found[1] == self.router.index:
            self._routing = False
            super().data_received(buf)
            return
        if not self.handoff.send(found[1], self.transport, buf):
            self.transport.write(_gone_response(found[0], found[1], self.router.workers))
            self.transport.close()
            return
        self._routing = False
        self.transport.abort()  # closes this process's descriptor only: the owner has its own now

    def on_response_complete(self) -> None:
        self._routing = True  # the connection's next request is routed again (pipelined ones are not)
        super().on_response_complete()


class Handoff:
    """Sends connections to the other processes, and adopts those they send (``SCM_RIGHTS`` over Unix sockets)."""

    def __init__(self, router: Router):
        self.router = router
        self._peers: dict[int, socket.socket] = {}
        self._listener: socket.socket | None = None
        self._adopt: Callable[[], asyncio.Protocol] | None = None

    def send(self, owner: int, transport: Any, data: bytes) -> bool:
        """Hand the connection of ``transport`` with the bytes read from it to process ``owner``; False if it is gone."""
        sock = transport.get_extra_info("socket")
        for attempt in (0, 1):
            peer = self._peers.get(owner)
            try:
                if peer is None:
                    peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    self._peers[owner] = peer
                    peer.connect(self.router.peer_path(owner))
                socket.send_fds(peer, [_FRAME.pack(len(data)) + data], [sock.fileno()])
                return True
            except OSError as exc:
                self._peers.pop(owner, None)
                if peer is not None:
                    peer.close()
                if attempt:
                    log.warning("process %d cannot take a connection: %s", owner, exc)
        return False

    async def listen(self, protocol_factory: Callable[[], asyncio.Protocol]) -> None:
        """Adopt the connections other processes hand over, serving them with ``protocol_factory``'s protocols."""
        path = self.router.peer_path(self.router.index)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(64)
        listener.setblocking(False)
        self._listener = listener
        self._adopt = protocol_factory
        asyncio.get_running_loop().add_reader(listener.fileno(), self._accept)

    def _accept(self) -> None:
        assert self._listener is not None
        with contextlib.suppress(BlockingIOError, InterruptedError):
            conn, _ = self._listener.accept()
            conn.setblocking(False)
            state: dict[str, Any] = {"buf": b"", "fds": []}
            asyncio.get_running_loop().add_reader(conn.fileno(), functools.partial(self._read, conn, state))

    def _read(self, conn: socket.socket, state: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        try:
            data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data, fds = b"", []
        state["fds"].extend(fds)
        if not data:
            loop.remove_reader(conn.fileno())
            conn.close()
            for fd in state["fds"]:
                os.close(fd)
            return
        buf = state["buf"] + data
        while len(buf) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(buf)
            if len(buf) < _FRAME.size + size or not state["fds"]:
                break
            payload, buf = buf[_FRAME.size:_FRAME.size + size], buf[_FRAME.size + size:]
            loop.create_task(self._serve(state["fds"].pop(0), payload))
        state["buf"] = buf

    async def _serve(self, fd: int, data: bytes) -> None:
        adopt = self._adopt
        assert adopt is not None

        def protocol() -> asyncio.Protocol:
            made = adopt()
            made.initial = data  # type: ignore[attr-defined]
            return made

        sock = socket.socket(fileno=fd)
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().connect_accepted_socket(protocol, sock)
        except OSError:
            sock.close()

    def close(self) -> None:
        for peer in self._peers.values():
            peer.close()
        self._peers.clear()
        if self._listener is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._listener.fileno())
            self._listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.router.peer_path(self.router.index))


def worker_header(app: ASGIApp, index: int) -> ASGIApp:
    """``app`` with :data:`WORKER_HEADER` (this process's index, nothing else) on every HTTP response."""
    value = str(index).encode()

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (WORKER_HEADER.encode(), value)]}
            await send(message)

        await app(scope, receive, tagged)

    return wrapped


async def serve_routed(
    app: ASGIApp, sock: socket.socket, router: Router, *, limits: HTTPLimits, log_level: str = "warning",
    on_ready: Callable[[], None] | None = None, stop: asyncio.Event | None = None,
) -> None:
    """Serve ``app`` on the listening socket ``sock`` (one of the port's ``SO_REUSEPORT`` group) as process
    ``router.index``: handshake session ids this process owns, requests of other processes' sessions
    handed over, :data:`WORKER_HEADER` on responses. Returns when ``stop`` is set, or on SIGTERM/SIGINT."""
    import uvicorn

    router.own_session_ids()
    handoff = Handoff(router)
    protocol = type("RoutedH11Protocol", (RoutingProtocol, _protocol_class(limits)), {"router": router, "handoff": handoff})
    config = uvicorn_config(cast(Any, worker_header(app, router.index)), "127.0.0.1", 0, log_level, limits=limits)
    config.http = protocol
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_started(server, task)
        await handoff.listen(functools.partial(
            cast(Any, config.http_protocol_class), config=config, server_state=server.server_state, app_state=server.lifespan.state,
        ))
        if on_ready is not None:
            on_ready()
        if stop is not None:
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait([task, stopping], return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            server.should_exit = True
        await task
    finally:
        handoff.close()
