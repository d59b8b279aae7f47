"""Scoring, a phase of its own: traces -> per-task scores (``scores.jsonl``) -> the run's summary.

After the episodes (and again whenever ``evals score`` is run) each task's newest trace goes through
the benchmark's ``score``; the :class:`TaskScore` and every judge decision it took (prompt, answer,
tokens, cost) are written to ``scores.jsonl`` in the run directory. A decision already stored there
(or, for runs recorded before scoring was a phase, in a trace's ``judge`` events) is reused, so
re-scoring never asks the judge twice; a decision that is needed but neither stored nor askable (no
``--judge``) is counted in ``judge_missing``. The summary's ``totals`` keep the model's tokens and
cost apart from the judge's.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .anomalies import refresh_anomalies
from .context import ScoreContext
from .judge import LLMJudge
from .metrics import Metric, TaskScore, summary_blocks
from .selection import coverage

if TYPE_CHECKING:
    from client.runs import RunDir

    from .plugin import Benchmark

__all__ = ["SCORES_FILE", "SUMMARY_SCHEMA", "SUMMARY_SCHEMA_VERSION", "ScoreContext", "build_summary", "cost_text", "read_scores",
           "score_run", "summarize"]

SCORES_FILE = "scores.jsonl"
# The version of the summary's layout (the ``--json`` object), described by the JSON Schema
# SUMMARY_SCHEMA (published with the package). 1: summaries before the field existed. 2: adds
# ``schema_version``, ``warnings``, ``deprecated_blocks`` (and the old block names they list, kept
# for this one version), ``rescored_with`` and ``epochs``.
SUMMARY_SCHEMA_VERSION = 2
SUMMARY_SCHEMA = Path(__file__).with_name("summary.schema.json")
_TOTAL_KEYS = ("input_tokens", "output_tokens", "cost_usd")
_JUDGE_EVENT = b'"kind": "judge"'
# a line of scores.jsonl: json.dumps(..., ensure_ascii=False, sort_keys=True), one encoder for the thousands of lines
_SCORE_LINE = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


def read_scores(run_dir: RunDir) -> list[dict[str, Any]]:
    """The records of the run's ``scores.jsonl`` (none before it was scored); its lines are read as
    every run file's are (no line past ``MAX_LINE_BYTES``: ``client.runs.LineTooLong``)."""
    from client.runs import read_text_lines

    path = run_dir.path / SCORES_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for _, line in read_text_lines(path)]


def _stored_decisions(run_dir: RunDir, traces: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Judge decisions by prompt: from ``scores.jsonl``, and from older runs' ``judge`` trace events."""
    out: dict[str, dict[str, Any]] = {}
    for trace in traces.values():
        events_bytes = getattr(trace, "events_bytes", None)  # a stored record: parse its events only if they may hold one
        if callable(events_bytes) and _JUDGE_EVENT not in events_bytes():
            continue
        for event in trace.get("events") or []:
            if event.get("kind") == "judge" and isinstance(event.get("prompt"), str):
                out[event["prompt"]] = {k: v for k, v in event.items() if k not in ("seq", "t", "kind")}
    for record in read_scores(run_dir):
        for decision in record.get("judge") or []:
            if isinstance(decision.get("prompt"), str):
                out[decision["prompt"]] = decision
    return out


def _write_atomic(path: Path, lines: list[str]) -> None:
    from client.runs import refuse_link

    refuse_link(path)  # a link there is refused, not replaced (nor written through)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    os.replace(tmp, path)


async def score_run(
    run_dir: RunDir,
    bench: Benchmark,
    task_ids: Sequence[str],
    *,
    judge: LLMJudge | None = None,
    concurrency: int = 8,
    trials: Mapping[str, str] | None = None,
) -> tuple[list[TaskScore], dict[str, Any]]:
    """Score every task of the run from its newest trace; write ``scores.jsonl``.

    ``trials``: the traces of further trials (``--epochs``), trace key -> task id, scored too (their
    lines in ``scores.jsonl`` carry the trace key); their scores follow the tasks' in the list.
    Returns the scores (in task order) and the judge's bookkeeping (decisions, missing ones, totals).
    """
    config = run_dir.config or {}
    traces = run_dir.latest_traces()
    stored = _stored_decisions(run_dir, traces)
    keys = [*((t, t) for t in task_ids), *((trials or {}).items())]
    done: dict[int, tuple[TaskScore, ScoreContext]] = {}
    lines: dict[int, str] = {}  # each task's line of scores.jsonl, written as its score is done
    taken = iter(range(len(keys)))

    async def worker() -> None:
        # ``concurrency`` scorings at a time, started in task order: a few workers that take the next task,
        # not a task per scoring (most scorings never wait: creating thousands of tasks was most of the cost)
        for n in taken:
            key, task_id = keys[n]
            ctx = ScoreContext(config, judge, stored)
            score = await bench.score(task_id, traces.get(key), ctx)
            if ctx.decisions:
                score.details["judge"] = [{k: v for k, v in d.items() if k != "prompt"} for d in ctx.decisions]
            done[n] = (score, ctx)
            trace = traces.get(key) or {}
            lines[n] = _SCORE_LINE.encode({"task_id": key, "episode_id": trace.get("episode_id"),
                                           "score": score.to_dict(), "judge": ctx.decisions})

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(keys))))))
    results = [done[n] for n in range(len(keys))]
    judge_totals = dict.fromkeys(_TOTAL_KEYS, 0.0) | {"decisions": 0, "asked": 0, "missing": 0, "cost_known": True}
    for _, ctx in results:
        judge_totals["missing"] += ctx.missing
        for d in ctx.decisions:
            judge_totals["decisions"] += 1
            judge_totals["asked"] += not d.get("reused") and not d.get("cached")
            if d.get("cost_usd") is None and not d.get("reused") and not d.get("cached"):
                judge_totals["cost_known"] = False  # a judge without a price: the sum would understate it
            for key in _TOTAL_KEYS:
                judge_totals[key] += float(d.get(key) or 0)
    _write_atomic(run_dir.path / SCORES_FILE, [lines[n] for n in range(len(keys))])
    return [s for s, _ in results], judge_totals


