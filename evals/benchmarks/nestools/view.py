"""NesTools' sections of an episode in ``evals view``: the gold call list beside the predicted one, in
order, and the placeholder handles each call produced and took (see :mod:`evals.core.episode_view`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...core.episode_view import call_pair, calls_section, table_section
from .official import parse_prediction

__all__ = ["episode_sections"]

POSITIONAL = "viewer: the call at the same position, same tool and parameters (the official counts are in the scores)"
_HANDLE = re.compile(r"API_call_\d+")


def _calls(prediction: Any) -> list[Mapping[str, Any]]:
    parsed = parse_prediction(prediction) if isinstance(prediction, str) else prediction
    return [c for c in parsed if isinstance(c, Mapping)] if isinstance(parsed, list) else []


def _as_call(c: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if c is None:
        return None
    params = c.get("parameters")
    return {"name": c.get("api_name"), "arguments": dict(params) if isinstance(params, Mapping) else {}}


def _reason(g: Mapping[str, Any] | None, p: Mapping[str, Any] | None) -> str:
    if g is None:
        return "a call the gold list does not have at this position"
    if p is None:
        return "the prediction has no call at this position"
    if g["name"] != p["name"]:
        return f"another tool: {p['name']} instead of {g['name']}"
    differ = [k for k in dict.fromkeys([*g["arguments"], *p["arguments"]])
              if json.dumps(g["arguments"].get(k)) != json.dumps(p["arguments"].get(k))]
    return "same tool and parameters" if not differ else "parameters differ: " + ", ".join(differ)


def _handles(side: str, calls: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    rows = []
    for i, c in enumerate(calls, 1):
        responses = c.get("responses")
        outputs = (", ".join(f"{k} → {v}" for k, v in responses.items()) if isinstance(responses, Mapping)
                   else ", ".join(map(str, responses)) if isinstance(responses, list) else "")
        params: Mapping[str, Any] = c["parameters"] if isinstance(c.get("parameters"), Mapping) else {}
        took = sorted({h for v in params.values() for h in _HANDLE.findall(json.dumps(v))})
        rows.append([side, i, c.get("api_name"), outputs or "–", ", ".join(took) or "–"])
    return rows


def episode_sections(gold: Sequence[Mapping[str, Any]], prediction: Any) -> list[dict[str, Any]]:
    """``gold``: the task's gold call list; ``prediction``: what the official scorer reads (the answer
    text of ``oneshot``, the call list of ``agent``)."""
    pred = _calls(prediction)
    pairs = []
    for i in range(max(len(gold), len(pred))):
        g = _as_call(gold[i]) if i < len(gold) else None
        p = _as_call(pred[i]) if i < len(pred) else None
        same = g is not None and p is not None and g["name"] == p["name"] and json.dumps(g["arguments"], sort_keys=True) == json.dumps(p["arguments"], sort_keys=True)
        pairs.append(call_pair(g, p, match=same, matcher=POSITIONAL, reason=_reason(g, p)))
    note = None if pred or not isinstance(prediction, str) else "the answer could not be read as a call list"
    return [calls_section("Gold calls and predicted calls, in order", pairs, note=note),
            table_section("Placeholder handles", ["list", "#", "tool", "outputs (field → handle)", "handles it takes"],
                          _handles("gold", gold) + _handles("predicted", pred),
                          note="A later call takes an earlier call's output by passing its handle (API_call_N).")]
