"""A ToolHop episode in ``evals view``: each hop's gold call beside the call the model made at that
position, and the gold answer beside the final answer.

The gold chain is the task's explicit one (the record's gold calls), else the derived one when the
derivation cache holds it (the viewer never runs tools); a task without either says so. The pairing
is a viewer's reading (same tool and arguments at the same position); the task's scores are the
paper's metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.episode_view import answer_section, call_pair, calls_section, trace_calls
from .answers import answer_correct
from .tasks import Call, ToolHopTask

__all__ = ["POSITIONAL", "episode_sections"]

POSITIONAL = "position (a viewer's reading)"


def episode_sections(task: ToolHopTask, chain: Sequence[Call] | None, source: str | None,
                     trace: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    pred = trace_calls(trace)
    sections = []
    if chain is None:
        sections.append(calls_section("Gold chain and predicted calls", [
            call_pair(None, p, match=None, reason="no gold chain for this task") for p in pred],
            note="This task has no explicit gold chain and no derived one in the cache (evals run toolhop derives them)."))
    else:
        gold = [c.to_dict() for c in chain]
        pairs = []
        for i in range(max(len(gold), len(pred))):
            g = gold[i] if i < len(gold) else None
            p = pred[i] if i < len(pred) else None
            same = g is not None and p is not None and g["name"] == p["name"] and g["arguments"] == p["arguments"]
            reason = (f"hop {i + 1}" if g is not None else "a call after the last hop") + ("" if p is not None else ": no call made")
            pairs.append(call_pair(g, p, match=same, matcher=POSITIONAL, reason=reason))
        sections.append(calls_section("Gold chain and predicted calls, hop by hop", pairs,
                                      note=f"The gold chain is {source}; calls are paired by position."))
    final = (trace or {}).get("final_answer")
    if trace is None or (trace.get("outcome") or {}).get("stop") == "no_gold_chain":
        correct = None  # never run, or an oracle episode without a chain (left out of the metrics)
    else:
        correct = trace.get("status") == "completed" and answer_correct(final, task.answer)
    sections.append(answer_section(task.answer, "its tokens in the answer", final, correct))
    return sections
