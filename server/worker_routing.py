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

The router and the server read a request's session with one function (:func:`server.core.named_session`),
and a process refuses a named session it does not own (:class:`SessionLedger`): one name never has
two states. A hand-over never blocks: a connection the owner cannot take yet waits in a bounded
queue; past it, or when the owner is gone or restarting, the request gets HTTP 503 with a transient
JSON-RPC error (:data:`LOST_CODE`). The supervisor restarts a process that exited or stopped
answering its heartbeat; the restarted process says "state lost" only for the sessions its
predecessors held.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import hashlib
import json
import logging
import os
import socket
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tool_specs import shown_name

from .core import named_session
from .http import HTTPLimits, _GuardedH11Protocol, _protocol_class, uvicorn_config, wait_started

__all__ = ["LOST_CODE", "WORKER_HEADER", "Router", "SessionLedger", "peer_listener", "reuseport_socket", "serve_routed"]

log = logging.getLogger(__name__)

WORKER_HEADER = "x-evals-worker"  # debug only (``--worker-header``, loopback): the serving process's index
LOST_CODE = -32000  # a session's process exited or stopped answering: transient (the SDK's "connection closed")
_MAX_HEAD = 65536  # a request head longer than this is left to the HTTP parser (which refuses it)
_MAX_MESSAGE = 1 << 18  # the bytes handed over with a connection: a head (< 64 KiB) and one read (64 KiB)
QUEUE_PER_PEER = 64  # connections waiting for one process to take them; past it, the 503 path


@dataclass(frozen=True)
class Router:
    """Where a request's session lives: process ``index`` of ``workers``, peers' sockets in ``peers_dir``."""

    index: int
    workers: int
    secret: bytes
    peers_dir: Path

    def digest(self, session: str) -> bytes:
        return hashlib.blake2b(session.encode("utf-8", "surrogateescape"), key=self.secret, digest_size=8).digest()

    def owner(self, session: str) -> int:
        return int.from_bytes(self.digest(session), "big") % self.workers

    def owner_of_head(self, head: bytes) -> tuple[str, int] | None:
        """The session a request head names (``?session=`` first, then ``Mcp-Session-Id``) and its owner."""
        line_end = head.find(b"\r\n")
        target = head[:line_end].split(b" ")
        session = None
        if len(target) == 3:
            session = named_session(target[1].partition(b"?")[2])
        if session is None:
            at = head.lower().find(b"\r\nmcp-session-id:")
            if at >= 0:
                value_end = head.find(b"\r\n", at + 2)
                session = head[at + 17: value_end if value_end >= 0 else None].strip(b" \t").decode("latin-1") or None
        return None if session is None else (session, self.owner(session))

    def peer_path(self, index: int) -> str:
        return str(self.peers_dir / f"w{index}.sock")

    def ledger_path(self, index: int) -> str:
        return str(self.peers_dir / f"w{index}.sessions")

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


_MAX_LEDGER = 8 << 20  # bytes of a predecessor's ledger read back (a million sessions); past it, the newest


class SessionLedger:
    """Which named sessions this process's index has held, kept across a restart of the process.

    Each process appends a keyed digest (8 bytes) of every named session it opens to a file of its
    index in the peers' directory (mode 0700). A process started in place of one that exited reads
    its predecessors' digests: a request for one of those sessions is told its state is lost (a
    transient error: ``evals run`` runs the episode again on resume), a name never seen is a new
    session. :meth:`admit` also refuses a session this process does not own (one that reached it
    without the router, e.g. pipelined behind another request): one name never has two states.
    """

    def __init__(self, router: Router):
        self.router = router
        path = router.ledger_path(router.index)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        size = os.fstat(fd).st_size
        data = os.pread(fd, min(size, _MAX_LEDGER), max(0, size - _MAX_LEDGER)) if size else b""
        data = data[len(data) % 8:]
        self.lost = {data[i:i + 8] for i in range(0, len(data), 8)}
        self._fd = fd

    def admit(self, name: str) -> None:
        """Let this process open named session ``name``, or raise :class:`MCPError` saying why not."""
        if self.router.owner(name) != self.router.index:
            raise MCPError(code=-32600, message=f"session {shown_name(name)} is held by another server process: "
                           "send each request of a session on a request of its own (not pipelined)")
        digest = self.router.digest(name)
        if digest in self.lost:
            raise MCPError(code=LOST_CODE, message=f"session {shown_name(name)} was held by server process "
                           f"{self.router.index} of {self.router.workers}, which exited and was restarted: its state "
                           "is lost; open a new session")
        os.write(self._fd, digest)

    def close(self) -> None:
        os.close(self._fd)


