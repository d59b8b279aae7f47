"""``evals run --workers N``: one run's episodes split over N worker processes.

One process (one event loop, one core) drives at most a few hundred MCP sessions a second; a fast
model at high concurrency needs more. With ``--workers N`` the parent keeps everything that makes a
run *one* run, and the workers only run episodes:

* the parent holds the run directory (its lock, ``traces.jsonl``, ``events.jsonl``), the one progress
  display, the budget, the circuit breaker, and the rate limiter (:class:`RemoteLimiter`: a worker
  asks the parent before each model request, so ``--rpm``/``--tpm`` hold across all workers);
* each worker (``python -m evals.core.workers``) loads the benchmark, serves its tools itself (its own
  tool server, over the run's ``--transport``), opens its own models, and runs the episodes the
  parent hands it, recording with an :class:`~client.runs.EpisodeRecorder` of the same episode id
  whose events it forwards as they happen; the parent writes the trace line, as with one process.

So every task still gets exactly one trace line, written by one process. A worker that dies (even by
SIGKILL) stops the run like an interrupt: the episodes in flight get no trace and run again on resume.
A parent that dies closes the workers' stdin: they stop. The same oracle numbers come out of any N.

Protocol: JSON lines. The parent writes the run's options as the first line of a worker's stdin; the
worker answers ``{"ready": true}`` or ``{"error": MESSAGE}`` on its stdout. Then the parent sends
``{"op": "run", "task", "episode_id", "attempt", "config_hash"}``, ``{"op": "cancel", "task"}`` and
``{"op": "granted", "rid"}``; the worker sends ``{"ev": task, "line"}`` (an event),
``{"usage": task, "tokens", "cost"}``, ``{"acquire": rid, "tokens"}`` / ``{"record": rid, "tokens"}``
(the rate limiter) and ``{"done": task, ...}`` (the episode's totals, outcome and error).
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from client.ratelimit import RateLimiter, Reservation
from client.runs import EpisodeOutcome, EpisodeRecorder

from .server_process import _encode_options, _stop

if TYPE_CHECKING:
    from client.runner import RunControl

    from .run_options import RunOptions

__all__ = ["RemoteLimiter", "WorkerError", "WorkerPool"]

log = logging.getLogger(__name__)

START_TIMEOUT_S = 180.0
LINE_LIMIT = 1 << 30  # one message is one line; a trace's events can be large


class WorkerError(RuntimeError):
    """A worker process could not start (the message says why)."""


def _line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


# ---- the parent -------------------------------------------------------------------------------


@dataclass
class _Worker:
    index: int
    proc: asyncio.subprocess.Process
    pending: dict[str, tuple[asyncio.Future[dict[str, Any]], EpisodeRecorder]] = field(default_factory=dict)
    reservations: dict[int, Reservation] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None

    def send(self, msg: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.write(_line(msg))


class WorkerPool:
    """The parent's side: starts the workers, hands them episodes (:meth:`episode`), stops them."""

    def __init__(self, opts: RunOptions, *, limiter: RateLimiter | None, control: RunControl):
        self.opts = opts
        self.limiter = limiter
        self.control = control
        self.workers: list[_Worker] = []
        self._closing = False
        self._grants: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> WorkerPool:
        try:
            await asyncio.gather(*(self._start(i) for i in range(self.opts.workers)))
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _start(self, index: int) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "evals.core.workers",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,  # stderr: the parent's (logs)
            start_new_session=True,  # a Ctrl-C reaches the parent only; it stops the workers
            limit=LINE_LIMIT,
        )
        worker = _Worker(index, proc)
        self.workers.append(worker)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_encode_options(self.opts).encode() + b"\n")
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
        worker.reader = asyncio.create_task(self._read(worker))

    async def _read(self, worker: _Worker) -> None:
        assert worker.proc.stdout is not None
        while line := await worker.proc.stdout.readline():
            msg = json.loads(line)
            if "ev" in msg:
                if (entry := worker.pending.get(msg["ev"])) is not None:
                    entry[1].adopt_event(msg["line"])
            elif "usage" in msg:
                if (entry := worker.pending.get(msg["usage"])) is not None:
                    entry[1].adopt_usage(int(msg["tokens"]), float(msg["cost"]))
            elif "done" in msg:
                if (entry := worker.pending.get(msg["done"])) is not None and not entry[0].done():
                    entry[0].set_result(msg)
            elif "acquire" in msg:
                task = asyncio.create_task(self._grant(worker, int(msg["acquire"]), int(msg["tokens"])))
                self._grants.add(task)
                task.add_done_callback(self._grants.discard)
            elif "record" in msg:
                if (slot := worker.reservations.pop(int(msg["record"]), None)) is not None:
                    slot.record(int(msg["tokens"]))
        rc = await worker.proc.wait()
        if not self._closing:
            how = f"signal {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"status {rc}"
            log.error("worker %d (pid %d) exited with %s", worker.index, worker.proc.pid, how)
            self.control.interrupt(f"worker {worker.index} (pid {worker.proc.pid}) exited with {how}")

    async def _grant(self, worker: _Worker, rid: int, tokens: int) -> None:
        assert self.limiter is not None
        slot = await self.limiter.acquire(tokens)
        worker.reservations[rid] = slot
        worker.send({"op": "granted", "rid": rid})

    async def episode(self, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        """Run one episode on the least busy worker; its events land in ``recorder`` as they happen."""
        worker = min(self.workers, key=lambda w: len(w.pending))
        done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        worker.pending[task_id] = (done, recorder)
        worker.send({"op": "run", "task": task_id, "episode_id": recorder.episode_id,
                     "attempt": recorder.run_attempt, "config_hash": recorder.config_hash})
        try:
            msg = await done
        except asyncio.CancelledError:
            worker.send({"op": "cancel", "task": task_id})
            raise
        finally:
            worker.pending.pop(task_id, None)
        recorder.adopt_totals(msg["totals"], msg["answer"])
        return EpisodeOutcome(final_answer=msg["final_answer"], error=msg["error"], data=msg["data"])

    async def aclose(self) -> None:
        self._closing = True
        for task in list(self._grants):
            task.cancel()
        await asyncio.gather(*(_stop(w.proc) for w in self.workers), return_exceptions=True)
        for w in self.workers:
            if w.reader is not None:
                w.reader.cancel()
                with contextlib.suppress(BaseException):
                    await w.reader


# ---- a worker ---------------------------------------------------------------------------------


class RemoteLimiter(RateLimiter):
    """A worker's rate limiter: each request waits for the parent's (shared) limiter."""

    def __init__(self, opts: RunOptions, send: Any):
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


class _ForwardingRecorder(EpisodeRecorder):
    """Records as usual and forwards each event line to the parent as it happens."""

    def __init__(self, task_id: str, send: Any, **kw: Any):
        super().__init__(task_id, on_usage=self._usage, **kw)
        self._send = send

    def _usage(self, tokens: int, cost_usd: float) -> None:
        self._send({"usage": self.task_id, "tokens": tokens, "cost": cost_usd})

    def event(self, kind: str, **data: Any) -> None:
        super().event(kind, **data)
        self._send({"ev": self.task_id, "line": self.last_event_line})


async def _work(opts: RunOptions, out: Any) -> None:
    from client.runner import sole_exception
    from client.runs import error_info, to_jsonable

    from .episodes import open_episode_env
    from .registry import load_benchmark

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    flush_due = False

    def flush() -> None:
        nonlocal flush_due
        flush_due = False
        out.flush()  # a pipe: a full one makes the worker wait for the parent

    def send(msg: dict[str, Any]) -> None:
        nonlocal flush_due
        out.write(_line(msg))
        if not flush_due:  # one write per turn of the event loop, however many messages
            flush_due = True
            loop.call_soon(flush)

    limiter = RemoteLimiter(opts, send) if (opts.rpm or opts.tpm) else None
    async with contextlib.AsyncExitStack() as stack:
        try:
            bench = load_benchmark(opts.benchmark, opts.benchmark_options)
            env = await open_episode_env(opts, bench, stack, limiter)
        except Exception as exc:
            traceback.print_exc()
            send({"error": f"{type(exc).__name__}: {exc}"})
            out.flush()
            return
        send({"ready": True})
        running: dict[str, asyncio.Task[None]] = {}

        async def run(msg: dict[str, Any]) -> None:
            task_id = msg["task"]
            recorder = _ForwardingRecorder(task_id, send, episode_id=msg["episode_id"], run_attempt=msg["attempt"],
                                           config_hash=msg["config_hash"])
            error: Any = None
            final: str | None = None
            data: Any = {}
            try:
                result: object = await bench.episode(env, task_id, recorder)
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
                  "error": error_info(error) if isinstance(error, BaseException) else to_jsonable(error)})

        def forget(task_id: str) -> Any:
            return lambda _: running.pop(task_id, None)

        try:
            while line := await reader.readline():  # EOF: the parent is done, or died
                msg = json.loads(line)
                op = msg["op"]
                if op == "run":
                    task = running[msg["task"]] = asyncio.create_task(run(msg))
                    task.add_done_callback(forget(msg["task"]))
                elif op == "cancel":
                    if (target := running.get(msg["task"])) is not None:
                        target.cancel()
                elif op == "granted" and limiter is not None:
                    limiter.granted(int(msg["rid"]))
        finally:
            for task in list(running.values()):
                task.cancel()
            await asyncio.gather(*running.values(), return_exceptions=True)


def main() -> int:
    from client import eventloop

    from .server_process import _decode_options

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it closes our stdin
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # the protocol owns stdout; anything printed goes to the log
    line = sys.stdin.readline()
    if not line:
        return 2
    opts = _decode_options(line)
    opts.workers, opts.progress = 1, False
    eventloop.run(_work(opts, out))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
