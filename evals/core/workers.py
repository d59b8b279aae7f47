"""``evals run --workers N``: one run's episodes split over N worker processes.

One process (one event loop, one core) drives at most a few hundred MCP sessions a second; a fast
model at high concurrency needs more. With ``--workers N`` the parent keeps everything that makes a
run *one* run, and the workers only run episodes:

* the parent holds the run directory (its lock, ``traces.jsonl``), the one progress display, the
  budget, the circuit breaker, and the rate limiter (:class:`RemoteLimiter`: a worker asks the parent
  before each model request, so ``--rpm``/``--tpm`` hold across all workers);
* each worker (:class:`WorkerCore`; here a ``python -m evals.core.workers`` child process, on Ray an
  actor) loads the benchmark, serves its tools itself (its own tool server, over the run's
  ``--transport``), opens its own models, and runs the episodes the parent hands it, recording with
  an :class:`~client.runs.EpisodeRecorder` of the same episode id. A local worker appends its events
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
import os
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from client.breaker import RemoteError
from client.eventloop import episode_gc
from client.ratelimit import RateLimiter, Reservation
from client.runner import sole_exception
from client.runs import EpisodeOutcome, EpisodeRecorder, RunDiskFull, append_line, error_info, to_jsonable

from .epochs import split_key
from .server_process import _encode_options, _stop

if TYPE_CHECKING:
    from client.runner import RunControl

    from .plugin import Benchmark, EpisodeEnv
    from .run_options import RunOptions

__all__ = ["Channel", "ProcessChannel", "RemoteLimiter", "WorkerCore", "WorkerError", "WorkerPool"]

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
    """A worker as a child process (``python -m evals.core.workers``) on this machine, over its pipes."""

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
            sys.executable, "-m", "evals.core.workers",
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


# ---- a worker ---------------------------------------------------------------------------------


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
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
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
            append_line(self._fd, "".join(line + "\n" for line in lines).encode("utf-8"), self.path)
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

    def __init__(self, opts: RunOptions, send: Callable[[dict[str, Any]], None], events: EventLog | None = None):
        self.opts = opts
        self.send = send
        self.events = events
        self.limiter = RemoteLimiter(opts, send) if (opts.rpm or opts.tpm) else None
        self.running: dict[str, asyncio.Task[None]] = {}
        self._bench: Benchmark | None = None
        self._env: EpisodeEnv | None = None

    async def open(self, stack: contextlib.AsyncExitStack) -> None:
        from .episodes import open_episode_env
        from .registry import load_benchmark

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


async def _work(out: Any) -> int:
    from .server_process import _decode_options

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    from . import episodes, registry  # noqa: F401  (what every run needs, while the parent prepares)

    line = await reader.readline()
    if not line:
        return 2
    opts = _decode_options(line.decode())
    opts.workers, opts.progress = 1, False

    flush_due = False

    def flush() -> None:
        nonlocal flush_due
        flush_due = False
        out.flush()  # a pipe: a full one makes the worker wait for the parent

    def send(msg: dict[str, Any]) -> None:
        nonlocal flush_due
        out.write(_encode(msg))
        if not flush_due:  # one write per turn of the event loop, however many messages
            flush_due = True
            loop.call_soon(flush)

    async with contextlib.AsyncExitStack() as stack:
        try:
            core = WorkerCore(opts, send)
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
    return 0


def main() -> int:
    from client import eventloop

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it closes our stdin
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # the protocol owns stdout; anything printed goes to the log
    return eventloop.run(_work(out))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    code = main()
    # everything is closed and flushed (the event log, the tool server): skip the interpreter's
    # teardown of the loaded benchmark, seconds on a busy machine that the parent would wait for
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is not None:
            stream.flush()
    os._exit(code)
