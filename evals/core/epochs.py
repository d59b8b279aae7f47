"""Repeated trials (``evals run --epochs K``): each task run K times, and what the summary says of them.

Model outputs vary from one call to the next; one trial per task says nothing of how much. With
``--epochs K`` every task is run K times. Each trial is an episode of its own with a trace of its
own, keyed in the run directory by :func:`trial_key`: the first trial is the task id itself (so a
run of one epoch is any ordinary run, and a run can be extended to more epochs by running it again
with a larger K: resume skips the trials already finished), trial ``k >= 2`` is ``<task id>#<k>``.

The summary's metric blocks stay what the papers define: the first trial of each task. Its
``epochs`` block (:func:`epochs_block`) adds, when the run has more than one trial of a task:

* ``metrics``: per metric of the main block, its value in each trial (``trials``), and the mean
  over trials with its standard error (``mean``, ``stderr``): each task's samples pooled over its
  trials, the standard error over tasks (clustered by task, so K trials of the same task are not
  taken for K independent tasks);
* ``pass_at_k`` / ``pass_hat_k`` for k = 1..K, where a task has a pass/fail outcome (the metric
  ``pass_metric``: the benchmark's declared one, else its paper's main metric, else the first
  metric of the main block whose every sample is a 0/1 over 1): the unbiased estimators over the
  tasks with all K trials scored, ``pass@k = 1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021, the
  Codex paper) and ``pass^k = C(c, k) / C(n, k)`` (Yao et al., 2024, tau-bench), for ``n = K`` trials
  of which ``c`` passed, averaged over every task, in percent. As tau-bench's ``display_metrics``
  computes it, a task is counted with the trials it has: a trial with no trace (a run stopped
  part-way) counts as failed; ``missing_trials`` counts them and :func:`epochs_warning` says so;
* ``changed_tasks``: the tasks whose outcome changed between trials (the pass/fail outcome, else
  the task's value of the main metric).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .anomalies import Anomaly
from .metrics import Metric, TaskScore, aggregate

__all__ = ["SEPARATOR", "epochs_block", "epochs_anomaly", "epochs_warning", "pass_at_k", "pass_hat_k", "split_key", "trial_key", "trial_keys"]

SEPARATOR = "#"


def trial_key(task_id: str, k: int) -> str:
    """The trace key of trial ``k`` (1-based) of ``task_id``."""
    return task_id if k == 1 else f"{task_id}{SEPARATOR}{k}"


def trial_keys(task_ids: Sequence[str], epochs: int) -> list[str]:
    """Every trial's key, epoch by epoch (all first trials, then all second ones, ...)."""
    if epochs < 1:
        raise ValueError(f"--epochs must be at least 1, got {epochs}")
    clash = [t for t in task_ids if SEPARATOR in t] if epochs > 1 else []
    if clash:
        raise ValueError(f"--epochs: task ids hold {SEPARATOR!r}, which trial keys use (e.g. {clash[0]!r})")
    return [trial_key(t, k) for k in range(1, epochs + 1) for t in task_ids]


def split_key(key: str, epochs: int) -> tuple[str, int]:
    """``(task id, trial)`` of a trace key of a run of ``epochs`` epochs."""
    if epochs > 1:
        base, sep, k = key.rpartition(SEPARATOR)
        if sep and k.isdigit() and int(k) >= 2:
            return base, int(k)
    return key, 1


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of ``k`` trials drawn from ``n`` (``c`` passed) passes: unbiased."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all ``k`` trials drawn from ``n`` (``c`` passed) pass: unbiased (tau-bench's pass^k)."""
    return math.comb(c, k) / math.comb(n, k)


def _binary(sample: tuple[float, float] | None) -> bool:
    return sample is not None and sample[1] == 1 and sample[0] in (0, 1)


def _pass_metric(metrics: Sequence[Metric], trials: Mapping[str, Sequence[TaskScore | None]],
                 preferred: Sequence[str]) -> str | None:
    main = [m for m in metrics if m.block == "metrics" and m.kind == "percent" and m.derive is None]
    names = [*preferred, *(m.name for m in main)]
    for name in dict.fromkeys(n for n in names if n):
        samples = [s.samples.get(name) for scores in trials.values() for s in scores if s is not None]
        if samples and all(_binary(x) for x in samples):
            return name
    return None


