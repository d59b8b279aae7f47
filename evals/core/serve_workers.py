"""``evals serve --workers N``: the HTTP server as N processes on one port, and their supervisor.

Each worker process builds its own tool server (the KG opened read-only in each, from the one
cache the parent made sure of), listens on the port with ``SO_REUSEPORT`` and keeps every MCP
session it creates (:mod:`server.worker_routing` hands a request over to the process that holds
its session). The limits on what clients may hold are shared out: each worker keeps 1/N of the
session caps and of the connection cap, so the totals hold across processes with no shared state
on the request path (sessions are spread evenly: a keyed hash a client cannot steer).

The parent only supervises: it reserves the port (so ``--port 0`` picks one and a port in use is
reported once), starts the workers (forked when it has no other thread, else spawned), waits until
each has built its server or one fails (its exception is raised in the parent, so that it is reported as one
process reports it), and on SIGTERM or
SIGINT stops them all (SIGTERM, then SIGKILL after 15 s) and leaves none behind. A worker that dies
is reported, not replaced (its sessions' state is gone; a new process under its index would answer
them from a fresh state); the others go on. A worker whose parent dies stops by itself.
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

from server import HTTPLimits, SessionLimits, bind_host

__all__ = ["WorkerStartError", "serve_workers", "share_limits"]

STOP_TIMEOUT_S = 15.0

AppBuilder = Callable[[contextlib.ExitStack, SessionLimits], tuple[Any, Any]]  # picklable: a worker's ASGI app, and what it serves


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
) -> int:
    """Serve ``build``'s app from ``workers`` processes on ``host:port`` until SIGTERM/SIGINT; returns 0,
    or 1 when every worker died. ``announce(url, pids, what_is_served)`` once all are built, before they listen; ``report`` a worker's death."""
    shared_sessions, shared_limits = share_limits(sessions, limits, workers)
    from server.worker_routing import reuseport_socket

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
    try:
        for index in range(workers):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(
                target=_worker_main, name=f"evals-serve-{index}", daemon=False,
                args=(index, workers, secret, peers, bound, port, build, shared_sessions, shared_limits, log_level, theirs),
            )
            proc.start()
            theirs.close()
            procs.append(proc)
            conns.append(ours)
        pids, served = _wait_built(procs, conns)
        shown = f"[{bound}]" if ":" in bound else bound
        announce(f"http://{shown}:{port}", pids, served)
        for conn in conns:  # go: serve (a client that saw the announcement finds the port served)
            conn.send("go")
        alive = dict(enumerate(procs))
        while alive:
            multiprocessing.connection.wait([p.sentinel for p in alive.values()])
            for index, proc in list(alive.items()):
                if not proc.is_alive():
                    del alive[index]
                    report(f"worker process {index} (pid {proc.pid}) exited with status {proc.exitcode}: its sessions "
                           f"are lost; {len(alive)} of {workers} go on")
        return 1
    except _Stop:
        return 0
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        _stop_all(procs)
        for conn in conns:
            conn.close()
        reserve.close()
        shutil.rmtree(peers, ignore_errors=True)


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


def _stop_all(procs: list[Any]) -> None:
    for proc in procs:
        if proc.is_alive():
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
    for action in ("kill", None):
        for proc in procs:
            proc.join(STOP_TIMEOUT_S if action else 1.0)
            if action and proc.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()


# ---- a worker process -------------------------------------------------------------------------


def _worker_main(index: int, workers: int, secret: bytes, peers: str, host: str, port: int, build: AppBuilder,
                 sessions: SessionLimits, limits: HTTPLimits, log_level: str,
                 conn: multiprocessing.connection.Connection) -> None:
    import asyncio

    from client import eventloop
    from server.worker_routing import Router, reuseport_socket, serve_routed

    parent = os.getppid()
    for s in (signal.SIGTERM, signal.SIGINT):  # a forked worker has the parent's handlers; uvicorn sets its own
        signal.signal(s, signal.SIG_DFL)
    with contextlib.ExitStack() as stack:
        try:
            app, served = build(stack, sessions)
            sock = reuseport_socket(host, port)
            stack.callback(sock.close)
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

            def watch_parent() -> None:  # the parent is gone (even after its SIGKILL): stop
                while os.getppid() == parent:
                    time.sleep(0.5)
                loop.call_soon_threadsafe(stop.set)

            threading.Thread(target=watch_parent, name="parent-watch", daemon=True).start()
            await serve_routed(app, sock, Router(index, workers, secret, Path(peers)), limits=limits,
                               log_level=log_level, stop=stop)

        eventloop.run(run())
    sys.stdout.flush()