def _busy_response(session: str, owner: int, workers: int, why: str) -> bytes:
    message = (f"session {shown_name(session)} is held by server process {owner} of {workers}, which {why}: "
               "retry (if the session had begun, its state may be lost: then open a new session)")
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": LOST_CODE, "message": message}}).encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))


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
        why = self.handoff.send(found[1], self.transport, buf)
        if why is not None:
            self.transport.write(_busy_response(found[0], found[1], self.router.workers, why))
            self.transport.close()
            return
        self._routing = False
        self.transport.abort()  # closes this process's descriptor only: the queue holds its own copy

    def on_response_complete(self) -> None:
        self._routing = True  # the connection's next request is routed again (a pipelined one: see SessionLedger)
        super().on_response_complete()


def peer_listener(router: Router) -> socket.socket:
    """This process's socket for the connections the others hand over, bound and listening: made before
    the process serves the port, so that no peer finds it missing (they queue until it is read)."""
    path = router.peer_path(router.index)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
    listener.bind(path)
    listener.listen(128)
    return listener


@dataclass(eq=False)
class _Peer:
    """The socket to one other process and the connections waiting to be handed to it (their own descriptors)."""

    sock: socket.socket
    queue: deque[tuple[int, bytes]] = field(default_factory=deque)
    waiting: bool = False  # a writer callback is registered: the socket was full


