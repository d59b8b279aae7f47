"""NesTools' metrics as the official evaluation computes them (:mod:`.official`), per task.

Each counted task gives, per dimension (selection, order, parameters, nested parameters), its
correct count over its predicted count (precision) and over its gold count (recall); the core sums
them in task order, so P and R are the official ratios of sums. The F1s and their average are
derived from the unrounded P and R as ``eval.py`` derives them. Format and tree accuracy are per
task. Values are percentages with one decimal, as ``eval.py`` prints them.

Which tasks count (the official rules): an episode that failed (no trace, or an errored one: the
official ``response == -1``) is left out of every metric and counted in ``failed_tasks``; a
malformed answer counts (format 0, all gold missed); a task whose gold nesting depth is outside
1-5 (the main table's ``--target_depths``) is left out (none of the 1,000 is). A task with no
nested parameter, gold or predicted, has no nested samples (they would be ``(0, 0)``), so that a
breakdown group without nesting shows no nested metrics and no average, as ``eval.py`` run on
depth 1 alone shows none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.metrics import Metric, TaskScore
from .official import SampleCounts

__all__ = ["DEPTHS", "METRICS", "f1", "task_score"]

DEPTHS = (1, 2, 3, 4, 5)
_DIMS = (("selection", "api", "Tool selection"), ("order", "order", "Call order"),
         ("param", "param", "Parameters"), ("nested", "nest", "Nested parameters"))


def f1(p: float, r: float) -> float:
    """``eval.py``'s F1 of a run's precision and recall."""
    return 2 * p * r / (p + r) if (p + r) != 0 else 0


def _average(f_api: float, f_order: float, f_param: float, f_nest: float) -> float:
    return sum([f_nest, f_param, f_order, f_api]) / 4  # eval.py's order of the four


def _printed(num: float, den: float) -> float:
    """eval.py's printout of a ratio: ``f"{num / den * 100:.1f}"`` (divided first, then scaled; not
    ``100 * num / den``, which rounds the other way on some subsets, e.g. 50.7 for 50.8)."""
    return round(num / den * 100, 1)


def _declare() -> tuple[Metric, ...]:
    out = [Metric("format_accuracy", "Format accuracy", digits=1, value_of=_printed,
                  description="answers that parse as a call list")]
    for name, _, label in _DIMS:
        over = {"selection": "predicted calls", "order": "predicted call pairs", "param": "predicted parameters",
                "nested": "predicted nested parameters"}[name]
        gold_over = over.replace("predicted", "gold")
        out.append(Metric(f"{name}_precision", f"{label} P", over=over, digits=1, value_of=_printed))
        out.append(Metric(f"{name}_recall", f"{label} R", over=gold_over, digits=1, value_of=_printed))
        out.append(Metric(f"{name}_f1", f"{label} F1", digits=1, derived_from=(f"{name}_precision", f"{name}_recall"),
                          derive=f1))
    out.append(Metric("average_f1", "Average F1", digits=1,
                      derived_from=tuple(f"{n}_f1" for n, _, _ in _DIMS), derive=_average))
    out.append(Metric("tree_accuracy", "Tree pass rate", digits=1, value_of=_printed,
                      description="every call, pair, parameter and nested parameter right and nothing extra"))
    out.append(Metric("scored_tasks", "predictions scored (eval.py's all_num: a test id repeated in an imported "
                      "file counts once per line)", kind="count"))
    out.append(Metric("failed_tasks", "failed episodes (left out, as the official code leaves out a response of -1)",
                      kind="count", higher_is_better=False))
    return tuple(out)


METRICS = _declare()


def task_score(counts: SampleCounts | None, details: dict[str, Any] | None = None, *,
               repeats: Sequence[SampleCounts] = ()) -> TaskScore:
    """One task's samples (``counts`` None: the episode failed). ``repeats``: the counts of an
    imported file's later lines for the same test id, each counted as ``eval.py`` counts a line
    (the task's samples are the sums over its lines; ``scored_tasks`` counts lines, as ``all_num``)."""
    score = TaskScore(details=dict(details or {}))
    if counts is None:
        score.add("failed_tasks", 1.0, 0.0)
        return score
    score.groups["depth"] = str(counts.depth)
    score.details["counts"] = counts.to_dict()
    if repeats:
        score.details["repeated_lines"] = [c.to_dict() for c in repeats]
    lines = [counts, *repeats]
    if counts.depth not in DEPTHS:
        return score
    n = float(len(lines))
    score.add("format_accuracy", float(sum(c.well_formed for c in lines)), n)
    for name, dim, _ in _DIMS:
        if dim == "nest" and not any(c.gold_nest or c.predict_nest for c in lines):
            continue  # (0, 0) would change no sum; left out, a group with no nesting has no nested metrics
        correct = _total(lines, f"correct_{dim}")
        score.add(f"{name}_precision", correct, _total(lines, f"predict_{dim}"))
        score.add(f"{name}_recall", correct, _total(lines, f"gold_{dim}"))
    score.add("tree_accuracy", float(sum(c.tree for c in lines)), n)
    score.add("scored_tasks", n, 0.0)
    score.add("failed_tasks", 0.0, 0.0)
    return score


def _total(lines: Sequence[SampleCounts], field: str) -> float:
    total: float = 0
    for c in lines:  # in file order, as eval.py adds them
        total += getattr(c, field)
    return total
