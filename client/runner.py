"""Run many episodes into a run directory: bounded concurrency, resume, budgets, interrupts, progress.

Usage::

    run_dir = RunDir("runs/my-benchmark-gpt4o", config, hash_keys=("benchmark", "model", "strategy", "options"))
    result = await run_episodes(run_dir, task_ids, episode_fn, concurrency=8,
                                budget=Budget(max_cost_usd=5.0), handle_signals=True)
    print(result.describe())

Semantics:

* **Resume.** Tasks that ``run_dir.finished_task_ids(retry_errored=...)`` reports are skipped; every
  other task is started at most once per call, by exactly one worker, and gets exactly one new trace
  line when its episode finishes. A process-wide lock (``RunDir.open_for_writing``) keeps a second
  process from writing to the same run.
* **Errors.** An exception escaping the episode function becomes an ``errored`` trace (type, message,
  ``retryable``, the ``attempts`` of a ``ModelError``, traceback) and the run goes on. Errors raised by
  the run directory itself (disk full; ``traces.jsonl`` deleted or replaced under the run, after
  which what the run held is saved to a fresh file: ``RunTracesLost``) stop the run.
* **Budget.** :class:`Budget` caps what *this call* spends (tokens and/or estimated USD, counted live
  from the recorders' model responses). When a cap is reached no new episode starts; episodes in flight
  are allowed to finish and are recorded (what they spent is already paid for, so cancelling would
  waste it) — the run may therefore overshoot by up to the in-flight episodes' remaining spend. The
  result says ``stopped_reason="budget"``; calling again (with a new budget) continues with the rest.
* **Interrupt.** ``RunControl.interrupt()`` — or SIGINT/SIGTERM with ``handle_signals=True`` —
  cancels the episodes in flight. They get *no* trace line (only an ``episode_cancelled`` marker in
  ``events.jsonl`` after their partial events), so they run again on resume; the result says
  ``stopped_reason="interrupted"``. A second signal falls back to the previous handler (with
  ``asyncio.run`` that cancels the main task, i.e. aborts at once; finished traces are still intact).
  Cancelling the task that awaits :func:`run_episodes` does the same clean-up and re-raises.
* **Circuit breaker.** With ``breaker=CircuitBreaker(n)`` (:mod:`client.breaker`), ``n`` errors that
  will repeat on every task (bad API key, unknown model, unreachable endpoint after the retries,
  exhausted quota, a context window too small for the first request) with no completed episode in
  between stop the run: no new episode starts and those in flight are cancelled as on an interrupt
  (no trace; they run again on resume). The result says ``stopped_reason="circuit_breaker"`` and
  ``message`` says what failed and what to fix. The failed episodes keep their ``errored`` traces;
  deterministic ones (401, 404, …) are re-run on resume only with ``retry_errored``.
* **Garbage collector.** While the call runs, :func:`client.eventloop.episode_gc` keeps the objects
  made before it (benchmark data, catalogs, schemas) out of the collector's passes and collects the
  youngest generation less often: about a tenth of the harness's CPU per episode (``bench/bench_harness.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from rich.markup import escape

from client.breaker import CircuitBreaker
from client.eventloop import episode_gc
from client.progress import RunProgress
from client.run_control import Budget, RunControl, RunResult, StopReason
from client.runs import EpisodeOutcome, EpisodeRecorder, EpisodeStatus, RunDir, finished_task_ids

__all__ = ["Budget", "EpisodeFn", "RunControl", "RunResult", "ScoreFn", "StopReason", "run_episodes"]

log = logging.getLogger(__name__)

EpisodeFn = Callable[[str, EpisodeRecorder], Awaitable[EpisodeOutcome | None]]
"""``async def episode_fn(task_id, recorder) -> EpisodeOutcome | None``."""
ScoreFn = Callable[[Mapping[str, Any]], float | None]
"""Scores one trace record for the progress bar's running mean; ``None`` = not scorable."""


