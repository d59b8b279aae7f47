"""An UltraTool episode in ``evals view``: tool usage's gold steps beside the predicted ones (the model's
calls, or its answer as the official parser reads it), step by step; every other task's gold answer
beside the final answer. The pairing is a viewer's reading (the same tool and arguments at the same
step); the task's scores are the paper's metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.episode_view import answer_section, call_pair, calls_section

__all__ = ["BY_STEP", "episode_sections"]

BY_STEP = "step (a viewer's reading)"


def _call(step: Mapping[str, Any]) -> dict[str, Any]:
    param = step.get("param")
    return {"name": step.get("tool"), "arguments": dict(param) if isinstance(param, Mapping) else {}}


def usage_sections(gold: Sequence[Mapping[str, Any]], predicted: Any) -> list[dict[str, Any]]:
    """Tool usage: gold steps (``{"step", "tool", "param"}``) beside the predicted step of the same number."""
    pred = [p for p in predicted or [] if isinstance(p, Mapping)]
    by_step = {str(p.get("step")): p for p in pred}
    pairs = []
    for g in gold:
        p = by_step.pop(str(g.get("step")), None)
        gc, pc = _call(g), _call(p) if p is not None else None
        same = pc is not None and gc["name"] == pc["name"] and {k: str(v) for k, v in gc["arguments"].items()} == {
            k: str(v) for k, v in pc["arguments"].items()}
        pairs.append(call_pair(gc, pc, match=same, matcher=BY_STEP, reason=f"step {g.get('step')}"))
    for step, p in by_step.items():
        pairs.append(call_pair(None, _call(p), match=False, matcher=BY_STEP, reason=f"step {step}: no gold step"))
    note = None if predicted is not None else "the answer could not be read as tool steps"
    return [calls_section("Gold steps and predicted steps", pairs, note=note)]


def episode_sections(task: str, gold: Any, gold_answer: str, predicted: Any,
                     trace: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if task == "tool_usage" and isinstance(gold, list):
        return usage_sections(gold, predicted)
    return [answer_section(gold_answer, task.replace("_", " "), (trace or {}).get("final_answer"), None)]
