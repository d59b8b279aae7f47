"""``evals run --workers N``: one run's episodes split over N worker processes.

One process (one event loop, one core) drives at most a few hundred MCP sessions a second; a fast
model at high concurrency needs more. With ``--workers N`` the parent keeps everything that makes a
run *one* run, and the workers only run episodes:

* the parent holds the run directory (its lock, ``traces.jsonl``), the one progress display, the
  budget, the circuit breaker, and the rate limiter (:class:`~evals.core.worker_process.RemoteLimiter`:
  a worker asks the parent before each model request, so ``--rpm``/``--tpm`` hold across all workers);
* each worker (:class:`~evals.core.worker_process.WorkerCore`; here a ``python -m
  evals.core.worker_process`` child process, on Ray an actor) loads the benchmark, serves its tools
  itself (its own tool server, over the run's ``--transport``), opens its own models, and runs the
  episodes the parent hands it, recording with an :class:`~client.runs.EpisodeRecorder` of the same
  episode id. A local worker appends its events
  to the run's ``events.jsonl`` itself as they happen (whole lines, one ``O_APPEND`` write per
  event-loop turn); when an episode ends it sends its totals and event lines, and the parent writes
  the trace line, as with one process.

So every task still gets exactly one trace line, written by one process. A worker that dies (even by
SIGKILL) stops the run like an interrupt: the episodes in flight get no trace and run again on resume.
A parent that dies closes the workers' stdin: they stop. The same oracle numbers come out of any N.

Protocol (messages are dicts; :class:`Channel` carries them). Parent to worker: ``{"op": "run",
"task", "episode_id", "attempt", "config_hash"}``, ``{"op": "cancel", "task"}``, ``{"op": "granted",
"rid"}``. Worker to parent: ``{"usage": task, "tokens", "cost"}``, ``{"acquire": rid, "tokens"}`` /
``{"record": rid, "tokens"}`` (the rate limiter) and ``{"done": task, "totals", "answer",
"final_answer", "data", "error", "error_mro", "lines"}`` (the episode's totals, outcome, error, the
class names of its exception's MRO, and event lines).
Over a child's pipes each message is a JSON line; a ``done`` message's event lines follow it raw
(already JSON, one per line; its ``"n"`` says how many), so they are not encoded twice. Start-up: the
parent starts the worker first (it imports meanwhile) and writes the run's options as the first line
once it has loaded the benchmark itself (the worker then loads it and opens its server while the
parent prepares the run directory), then
``{"events_path"}`` once the run directory is open; the worker answers ``{"ready": true}`` or
``{"error": MESSAGE}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from client.breaker import RemoteError
from client.ratelimit import RateLimiter, Reservation
from client.runs import EpisodeOutcome, EpisodeRecorder

from .server_process import _encode_options, _stop

if TYPE_CHECKING:
    from client.runner import RunControl

    from .run_options import RunOptions

__all__ = ["Channel", "ProcessChannel", "WorkerError", "WorkerPool"]

log = logging.getLogger(__name__)

START_TIMEOUT_S = 180.0
LINE_LIMIT = 1 << 30  # one message is one line; a trace's events can be large


class WorkerError(RuntimeError):
    """A worker process could not start (the message says why)."""


def _line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def _encode(msg: dict[str, Any]) -> bytes:
    """A message as pipe bytes: a JSON line; a ``done`` message's event lines follow it raw."""
    lines = msg.get("lines")
    if lines is None:
        return _line(msg)
    head = {k: v for k, v in msg.items() if k != "lines"}
    head["n"] = len(lines)
    return b"".join([_line(head), *((line + "\n").encode("utf-8") for line in lines)])


class Channel(Protocol):
    """The parent's end of one worker: messages to it, messages from it, and stopping it."""

    name: str
    writes_events: bool  # the worker appends its own events to events.jsonl (a local worker)

    def send(self, msg: dict[str, Any]) -> None: ...

    async def receive(self) -> dict[str, Any] | None:
        """The worker's next message; ``None`` once it is gone."""
        ...

    async def gone(self) -> str:
        """Why the worker is gone (``"exited with status 1"``), once :meth:`receive` said so."""
        ...

    async def close(self) -> None: ...