class _Runner:
    def __init__(
        self,
        run_dir: RunDir,
        episode_fn: EpisodeFn,
        *,
        budget: Budget | None,
        score_fn: ScoreFn | None,
        control: RunControl,
        progress: RunProgress,
        attempts: Counter[str],
        pending: list[str],
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.episode_fn = episode_fn
        self.budget = budget
        self.score_fn = score_fn
        self.control = control
        self.progress = progress
        self.attempts = attempts
        self.queue: Iterator[str] = iter(pending)
        self.breaker = breaker
        self.tripped = asyncio.Event()
        self.stop_reason: StopReason | None = None
        self.message: str | None = None
        self.tally = progress.tally  # what the run counts, as the bar shows it
        self.scores: dict[str, float | None] = {}
        self._score_failed = False

    # ---- accounting --------------------------------------------------------------------------

    def on_usage(self, tokens: int, cost_usd: float) -> None:
        self.tally.tokens += tokens
        self.tally.cost_usd += cost_usd
        self.progress.refresh()
        if self.budget is not None and self.stop_reason is None:
            message = self.budget.exceeded(self.tally.tokens, self.tally.cost_usd)
            if message is not None:
                self.stop_reason, self.message = "budget", message
                log.info("%s; starting no new episodes, %d in flight will finish", message, self.tally.in_flight)
                self.progress.set_status("budget reached, finishing in-flight")

    def score(self, trace: Mapping[str, Any]) -> float | None:
        if self.score_fn is None:
            return None
        try:
            value = self.score_fn(trace)
            return None if value is None else float(value)
        except Exception:
            if not self._score_failed:  # a display-only score must not stop a long run; say it once
                self._score_failed = True
                log.exception("score_fn failed on task %r; its score counts as missing", trace.get("task_id"))
            return None

    # ---- workers -----------------------------------------------------------------------------

    async def worker(self) -> None:
        while self.stop_reason is None and not self.control.interrupted:
            task_id = next(self.queue, None)
            if task_id is None:
                return
            await self.run_one(task_id)

    async def run_one(self, task_id: str) -> None:
        self.attempts[task_id] += 1
        recorder = self.run_dir.new_recorder(
            task_id, run_attempt=self.attempts[task_id], on_usage=self.on_usage
        )
        self.run_dir.mark(recorder, "episode_started", run_attempt=recorder.run_attempt)
        self.tally.in_flight += 1
        self.tally.max_in_flight = max(self.tally.max_in_flight, self.tally.in_flight)
        self.progress.refresh()
        status: EpisodeStatus = "completed"
        error: BaseException | Mapping[str, Any] | None = None
        outcome: EpisodeOutcome | None = None
        try:
            try:
                # typed ``object``: an episode function may break its contract (checked below)
                result: object = await self.episode_fn(task_id, recorder)
            except asyncio.CancelledError as exc:
                if _being_cancelled():
                    raise
                status, error = "errored", exc  # a stray CancelledError from inside the episode, not ours
            except Exception as exc:
                if _being_cancelled():  # e.g. a clean-up error while we cancel it: still cancelled
                    raise asyncio.CancelledError from exc
                status, error = "errored", sole_exception(exc)
            else:
                if _being_cancelled():  # the episode swallowed our cancellation: its record may be partial
                    raise asyncio.CancelledError
                if isinstance(result, EpisodeOutcome):
                    outcome = result
                    if result.error is not None:
                        status, error = "errored", result.error
                elif result is not None:
                    status = "errored"
                    error = TypeError(
                        f"the episode function returned {type(result).__name__}; expected EpisodeOutcome or None"
                    )
        except asyncio.CancelledError:
            self.tally.cancelled += 1
            self.run_dir.mark(recorder, "episode_cancelled", events=recorder.event_count)
            self.progress.episode_finished(counted=False)
            raise
        finally:
            self.tally.in_flight -= 1
        line = recorder.build_record(status, error=error, outcome=outcome)
        # Written at once (from here a SIGKILL cannot lose it); the fsync runs off the event loop and
        # is shared with the other episodes finishing meanwhile (group commit). If we are cancelled
        # while waiting for it, the episode still counts as finished: its line is in the file, and
        # closing the run directory fsyncs it.
        self.run_dir.append_trace(line, fsync=False)
        try:
            await self.run_dir.sync_traces()
        finally:
            self.run_dir.mark(recorder, "episode_finished", status=status)
            if status == "completed":
                self.tally.completed += 1
            else:
                self.tally.errored += 1
            score = None
            if self.score_fn is not None:
                score = self.score(recorder.record_view())  # the line's fields; events parsed if read
                self.scores[task_id] = score
            self.progress.episode_finished(score=score)
            if self.breaker is not None:
                self.check_breaker(status, error, recorder)

    def check_breaker(self, status: EpisodeStatus, error: Any, recorder: EpisodeRecorder) -> None:
        assert self.breaker is not None
        message = self.breaker.record(status, error, turns=recorder.totals.turns)
        if message is None or self.control.interrupted:
            return
        self.stop_reason, self.message = "circuit_breaker", message
        log.info("circuit breaker: %s", message)
        self.progress.set_status("circuit breaker tripped, stopping")
        self.tripped.set()

    async def supervise(self, workers: list[asyncio.Task[None]], grace_s: float) -> None:
        interrupt = asyncio.ensure_future(self.control.wait())
        tripped = asyncio.ensure_future(self.tripped.wait())
        remaining = set(workers)
        try:
            while remaining:
                done, _ = await asyncio.wait(
                    remaining | {interrupt, tripped}, return_when=asyncio.FIRST_COMPLETED
                )
                if tripped in done and interrupt not in done:
                    if remaining:
                        self.progress.log(
                            f"[red]circuit breaker: {escape(self.message or '')}[/red]\n"
                            f"[yellow]cancelling {self.tally.in_flight} episode(s) in flight; they run again on resume[/yellow]"
                        )
                    await cancel_all(remaining, grace_s)
                    return
                if interrupt in done:
                    self.stop_reason, self.message = "interrupted", self.control.reason
                    if remaining:
                        self.progress.log(
                            f"[yellow]{self.control.reason}: cancelling {self.tally.in_flight} episode(s) in flight; "
                            f"run again with the same run directory to resume[/yellow]"
                        )
                    await cancel_all(remaining, grace_s)
                    return
                remaining -= done
                # every failed worker's exception is retrieved (two can fail at once, e.g. on a full
                # disk); the first is raised
                failures = [e for t in done if not t.cancelled() and (e := t.exception()) is not None]
                if failures:
                    await cancel_all(remaining, grace_s)
                    raise failures[0]
        finally:
            interrupt.cancel()
            tripped.cancel()


def sole_exception(exc: BaseException) -> BaseException:
    """The one exception inside (nested) single-member exception groups, else ``exc`` itself.

    An error raised inside an MCP session comes out of the SDK's task group wrapped in an
    ``ExceptionGroup``; the trace should say what failed (e.g. the model's ``ModelError`` with its
    kind and attempts), not that a group did. Groups of several errors are kept as they are.
    """
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def cancel_all(tasks: Iterable[asyncio.Task[Any]], grace_s: float) -> None:
    """Cancel ``tasks`` and wait up to ``grace_s`` seconds for them to end."""
    tasks = [t for t in tasks if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        ended, stuck = await asyncio.wait(tasks, timeout=grace_s)
        for task in ended:  # an error raised while stopping (the caller is already failing or stopping)
            if not task.cancelled() and (exc := task.exception()) is not None:
                log.debug("a cancelled episode ended with %s: %s", type(exc).__name__, exc)
        if stuck:
            log.warning(
                "%d episode(s) did not stop within %.0fs of being cancelled; leaving them",
                len(stuck),
                grace_s,
            )


async def run_episodes(
    run_dir: RunDir,
    task_ids: list[str],
    episode_fn: EpisodeFn,
    *,
    concurrency: int = 4,
    budget: Budget | None = None,
    progress: bool = True,
    score_fn: ScoreFn | None = None,
    retry_errored: bool = False,
    control: RunControl | None = None,
    handle_signals: bool = False,
    cancel_grace_s: float = 30.0,
    breaker: CircuitBreaker | None = None,
) -> RunResult:
    """Run ``episode_fn`` for every task of ``task_ids`` not yet finished in ``run_dir``.

    Args:
        run_dir: the run; its write lock is taken for the call (and released at the end unless the
            caller had already opened it for writing).
        task_ids: the tasks, in the order to start them; ids must be unique.
        episode_fn: ``async (task_id, recorder) -> EpisodeOutcome | None``; it logs events through the
            recorder; raising records an ``errored`` trace.
        concurrency: the most episodes in flight at once.
        budget: spending caps for this call (see the module docstring).
        progress: draw a progress bar on stderr.
        score_fn: scores a finished trace for the progress bar's running mean and ``RunResult.score``.
        retry_errored: also re-run tasks whose newest trace is ``errored`` with a deterministic error.
        control: lets the caller interrupt the run (:meth:`RunControl.interrupt`).
        handle_signals: turn SIGINT/SIGTERM into an interrupt while the call runs (for the CLI).
        cancel_grace_s: how long an interrupt waits for cancelled episodes to wind down.
        breaker: stops the run after errors that will repeat on every task (see the module docstring);
            ``None``: never.
    """
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
    duplicates = [task_id for task_id, n in Counter(task_ids).items() if n > 1]
    if duplicates:
        shown = ", ".join(repr(t) for t in duplicates[:5]) + (" …" if len(duplicates) > 5 else "")
        raise ValueError(f"task ids must be unique; {len(duplicates)} appear more than once: {shown}")
    t0 = time.monotonic()
    control = control or RunControl()
    opened_here = not run_dir.is_open
    run_dir.open_for_writing()  # lock + torn-tail repair before reading what is finished
    restore_signals: Callable[[], None] | None = None
    reporter: RunProgress | None = None
    collector = episode_gc()  # what exists now (the benchmark, the server) is kept out of collections
    collector.__enter__()
    try:
        scan = run_dir.scan_traces()
        attempts: Counter[str] = Counter(r["task_id"] for r in scan.records)
        wanted = set(task_ids)
        finished = finished_task_ids(scan.latest(), retry_errored=retry_errored) & wanted
        pending = [t for t in task_ids if t not in finished]
        reporter = RunProgress(len(task_ids), done=len(finished), enabled=progress)
        runner = _Runner(
            run_dir,
            episode_fn,
            budget=budget,
            score_fn=score_fn,
            control=control,
            progress=reporter,
            attempts=attempts,
            pending=pending,
            breaker=breaker,
        )
        if score_fn is not None:
            latest = scan.latest()
            for task_id in task_ids:
                if task_id in finished:
                    runner.scores[task_id] = runner.score(latest[task_id])
                    reporter.add_score(runner.scores[task_id])
        if handle_signals:
            restore_signals = control.install_signal_handlers()
        reporter.start()
        workers = [asyncio.create_task(runner.worker()) for _ in range(min(concurrency, len(pending)))]
        try:
            await runner.supervise(workers, cancel_grace_s)
        except asyncio.CancelledError:
            await cancel_all(workers, cancel_grace_s)
            raise
        # traces.jsonl deleted or replaced after the last line was written: say so now, not after a
        # summary of an empty file (RunTracesLost; what the run held is saved first)
        run_dir.verify_traces()
        if runner.stop_reason is None and control.interrupted:  # interrupted before anything started
            runner.stop_reason, runner.message = "interrupted", control.reason
        tally = runner.tally
        started = tally.completed + tally.errored + tally.cancelled
        scores = [s for s in runner.scores.values() if s is not None]
        return RunResult(
            tasks=len(task_ids),
            completed=tally.completed,
            errored=tally.errored,
            skipped=len(finished),
            cancelled=tally.cancelled,
            not_started=len(pending) - started,
            stopped_reason=runner.stop_reason or "done",
            tokens=tally.tokens,
            cost_usd=round(tally.cost_usd, 10),
            wall_s=round(time.monotonic() - t0, 3),
            score=sum(scores) / len(scores) if scores else None,
            message=runner.message,
            max_in_flight=tally.max_in_flight,
        )
    finally:
        collector.__exit__(None, None, None)
        if restore_signals is not None:
            restore_signals()
        if reporter is not None:
            reporter.stop()
        if opened_here:
            run_dir.close()