def build_summary(
    run_dir: RunDir,
    traces: Mapping[str, Mapping[str, Any]],
    task_ids: Sequence[str],
    metrics: Sequence[Metric],
    scores: Sequence[TaskScore],
    judge_totals: Mapping[str, Any],
) -> dict[str, Any]:
    """The ``--json`` object: counts, the first error, the metric blocks, options, totals and the
    ``anomalies`` (:mod:`.anomalies`)."""
    config = run_dir.config or {}
    done = [traces[t] for t in task_ids if t in traces]
    first_error = next((t for t in done if t.get("status") == "errored"), None)
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "run_dir": str(run_dir.path),
        "benchmark": config.get("benchmark"),
        "model": config.get("model"),
        "strategy": config.get("strategy"),
        "tasks": len(task_ids),
        "completed": sum(1 for t in done if t.get("status") == "completed"),
        "errored": sum(1 for t in done if t.get("status") == "errored"),
        "first_error": _error_brief(first_error),
        **(blocks := summary_blocks(metrics, scores)),
        # what the scores counted that must not pass unnoticed, and what an import noticed in its files
        "warnings": [*blocks["warnings"], *((config.get("imported") or {}).get("warnings") or [])],
        "options": dict(config.get("options") or {}),
        "totals": {"model": _model_totals(traces, task_ids), "judge": dict(judge_totals)},
    }
    refresh_anomalies(summary, config, traces, task_ids)  # the import's, the run's, the scores' (blocks["anomalies"])
    return summary


def _model_totals(traces: Mapping[str, Mapping[str, Any]], task_ids: Sequence[str]) -> dict[str, Any]:
    totals: dict[str, Any] = dict.fromkeys(_TOTAL_KEYS, 0.0) | {"turns": 0, "cost_known": True}
    for tid in task_ids:
        t = (traces.get(tid) or {}).get("totals") or {}
        for key in (*_TOTAL_KEYS, "turns"):
            totals[key] += t.get(key) or 0
        totals["cost_known"] = totals["cost_known"] and t.get("cost_known") is not False
    return totals


def cost_text(part: Mapping[str, Any] | None, digits: int = 4) -> str:
    """A summary total's cost in USD (``totals.model`` or ``totals.judge``), or ``unknown`` when a
    call had no price (``cost_known`` false: the sum of the priced calls would understate it)."""
    part = part or {}
    if part.get("cost_known") is False or not isinstance(part.get("cost_usd"), int | float):
        return "unknown"
    return f"{float(part['cost_usd']):.{digits}f}"


