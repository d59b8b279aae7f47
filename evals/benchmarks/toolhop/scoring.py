"""ToolHop's scoring of one trace: the paper's invocation errors of each call, and the final answer.

:func:`score_trace` needs nothing but the trace and the task (``evals score`` re-runs it offline);
:mod:`.metrics` turns its :class:`TraceScore` into the run's metric samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .answers import answer_correct

if TYPE_CHECKING:
    from .tasks import ToolHopTask

__all__ = ["ERROR_KINDS", "TraceScore", "invocation_errors", "score_trace", "trace_calls"]

ERROR_KINDS = ("tool_hallucination", "param_hallucination", "param_omission")


def invocation_errors(call: Mapping[str, Any], tools: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The paper's three invocation errors of one call, from the call and the task's tool schemas.

    ``tool_hallucination``: the tool does not exist in the task; ``param_hallucination``: a
    parameter the schema's ``properties`` do not define; ``param_omission``: a ``required``
    parameter missing. A call whose arguments were not a JSON object counts as neither parameter
    error (its parameters are unknown). Returns the flags and the offending parameter names.
    """
    name = call.get("name")
    schema = tools.get(name) if isinstance(name, str) else None
    out: dict[str, Any] = {"tool_hallucination": schema is None, "param_hallucination": False, "param_omission": False}
    args = call.get("arguments")
    if schema is None or not isinstance(args, Mapping):
        return out
    props = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    extra = sorted(k for k in args if k not in props)
    missing = [r for r in required if r not in args]
    out.update(param_hallucination=bool(extra), param_omission=bool(missing))
    if extra:
        out["hallucinated_params"] = extra
    if missing:
        out["omitted_params"] = missing
    return out


def trace_calls(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The calls of a trace: ``outcome.calls`` when present, else the ``tool_call`` events."""
    outcome = trace.get("outcome") or {}
    if isinstance(outcome.get("calls"), list):
        return list(outcome["calls"])
    return [e for e in trace.get("events") or [] if e.get("kind") == "tool_call"]


@dataclass
class TraceScore:
    """One task's trace, scored: is the answer right, how many calls, how many with an invocation
    error (``error_calls``) and how many of each kind (``kinds``, over :data:`ERROR_KINDS`)."""

    task_id: str
    correct: bool
    calls: int
    error_calls: int
    kinds: dict[str, int] = field(default_factory=dict)


def score_trace(task: ToolHopTask, trace: Mapping[str, Any] | None) -> TraceScore:
    """One task's score from its trace (a missing or errored trace scores as wrong, no calls)."""
    if not trace or trace.get("status") != "completed":
        return TraceScore(task.id, False, 0, 0, dict.fromkeys(ERROR_KINDS, 0))
    kinds = dict.fromkeys(ERROR_KINDS, 0)
    error_calls = 0
    calls = trace_calls(trace)
    for call in calls:
        errs = invocation_errors(call, task.tool_schemas)
        flagged = [k for k in ERROR_KINDS if errs[k]]
        for k in flagged:
            kinds[k] += 1
        error_calls += bool(flagged)
    return TraceScore(task.id, answer_correct(trace.get("final_answer"), task.answer), len(calls), error_calls, kinds)
