"""``evals run --workers N``: one run's episodes split over N worker processes.

One process (one event loop, one core) drives at most a few hundred MCP sessions a second; a fast
model at high concurrency needs more. With ``--workers N`` the parent keeps everything that makes a
run *one* run, and the workers only run episodes:

* the parent holds the run directory (its lock, ``traces.jsonl``), the one progress display, the
  budget, the circuit breaker, and the rate limiter (:class:`~evals.core.worker_process.RemoteLimiter`:
  a worker asks the parent before each model request, so ``--rpm``/``--tpm`` hold across all workers);
* each worker (:class:`~evals.core.worker_process.WorkerCore`; here a process forked by the run's
  :class:`Zygote`, which imported and loaded the benchmark once for all of them; on Ray an actor) has the benchmark, serves its tools
  itself (its own tool server, over the run's ``--transport``), opens its own models, and runs the
  episodes the parent hands it, recording with an :class:`~client.runs.EpisodeRecorder` of the same
  episode id. A local worker appends its events
  to the run's ``events.jsonl`` itself as they happen (whole lines, one ``O_APPEND`` write per
  event-loop turn); when an episode ends it sends its totals and event lines, and the parent writes
  the trace line, as with one process.

So every task still gets exactly one trace line, written by one process. A worker that dies (even by
SIGKILL) stops the run like an interrupt: the episodes in flight get no trace and run again on resume.
A parent that dies closes the workers' stdin (and the zygote's): they stop (a worker whose stdin has
closed is gone within ``STOP_TIMEOUT_S`` even if closing hangs, so with its zygote gone as well).
The zygote is needed only to start the workers: if it dies once they are forked, the run goes on
with them and the parent logs a warning naming it (the parent then signals the workers by their
pidfd, and a worker's exit status is unknown); if it dies before, the workers not yet forked fail to
start, naming it, and so does the run. The same oracle numbers come out of any N.

Protocol (messages are dicts; :class:`Channel` carries them). Parent to worker: ``{"op": "run",
"task", "episode_id", "attempt", "config_hash"}``, ``{"op": "cancel", "task"}``, ``{"op": "granted",
"rid"}``. Worker to parent: ``{"usage": task, "tokens", "cost"}``, ``{"acquire": rid, "tokens"}`` /
``{"record": rid, "tokens"}`` (the rate limiter) and ``{"done": task, "totals", "answer",
"final_answer", "data", "error", "error_mro", "lines"}`` (the episode's totals, outcome, error, the
class names of its exception's MRO, and event lines).
Over a child's pipes each message is a JSON line; a ``done`` message's event lines follow it raw
(already JSON, one per line; its ``"n"`` says how many), so they are not encoded twice. Start-up: once
the parent has loaded the benchmark and selected the tasks, it forks itself into the zygote
(:meth:`Zygote.fork_here`: nothing imported or loaded twice; where it runs other threads, it spawns
one that imports and loads for itself, :meth:`Zygote.spawn`) and asks for one fork per worker (each
worker opens its server while the parent prepares the run directory), then sends each worker
``{"events_path"}`` once the run directory is open; the worker answers ``{"ready": true}`` or
``{"error": MESSAGE}``. Stopping any of these processes goes through :mod:`server.children` (one
timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from client.breaker import RemoteError
from client.ratelimit import RateLimiter, Reservation
from client.runs import EpisodeOutcome, EpisodeRecorder
from server.children import STOP_TIMEOUT_S, AsyncChild, ForkedChild, stop_child

from .worker_process import LINE_LIMIT, forked_zygote, message_line, threads

if TYPE_CHECKING:
    from client.runner import RunControl

    from .plugin import Benchmark
    from .run_options import RunOptions

__all__ = ["Channel", "ForkedChannel", "WorkerError", "WorkerPool", "Zygote"]

log = logging.getLogger(__name__)

START_TIMEOUT_S = 180.0


class WorkerError(RuntimeError):
    """A worker process could not start (the message says why)."""


class Channel(Protocol):
    """The parent's end of one worker: messages to it, messages from it, and stopping it."""

    writes_events: bool  # the worker appends its own events to events.jsonl (a local worker)

    @property
    def name(self) -> str: ...

    def send(self, msg: dict[str, Any]) -> None: ...

    async def receive(self) -> dict[str, Any] | None:
        """The worker's next message; ``None`` once it is gone."""
        ...

    async def gone(self) -> str:
        """Why the worker is gone (``"exited with status 1"``), once :meth:`receive` said so."""
        ...

    async def close(self) -> None: ...