# ---- the parent -------------------------------------------------------------------------------


class ProcessChannel:
    """A worker as a child process (``python -m evals.core.worker_process``) on this machine, over its pipes."""

    writes_events = True

    def __init__(self, index: int, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.index = index
        self.name = f"worker {index} (pid {proc.pid})"

    @classmethod
    async def spawn(cls, index: int) -> ProcessChannel:
        """Start the worker process: it imports what every run needs while the parent goes on, then
        waits for :meth:`configure`; :meth:`ready` waits until it is ready."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "evals.core.worker_process",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,  # stderr: the parent's (logs)
            start_new_session=True,  # a Ctrl-C reaches the parent only; it stops the workers
            limit=LINE_LIMIT,
        )
        return cls(index, proc)

    def configure(self, opts: RunOptions) -> None:
        """Send the run's options: the worker loads the benchmark and opens its models and tool server."""
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.write(_encode_options(opts).encode() + b"\n")

    async def ready(self, events_path: Path | None) -> None:
        """Tell the worker where the run's event log is, and wait until it is ready (closed if it fails)."""
        proc, index = self.proc, self.index
        assert proc.stdin is not None and proc.stdout is not None
        try:
            if not proc.stdin.is_closing():
                proc.stdin.write(_line({"events_path": None if events_path is None else str(events_path)}))
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT_S)
            except TimeoutError:
                raise WorkerError(f"worker {index} did not start within {START_TIMEOUT_S:.0f} s") from None
            if not line:
                rc = await proc.wait()
                raise WorkerError(f"worker {index} exited with status {rc} before it was ready (its output is above)")
            msg = json.loads(line)
            if "error" in msg:
                raise WorkerError(f"worker {index} failed to start: {msg['error']}")
        except BaseException:
            await self.close()
            raise

    @classmethod
    async def start(cls, index: int, opts: RunOptions, events_path: Path | None) -> ProcessChannel:
        channel = await cls.spawn(index)
        channel.configure(opts)
        await channel.ready(events_path)
        return channel

    def send(self, msg: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.write(_line(msg))

    async def receive(self) -> dict[str, Any] | None:
        stdout = self.proc.stdout
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
        rc = await self.proc.wait()
        return f"signal {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"status {rc}"

    async def close(self) -> None:
        await _stop(self.proc)


@dataclass
class _Worker:
    channel: Channel
    pending: dict[str, tuple[asyncio.Future[dict[str, Any]], EpisodeRecorder]] = field(default_factory=dict)
    reservations: dict[int, Reservation] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None


StartChannel = Callable[[int], Awaitable[Channel]]


class WorkerPool:
    """The parent's side: starts the workers, hands them episodes (:meth:`episode`), stops them.

    ``start(i)`` starts worker ``i`` and returns its :class:`Channel` (default: a local child
    process, :class:`ProcessChannel`; :mod:`evals.core.ray_executor` starts Ray actors).

    Local workers can be started early (:meth:`spawn`, before the run directory exists: they load the
    benchmark while the parent prepares); entering the pool then only hands them ``events_path``
    (settable until then) and waits until they are ready."""

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
        self._start_channel = start or (lambda i: ProcessChannel.start(i, opts, self.events_path))
        self._closing = False
        self._grants: set[asyncio.Task[None]] = set()
        self.events_path = events_path
        self._spawned: list[ProcessChannel] = []

    async def spawn(self) -> None:
        """Start the local worker processes now, without waiting for them (see the class docs); they
        import what every run needs until :meth:`configure` sends them the options."""
        for i in range(self._count):
            self._spawned.append(await ProcessChannel.spawn(i))

    def configure(self, opts: RunOptions) -> None:
        """Send the spawned workers the run's options (complete: strategy, benchmark options)."""
        self.opts = opts
        for channel in self._spawned:
            channel.configure(opts)

    async def __aenter__(self) -> WorkerPool:
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
        if self._spawned:
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
