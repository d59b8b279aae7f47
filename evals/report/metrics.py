"""What the report knows of a benchmark, all from the registry (:mod:`evals.core.registry`).

A summary names its benchmark; the registry's entry declares its metrics (label, direction, kind,
summary block) and its published numbers (:class:`~evals.core.plugin.PaperNumbers`). A benchmark
that is not registered (an old run, a removed benchmark) is shown with generic labels: the keys
themselves, no direction, no "best" cell.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.metrics import Metric, TaskScore
from ..core.plugin import BenchmarkInfo, PaperNumbers

__all__ = [
    "MAIN_BLOCK",
    "MetricSpec",
    "benchmark_info",
    "metrics_from_samples",
    "metric_blocks",
    "metric_order",
    "metric_spec",
    "paper_numbers_of",
]

MAIN_BLOCK = "metrics"
# top-level summary keys that are never metric blocks (see evals.core.scoring.summarize)
NOT_BLOCKS = frozenset({"run_dir", "benchmark", "model", "strategy", "tasks", "completed", "errored", "first_error",
                        "metric_stats", "breakdowns", "options", "totals", "schema_version", "warnings", "anomalies",
                        "deprecated_blocks", "rescored_with", "epochs"})


@dataclass(frozen=True)
class MetricSpec:
    """How one metric key of one block is shown."""

    key: str
    label: str
    higher_is_better: bool | None  # None: unknown (no arrow, never "best")
    percent: bool

    @property
    def declared(self) -> bool:
        return self.higher_is_better is not None

    def title(self) -> str:
        """``"Accuracy ↑ (accuracy)"``; a count has no arrow; an undeclared key is its own label."""
        arrow = " ↑" if self.higher_is_better and self.percent else " ↓" if self.percent and self.declared else ""
        return f"{self.label}{arrow}" if self.label == self.key else f"{self.label}{arrow} ({self.key})"


def benchmark_info(name: Any) -> BenchmarkInfo | None:
    """The registry's entry for ``name``; None when no benchmark of that name is registered."""
    from ..core.registry import all_benchmarks

    try:
        return all_benchmarks().get(str(name))
    except Exception:  # pragma: no cover - a broken benchmark folder must not break reports of the others
        return None


def metrics_from_samples(scores: Iterable[TaskScore]) -> list[Metric]:
    """Metrics for a benchmark that is not registered: one per sample key of its stored scores (a
    percentage where every sample is a part of a whole, else a count), in the order first seen."""
    samples: dict[str, list[tuple[float, float]]] = {}
    for s in scores:
        for key, pair in s.samples.items():
            samples.setdefault(key, []).append(pair)
    metrics = []
    for key, pairs in samples.items():
        block, _, name = key.rpartition(".")
        ratio = all(0 <= n <= d and d > 0 for n, d in pairs)
        metrics.append(Metric(name, name, kind="percent" if ratio else "count", block=block or MAIN_BLOCK))
    return metrics


def paper_numbers_of(name: Any) -> PaperNumbers | None:
    info = benchmark_info(name)
    return info.paper_numbers if info is not None else None


def _declared(benchmark: Any, block: str) -> list[Metric]:
    info = benchmark_info(benchmark)
    return [m for m in (info.metrics if info else ()) if m.block == block]


def metric_spec(benchmark: Any, key: str, block: str = MAIN_BLOCK) -> MetricSpec:
    for m in _declared(benchmark, block):
        if m.name == key:
            return MetricSpec(key, m.label, m.higher_is_better, m.kind == "percent")
    return MetricSpec(key, key, None, False)


def metric_order(benchmark: Any, keys: Iterable[str], block: str = MAIN_BLOCK) -> list[str]:
    """The keys in the benchmark's declared order (its headline metrics first, in their order: e.g. an official
    leaderboard's columns), then the undeclared ones as they come."""
    seen = list(dict.fromkeys(keys))
    info = benchmark_info(benchmark)
    names = [m.name for m in _declared(benchmark, block)]
    headline = [m.name for k in (info.headline_metrics if info else ()) for m in _declared(benchmark, block) if m.key == k]
    declared = list(dict.fromkeys([*headline, *names]))
    return [k for k in declared if k in seen] + [k for k in seen if k not in declared]


def _is_block(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value.values())


def metric_blocks(benchmark: Any, summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The summaries' metric blocks: ``metrics``, then the benchmark's declared ones, then any other
    mapping of numbers a summary carries (an older run's, an unregistered benchmark's)."""
    info = benchmark_info(benchmark)
    declared = [m.block for m in (info.metrics if info else ())]
    old = {k for s in summaries for k in (s.get("deprecated_blocks") or {})}  # repeated under their new names
    found = [k for s in summaries for k, v in s.items() if k not in NOT_BLOCKS and k not in old and _is_block(v)]
    return [b for b in dict.fromkeys([MAIN_BLOCK, *declared, *found])
            if any(s.get(b) for s in summaries)]
