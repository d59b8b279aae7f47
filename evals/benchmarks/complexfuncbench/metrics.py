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

import math
from collections.abc import Mapping
from typing import Any

from ...core.metrics import Metric, TaskScore
from .data import DOMAINS

__all__ = ["DOMAIN_KEYS", "METRICS", "count_value", "task_score"]

DOMAIN_KEYS = {d: d.lower().replace("-", "_") for d in DOMAINS}


def divided_first(num: float, den: float) -> float:
    """A percentage as ``print_results.py`` computes it: ``num / den * 100`` (divided first: on some exact
    ties the float differs from ``100 * num / den``, and so its last printed digit), to 2 places."""
    return round(num / den * 100, 2)


# print_results.py divides first (``v / 150 * 100``, ``correct / total * 100``): so do these, or an exact
# tie of a partial file rounds the other way (13.63 where it prints 13.624999999999998)
METRICS: tuple[Metric, ...] = (
    Metric("success_rate", "Success rate", value_of=divided_first),
    Metric("call_accuracy", "Call accuracy", over="gold calls", value_of=divided_first),
    Metric("completeness", "Completeness (0-2)", kind="mean", over="answers"),
    Metric("correctness", "Correctness (0-2)", kind="mean", over="answers"),
    *(m for d in DOMAINS for m in (
        Metric(f"success_rate_{DOMAIN_KEYS[d]}", f"{d} success rate", in_breakdowns=False, value_of=divided_first),
        Metric(f"call_accuracy_{DOMAIN_KEYS[d]}", f"{d} call accuracy", over="gold calls", in_breakdowns=False,
               value_of=divided_first),
    )),
    Metric("samples", "samples scored", kind="count"),
    Metric("samples_with_result", "samples with a result", kind="count"),
)


def count_value(value: Any) -> float:
    """A ``count_dict`` count as a finite float: a number or a numeric string (a string, a huge integer
    or a non-finite count is warned about by .results), anything else 0."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return 0.0
    if not isinstance(value, bool | int | float):
        return 0.0
    try:
        got = float(value)
    except OverflowError:  # an integer beyond the float range
        return 0.0
    return got if math.isfinite(got) else 0.0


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
        correct, total = count_value(counts.get("correct_call_num", 0)), count_value(counts.get("total_call_num", gold_calls))
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
