"""ComplexFuncBench's metrics, as the official ``print_results.py`` computes them.

* ``success_rate``: samples whose episode ended with the official ``"Success."``, over every sample
  of the set (the official code divides by 150 per single domain, 400 for Cross and 1,000 overall,
  whether or not a sample produced a result: a sample that never ran counts as failed).
* ``call_accuracy``: the official correct-call count over the gold-call count, summed over the
  samples that produced a result (a sample whose model failed is left out, as the official code
  leaves out a sample whose model returned nothing).
* ``completeness`` and ``correctness``: the judge's 0-2 scores of the final answer, averaged over
  the samples that have one (the episode ended with a text answer and the judgement is 0, 1 or 2;
  an empty answer's -2 and a failed judgement's -1 are left out).
* the same success rate and call accuracy per domain (the paper's Table 2 columns), also as a
  ``domain`` breakdown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.metrics import Metric, TaskScore
from .data import DOMAINS

__all__ = ["DOMAIN_KEYS", "METRICS", "task_score"]

DOMAIN_KEYS = {d: d.lower().replace("-", "_") for d in DOMAINS}

METRICS: tuple[Metric, ...] = (
    Metric("success_rate", "Success rate"),
    Metric("call_accuracy", "Call accuracy", over="gold calls"),
    Metric("completeness", "Completeness (0-2)", kind="mean", over="answers"),
    Metric("correctness", "Correctness (0-2)", kind="mean", over="answers"),
    *(m for d in DOMAINS for m in (
        Metric(f"success_rate_{DOMAIN_KEYS[d]}", f"{d} success rate", in_breakdowns=False),
        Metric(f"call_accuracy_{DOMAIN_KEYS[d]}", f"{d} call accuracy", over="gold calls", in_breakdowns=False),
    )),
    Metric("samples", "samples scored", kind="count"),
    Metric("samples_with_result", "samples with a result", kind="count"),
)


def task_score(domain: str, gold_calls: int, official: Mapping[str, Any] | None, resp_eval: Mapping[str, Any] | None,
               *, divides: bool = True) -> TaskScore:
    """One sample's samples. ``official``: the episode's official result (``None``: no result);
    ``resp_eval``: the official judge record of its final answer (``None``: none); ``divides``: the
    sample is one of those the success rates divide by (a result file's line beyond its domain's
    size, or of a domain outside the five, counts its success over the others: see .results)."""
    score = TaskScore(groups={"domain": domain})
    key = DOMAIN_KEYS.get(domain)
    success = float(official is not None and (official.get("result") or {}).get("message") == "Success.")
    weight = 1.0 if divides else 0.0
    score.add("success_rate", success, weight)
    if key:
        score.add(f"success_rate_{key}", success, weight)
    score.add("samples", 1.0, 0.0)
    if official is not None:
        counts = official.get("count_dict") or {}
        correct, total = float(counts.get("correct_call_num", 0)), float(counts.get("total_call_num", gold_calls))
        score.add("call_accuracy", correct, total)
        if key:
            score.add(f"call_accuracy_{key}", correct, total)
        score.add("samples_with_result", 1.0, 0.0)
    if resp_eval is not None:
        for name, part in (("completeness", "complete"), ("correctness", "correct")):
            judged = resp_eval.get(part)
            value = judged.get("score") if isinstance(judged, Mapping) else None
            if isinstance(value, int | float) and value in (0, 1, 2):
                score.add(name, float(value))
    return score
