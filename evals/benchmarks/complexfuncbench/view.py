"""ComplexFuncBench's sections of an episode in ``evals view``: each turn's replay decisions (which gold
call a predicted call was paired with, how, and whether it matched: rule, response or judge), the gold
calls still pending after each turn, and how the episode ended (see :mod:`evals.core.episode_view`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core.episode_view import call_pair, calls_section, table_section

__all__ = ["episode_sections"]


def _reason(d: Mapping[str, Any]) -> str:
    outcome = str(d.get("outcome") or "?").replace("_", " ")
    err = d.get("error")
    if err is None:
        return outcome
    return f"{outcome}: {err if isinstance(err, str) else json.dumps(err, ensure_ascii=False)}"


def episode_sections(official: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """``official``: the episode's ``outcome.official`` (the replay server's record), None when it did not finish."""
    if not official:
        return []
    sections = []
    pending_rows = []
    for n, turn in enumerate(official.get("turns") or [], 1):
        calls = turn.get("calls") or []
        pairs = []
        for d in turn.get("decisions") or []:
            i = d.get("pred")
            pred = calls[i] if isinstance(i, int) and 0 <= i < len(calls) else None
            how = f"paired by {d['paired_by']}" if d.get("paired_by") else "not paired with a gold call"
            matcher = f"{d['matcher']} matcher, {how}" if d.get("matcher") else how
            pairs.append(call_pair(d.get("gold"), pred, match=d.get("outcome") == "matched", matcher=matcher,
                                   reason=_reason(d)))
        note = "the turn ended the episode" + (f": {turn['message']}" if turn.get("message") else "") if turn.get("ended") else None
        sections.append(calls_section(f"Turn {n}: replay decisions", pairs, note=note))
        pending = turn.get("pending_after") or []
        pending_rows.append([n, len(pending), ", ".join(str(p.get("name")) for p in pending) or "–"])
    if pending_rows:
        sections.append(table_section("Gold calls pending after each turn", ["turn", "pending", "tools"], pending_rows,
                                      note="A matched call gets the recorded response of its gold call; the rest wait."))
    result = official.get("result")
    if result:
        sections.append(table_section("How the episode ended", ["field", "value"],
                                      [[k, v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)]
                                       for k, v in (result.items() if isinstance(result, Mapping) else [("result", result)])]
                                      + [["count_dict", json.dumps(official.get("count_dict"), ensure_ascii=False)]]))
    return sections