class Handoff:
    """Sends connections to the other processes, and adopts those they send (``SCM_RIGHTS`` over Unix sockets).

    Sending never blocks the event loop: the sockets are non-blocking, a connection the peer cannot
    take yet waits in a queue of at most :data:`QUEUE_PER_PEER` (sent when the peer drains its socket),
    and past that, or when the peer is gone, the request gets the 503 path. A peer that stops taking
    connections for good is stopped by the supervisor (it no longer answers its heartbeat), which
    answers the waiting connections with a 503 as well."""

    def __init__(self, router: Router):
        self.router = router
        self._peers: dict[int, _Peer] = {}
        self._listener: socket.socket | None = None
        self._adopt: Callable[[], asyncio.Protocol] | None = None

    def send(self, owner: int, transport: Any, data: bytes) -> str | None:
        """Hand the connection of ``transport`` with the bytes read from it to process ``owner``; None when
        it is sent or queued, else why not (the peer is gone or not answering, or its queue is full)."""
        if len(data) > _MAX_MESSAGE:
            return "cannot take a request head this large"
        peer = self._peers.get(owner)
        if peer is None:
            peer = self._connect(owner)
            if peer is None:
                return "is not answering (it exited or is restarting)"
        if len(peer.queue) >= QUEUE_PER_PEER:
            return "is not taking connections (busy or stuck)"
        peer.queue.append((os.dup(transport.get_extra_info("socket").fileno()), data))
        self._flush(owner)
        return None

    def _connect(self, owner: int) -> _Peer | None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 2 * _MAX_MESSAGE)  # a message must fit whole
            sock.connect(self.router.peer_path(owner))
        except OSError as exc:
            sock.close()
            log.warning("process %d cannot take a connection: %s", owner, exc)
            return None
        peer = self._peers[owner] = _Peer(sock)
        return peer

    def _flush(self, owner: int, retry: bool = True) -> None:
        peer = self._peers.get(owner)
        if peer is None:
            return
        loop = asyncio.get_running_loop()
        while peer.queue:
            fd, data = peer.queue[0]
            try:
                socket.send_fds(peer.sock, [data], [fd])
            except OSError as exc:
                if exc.errno == errno.EMSGSIZE:  # this one only: it cannot cross
                    peer.queue.popleft()
                    self._refuse(fd, data, owner, "cannot take a request head this large")
                    continue
                if not isinstance(exc, (BlockingIOError, InterruptedError)):
                    self._drop(owner, exc, retry)
                    return
                if not peer.waiting:
                    loop.add_writer(peer.sock.fileno(), self._flush, owner)
                    peer.waiting = True
                return
            peer.queue.popleft()
            os.close(fd)
        if peer.waiting:
            loop.remove_writer(peer.sock.fileno())
            peer.waiting = False

    def _drop(self, owner: int, exc: OSError | None, retry: bool = False) -> None:
        """Forget the socket to ``owner``; the connections waiting for it go to a new socket (``retry``: the
        process was restarted since this one was made) or get the 503 path."""
        peer = self._peers.pop(owner, None)
        if peer is None:
            return
        if exc is not None and exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ECONNREFUSED):
            log.warning("process %d cannot take a connection: %s", owner, exc)
        if peer.waiting:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_writer(peer.sock.fileno())
        peer.sock.close()
        fresh = self._connect(owner) if retry and peer.queue else None
        if fresh is not None:
            fresh.queue = peer.queue
            self._flush(owner, retry=False)
            return
        while peer.queue:
            fd, data = peer.queue.popleft()
            self._refuse(fd, data, owner, "stopped before it took the connection")

    def _refuse(self, fd: int, data: bytes, owner: int, why: str) -> None:
        """Answer a queued connection (its own descriptor) with the 503 path, and close it."""
        found = self.router.owner_of_head(data[:data.find(b"\r\n\r\n") + 2])
        with contextlib.suppress(OSError):  # best effort: the socket is non-blocking and the answer small
            os.write(fd, _busy_response(found[0] if found else "?", owner, self.router.workers, why))
        os.close(fd)

    async def listen(self, protocol_factory: Callable[[], asyncio.Protocol], listener: socket.socket | None = None) -> None:
        """Adopt the connections other processes hand over, serving them with ``protocol_factory``'s protocols
        (on ``listener``, from :func:`peer_listener`, when it is bound already)."""
        listener = listener or peer_listener(self.router)
        self._listener = listener
        self._adopt = protocol_factory
        asyncio.get_running_loop().add_reader(listener.fileno(), self._accept)

    def _accept(self) -> None:
        assert self._listener is not None
        with contextlib.suppress(BlockingIOError, InterruptedError):
            conn, _ = self._listener.accept()
            conn.setblocking(False)
            asyncio.get_running_loop().add_reader(conn.fileno(), functools.partial(self._read, conn))

    def _read(self, conn: socket.socket) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(conn, _MAX_MESSAGE, 1)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data, fds = b"", []
        if not data:
            for fd in fds:
                os.close(fd)
            asyncio.get_running_loop().remove_reader(conn.fileno())
            conn.close()
            return
        if len(fds) != 1:  # a message is one connection: its descriptor and its bytes
            for fd in fds:
                os.close(fd)
            return
        asyncio.get_running_loop().create_task(self._serve(fds[0], data))

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
        for owner in list(self._peers):
            self._drop(owner, None)
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
    on_ready: Callable[[], None] | None = None, stop: asyncio.Event | None = None, worker_header_on: bool = False,
    peers: socket.socket | None = None,
) -> None:
    """Serve ``app`` on the listening socket ``sock`` (one of the port's ``SO_REUSEPORT`` group) as process
    ``router.index``: handshake session ids this process owns, requests of other processes' sessions
    handed over (and :data:`WORKER_HEADER` on responses with ``worker_header_on``, for debugging on
    loopback: it tells a client which process holds a session). Returns when ``stop`` is set, or on SIGTERM/SIGINT."""
    import uvicorn

    router.own_session_ids()
    handoff = Handoff(router)
    protocol = type("RoutedH11Protocol", (RoutingProtocol, _protocol_class(limits)), {"router": router, "handoff": handoff})
    served = worker_header(app, router.index) if worker_header_on else app
    config = uvicorn_config(cast(Any, served), "127.0.0.1", 0, log_level, limits=limits)
    config.http = protocol
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_started(server, task)
        await handoff.listen(functools.partial(
            cast(Any, config.http_protocol_class), config=config, server_state=server.server_state, app_state=server.lifespan.state,
        ), peers)
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
