"""``evals serve --workers N``: the HTTP server as N processes on one port, and their supervisor.

Each worker process builds its own tool server (the KG opened read-only in each, from the one
cache the parent made sure of), listens on the port with ``SO_REUSEPORT`` and keeps every MCP
session it creates (:mod:`server.worker_routing` hands a request over to the process that holds
its session). The limits on what clients may hold are shared out: each worker keeps 1/N of the
session caps and of the connection cap, so the totals hold across processes with no shared state
on the request path (sessions are spread evenly: a keyed hash a client cannot steer).

The parent only supervises: it reserves the port (so ``--port 0`` picks one and a port in use is
reported once), starts the workers (forked when it has no other thread, else spawned), waits until
each has built its server or one fails (its exception is raised in the parent, so that it is
reported as one process reports it), and on SIGTERM or SIGINT stops them all (SIGTERM, then SIGKILL
after 10 s: :mod:`server.children`) and leaves none behind. A worker that exits is restarted under its index; one whose
event loop stops sending its heartbeat (alive but stuck, e.g. in a call that never returns) is
killed and restarted the same way. The restarted process knows which sessions its predecessors held
(:class:`server.worker_routing.SessionLedger`): those get a transient "state lost" error, a name it
never saw is a new session. A worker whose parent dies stops by itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import multiprocessing
import multiprocessing.connection
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .children import exit_with_parent, stop_children
from .core import SessionLimits
from .http import HTTPLimits
from .loopback import bind_host

__all__ = ["WorkerStartError", "serve_workers", "share_limits"]

HEARTBEAT_S = 1.0  # a worker's event loop says it is alive this often
STUCK_S = 15.0  # a worker silent this long is stopped and restarted (`--worker-stuck-timeout`)
MAX_RESTARTS, RESTART_WINDOW_S = 5, 60.0  # a worker that exits this often this fast is left down

# picklable: a worker's ASGI app and what it serves, from (its exit stack, its share of the caps, the check
# a new named session must pass to be held by it)
AppBuilder = Callable[[contextlib.ExitStack, SessionLimits, Callable[[str], None]], tuple[Any, Any]]


class WorkerStartError(RuntimeError):
    """A worker process could not start (the message says why; a worker's own exception is raised as it is)."""


def share_limits(sessions: SessionLimits, limits: HTTPLimits, workers: int) -> tuple[SessionLimits, HTTPLimits]:
    """Each worker's share of the caps, so that N workers together hold what one process would.

    Raises ValueError when a cap is smaller than ``workers`` (a worker would get none)."""
    for flag, value in (("--max-sessions", sessions.max_sessions),
                        ("--max-sessions-per-endpoint", sessions.max_sessions_per_endpoint),
                        ("--max-connections", limits.max_connections)):
        if value < workers:
            raise ValueError(f"{flag} {value} cannot be shared by {workers} worker processes (each keeps 1/{workers} "
                             "of it): give a larger cap or fewer --workers")
    return (dataclasses.replace(sessions, max_sessions=sessions.max_sessions // workers,
                                max_sessions_per_endpoint=sessions.max_sessions_per_endpoint // workers),
            dataclasses.replace(limits, max_connections=limits.max_connections // workers))


class _Stop(Exception):
    pass


def _raise_stop(*_: Any) -> None:
    raise _Stop


def serve_workers(
    workers: int, host: str, port: int, build: AppBuilder, *, sessions: SessionLimits, limits: HTTPLimits,
    log_level: str, announce: Callable[[str, list[int], Any], None], report: Callable[[str], None],
    stuck_s: float = STUCK_S, worker_header: bool = False,
) -> int:
    """Serve ``build``'s app from ``workers`` processes on ``host:port`` until SIGTERM/SIGINT; returns 0.
    ``announce(url, pids, what_is_served)`` once all are built, before they listen; ``report`` a worker's
    death, its restart, or a worker stopped for not answering its heartbeat for ``stuck_s``."""
    shared_sessions, shared_limits = share_limits(sessions, limits, workers)
    from .worker_routing import reuseport_socket

    bound = bind_host(host)
    reserve = reuseport_socket(bound, port)  # held, never listening: the port stays ours
    port = reserve.getsockname()[1]
    peers = tempfile.mkdtemp(prefix="evals-serve-")  # mode 0700: only this user reaches the workers' sockets
    secret = os.urandom(16)
    method = "fork" if threading.active_count() == 1 else "spawn"
    ctx: Any = multiprocessing.get_context(method)
    procs: list[Any] = []
    conns: list[multiprocessing.connection.Connection] = []
    old = {s: signal.signal(s, _raise_stop) for s in (signal.SIGTERM, signal.SIGINT)}

    def start(index: int) -> tuple[Any, multiprocessing.connection.Connection]:
        ours, theirs = ctx.Pipe()
        proc = ctx.Process(
            target=_worker_main, name=f"evals-serve-{index}", daemon=False,
            args=(index, workers, secret, peers, bound, port, build, shared_sessions, shared_limits, log_level, theirs,
                  worker_header, os.getpid()),
        )
        proc.start()
        theirs.close()
        return proc, ours

    try:
        for index in range(workers):
            proc, conn = start(index)
            procs.append(proc)
            conns.append(conn)
        pids, served = _wait_built(procs, conns)
        shown = f"[{bound}]" if ":" in bound else bound
        announce(f"http://{shown}:{port}", pids, served)
        for conn in conns:  # go: serve (a client that saw the announcement finds the port served)
            conn.send("go")
        _supervise(procs, conns, start, stuck_s, report)
        return 0
    except _Stop:
        return 0
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        stop_children(procs)
        for conn in conns:
            conn.close()
        reserve.close()
        shutil.rmtree(peers, ignore_errors=True)


def _supervise(procs: list[Any], conns: list[multiprocessing.connection.Connection],
               start: Callable[[int], tuple[Any, multiprocessing.connection.Connection]], stuck_s: float,
               report: Callable[[str], None]) -> None:
    """Until a signal: restart a worker that exits, and stop (then restart) one whose event loop has not
    sent its heartbeat for ``stuck_s`` (alive but stuck: its sessions, and the connections the others
    hand it, would wait for ever). A worker that keeps failing to start is left down (its sessions get
    the 503 path)."""
    workers = len(procs)
    last = [time.monotonic()] * workers
    starts: list[list[float]] = [[] for _ in range(workers)]
    down: set[int] = set()
    while True:
        waited = [p.sentinel for i, p in enumerate(procs) if i not in down] + [c for i, c in enumerate(conns) if i not in down]
        ready = multiprocessing.connection.wait(waited, timeout=HEARTBEAT_S)
        now = time.monotonic()
        for index, conn in enumerate(conns):
            if conn in ready:
                with contextlib.suppress(EOFError, OSError):
                    while conn.poll():
                        conn.recv_bytes()
                        last[index] = now
        for index, proc in enumerate(procs):
            if index in down:
                continue
            if proc.is_alive() and now - last[index] > stuck_s:
                report(f"worker process {index} (pid {proc.pid}) has not answered for {now - last[index]:.0f} s "
                       "(stuck): stopped")
                proc.kill()
                proc.join()
            if proc.is_alive():
                continue
            report(f"worker process {index} (pid {proc.pid}) exited with status {proc.exitcode}: the state of its "
                   "sessions is lost")
            conns[index].close()
            starts[index] = [t for t in starts[index] if now - t < RESTART_WINDOW_S]
            if len(starts[index]) >= MAX_RESTARTS:
                report(f"worker process {index} exited {MAX_RESTARTS} times within {RESTART_WINDOW_S:g} s: not "
                       f"restarted; {workers - len(down) - 1} of {workers} go on")
                down.add(index)
                continue
            starts[index].append(now)
            procs[index], conns[index] = start(index)
            try:
                pid, _ = _wait_built([procs[index]], [conns[index]])
            except Exception as exc:  # noqa: BLE001 - its start-up error: said, and the index left down
                report(f"worker process {index} could not be restarted: {exc}")
                down.add(index)
                continue
            conns[index].send("go")
            last[index] = time.monotonic()
            report(f"worker process {index} restarted (pid {pid[0]}): new sessions go to it")


def _wait_built(procs: list[Any], conns: list[multiprocessing.connection.Connection]) -> tuple[list[int], Any]:
    pending = dict(enumerate(conns))
    pids: dict[int, int] = {}
    served: Any = None
    while pending:
        ready = multiprocessing.connection.wait([*pending.values(), *(procs[i].sentinel for i in pending)])
        for index, conn in list(pending.items()):
            if conn in ready or procs[index].sentinel in ready:
                try:
                    kind, value = conn.recv()
                except EOFError:
                    raise WorkerStartError(f"worker process {index} exited with status {procs[index].exitcode} "
                                           "before it had started (its output is above)") from None
                if kind == "error":
                    raise value
                pids[index], served = value
                del pending[index]
    return [pids[i] for i in range(len(procs))], served


# ---- a worker process -------------------------------------------------------------------------


def _run_loop(main: Any) -> None:
    """Run ``main`` on uvloop where it is installed (as uvicorn does), else on asyncio's loop."""
    import asyncio

    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main)


def _worker_main(index: int, workers: int, secret: bytes, peers: str, host: str, port: int, build: AppBuilder,
                 sessions: SessionLimits, limits: HTTPLimits, log_level: str,
                 conn: multiprocessing.connection.Connection, worker_header: bool, parent: int) -> None:
    import asyncio

    from .worker_routing import Router, SessionLedger, peer_listener, reuseport_socket, serve_routed

    for s in (signal.SIGTERM, signal.SIGINT):  # a forked worker has the parent's handlers; uvicorn sets its own
        signal.signal(s, signal.SIG_DFL)
    exit_with_parent(parent)  # SIGTERM when the parent is gone (even after its SIGKILL): uvicorn stops
    router = Router(index, workers, secret, Path(peers))
    with contextlib.ExitStack() as stack:
        try:
            ledger = SessionLedger(router)  # the sessions of this index before a restart: their state is lost
            stack.callback(ledger.close)
            app, served = build(stack, sessions, ledger.admit)
            sock = reuseport_socket(host, port)
            stack.callback(sock.close)
            peers_sock = peer_listener(router)  # before any process serves the port: no peer finds it missing
            stack.callback(peers_sock.close)
        except Exception as exc:  # the parent raises it, to be reported as one process reports it
            try:
                pickle.loads(pickle.dumps(exc))
            except Exception:  # it does not cross processes: its message does
                exc = WorkerStartError(str(exc) or type(exc).__name__)
            conn.send(("error", exc))
            return
        gc.collect()
        gc.freeze()  # what start-up built stays out of the collector's walks (as `serve` does)
        conn.send(("built", (os.getpid(), served)))
        try:
            conn.recv()  # go: every worker is built and the parent has said where the server is
        except EOFError:
            return
        sock.listen(2048)

        async def run() -> None:
            loop = asyncio.get_running_loop()
            stop = asyncio.Event()

            def beat() -> None:  # from the event loop: a loop that is stuck sends none
                try:
                    conn.send_bytes(b".")
                except OSError:
                    stop.set()
                    return
                loop.call_later(HEARTBEAT_S, beat)

            beat()
            await serve_routed(app, sock, router, limits=limits, log_level=log_level, stop=stop,
                               worker_header_on=worker_header, peers=peers_sock)

        _run_loop(run())
    sys.stdout.flush()
