"""What the viewer shows of a run: its summary from the stored scores, its headline metrics, its tasks.

Everything comes from the run directory's files (:mod:`.index`): ``config.json``, the trace headers
and ``scores.jsonl``; nothing is scored again and no model is asked (``evals score RUN_DIR`` writes
the scores of a run whose scores are missing or older than its traces). The metrics' labels,
directions and kinds come from the benchmark's declared metrics in the registry; a benchmark that is
not registered is shown with each sample key of its scores as a metric of its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.dataset import dataset_key, dataset_label, run_dataset
from ..core.metrics import Metric, TaskScore
from ..report.metrics import MAIN_BLOCK, benchmark_info, metrics_from_samples, paper_numbers_of
from .index import RunIndex

__all__ = ["RunView", "metric_info", "metrics_of", "task_passed"]

HEADLINE_COUNT = 3


def metrics_of(benchmark: Any, scores: Sequence[TaskScore]) -> list[Metric]:
    """The benchmark's declared metrics; for one not registered, a metric per sample key found."""
    info = benchmark_info(benchmark)
    if info is not None and info.metrics:
        return list(info.metrics)
    return metrics_from_samples(scores)


def metric_info(m: Metric) -> dict[str, Any]:
    """A metric as the page needs it (key, label, direction, kind, unit, block)."""
    return {"key": m.key, "name": m.name, "label": m.label, "block": m.block, "kind": m.kind, "over": m.over,
            "higher_is_better": m.higher_is_better, "derived": m.derive is not None,
            "description": m.description}


def task_passed(metric: Metric, sample: Sequence[float]) -> bool | None:
    """Whether one task's sample of a percent metric is all right (None: not a pass/fail reading)."""
    if metric.kind != "percent" or metric.derive is not None or len(sample) != 2:
        return None
    num, den = float(sample[0]), float(sample[1])
    if den <= 0:
        return None
    return num >= den if metric.higher_is_better else num <= 0


@dataclass
class _Cached:
    key: tuple[Any, ...]
    value: Any