# ---- the parent -------------------------------------------------------------------------------


class Zygote:
    """The parent's end of the worker zygote (see :mod:`evals.core.worker_process`): a process that
    has the benchmark loaded, then forks each local worker. :meth:`fork_here` makes it a fork of this
    process once it has loaded the benchmark (nothing imported or loaded twice); :meth:`spawn` starts
    it as ``python -m evals.core.worker_process FD``, which imports and loads it itself."""

    def __init__(self, child: AsyncChild, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader,
                 fd_socket: socket.socket):
        self.child = child
        self.stdin = stdin
        self.stdout = stdout
        self.fd_socket = fd_socket
        self.error: str | None = None  # why it cannot fork (it failed to load, or is gone)
        self.forks: dict[int, asyncio.Future[int]] = {}
        self.exits: dict[int, asyncio.Future[int | None]] = {}
        self.pidfds: dict[int, int] = {}  # each worker's pidfd (Linux): it stays its own once we are gone
        self.on_lost: Callable[[str], None] | None = None  # told once if it dies after forking workers
        self.closing = False
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def spawn(cls) -> Zygote:
        """Start it: it imports what every run needs while the parent goes on, then waits for :meth:`configure`."""
        ours, theirs = socket.socketpair()
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "evals.core.worker_process", str(theirs.fileno()),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,  # stderr: the parent's (logs)
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # a Ctrl-C reaches the parent only; it stops the workers
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        assert proc.stdin is not None and proc.stdout is not None
        return cls(proc, proc.stdin, proc.stdout, ours)

    @classmethod
    async def fork_here(cls, opts: RunOptions, bench: Benchmark) -> Zygote | None:
        """Fork this process (which has loaded ``bench`` for ``opts``) into the zygote; ``None`` when this
        process runs other threads (a fork copies only the calling one: then :meth:`spawn`). Call it
        before this process opens what the zygote must not hold (the run directory)."""
        if threads() > 1:
            return None
        for stream in (sys.stdout, sys.stderr):  # nothing of ours buffered is written twice
            stream.flush()
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the zygote: it never returns into this process's event loop
            forked_zygote(theirs, (to_r, from_w), (to_w, from_r, ours.detach()), opts, bench)
        os.close(to_r)
        os.close(from_w)
        theirs.close()
        return cls(ForkedChild(pid), *await _pipe_streams(to_w, from_r), ours)

    @property
    def name(self) -> str:
        return f"the worker zygote (pid {self.child.pid})"

    def _send(self, msg: dict[str, Any]) -> None:
        if not self.stdin.is_closing():
            self.stdin.write(message_line(msg))

    def configure(self, opts: RunOptions) -> None:
        """Send the run's options (to a spawned zygote): it loads the benchmark (once, for every worker)."""
        if not self.stdin.is_closing():
            self.stdin.write(opts.encode().encode() + b"\n")

    def fork(self, index: int) -> ForkedChannel:
        """Ask for worker ``index`` (forked once the benchmark is loaded); its channel, not yet ready."""
        to_worker_r, to_worker_w = os.pipe()
        from_worker_r, from_worker_w = os.pipe()
        try:
            if self.error is None:
                with contextlib.suppress(OSError):  # a dead zygote: its reader says so
                    socket.send_fds(self.fd_socket, [b"f"], [to_worker_r, from_worker_w])
        finally:
            os.close(to_worker_r)
            os.close(from_worker_w)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.forks[index] = future
        if self.error is not None:
            future.set_exception(WorkerError(f"worker {index} failed to start: {self.error}"))
        self._send({"fork": index})
        return ForkedChannel(self, index, future, to_worker_w, from_worker_r)

    def exited(self, pid: int) -> asyncio.Future[int | None]:
        """The worker's exit code once the zygote reaped it (``None``: unknown, the zygote is gone)."""
        if pid not in self.exits:
            self.exits[pid] = asyncio.get_running_loop().create_future()
            if self.reader.done():
                self.exits[pid].set_result(None)
        return self.exits[pid]

    def kill(self, pid: int, sig: signal.Signals) -> None:
        """Signal a worker through the zygote (which reaps it, so the pid is never another process's)."""
        if not self.reader.done():
            self._send({"kill": pid, "signal": int(sig)})
        else:  # the zygote is gone: the worker is init's child now
            _signal_orphan(pid, self.pidfds.get(pid), sig)

    async def _read(self) -> None:
        while line := await self.stdout.readline():
            msg = json.loads(line)
            if "error" in msg:
                self.error = msg["error"]
            elif "forked" in msg:
                pid = int(msg["pid"])
                if hasattr(os, "pidfd_open"):  # the zygote reaps it only after it exited
                    with contextlib.suppress(OSError):
                        self.pidfds[pid] = os.pidfd_open(pid)
                if not (future := self.forks[int(msg["forked"])]).done():
                    future.set_result(pid)
            elif "exited" in msg:
                exit_code = self.exited(int(msg["exited"]))
                if not exit_code.done():
                    exit_code.set_result(int(msg["status"]))
        how = _how(await self.child.wait())
        if self.error is None:
            self.error = f"{self.name} exited with {how}"
        for index, future in self.forks.items():
            if not future.done():
                future.set_exception(WorkerError(f"worker {index} failed to start: {self.error}"))
        for exit_code in self.exits.values():
            if not exit_code.done():
                exit_code.set_result(None)
        if not self.closing and self.on_lost is not None and self.forks:
            self.on_lost(f"{self.name} exited with {how}")

    async def close(self) -> None:
        self.closing = True
        self.fd_socket.close()
        await stop_child(self.child, self.stdin.close)
        with contextlib.suppress(BaseException):
            await self.reader
        for pidfd in self.pidfds.values():
            os.close(pidfd)
        self.pidfds.clear()