def _pooled(scores: Sequence[TaskScore | None]) -> TaskScore:
    out = TaskScore()
    for s in scores:
        for key, (num, den) in (s.samples if s is not None else {}).items():
            a, b = out.samples.get(key, (0.0, 0.0))
            out.samples[key] = (a + num, b + den)
    return out


def epochs_block(
    metrics: Sequence[Metric],
    trials: Mapping[str, Sequence[TaskScore | None]],
    *,
    preferred_pass: Sequence[str] = (),
) -> dict[str, Any] | None:
    """The summary's ``epochs`` block (see the module docstring) from each task's scores per trial
    (``None``: the trial has not run); ``None`` when no task has a second trial."""
    k_max = max((len(v) for v in trials.values()), default=0)
    if k_max < 2:
        return None
    shown = [m for m in metrics if m.block == "metrics" and m.kind in ("percent", "mean")]
    per_trial = [aggregate(shown, [x for s in trials.values() if len(s) > k and (x := s[k]) is not None])
                 for k in range(k_max)]
    pooled = aggregate(shown, [_pooled(s) for s in trials.values()])
    out_metrics: dict[str, Any] = {}
    for m in shown:
        if m.key not in pooled:
            continue
        out_metrics[m.name] = {
            "mean": pooled[m.key].value,
            "stderr": pooled[m.key].stderr,
            "trials": [t[m.key].value if m.key in t else None for t in per_trial],
        }
    complete = {t: s for t, s in trials.items() if len(s) == k_max and all(x is not None for x in s)}
    ran = {t: [x for x in s if x is not None] for t, s in trials.items()}
    missing = k_max * len(trials) - sum(len(s) for s in ran.values())
    name = _pass_metric(metrics, ran, preferred_pass)
    block: dict[str, Any] = {"k": k_max, "tasks": len(trials), "complete_tasks": len(complete),
                             "missing_trials": missing, "metrics": out_metrics, "pass_metric": name}
    changed: list[str] = []
    if name is not None and ran:
        # as tau-bench's display_metrics: every task over the run's K trials, c its passes among the
        # trials it has (a trial with no trace, e.g. of a run stopped part-way, counts as failed)
        outcomes = {t: [x.samples[name][0] == 1 for x in s] for t, s in ran.items()}
        block["pass_at_k"] = {str(k): round(100 * sum(pass_at_k(k_max, sum(o), k) for o in outcomes.values())
                                            / len(outcomes), 2) for k in range(1, k_max + 1)}
        block["pass_hat_k"] = {str(k): round(100 * sum(pass_hat_k(k_max, sum(o), k) for o in outcomes.values())
                                             / len(outcomes), 2) for k in range(1, k_max + 1)}
        changed = [t for t, o in outcomes.items() if len(set(o)) > 1]
    elif shown:
        key = shown[0].key
        for t, s in complete.items():
            values = {x.samples[key][0] / x.samples[key][1] if x is not None and key in x.samples and x.samples[key][1]
                      else None for x in s}
            if len(values) > 1:
                changed.append(t)
    block["changed_tasks"] = changed
    return block


def epochs_warning(block: Mapping[str, Any] | None) -> str | None:
    """The summary warning of an ``epochs`` block with trials that have no trace, or ``None``."""
    if not block or not block.get("missing_trials"):
        return None
    short = block["tasks"] - block.get("complete_tasks", 0)
    return (f"epochs: {block['missing_trials']} trial(s) of {short} task(s) have no trace (a run stopped part-way?): "
            f"pass@k and pass^k count each task over all {block['k']} trials, a missing one as failed, as tau-bench's "
            f"display_metrics does; run the same command again to finish them")


def epochs_anomaly(block: Mapping[str, Any] | None) -> Anomaly | None:
    """The summary's ``anomalies`` entry of an ``epochs`` block with trials that have no trace, or ``None``."""
    warning = epochs_warning(block)
    if warning is None or not block:
        return None
    return Anomaly("missing_trials", warning, int(block["missing_trials"]), (), "failed, in pass@k and pass^k",
                   "tau-bench's display_metrics counts a missing trial as failed")