def _error_brief(trace: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The task, class, message and retryability of a trace's error (``None`` without one)."""
    if trace is None:
        return None
    error = trace.get("error") or {}
    message = " ".join(str(error.get("message") or "").split())
    return {
        "task_id": trace.get("task_id"),
        "type": error.get("type") or "Error",
        "message": message if len(message) <= 500 else message[:499] + "…",
        "retryable": bool(error.get("retryable", False)),
    }


async def summarize(
    run_dir: RunDir, bench: Benchmark, task_ids: Sequence[str], *, judge: LLMJudge | None = None
) -> dict[str, Any]:
    """Score the run (see :func:`score_run`) and summarise it: the ``--json`` object.

    A *partial* run (stopped before every selected task ran: Ctrl-C, the budget, the circuit
    breaker) is scored over the tasks that ran, as the progress line's running score is, and says
    so (``partial``, ``tasks_ran``); a run over part of the benchmark says how much
    (:func:`~evals.core.selection.coverage`)."""
    traces = run_dir.latest_traces()
    ran = [t for t in task_ids if t in traces]
    # predictions imported from an official-format file are scored as the official code scores them: a
    # task without a prediction counts (as failed), it does not make the run partial. (Not
    # ``run.only_traced``: an import whose reader ``covers_all`` has it false and untraced tasks.)
    imported = "imported" in (run_dir.config or {})
    partial = 0 < len(ran) < len(task_ids) and not imported
    scored = ran if partial else list(task_ids)
    trials = further_trials(traces, scored)
    scores, judge_totals = await score_run(run_dir, bench, scored, judge=judge, trials=trials)
    first, more = scores[: len(scored)], dict(zip(trials, scores[len(scored):], strict=True))
    summary = build_summary(run_dir, traces, task_ids, bench.info.metrics, first, judge_totals)  # the papers': trial 1
    if trials:
        from .epochs import epochs_anomaly

        summary["epochs"] = _epochs(bench, scored, first, more)
        if (missing := epochs_anomaly(summary["epochs"])) is not None:
            summary["warnings"].append(missing.message)
            summary["anomalies"].append(missing.to_dict("run"))
    summary["partial"] = partial
    summary["tasks_ran"] = len(scored)
    summary["scorer_version"] = bench.info.scorer_version
    summary.update(coverage(len(task_ids), len(bench.task_ids())))
    extras = getattr(bench, "summary_extras", None)
    if callable(extras):
        summary.update(extras(run_dir.config or {}))
    refresh_anomalies(summary, run_dir.config or {}, traces, task_ids)  # with the blocks added since
    add_deprecated_blocks(summary, bench.info.block_aliases)
    return summary


def add_deprecated_blocks(summary: dict[str, Any], aliases: Mapping[str, str]) -> None:
    """Repeat each renamed block under its old name (for one schema version), listed in
    ``deprecated_blocks`` (old name -> new name), so that readers of the old name keep working."""
    kept = {old: new for old, new in aliases.items() if new in summary and old not in summary}
    for old, new in kept.items():
        summary[old] = summary[new]
    summary["deprecated_blocks"] = kept


def further_trials(traces: Mapping[str, Any], task_ids: Sequence[str]) -> dict[str, str]:
    """The trace keys of trials 2, 3, ... of ``task_ids`` (``--epochs``) -> their task ids."""
    from .epochs import split_key

    wanted = set(task_ids)
    out: dict[str, str] = {}
    for key in traces:
        if key not in wanted:
            task_id, k = split_key(key, 2)
            if k >= 2 and task_id in wanted:
                out[key] = task_id
    return out


def _epochs(bench: Benchmark, task_ids: Sequence[str], first: Sequence[TaskScore],
            more: Mapping[str, TaskScore]) -> dict[str, Any] | None:
    from .epochs import epochs_block, split_key

    k_max = max(split_key(key, 2)[1] for key in more)
    per_task: dict[str, list[TaskScore | None]] = {t: [s] + [None] * (k_max - 1) for t, s in zip(task_ids, first, strict=True)}
    for key, score in more.items():
        task_id, k = split_key(key, 2)
        per_task[task_id][k - 1] = score
    for scores in per_task.values():  # trials not run yet (an interrupted run) are left off the end
        while len(scores) > 1 and scores[-1] is None:
            scores.pop()
    preferred = [p for p in (bench.info.pass_metric, bench.info.paper_numbers.main_metric
                             if bench.info.paper_numbers else None) if p]
    return epochs_block(bench.info.metrics, per_task, preferred_pass=preferred)
