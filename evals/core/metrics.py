"""Metrics: declared by a benchmark, sampled per task by its scorer, aggregated here.

A :class:`Metric` says its name, which way is better, what one sample is (a task, a call, a gold
parameter...) and how samples aggregate. A scorer turns one task's trace into a :class:`TaskScore`:
for each metric a ``(numerator, denominator)`` sample (a task-level accuracy is ``(1, 1)`` or
``(0, 1)``; a per-call rate is ``(calls with an error, calls)``), or nothing when the metric leaves
the task out (the exclusion rule); plus the groups the task belongs to for breakdowns.

:func:`aggregate` gives each metric's value (``percent``: ``100 * sum(num) / sum(den)`` rounded to
``digits``, 0 when nothing was counted; ``mean``: ``sum(num) / sum(den)`` rounded, for scores on a
scale of their own such as a judge's 0 to 2; ``count``: ``sum(num)``), its standard error and the number
of tasks and samples it was computed over. The standard error of a ratio of sums is the delta
method's (the usual ``s / sqrt(n)`` when every denominator is 1); it is ``None`` below two tasks.

A count declared with ``warn`` (e.g. judge answers that could not be read) adds a line to the
summary's ``warnings`` (and an entry to its ``anomalies``, with ``warn_counted_as`` and
``warn_official``) whenever it is above 0; ``evals run`` and ``evals score`` print those lines on
stderr, so such a count never passes unnoticed.

A *derived* metric (``derived_from`` and ``derive``) has no samples of its own: its value is
``derive`` of the unrounded fractions (``sum(num) / sum(den)``, 0 when nothing was counted) of the
metrics it names, earlier ones in the declaration, derived or not; e.g. an F1 of the run's
precision and recall, or an average of F1s, as an official script computes them. It has no
standard error, unless it is declared ``linear``: a weighted sum of metrics over disjoint tasks
(e.g. an average of per-category accuracies), whose standard error is the delta method's,
``sqrt(sum((w_i * se_i) ** 2))`` with ``w_i`` its weight of metric ``i`` (``None`` when one has
none). With ``derive_counts`` it also gets each metric's number of samples (its denominators summed;
a derived one's: see below) after the fractions, for an average weighted by how many samples each has.
A linear derived metric covers the tasks and samples of its parts (their sums); another covers the
tasks of its largest part (and no samples of its own).

A derived metric has no value while a metric it needs has none (``absent="omit"``), unless it is
declared ``absent="zero"``: then such a part counts as 0 (with the samples ``absent_counts`` gives it, for
``derive_counts``), as an official leaderboard counts a category that was not run, and the value
names the parts it lacks (:attr:`MetricValue.missing`: the metrics with samples of their own that had
none, through the derived parts too). With ``shown_incomplete=False`` such a metric has no value of
its own while a part is missing (an official table's "N/A"), yet the metrics derived from it use it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Metric", "MetricValue", "TaskScore", "aggregate", "breakdowns", "metric_anomalies", "metric_warnings",
           "numpy_round", "summary_blocks"]


def numpy_round(x: float, places: int) -> float:
    """``x`` rounded as ``round()`` of a numpy float rounds it (``np.round``: ``x * 10**places``
    rounded half to even, then divided by ``10**places``; not Python's exact decimal rounding, so a
    value such as 0.76825 can round the other way). Non-finite values are returned as they are."""
    if not math.isfinite(x):
        return x
    scaled = x * 10.0**places
    if not math.isfinite(scaled):
        return x
    return float(round(scaled)) / 10.0**places


@dataclass(frozen=True)
class Metric:
    """One named aggregate. ``block`` is the summary block it is reported in (``metrics`` by default;
    e.g. ``strict_metrics`` for the same quantities under a stricter matcher)."""

    name: str
    label: str
    higher_is_better: bool = True
    over: str = "tasks"  # what one sample counts: tasks, calls, parameters, ...
    kind: Literal["percent", "mean", "count"] = "percent"
    block: str = "metrics"
    digits: int = 2
    description: str = ""
    in_breakdowns: bool = True
    derived_from: tuple[str, ...] = ()  # keys of the metrics whose fractions ``derive`` takes, in order
    derive: Callable[..., float] | None = None  # fractions (0..1) -> this metric's fraction
    derive_counts: bool = False  # derive also gets each metric's samples (after the fractions)
    linear: bool = False  # derive is linear in the fractions of metrics over disjoint tasks: it has a standard error
    # a part of a derived metric that has no value: "omit" (neither has this metric), "zero" (it counts as 0, and
    # the value names it in ``missing``), with the samples ``absent_counts`` pairs give it (for derive_counts; default 0),
    # "skip" (``derive`` gets the parts that have a value, in order; no value when none has; no standard error)
    absent: Literal["omit", "zero", "skip"] = "omit"
    absent_counts: tuple[tuple[str, float], ...] = ()  # (part, samples) pairs
    shown_incomplete: bool = True  # absent="zero": reported while a part is missing (False: it only feeds others)
    # a count that must never pass unnoticed: when its value is above 0 the summary's ``warnings``
    # get this text, formatted with ``n`` (the count) and ``of`` (its samples' denominators summed)
    warn: str = ""
    # for the summary's ``anomalies`` entry of such a count: how this project counts those samples, and
    # what the official code does with them (when known)
    warn_counted_as: str = ""
    warn_official: str = ""
    # the value as the official script computes and rounds it, from the summed numerator and denominator
    # (in this metric's unit: a percent for ``percent``); default ``round(scale * num / den, digits)``.
    # E.g. ``lambda n, d: round(n / d * 100, 1)`` for a script that divides first, or :func:`numpy_round`
    # for one that rounds a numpy float (``round(np.mean(x), 4)``)
    value_of: Callable[[float, float], float] | None = None

    @property
    def key(self) -> str:
        """The sample key: ``name`` in the ``metrics`` block, else ``block.name``."""
        return self.name if self.block == "metrics" else f"{self.block}.{self.name}"


@dataclass
class TaskScore:
    """One task's scores: metric samples, breakdown groups, and details (matcher decisions, ...)."""

    samples: dict[str, tuple[float, float]] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def add(self, key: str, numerator: float, denominator: float = 1.0) -> None:
        self.samples[key] = (numerator, denominator)

    def to_dict(self) -> dict[str, Any]:
        return {"samples": {k: list(v) for k, v in self.samples.items()}, "groups": dict(self.groups),
                "details": dict(self.details)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskScore:
        return cls(
            {k: (v[0], v[1]) for k, v in (data.get("samples") or {}).items()},
            dict(data.get("groups") or {}),
            dict(data.get("details") or {}),
        )


@dataclass
class MetricValue:
    """A metric's value with its standard error, over ``tasks`` tasks and ``samples`` samples."""

    value: float | int
    stderr: float | None
    tasks: int
    samples: float

    over: str = "tasks"
    digits: int = 2  # the decimals the value is rounded to (as the official script prints it)
    missing: tuple[str, ...] = ()  # a derived metric's parts without a value, counted as 0 (``absent="zero"``)

    def to_dict(self) -> dict[str, Any]:
        out = {"value": self.value, "stderr": self.stderr, "tasks": self.tasks, "samples": self.samples, "over": self.over,
               "digits": self.digits}
        return out | {"missing": list(self.missing)} if self.missing else out


def _ratio_stderr(pairs: Sequence[tuple[float, float]]) -> float | None:
    n = len(pairs)
    total_den = sum(d for _, d in pairs)
    if n < 2 or total_den <= 0:
        return None
    ratio = sum(x for x, _ in pairs) / total_den
    mean_den = total_den / n
    var = sum((x - ratio * d) * (x - ratio * d) for x, d in pairs) / (n - 1)  # inf, not OverflowError, on huge floats
    se = math.sqrt(var / n) / mean_den
    return se if math.isfinite(se) else None


def _value(metric: Metric, pairs: Sequence[tuple[float, float]], num: float, den: float, se: float | None) -> MetricValue:
    """The metric's value over ``pairs``: ``num`` and ``den`` their sums (in task order), ``se`` their
    :func:`_ratio_stderr`."""
    if metric.kind == "count":
        value: float | int = int(num) if float(num).is_integer() else num
        return MetricValue(value, None, len(pairs), den, metric.over, 0)
    scale = 1.0 if metric.kind == "mean" else 100.0
    if not den:
        value = 0.0
    elif metric.value_of is not None:
        value = metric.value_of(num, den)
    else:
        value = round(scale * num / den, metric.digits)
    return MetricValue(value, None if se is None else round(scale * se, metric.digits + 2), len(pairs), den, metric.over,
                       metric.digits)


def aggregate(metrics: Iterable[Metric], scores: Iterable[TaskScore]) -> dict[str, MetricValue]:
    """Every metric with at least one sample, by :attr:`Metric.key` (tasks without a sample are left
    out); a derived metric when every metric it is derived from has a value (or, ``absent="zero"``, always)."""
    samples: dict[str, list[tuple[float, float]]] = {}  # each key's samples in task order: one pass, not one per metric
    for score in scores:
        for name, sample in score.samples.items():
            samples.setdefault(name, []).append(sample)
    out: dict[str, MetricValue] = {}
    parts: dict[str, _Part] = {}  # every metric with a value, shown or not
    for metric in metrics:
        if metric.derive is not None:
            part = _derived_part(metric, parts)
            if part is None:
                continue
            parts[metric.key] = part
            if part.missing and not metric.shown_incomplete:
                continue
            scale = 1.0 if metric.kind == "mean" else 100.0
            out[metric.key] = MetricValue(round(scale * part.fraction, metric.digits),
                                          None if part.error is None else round(scale * part.error, metric.digits + 2),
                                          part.tasks, part.samples, metric.over, metric.digits, part.missing)
            continue
        key = metric.key
        pairs = samples.get(key)
        if pairs:
            num = den = 0.0
            for x, d in pairs:  # summed in task order, so the floats add up as the official code's do
                num += x
                den += d
            se = _ratio_stderr(pairs)
            out[key] = _value(metric, pairs, num, den, se)
            parts[key] = _Part(num / den if den else 0.0, se, len(pairs), den)
    return out


@dataclass(frozen=True)
class _Part:
    """A metric as a part of derived ones: its unrounded fraction and standard error, its tasks and
    samples, and the parts it lacks (counted as 0)."""

    fraction: float
    error: float | None
    tasks: int
    samples: float
    missing: tuple[str, ...] = ()


def _derived_part(metric: Metric, parts: Mapping[str, _Part]) -> _Part | None:
    """A derived metric from its parts (None: one has no value and ``absent`` is ``omit``)."""
    if not metric.derived_from or (metric.absent == "omit" and not all(k in parts for k in metric.derived_from)):
        return None
    if metric.absent == "skip":
        present = [parts[k] for k in metric.derived_from if k in parts]
        if not present or metric.derive is None:
            return None
        return _Part(metric.derive(*(p.fraction for p in present)), None, sum(p.tasks for p in present),
                     sum(p.samples for p in present))
    absent = _Part(0.0, 0.0, 0, 0.0)
    got = [parts.get(k) for k in metric.derived_from]
    counts = [p.samples if p is not None else float(dict(metric.absent_counts).get(k, 0.0))
              for k, p in zip(metric.derived_from, got, strict=True)]
    have = [p or absent for p in got]
    frac, se = _derived(metric, [p.fraction for p in have], counts, [p.error for p in have])
    missing = tuple(dict.fromkeys(m for k, p in zip(metric.derived_from, got, strict=True)
                                  for m in ((k,) if p is None else p.missing)))
    present = [p for p in got if p is not None]
    if metric.linear:  # over disjoint tasks: it covers them all
        tasks, samples = sum(p.tasks for p in present), sum(p.samples for p in present)
    else:
        tasks, samples = max((p.tasks for p in present), default=0), 0.0
    return _Part(frac, se, tasks, samples, missing)


def _derived(metric: Metric, fractions: Sequence[float], counts: Sequence[float],
             errors: Sequence[float | None]) -> tuple[float, float | None]:
    """A derived metric's fraction, and (``linear``) its standard error from its parts' (see the module docstring)."""
    assert metric.derive is not None

    def derive(values: Sequence[float]) -> float:
        return metric.derive(*values, *counts) if metric.derive_counts else metric.derive(*values)  # type: ignore[misc]

    frac = derive(fractions)
    if not metric.linear or any(e is None for e in errors):
        return frac, None
    total = 0.0
    for i, error in enumerate(errors):
        weight = derive([v + 1.0 if j == i else v for j, v in enumerate(fractions)]) - frac  # exact for a linear derive
        total += (weight * (error or 0.0)) ** 2
    return frac, math.sqrt(total)


def _order(key: str) -> tuple[int, float, str]:
    try:
        return (0, float(key), key)
    except ValueError:
        return (1, 0.0, key)


def breakdowns(metrics: Sequence[Metric], scores: Sequence[TaskScore]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per breakdown dimension and group: ``{"tasks": n, metric: value, ...}`` for the ``metrics``
    block's percentages and means (groups in numeric order where they are numbers, then by name)."""
    shown = [m for m in metrics if m.block == "metrics" and m.kind in ("percent", "mean") and m.in_breakdowns]
    dims: dict[str, dict[str, list[TaskScore]]] = {}
    for s in scores:
        for dim, group in s.groups.items():
            dims.setdefault(dim, {}).setdefault(group, []).append(s)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for dim, groups in dims.items():
        out[dim] = {}
        for group in sorted(groups, key=_order):
            members = groups[group]
            values = aggregate(shown, members)
            # a derived value that lacks parts in this group (counted as 0) says nothing of the group: left out
            out[dim][group] = {"tasks": len(members), **{m.name: values[m.key].value for m in shown
                                                          if m.key in values and not values[m.key].missing}}
    return out


def summary_blocks(metrics: Sequence[Metric], scores: Sequence[TaskScore]) -> dict[str, Any]:
    """The summary's metric blocks (``metrics``, ``strict_metrics``, ...), ``metric_stats`` (value,
    standard error, tasks, samples per metric) and ``breakdowns``."""
    values = aggregate(metrics, scores)
    blocks: dict[str, Any] = {"metrics": {}}
    stats: dict[str, Any] = {}
    for m in metrics:
        if m.key in values:
            blocks.setdefault(m.block, {})[m.name] = values[m.key].value
            stats[m.key] = values[m.key].to_dict()
    blocks["metric_stats"] = stats
    blocks["breakdowns"] = breakdowns(metrics, scores)
    blocks["warnings"] = metric_warnings(metrics, values)
    blocks["anomalies"] = metric_anomalies(metrics, values)
    return blocks


def metric_warnings(metrics: Sequence[Metric], values: Mapping[str, MetricValue]) -> list[str]:
    """The warnings of the counts declared with ``warn`` whose value is above 0."""
    out = []
    for m in metrics:
        v = values.get(m.key)
        if m.warn and v is not None and v.value:
            out.append(f"{m.key}: " + m.warn.format(n=v.value, of=v.samples))
    return out


def metric_anomalies(metrics: Sequence[Metric], values: Mapping[str, MetricValue]) -> list[dict[str, Any]]:
    """The summary's ``anomalies`` entries (source ``scoring``) of the counts declared with ``warn``
    whose value is above 0: the warning line, the count, how it was counted and what the official code does."""
    from .anomalies import Anomaly

    out = []
    for m in metrics:
        v = values.get(m.key)
        if m.warn and v is not None and v.value:
            n = int(v.value) if float(v.value).is_integer() else None
            out.append(Anomaly(m.key, f"{m.key}: " + m.warn.format(n=v.value, of=v.samples), n, (), m.warn_counted_as,
                               m.warn_official).to_dict("scoring"))
    return out