class RunView:
    """One run for the viewer: an :class:`RunIndex` and what is computed from it (cached until the
    files change)."""

    def __init__(self, run_id: str, index: RunIndex):
        self.id = run_id
        self.index = index
        self._summary: _Cached | None = None
        self._cached: dict[str, _Cached] = {}

    def _memo(self, name: str, make: Any) -> Any:
        """``make()``, computed again only when the run's files changed."""
        key = self._key()
        hit = self._cached.get(name)
        if hit is None or hit.key != key:
            hit = self._cached[name] = _Cached(key, make())
        return hit.value

    @property
    def path(self) -> Path:
        return self.index.path

    @property
    def config(self) -> dict[str, Any]:
        return self.index.config

    @property
    def benchmark(self) -> str:
        return str(self.config.get("benchmark") or "?")

    @property
    def dataset(self) -> dict[str, Any] | None:
        """The run's set of tasks (:func:`evals.core.dataset.run_dataset`): None for a benchmark with one."""
        return run_dataset(self.config)

    @property
    def group(self) -> str:
        """Equal for runs that may be ranked and compared together: the same benchmark and dataset."""
        return f"{self.benchmark}\x00{dataset_key(self.dataset)}"

    def _key(self) -> tuple[Any, ...]:
        return (self.index._read_to, self.index.scores_mtime)

    def task_scores(self) -> dict[str, TaskScore]:
        scores: dict[str, TaskScore] = self._memo("scores", lambda: {
            tid: TaskScore.from_dict(r.get("score") or {}) for tid, r in self.index.scores.items()})
        return scores

    def task_ids(self) -> list[str]:
        """The scored tasks in their order, then the traced tasks not scored yet."""
        ids = list(self.index.scores)
        seen = set(ids)
        return ids + [t for t in self.index.traces if t not in seen]

    def summary(self) -> dict[str, Any]:
        """The run's summary (the shape of ``evals score --json``) from the stored scores, plus what
        the viewer adds: progress, the scores' freshness, cost."""
        key = self._key()
        if self._summary is not None and self._summary.key == key:
            return dict(self._summary.value)
        value = self._build_summary()
        self._summary = _Cached(key, value)
        return dict(value)

    def _build_summary(self) -> dict[str, Any]:
        from client.runs import RunDir

        from ..core.scoring import build_summary

        cfg = self.config
        scores = self.task_scores()
        ids = self.task_ids()
        heads = {t: e.head for t, e in self.index.traces.items()}
        judge = {"decisions": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
        for r in self.index.scores.values():
            for d in r.get("judge") or []:
                judge["decisions"] += 1
                for k in ("input_tokens", "output_tokens", "cost_usd"):
                    judge[k] += d.get(k) or 0
        summary = build_summary(RunDir(self.path), heads, ids, self.metrics(), [scores[t] for t in ids if t in scores],
                                judge)
        model = summary["totals"]["model"]
        model["cost_known"] = all(
            (heads[t].get("totals") or {}).get("cost_known", True) is not False for t in ids if t in heads)
        if not model["cost_known"]:  # a model without a price: its cost is unknown, not the sum of the priced turns
            model["cost_usd"] = None
        limit = (cfg.get("run") or {}).get("limit")
        dataset = self.dataset
        return {
            **summary,
            "id": self.id,
            "benchmark": self.benchmark,
            "dataset": dataset,
            "dataset_label": dataset_label(dataset),
            "group": self.group,
            "created_at": cfg.get("created_at"),
            "traced": len(self.index.traces),
            "scored": len(scores),
            "scores_stale": self._scores_stale(),
            "planned": limit if isinstance(limit, int) else None,
            "in_progress": self.index.in_progress(),
            "bad_lines": self.index.bad_lines[:20],
        }

    def _scores_stale(self) -> bool:
        """Whether traces were written after the scores (a resumed or running run)."""
        scores = self.path / "scores.jsonl"
        traces = self.index.traces_path
        try:
            return os.stat(traces).st_mtime_ns > os.stat(scores).st_mtime_ns
        except FileNotFoundError:
            return False

    def metrics(self) -> list[Metric]:
        return list(self._memo("metrics", lambda: metrics_of(self.benchmark, list(self.task_scores().values()))))

    def headline(self, summary: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The run's headline metrics: those its benchmark declares (``headline_metrics``), else the main one
        first, then the next of its main block."""
        summary = summary if summary is not None else self.summary()
        stats = summary.get("metric_stats") or {}
        info = benchmark_info(self.benchmark)
        if info is not None and info.headline_metrics:
            by_key = {m.key: m for m in self.metrics()}
            return [{**metric_info(by_key[k]), **stats[k]} for k in info.headline_metrics if k in by_key and k in stats]
        main = [m for m in self.metrics() if m.block == MAIN_BLOCK and m.key in stats]
        pn = paper_numbers_of(self.benchmark)
        if pn is not None:
            main.sort(key=lambda m: m.key != pn.main_metric)
        return [{**metric_info(m), **stats[m.key]} for m in main[:HEADLINE_COUNT]]

    def listing(self) -> dict[str, Any]:
        """The runs list's row of this run."""
        s = self.summary()
        keep = ("id", "run_dir", "benchmark", "dataset", "dataset_label", "group", "model", "strategy", "created_at",
                "tasks", "completed", "errored", "traced", "scored", "scores_stale", "planned", "in_progress", "totals")
        return {**{k: s.get(k) for k in keep}, "headline": self.headline(s)}

    def task_rows(self) -> dict[str, Any]:
        """The tasks table (see :meth:`_task_rows`), computed again only when the files changed."""
        return dict(self._memo("tasks", self._task_rows))

    def _task_rows(self) -> dict[str, Any]:
        """The tasks table: per task its id, query, metric samples, pass/fail per metric, groups,
        status, turns, tokens, latency, cost and error; with the columns' metrics."""
        scores = self.task_scores()
        metrics = [m for m in self.metrics() if m.derive is None and m.kind in ("percent", "mean")]
        shown = [m for m in metrics if m.block == MAIN_BLOCK] or metrics
        pn = paper_numbers_of(self.benchmark)
        if pn is not None:
            shown.sort(key=lambda m: m.key != pn.main_metric)
        rows: list[dict[str, Any]] = []
        queries = self.index.queries()
        for tid in self.task_ids():
            entry = self.index.traces.get(tid)
            head = entry.head if entry else {}
            totals = head.get("totals") or {}
            score = scores.get(tid)
            samples = score.samples if score else {}
            err = head.get("error") or None
            rows.append({
                "id": tid,
                "query": queries.get(tid),
                "status": head.get("status") or "not run",
                "turns": totals.get("turns"),
                "tokens": (totals.get("input_tokens") or 0) + (totals.get("output_tokens") or 0) if totals else None,
                "latency_s": head.get("duration_s"),
                "cost_usd": totals.get("cost_usd") if totals.get("cost_known", True) is not False else None,
                "tool_calls": totals.get("tool_calls"),
                "tool_errors": totals.get("tool_errors"),
                "error": None if not err else f"{err.get('type') or 'Error'}: {' '.join(str(err.get('message') or '').split())[:300]}",
                "samples": {m.key: list(samples[m.key]) for m in shown if m.key in samples},
                "passed": {m.key: task_passed(m, samples[m.key]) for m in shown if m.key in samples},
                "groups": dict(score.groups) if score else {},
            })
        dims: dict[str, set[str]] = {}
        for r in rows:
            for d, g in r["groups"].items():
                dims.setdefault(d, set()).add(g)
        from ..report.tables import key_order

        return {"run": self.id, "metrics": [metric_info(m) for m in shown],
                "groups": {d: key_order(gs) for d, gs in dims.items()}, "tasks": rows}