async def _pipe_streams(write_fd: int, read_fd: int) -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
    """The two ends of a child's pipes (this process's) as streams on the running loop."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb", 0))
    return asyncio.StreamWriter(transport, protocol, None, loop), reader


def _how(rc: int) -> str:
    return f"signal {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"status {rc}"


class ForkedChannel:
    """A local worker, forked by the :class:`Zygote`, over the two pipes the parent made for it."""

    writes_events = True

    def __init__(self, zygote: Zygote, index: int, pid: asyncio.Future[int], write_fd: int, read_fd: int):
        self.zygote = zygote
        self.index = index
        self.pid = pid
        self._fds: list[int] | None = [write_fd, read_fd]
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    @property
    def name(self) -> str:
        pid = self.pid.result() if self.pid.done() and not self.pid.exception() else "?"
        return f"worker {self.index} (pid {pid})"

    async def _open(self) -> None:
        assert self._fds is not None
        write_fd, read_fd = self._fds
        self._fds = None
        self.writer, self.reader = await _pipe_streams(write_fd, read_fd)

    async def ready(self, events_path: Path | None) -> None:
        """Tell the worker where the run's event log is, and wait until it is ready (closed if it fails)."""
        index = self.index
        try:
            try:
                async with asyncio.timeout(START_TIMEOUT_S):
                    await asyncio.shield(self.pid)
                    await self._open()
                    assert self.reader is not None
                    self.send({"events_path": None if events_path is None else str(events_path)})
                    line = await self.reader.readline()
            except TimeoutError:
                raise WorkerError(f"worker {index} did not start within {START_TIMEOUT_S:.0f} s") from None
            if not line:
                raise WorkerError(f"{self.name} exited with {await self.gone()} before it was ready "
                                  "(its output is above)")
            msg = json.loads(line)
            if "error" in msg:
                raise WorkerError(f"worker {index} failed to start: {msg['error']}")
        except BaseException:
            await self.close()
            raise

    def send(self, msg: dict[str, Any]) -> None:
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(message_line(msg))

    async def receive(self) -> dict[str, Any] | None:
        stdout = self.reader
        assert stdout is not None
        line = await stdout.readline()
        if not line:
            return None
        msg: dict[str, Any] = json.loads(line)
        n = msg.pop("n", None)
        if n is not None:
            lines = []
            for _ in range(n):
                raw = await stdout.readline()
                if not raw.endswith(b"\n"):
                    return None  # cut off: the worker died while sending it
                lines.append(raw[:-1].decode("utf-8"))
            msg["lines"] = lines
        return msg

    async def gone(self) -> str:
        if not self.pid.done() or self.pid.exception() is not None:
            return "no process (it was never forked)"
        try:
            rc = await asyncio.wait_for(asyncio.shield(self.zygote.exited(self.pid.result())), STOP_TIMEOUT_S)
        except TimeoutError:
            rc = None
        return "an unknown status (the worker zygote is gone)" if rc is None else _how(rc)

    async def close(self) -> None:
        """Close its stdin (it stops by itself); SIGTERM, then SIGKILL if it does not."""
        for fd in self._fds or ():
            os.close(fd)
        self._fds = None
        if self.writer is not None:
            with contextlib.suppress(Exception):
                self.writer.close()
        if not self.pid.done() or self.pid.exception() is not None:
            return  # never forked: nothing to stop (the zygote exits with its stdin)
        pid = self.pid.result()
        exited = self.zygote.exited(pid)
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if not exited.done():  # the zygote signals it and reports its exit
                if sig is not None:
                    self.zygote.kill(pid, sig)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(exited), STOP_TIMEOUT_S)
                if not exited.done():
                    continue
                if exited.result() is not None:
                    return
                sig = None  # the zygote died meanwhile: wait for the orphan as it is, then signal it
            elif exited.result() is not None:
                return
            # the zygote is gone: init reaps the worker; we signal it (by its pidfd where there is one)
            if await _orphan_stopped(pid, self.zygote.pidfds.get(pid), sig):
                return


