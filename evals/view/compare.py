"""Comparing two or more runs of one benchmark, task by task, with paired statistics.

The first run is the baseline; every other run is compared with it over the tasks both have a sample
of (a paired comparison: the same tasks, each task with itself). Per metric of the main block:

* the difference of the metric's values (other minus baseline, as the metric aggregates: a ratio of
  sums, so a per-parameter metric stays one);
* its 95% confidence interval by the **paired bootstrap**: the paired tasks are resampled with
  replacement (:data:`BOOTSTRAP_RESAMPLES` times, a fixed seed, so the page is the same every time)
  and the difference recomputed; the interval is the 2.5th and 97.5th percentiles;
* a paired significance test: the **exact McNemar test** (a two-sided binomial test of the tasks only
  one run got right, ``scipy.stats.binomtest``) where every task's sample is pass/fail (a
  numerator of 0 or 1 over 1), else the **paired bootstrap test** (two-sided: twice the smaller
  share of resampled differences on either side of 0, at least one over the resamples), which
  rejects at 5% exactly when the interval above excludes 0.

Tasks *flip* when one run passes them and the other does not (a pass is a full sample on a percent
metric where higher is better, an empty one where lower is better).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import binomtest

from ..core.dataset import dataset_label
from ..core.metrics import Metric
from ..report.metrics import MAIN_BLOCK, paper_numbers_of
from .runs import RunView, metric_info, task_passed

__all__ = ["BOOTSTRAP_RESAMPLES", "MAX_COMPARED_RUNS", "CompareError", "check_run_ids", "compare_runs", "mcnemar_exact",
           "paired_bootstrap"]

BOOTSTRAP_RESAMPLES = 2000
MAX_COMPARED_RUNS = 16  # a comparison's cost grows with its runs (a bootstrap per other run): bounded
SEED = 20240601
MCNEMAR = "exact McNemar test (two-sided binomial test of the discordant tasks)"
BOOTSTRAP = f"paired bootstrap test ({BOOTSTRAP_RESAMPLES} resamples of the paired tasks, two-sided)"


class CompareError(ValueError):
    """Runs that cannot be compared (one run, different benchmarks or datasets, nothing scored)."""


def check_run_ids(run_ids: Sequence[str]) -> None:
    """Refuse a comparison of more than :data:`MAX_COMPARED_RUNS` runs, or one naming a run twice
    (a request names them: its cost is bounded before any work)."""
    if len(run_ids) > MAX_COMPARED_RUNS:
        raise CompareError(f"a comparison of {len(run_ids)} runs: at most {MAX_COMPARED_RUNS} are compared at once")
    seen: set[str] = set()
    for rid in run_ids:
        if rid in seen:
            raise CompareError(f"run {rid[:200]!r} is named twice in the comparison")
        seen.add(rid)


def mcnemar_exact(b: int, c: int) -> float:
    """p-value of the exact McNemar test: ``b`` tasks only the baseline passed, ``c`` only the other."""
    n = b + c
    if n == 0:
        return 1.0
    return float(binomtest(min(b, c), n, 0.5, alternative="two-sided").pvalue)


def paired_bootstrap(a: np.ndarray, b: np.ndarray, scale: float, *, resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = SEED) -> tuple[float, float, float]:
    """``(low, high, p)``: the 95% percentile interval of ``ratio(b) - ratio(a)`` over resampled tasks
    (``a``, ``b``: arrays of ``(numerator, denominator)`` rows, one per paired task), and the
    two-sided bootstrap p-value of a difference of 0."""
    n = len(a)
    rng = np.random.default_rng(seed)
    diffs = np.empty(resamples)
    chunk = max(1, min(resamples, 4_000_000 // max(n, 1)))
    done = 0
    while done < resamples:
        k = min(chunk, resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        ra = a[idx, 0].sum(axis=1) / np.maximum(a[idx, 1].sum(axis=1), 1e-300)
        rb = b[idx, 0].sum(axis=1) / np.maximum(b[idx, 1].sum(axis=1), 1e-300)
        diffs[done:done + k] = scale * (rb - ra)
        done += k
    low, high = np.percentile(diffs, [2.5, 97.5])
    p = 2 * min(float(np.mean(diffs <= 0)), float(np.mean(diffs >= 0)))
    return float(low), float(high), max(min(p, 1.0), 1.0 / resamples)


def _is_binary(pairs: Sequence[Sequence[float]]) -> bool:
    return all(len(p) == 2 and p[1] == 1 and p[0] in (0, 1) for p in pairs)


def _compare_metric(m: Metric, base: dict[str, list[float]], other: dict[str, list[float]]) -> dict[str, Any] | None:
    tasks = [t for t in base if t in other]
    if not tasks:
        return None
    a = np.array([base[t][:2] for t in tasks], dtype=float)
    b = np.array([other[t][:2] for t in tasks], dtype=float)
    scale = 1.0 if m.kind == "mean" else 100.0
    va = scale * a[:, 0].sum() / a[:, 1].sum() if a[:, 1].sum() else 0.0
    vb = scale * b[:, 0].sum() / b[:, 1].sum() if b[:, 1].sum() else 0.0
    out: dict[str, Any] = {**metric_info(m), "paired_tasks": len(tasks), "baseline": round(va, 4),
                           "other": round(vb, 4), "difference": round(vb - va, 4)}
    low, high, p_boot = paired_bootstrap(a, b, scale) if len(tasks) > 1 else (vb - va, vb - va, 1.0)
    out["ci95"] = [round(low, 4), round(high, 4)]
    if _is_binary([base[t] for t in tasks]) and _is_binary([other[t] for t in tasks]):
        only_base = int(sum(1 for t in tasks if base[t][0] == 1 and other[t][0] == 0))
        only_other = int(sum(1 for t in tasks if base[t][0] == 0 and other[t][0] == 1))
        out.update(test="McNemar (exact)", test_detail=MCNEMAR, p_value=mcnemar_exact(only_base, only_other),
                   only_baseline=only_base, only_other=only_other)
    else:
        out.update(test="paired bootstrap", test_detail=BOOTSTRAP, p_value=p_boot)
    out["ci_method"] = f"paired bootstrap, {BOOTSTRAP_RESAMPLES} resamples, 95% percentile interval"
    return out


def compare_runs(views: Sequence[RunView]) -> dict[str, Any]:
    """The comparison page's data: per task and run the pass/fail of each pass/fail metric, the
    flipped tasks, and per other run and metric the paired difference with its interval and test."""
    check_run_ids([v.id for v in views])
    if len(views) < 2:
        raise CompareError("a comparison needs two runs or more")
    benches = {v.benchmark for v in views}
    if len(benches) > 1:
        raise CompareError(f"runs of different benchmarks cannot be compared task by task: {', '.join(sorted(benches))}")
    if len({v.group for v in views}) > 1:
        raise CompareError("runs of different task sets cannot be compared task by task: " + "; ".join(
            f"{v.id} ran {dataset_label(v.dataset) or 'its benchmark'}" for v in views))
    bench = views[0].benchmark
    metrics = [m for m in views[0].metrics() if m.block == MAIN_BLOCK and m.derive is None and m.kind in ("percent", "mean")]
    pn = paper_numbers_of(bench)
    if pn is not None:
        metrics.sort(key=lambda m: m.key != pn.main_metric)
    samples = []
    for v in views:
        per: dict[str, dict[str, list[float]]] = {m.key: {} for m in metrics}
        for tid, rec in v.index.scores.items():
            for key, sample in ((rec.get("score") or {}).get("samples") or {}).items():
                if key in per:
                    per[key][tid] = list(sample)
        samples.append(per)
    if not any(samples[0][m.key] for m in metrics):
        raise CompareError(f"{views[0].path}: no stored scores to compare (run `evals score` on it)")
    pass_metrics = [m for m in metrics if m.kind == "percent"]
    task_ids = list(dict.fromkeys(t for v in views for t in v.index.scores))
    queries = {t: q for v in views for t, q in v.index.queries().items()}
    tasks = []
    for tid in task_ids:
        passed = {m.key: [(task_passed(m, s[m.key][tid]) if tid in s[m.key] else None) for s in samples]
                  for m in pass_metrics}
        tasks.append({"id": tid, "query": queries.get(tid), "passed": passed})
    comparisons = []
    for i, v in enumerate(views[1:], start=1):
        rows = [r for m in metrics if (r := _compare_metric(m, samples[0][m.key], samples[i][m.key])) is not None]
        comparisons.append({"baseline": views[0].id, "other": v.id, "metrics": rows})
    return {
        "benchmark": bench,
        "dataset": views[0].dataset,
        "dataset_label": dataset_label(views[0].dataset),
        "runs": [{"id": v.id, "model": v.config.get("model"), "strategy": v.config.get("strategy"),
                  "run_dir": str(v.path), "scored": len(v.index.scores)} for v in views],
        "metrics": [metric_info(m) for m in pass_metrics],
        "tasks": tasks,
        "comparisons": comparisons,
        "methods": {"ci": f"paired bootstrap ({BOOTSTRAP_RESAMPLES} resamples, seed {SEED}), 95% percentile interval",
                    "binary": MCNEMAR, "other": BOOTSTRAP},
    }
