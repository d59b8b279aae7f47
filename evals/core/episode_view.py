"""How a benchmark draws its part of an episode in ``evals view``: sections of a few neutral kinds.

A benchmark may define ``episode_view(task_id, trace, score) -> list[dict]`` (see
:mod:`evals.core.plugin`): ``trace`` is the task's newest trace record (``None`` when it never ran),
``score`` its ``scores.jsonl`` record (``None`` before scoring). It returns sections built here; the
viewer renders each kind the same way for every benchmark, always as text, never as HTML:

* :func:`calls_section`: gold calls beside the predicted ones, with the matcher's decision and
  reason (the viewer marks the arguments that differ);
* :func:`chains_section`: paths such as a KG walk (``Bob -mother-> Alice -prefer_dinnertime-> ...``);
* :func:`table_section`: a small table;
* :func:`text_section`: a block of text (a prompt, an answer, a rationale).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["call_pair", "calls_section", "chains_section", "diff_arguments", "table_section", "text_section"]


def call_pair(gold: Mapping[str, Any] | None, predicted: Mapping[str, Any] | None, *, match: bool | None,
              matcher: str | None = None, reason: str | None = None) -> dict[str, Any]:
    """One gold call (``{"name", "arguments"}``) and the predicted call paired with it (either may be
    None: a call missed, a call too many), with the decision and who took it."""
    return {"gold": dict(gold) if gold is not None else None,
            "predicted": dict(predicted) if predicted is not None else None,
            "match": match, "matcher": matcher, "reason": reason}


def diff_arguments(gold: Mapping[str, Any] | None, predicted: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Every argument name of either call with both values and whether they are equal."""
    g = dict((gold or {}).get("arguments") or {})
    p = dict((predicted or {}).get("arguments") or {})
    keys = list(dict.fromkeys([*g, *p]))
    return [{"key": k, "gold": g.get(k), "predicted": p.get(k), "in_gold": k in g, "in_predicted": k in p,
             "same": k in g and k in p and g[k] == p[k]} for k in keys]


def calls_section(title: str, pairs: Sequence[Mapping[str, Any]], note: str | None = None) -> dict[str, Any]:
    """Gold beside predicted (pairs from :func:`call_pair`), each with its argument diff."""
    out = []
    for pair in pairs:
        out.append({**pair, "diff": diff_arguments(pair.get("gold"), pair.get("predicted"))})
    return {"kind": "calls", "title": title, "pairs": out, "note": note}


def chains_section(title: str, chains: Sequence[Mapping[str, Any]], note: str | None = None) -> dict[str, Any]:
    """Paths, each ``{"label": str, "steps": [node, edge, node, ...], "ok": bool | None, "note": str | None}``."""
    return {"kind": "chains", "title": title, "chains": [dict(c) for c in chains], "note": note}


def table_section(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]], note: str | None = None) -> dict[str, Any]:
    return {"kind": "table", "title": title, "header": list(header), "rows": [list(r) for r in rows], "note": note}


def text_section(title: str, text: str, note: str | None = None) -> dict[str, Any]:
    return {"kind": "text", "title": title, "text": text, "note": note}