def _signal_orphan(pid: int, pidfd: int | None, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, sig)
        else:
            os.kill(pid, sig)


def _orphan_gone(pid: int, pidfd: int | None) -> bool:
    """Whether a worker whose zygote is gone has exited (a zombie has: its reaper may be slow)."""
    if pidfd is not None:
        return bool(select.select([pidfd], [], [], 0)[0])  # readable once the process has exited
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return False


async def _orphan_stopped(pid: int, pidfd: int | None, sig: signal.Signals | None) -> bool:
    """Signal a worker whose zygote is gone (``None``: none) and wait, bounded, until it has exited;
    whether it has."""
    if sig is not None and not _orphan_gone(pid, pidfd):
        _signal_orphan(pid, pidfd, sig)
    deadline = asyncio.get_running_loop().time() + STOP_TIMEOUT_S
    while not _orphan_gone(pid, pidfd):
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(0.05)
    return True


@dataclass
class _Worker:
    channel: Channel
    pending: dict[str, tuple[asyncio.Future[dict[str, Any]], EpisodeRecorder]] = field(default_factory=dict)
    reservations: dict[int, Reservation] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None


StartChannel = Callable[[int], Awaitable[Channel]]


class WorkerPool:
    """The parent's side: starts the workers, hands them episodes (:meth:`episode`), stops them.

    ``start(i)`` starts worker ``i`` and returns its :class:`Channel` (default: a local process
    forked by the pool's :class:`Zygote`, a :class:`ForkedChannel`; :mod:`evals.core.ray_executor`
    starts Ray actors).

    Local workers can be started early (:meth:`spawn`, before the run directory exists: the zygote
    imports, then loads the benchmark and forks them while the parent prepares); entering the pool
    then only hands them ``events_path`` (settable until then) and waits until they are ready."""

    def __init__(
        self,
        opts: RunOptions,
        *,
        limiter: RateLimiter | None,
        control: RunControl,
        events_path: Path | None = None,
        start: StartChannel | None = None,
        count: int | None = None,
    ):
        self.opts = opts
        self.limiter = limiter
        self.control = control
        self.workers: list[_Worker] = []
        self._count = (opts.workers or 1) if count is None else count
        self._start_channel = start
        self._closing = False
        self._grants: set[asyncio.Task[None]] = set()
        self.events_path = events_path
        self._zygote: Zygote | None = None
        self._spawned: list[ForkedChannel] = []

    async def spawn(self) -> None:
        """Start the local workers' zygote now, without waiting for it (see the class docs); it imports
        what every run needs until :meth:`configure` sends it the options."""
        self._zygote = await Zygote.spawn()
        self._zygote.on_lost = self._lost

    def _lost(self, why: str) -> None:
        """The zygote died. It only starts workers: those it forked run on (a worker that has not been
        forked yet fails to start, naming the zygote, and so does the run)."""
        if self._closing:
            return
        started = [c for c in self._spawned if c.pid.done() and c.pid.exception() is None]
        if started and len(started) == len(self._spawned):
            log.warning("%s; its %d workers go on (it is needed only to start them)", why, len(started))

    def configure(self, opts: RunOptions) -> None:
        """Send the zygote the run's options (complete: strategy, benchmark options); it loads the
        benchmark, then forks the workers."""
        self.opts = opts
        assert self._zygote is not None
        self._zygote.configure(opts)
        self._fork_workers()

    async def fork(self, bench: Benchmark) -> None:
        """Start the workers from a fork of this process, which has loaded ``bench`` for the pool's
        options (nothing is imported or loaded again; :meth:`spawn` and :meth:`configure` where it
        cannot fork: it runs other threads)."""
        self._zygote = await Zygote.fork_here(self.opts, bench)
        if self._zygote is None:
            await self.spawn()
            self.configure(self.opts)
            return
        self._zygote.on_lost = self._lost
        self._fork_workers()

    def _fork_workers(self) -> None:
        assert self._zygote is not None
        self._spawned = [self._zygote.fork(i) for i in range(self._count)]

    async def __aenter__(self) -> WorkerPool:
        if self._start_channel is None and not self._spawned:
            await self.spawn()
            self.configure(self.opts)
        starts = [asyncio.ensure_future(self._start(i)) for i in range(self._count)]
        try:
            done, pending = await asyncio.wait(starts, return_when=asyncio.FIRST_EXCEPTION)
            failed = [t for t in starts if t in done and not t.cancelled() and t.exception() is not None]
            if failed:  # the first failure is the reason; the other starts are cancelled, not left to fail
                for t in pending:
                    t.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                raise failed[0].exception()  # type: ignore[misc]
        except BaseException:
            for t in starts:
                t.cancel()
            await asyncio.gather(*starts, return_exceptions=True)
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _start(self, index: int) -> None:
        if self._start_channel is None:
            channel: Channel = self._spawned[index]
            await self._spawned[index].ready(self.events_path)
        else:
            channel = await self._start_channel(index)
        worker = _Worker(channel)
        self.workers.append(worker)
        worker.reader = asyncio.create_task(self._read(worker))

    async def _read(self, worker: _Worker) -> None:
        channel = worker.channel
        while (msg := await channel.receive()) is not None:
            if "done" in msg:
                if (entry := worker.pending.get(msg["done"])) is not None and not entry[0].done():
                    entry[0].set_result(msg)
            elif "usage" in msg:
                if (entry := worker.pending.get(msg["usage"])) is not None:
                    entry[1].adopt_usage(int(msg["tokens"]), float(msg["cost"]))
            elif "acquire" in msg:
                task = asyncio.create_task(self._grant(worker, int(msg["acquire"]), int(msg["tokens"])))
                self._grants.add(task)
                task.add_done_callback(self._grants.discard)
            elif "record" in msg:
                if (slot := worker.reservations.pop(int(msg["record"]), None)) is not None:
                    slot.record(int(msg["tokens"]))
        if not self._closing:
            how = await channel.gone()
            log.error("%s exited with %s", channel.name, how)
            self.control.interrupt(f"{channel.name} exited with {how}")

    async def _grant(self, worker: _Worker, rid: int, tokens: int) -> None:
        assert self.limiter is not None
        slot = await self.limiter.acquire(tokens)
        worker.reservations[rid] = slot
        worker.channel.send({"op": "granted", "rid": rid})

    async def episode(self, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        """Run one episode on the least busy worker; its events, totals and outcome land in ``recorder``."""
        worker = min(self.workers, key=lambda w: len(w.pending))
        done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        worker.pending[task_id] = (done, recorder)
        worker.channel.send({"op": "run", "task": task_id, "episode_id": recorder.episode_id,
                             "attempt": recorder.run_attempt, "config_hash": recorder.config_hash})
        try:
            msg = await done
        except asyncio.CancelledError:
            worker.channel.send({"op": "cancel", "task": task_id})
            raise
        finally:
            worker.pending.pop(task_id, None)
        recorder.adopt_events(msg["lines"], log=not worker.channel.writes_events)
        recorder.adopt_totals(msg["totals"], msg["answer"])
        error = msg["error"]
        if isinstance(error, dict) and msg.get("error_mro"):
            error = RemoteError(error, msg["error_mro"])  # the breaker matches the exception's classes
        return EpisodeOutcome(final_answer=msg["final_answer"], error=error, data=msg["data"])

    async def aclose(self) -> None:
        self._closing = True
        for task in list(self._grants):
            task.cancel()
        channels: list[Channel] = [w.channel for w in self.workers]
        channels += [c for c in self._spawned if c not in channels]  # spawned, never (or not yet) ready
        await asyncio.gather(*(c.close() for c in channels), return_exceptions=True)
        for w in self.workers:
            if w.reader is not None:
                w.reader.cancel()
                with contextlib.suppress(BaseException):
                    await w.reader
        if self._zygote is not None:  # after its workers: it reports their exits
            await self._zygote.close()
