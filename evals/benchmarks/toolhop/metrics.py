"""ToolHop's metrics (the paper's Section 4): answer accuracy, and invocation errors per call and per query.

``answer_accuracy`` and ``query_error_rate`` count tasks (a query with at least one invocation
error); ``instance_error_rate`` and the three error kinds count calls. Percentages are rounded to two
decimals; a run with no calls has 0 for the per-call rates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...core.metrics import Metric, TaskScore
from .scoring import ERROR_KINDS, score_trace

if TYPE_CHECKING:
    from .tasks import ToolHopTask

__all__ = ["ERROR_KINDS", "METRICS", "task_score"]

METRICS: tuple[Metric, ...] = (
    Metric("answer_accuracy", "Answer accuracy"),
    Metric("tool_hallucination", "Tool hallucination", higher_is_better=False, over="calls"),
    Metric("param_hallucination", "Parameter hallucination", higher_is_better=False, over="calls"),
    Metric("param_omission", "Parameter omission", higher_is_better=False, over="calls"),
    Metric("query_error_rate", "Query error rate", higher_is_better=False),
    Metric("instance_error_rate", "Instance error rate", higher_is_better=False, over="calls"),
    # an official output file scored alone (`evals score FILE --format toolhop-official`, .official)
    Metric("official_result", "Result as evaluation_closed.py prints it (recorded answer_correct, over 995)"),
    Metric("official_answer_rule", "sample_process's answer rule on every line (over 995)"),
    Metric("tasks_with_gold_chain", "tasks with a gold call chain", kind="count"),
    Metric("scored_tasks", "tasks scored", kind="count"),
    Metric("calls", "tool calls", kind="count"),
)


def task_score(task: ToolHopTask, trace: Mapping[str, Any] | None, *, has_chain: bool) -> TaskScore:
    """One task's samples, from :func:`.scoring.score_trace` (a missing or errored trace scores as
    wrong, with no calls)."""
    s = score_trace(task, trace)
    score = TaskScore(groups={"hops": str(task.hop_count), "domain": task.domain.strip().lower() or "?"})
    score.add("answer_accuracy", float(s.correct))
    for kind in ERROR_KINDS:
        score.add(kind, s.kinds.get(kind, 0), s.calls)
    score.add("query_error_rate", float(bool(s.error_calls)))
    score.add("instance_error_rate", s.error_calls, s.calls)
    score.add("tasks_with_gold_chain", float(has_chain), 0.0)
    score.add("scored_tasks", 1.0, 0.0)
    score.add("calls", s.calls, 0.0)
    return score
