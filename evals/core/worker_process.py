"""A worker's side of ``evals run --workers N`` (:mod:`evals.core.workers` has the protocol and the
parent's side): :class:`WorkerCore` runs the episodes the parent hands it, whatever carries the
messages. Local workers come from a *zygote* that has the benchmark loaded and forks one worker per
request of the parent (as the standard library's ``forkserver`` does), so an extra worker costs a
fork and its own tool server, not a fresh interpreter: a fork of the run's process once it has
loaded the benchmark (:func:`forked_zygote`), or, where that process runs other threads,
``python -m evals.core.worker_process FD``, which imports and loads it itself (:func:`zygote`). A forked worker talks to the parent over the two pipes the
parent handed the zygote for it (its stdin and stdout).

The zygote, over its stdin (JSON lines from the parent): the run's options (first line; a spawned
zygote only), then ``{"fork": index}`` (the worker's two pipe ends arrive beside it over the socket ``FD``, with
``SCM_RIGHTS``) and ``{"kill": pid, "signal": n}``. Over its stdout: ``{"loaded": true}`` or
``{"error": MESSAGE}``, ``{"forked": index, "pid": pid}``, ``{"exited": pid, "status": code}`` (a
negative code: the signal). It forks only while it runs one thread and no event loop. When its stdin
closes (the parent is done, or died) it waits for its workers (they stop on their own stdin's end),
SIGKILLs those still alive after ``STOP_TIMEOUT_S``, and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.eventloop import episode_gc
from client.ratelimit import RateLimiter, Reservation
from client.runner import sole_exception
from client.runs import (
    EpisodeOutcome,
    EpisodeRecorder,
    RunDiskFull,
    append_line,
    error_info,
    open_run_file,
    to_jsonable,
    utf8_lines,
)
from server.children import STOP_TIMEOUT_S

from .epochs import split_key

if TYPE_CHECKING:
    from .plugin import Benchmark, EpisodeEnv
    from .run_options import RunOptions

__all__ = ["LINE_LIMIT", "EventLog", "RemoteLimiter", "WorkerCore", "message_bytes", "message_line"]

log = logging.getLogger(__name__)

LINE_LIMIT = 1 << 30  # one message is one line; a trace's events can be large


def message_line(msg: dict[str, Any]) -> bytes:
    """A message of the parent and its workers (:mod:`evals.core.workers`) as one JSON line."""
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def message_bytes(msg: dict[str, Any]) -> bytes:
    """A worker's message as pipe bytes: a JSON line; a ``done`` message's event lines follow it raw."""
    lines = msg.get("lines")
    if lines is None:
        return message_line(msg)
    head = {k: v for k, v in msg.items() if k != "lines"}
    head["n"] = len(lines)
    return b"".join([message_line(head), *((line + "\n").encode("utf-8") for line in lines)])


class RemoteLimiter(RateLimiter):
    """A worker's rate limiter: each request waits for the parent's (shared) limiter."""

    def __init__(self, opts: RunOptions, send: Callable[[dict[str, Any]], None]):
        super().__init__(opts.rpm, opts.tpm, name=opts.model)
        self._send = send
        self._next = 0
        self.waiting: dict[int, asyncio.Future[None]] = {}

    async def acquire(self, estimated_tokens: int = 0) -> Reservation:
        if estimated_tokens < 0:
            raise ValueError(f"estimated_tokens must be >= 0, got {estimated_tokens}")
        self._next += 1
        rid = self._next
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting[rid] = granted
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        self._send({"acquire": rid, "tokens": estimated_tokens})
        try:
            await granted
        finally:
            self.waiting.pop(rid, None)
        self.acquired += 1
        waited = loop.time() - t0
        self.total_wait_s += waited
        return _RemoteReservation(self, estimated_tokens, waited, rid=rid)

    def granted(self, rid: int) -> None:
        if (fut := self.waiting.get(rid)) is not None and not fut.done():
            fut.set_result(None)


@dataclass
class _RemoteReservation(Reservation):
    rid: int = 0

    def record(self, actual_tokens: int) -> None:
        if self.recorded_tokens is not None:
            return
        self.recorded_tokens = int(actual_tokens)
        assert isinstance(self.limiter, RemoteLimiter)
        self.limiter._send({"record": self.rid, "tokens": self.recorded_tokens})


class EventLog:
    """A worker's end of ``events.jsonl``: lines gathered during one event-loop turn, then appended in
    one ``O_APPEND`` write of whole lines (so they never interleave with another process's lines)."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = open_run_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self._lines: list[str] = []

    def add(self, line: str) -> None:
        if self._fd is None:
            return
        if not self._lines:
            asyncio.get_running_loop().call_soon(self.flush)
        self._lines.append(line)

    def flush(self) -> None:
        lines, self._lines = self._lines, []
        if self._fd is None or not lines:
            return
        try:
            append_line(self._fd, utf8_lines("".join(line + "\n" for line in lines)), self.path)
        except RunDiskFull as exc:  # the event log is a debugging aid: a full disk stops it, not the run
            log.warning("%s; this worker logs no more events", exc.strerror)
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


class WorkerCore:
    """A worker's side, whatever carries its messages: runs the episodes it is handed.

    :meth:`open` loads the benchmark and opens the episode environment (models, tool server,
    sessions); :meth:`handle` takes each message from the parent; ``send`` carries the worker's
    messages back (see the module docstring)."""

    def __init__(self, opts: RunOptions, send: Callable[[dict[str, Any]], None], events: EventLog | None = None,
                 bench: Benchmark | None = None):
        self.opts = opts
        self.send = send
        self.events = events
        self.limiter = RemoteLimiter(opts, send) if (opts.rpm or opts.tpm) else None
        self.running: dict[str, asyncio.Task[None]] = {}
        self._bench: Benchmark | None = bench  # loaded already (by the zygote), or by :meth:`open`
        self._env: EpisodeEnv | None = None

    async def open(self, stack: contextlib.AsyncExitStack) -> None:
        from .episodes import open_episode_env
        from .registry import load_benchmark

        if self._bench is None:
            self._bench = load_benchmark(self.opts.benchmark, self.opts.benchmark_options)
        self._env = await open_episode_env(self.opts, self._bench, stack, self.limiter)

    def handle(self, msg: dict[str, Any]) -> None:
        op = msg["op"]
        if op == "run":
            task_id = msg["task"]
            task = self.running[task_id] = asyncio.create_task(self._run(msg))
            task.add_done_callback(lambda _: self.running.pop(task_id, None))
        elif op == "cancel":
            if (target := self.running.get(msg["task"])) is not None:
                target.cancel()
        elif op == "granted" and self.limiter is not None:
            self.limiter.granted(int(msg["rid"]))

    async def _run(self, msg: dict[str, Any]) -> None:
        assert self._bench is not None and self._env is not None
        task_id = msg["task"]
        send = self.send

        def usage(tokens: int, cost: float) -> None:
            if tokens or cost:
                send({"usage": task_id, "tokens": tokens, "cost": cost})

        recorder = EpisodeRecorder(
            task_id, episode_id=msg["episode_id"], run_attempt=msg["attempt"], config_hash=msg["config_hash"],
            sink=None if self.events is None else self.events.add, on_usage=usage,
            max_value_bytes=self.opts.trace_max_value_bytes,
        )
        error: Any = None
        final: str | None = None
        data: Any = {}
        try:
            # a trial of --epochs K is keyed <task id>#<k>: the episode is the task's
            result: object = await self._bench.episode(self._env, split_key(task_id, self.opts.epochs)[0], recorder)
        except asyncio.CancelledError as exc:
            if (me := asyncio.current_task()) is not None and me.cancelling():
                raise  # the parent cancelled it: no answer
            error = exc
        except Exception as exc:
            error = sole_exception(exc)
        else:
            if isinstance(result, EpisodeOutcome):
                final, error, data = result.final_answer, result.error, result.data
            elif result is not None:
                error = TypeError(f"the episode function returned {type(result).__name__}; expected EpisodeOutcome or None")
        send({"done": task_id, "totals": recorder.totals.to_dict(), "answer": recorder.answer,
              "final_answer": final, "data": to_jsonable(data),
              "error": error_info(error) if isinstance(error, BaseException) else to_jsonable(error),
              "error_mro": [c.__name__ for c in type(error).__mro__] if isinstance(error, BaseException) else None,
              "lines": recorder.event_lines})

    async def aclose(self) -> None:
        for task in list(self.running.values()):
            task.cancel()
        await asyncio.gather(*self.running.values(), return_exceptions=True)
        if self.events is not None:
            self.events.flush()
            self.events.close()


async def _work(out: Any, opts: RunOptions, bench: Benchmark) -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    # fd 0 itself: sys.stdin may be another object in a zygote forked from the run's process (a test runner's)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", 0))

    flush_due = False

    def flush() -> None:
        nonlocal flush_due
        flush_due = False
        out.flush()  # a pipe: a full one makes the worker wait for the parent

    def send(msg: dict[str, Any]) -> None:
        nonlocal flush_due
        out.write(message_bytes(msg))
        if not flush_due:  # one write per turn of the event loop, however many messages
            flush_due = True
            loop.call_soon(flush)

    async with contextlib.AsyncExitStack() as stack:
        try:
            core = WorkerCore(opts, send, bench=bench)
            stack.push_async_callback(core.aclose)
            await core.open(stack)  # while the parent prepares the run directory
            # then the second line: the event log, once the parent has opened (and repaired) it
            events_path = json.loads(await reader.readline() or b"{}").get("events_path")
            if events_path:
                core.events = EventLog(Path(events_path))
        except Exception as exc:
            traceback.print_exc()
            send({"error": f"{type(exc).__name__}: {exc}"})
            out.flush()
            return 0
        send({"ready": True})
        with episode_gc():  # as run_episodes does in one process: the loaded benchmark out of collections
            while line := await reader.readline():  # EOF: the parent is done, or died
                core.handle(json.loads(line))
        # the parent is done or died, and our zygote may be gone too (nobody left to kill us): if
        # closing hangs, the default SIGALRM ends this process
        signal.alarm(int(STOP_TIMEOUT_S))
    return 0


def _worker(opts: RunOptions, bench: Benchmark) -> int:
    """A forked worker's life: fd 0 and 1 are its pipes from and to the parent."""
    from client import eventloop

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it closes our stdin
    out = os.fdopen(1, "wb")  # the pipe to the parent (the zygote's sys.stdout is its stderr)
    return eventloop.run(_work(out, opts, bench))


class _Lines:
    """JSON lines from a file descriptor, read without blocking past what select said is there."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = b""
        self.eof = False

    def fill(self) -> bool:
        """Read what is there (blocking until something is); False at the end."""
        chunk = os.read(self.fd, 1 << 16)
        self.eof = not chunk
        self.buf += chunk
        return bool(chunk)

    def pop(self) -> bytes | None:
        """The next whole line (without its newline), if one is here."""
        line, sep, rest = self.buf.partition(b"\n")
        if not sep:
            return None
        self.buf = rest
        return line


def _report(msg: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the parent is gone: nobody to tell
        os.write(1, json.dumps(msg).encode() + b"\n")


def threads() -> int:
    """This process's threads (native ones included where ``/proc`` says)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def zygote(fd_socket: socket.socket) -> int:
    """A spawned zygote's life (see the module docs): import and load once, then fork workers on request."""
    from .registry import load_benchmark
    from .run_options import RunOptions

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdout = sys.stderr  # the protocol owns fd 1
    _close_copies(0, 1, keep=fd_socket.fileno())
    ctl = _Lines(0)
    while (first := ctl.pop()) is None:
        if not ctl.fill():
            return 0
    try:
        opts = RunOptions.decode(first.decode()).for_worker()
        from . import episodes  # noqa: F401  (what every worker needs, imported once)

        bench = load_benchmark(opts.benchmark, opts.benchmark_options)
    except Exception as exc:
        traceback.print_exc()
        _report({"error": f"{type(exc).__name__}: {exc}"})
        return 0
    return _serve_forks(fd_socket, ctl, opts, bench, collect=True)


def forked_zygote(fd_socket: socket.socket, ours: tuple[int, int], theirs: tuple[int, ...], opts: RunOptions,
                  bench: Benchmark) -> None:
    """The life of a zygote forked by the run's process (:meth:`evals.core.workers.Zygote.fork_here`),
    which has imported and loaded ``bench`` already: ``ours`` are its stdin and stdout pipe ends,
    ``theirs`` the parent's ends (closed here); it never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)  # the parent's event loop's: a signal here must not wake it
        os.setsid()  # a Ctrl-C reaches the parent only; it stops the workers
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as a spawned zygote's, whatever the parent's loop set
        for fd in theirs:
            os.close(fd)
        for fd, std in zip(ours, (0, 1), strict=True):
            os.dup2(fd, std)
            os.close(fd)
        sys.stdout = sys.stderr  # the protocol owns fd 1
        from . import episodes  # noqa: F401  (what every worker needs, imported once)

        code = _serve_forks(fd_socket, _Lines(0), opts, bench, collect=False)
    except BaseException:
        traceback.print_exc()
    finally:
        _exit(code)


def _serve_forks(fd_socket: socket.socket, ctl: _Lines, opts: RunOptions, bench: Benchmark, *, collect: bool) -> int:
    """Fork a worker on each request of the parent, until its stdin closes and the workers are gone."""
    opts = dataclasses.replace(opts, workers=1, progress=False)
    try:
        _warm_imports()
        if (count := threads()) > 1:
            raise RuntimeError(f"the worker zygote runs {count} threads after loading {opts.benchmark}; "
                               "it forks workers only from one thread")
    except Exception as exc:
        traceback.print_exc()
        _report({"error": f"{type(exc).__name__}: {exc}"})
        return 0
    _report({"loaded": True})
    gc_freeze(collect)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # the wake-up fd says a worker exited
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    children: set[int] = set()
    deadline: float | None = None  # once the parent closed our stdin: when the rest are killed
    while not ctl.eof or children:
        while (line := ctl.pop()) is not None:
            msg = json.loads(line)
            if "fork" in msg:
                _, fds, _, _ = socket.recv_fds(fd_socket, 1, 2)
                pid = os.fork()
                if pid == 0:  # the worker
                    code = 1
                    try:
                        signal.set_wakeup_fd(-1)
                        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                        sel.close()
                        for fd in (wake_r, wake_w, fd_socket.detach()):
                            os.close(fd)
                        os.dup2(fds[0], 0)
                        os.dup2(fds[1], 1)
                        os.close(fds[0])
                        os.close(fds[1])
                        code = _worker(opts, bench)
                    except BaseException:
                        traceback.print_exc()
                    finally:
                        _exit(code)
                for fd in fds:
                    os.close(fd)
                children.add(pid)
                _report({"forked": msg["fork"], "pid": pid})
            elif "kill" in msg and msg["kill"] in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(msg["kill"]), int(msg["signal"]))
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            children.discard(pid)
            _report({"exited": pid, "status": os.waitstatus_to_exitcode(status)})
        if deadline is not None and time.monotonic() >= deadline:
            for pid in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + STOP_TIMEOUT_S
        if ctl.eof and not children:
            break
        # the lines read already are handled (above) before waiting for more
        for key, _ in sel.select(None if deadline is None else max(0.0, deadline - time.monotonic())):
            if key.fd == wake_r:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 512)
            elif not ctl.eof and not ctl.fill():
                sel.unregister(0)
                deadline = time.monotonic() + STOP_TIMEOUT_S
    return 0


WARM_IMPORTS = ("anyio._backends._asyncio", "anyio.streams.stapled", "anyio.streams.tls", "httpcore2", "kuzu")
"""Modules each worker would import on its own once forked (its event loop's anyio backend, the HTTP
transport under its MCP and model clients, the KG store's database): imported once, here, instead."""


def _warm_imports() -> None:
    import importlib

    from client import eventloop

    with contextlib.suppress(ImportError, RuntimeError, ValueError):
        eventloop.loop_name()  # imports uvloop where it is used
    for name in WARM_IMPORTS:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _close_copies(*fds: int, keep: int) -> None:
    """Close this process's other descriptors of the same pipes or sockets as ``fds``. A parent on
    uvloop hands its child the ends of a socketpair as fd 0 and 1 *and* leaves them open under their
    old numbers; every worker forked from here would inherit those copies, so the parent's end of our
    stdout would see no EOF when we die (only when the last worker has gone too)."""
    try:
        wanted = {(st.st_dev, st.st_ino) for st in map(os.fstat, fds)}
        open_fds = [int(name) for name in os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd")]
    except OSError:
        return
    for fd in open_fds:
        if fd in fds or fd == keep or fd <= 2:
            continue
        with contextlib.suppress(OSError):  # the listing's own descriptor is closed already
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) in wanted:
                os.close(fd)


def gc_freeze(collect: bool) -> None:
    """Keep what the zygote loaded out of the workers' collections (their pages stay shared);
    ``collect``: drop the loading's garbage first (a full collection writes to every object's
    header: in a zygote forked from the run's process, that is a private copy of each page of its
    heap, about 0.08 s of CPU in ``bench/bench_scale.py``'s runs, so there it is left out)."""
    import gc

    if collect:
        gc.collect()
    gc.freeze()


def _exit(code: int) -> None:
    # everything is closed and flushed (the event log, the tool server): skip the interpreter's
    # teardown of the loaded benchmark, seconds on a busy machine that the parent would wait for
    for stream in (sys.__stdout__, sys.__stderr__, sys.stdout, sys.stderr):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.flush()
    os._exit(code)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    _exit(zygote(socket.socket(fileno=int(sys.argv[1]))))
