"""How a benchmark draws its part of an episode in ``evals view``: sections of a few neutral kinds.

A benchmark may define ``episode_view(task_id, trace, score) -> list[dict]`` (see
:mod:`evals.core.plugin`): ``trace`` is the task's newest trace record (``None`` when it never ran),
``score`` its ``scores.jsonl`` record (``None`` before scoring). It returns sections built here; the
viewer renders each kind the same way for every benchmark, always as text, never as HTML:

* :func:`calls_section`: gold calls beside the predicted ones, with the matcher's decision and
  reason (the viewer marks the arguments that differ);
* :func:`chains_section`: paths such as a KG walk (``Bob -mother-> Alice -prefer_dinnertime-> ...``);
* :func:`table_section`: a small table;
* :func:`text_section`: a block of text (a prompt, an answer, a rationale), optionally collapsed
  (shown under its title, opened by a click);
* :func:`answer_section`: the gold answer beside the final answer, with the scorer's verdict.

:func:`trace_calls` reads the tool calls of a trace, to pair with the gold calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["answer_section", "call_pair", "calls_section", "chains_section", "diff_arguments", "table_section",
           "text_section", "trace_calls"]


def call_pair(gold: Mapping[str, Any] | None, predicted: Mapping[str, Any] | None, *, match: bool | None,
              matcher: str | None = None, reason: str | None = None,
              same: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """One gold call (``{"name", "arguments"}``) and the predicted call paired with it (either may be
    None: a call missed, a call too many), with the decision and who took it. ``same``: the
    matcher's own decision per argument, where equal values are not what it asks (a gold value that
    lists the allowed values, a tolerance); the others are compared as they are."""
    out = {"gold": dict(gold) if gold is not None else None,
           "predicted": dict(predicted) if predicted is not None else None,
           "match": match, "matcher": matcher, "reason": reason}
    if same is not None:
        out["same"] = dict(same)
    return out


def diff_arguments(gold: Mapping[str, Any] | None, predicted: Mapping[str, Any] | None,
                   same: Mapping[str, bool] | None = None) -> list[dict[str, Any]]:
    """Every argument name of either call with both values and whether they agree: the matcher's
    decision in ``same`` where it has one, else whether they are equal."""
    g = dict((gold or {}).get("arguments") or {})
    p = dict((predicted or {}).get("arguments") or {})
    keys = list(dict.fromkeys([*g, *p]))
    decided = same or {}
    return [{"key": k, "gold": g.get(k), "predicted": p.get(k), "in_gold": k in g, "in_predicted": k in p,
             "same": decided[k] if k in decided else k in g and k in p and g[k] == p[k]} for k in keys]


def calls_section(title: str, pairs: Sequence[Mapping[str, Any]], note: str | None = None) -> dict[str, Any]:
    """Gold beside predicted (pairs from :func:`call_pair`), each with its argument diff."""
    out = []
    for pair in pairs:
        out.append({**pair, "diff": diff_arguments(pair.get("gold"), pair.get("predicted"), pair.get("same"))})
    return {"kind": "calls", "title": title, "pairs": out, "note": note}


def chains_section(title: str, chains: Sequence[Mapping[str, Any]], note: str | None = None) -> dict[str, Any]:
    """Paths, each ``{"label": str, "steps": [node, edge, node, ...], "ok": bool | None, "note": str | None}``."""
    return {"kind": "chains", "title": title, "chains": [dict(c) for c in chains], "note": note}


def table_section(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]], note: str | None = None) -> dict[str, Any]:
    return {"kind": "table", "title": title, "header": list(header), "rows": [list(r) for r in rows], "note": note}


def text_section(title: str, text: str, note: str | None = None, *, collapsed: bool = False) -> dict[str, Any]:
    section = {"kind": "text", "title": title, "text": text, "note": note}
    return {**section, "collapsed": True} if collapsed else section


def answer_section(gold: Any, how: str | None, final: Any, correct: bool | None, note: str | None = None) -> dict[str, Any]:
    """The gold answer (``how``: how an answer is matched to it) beside the episode's final answer, and
    whether the scorer found it right (None: no single verdict, e.g. a judged score, or not scored yet)."""
    verdict = "right" if correct is True else "wrong" if correct is False else "(see the scores)"
    gold_text = gold if isinstance(gold, str) else json.dumps(gold, ensure_ascii=False)
    return table_section("Gold answer and final answer", ["", "answer", "satisfies the gold answer"],
                         [[f"gold ({how})" if how else "gold", gold_text, ""],
                          ["final answer", final if final is not None else "(none)", verdict]], note=note)


def trace_calls(trace: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The tool calls of a trace in order, each ``{"name", "arguments"}`` (``arguments``: the raw text
    when they did not parse)."""
    out = []
    for e in (trace or {}).get("events") or []:
        if isinstance(e, Mapping) and e.get("kind") == "tool_call":
            args = e.get("arguments")
            out.append({"name": e.get("name"), "arguments": args if isinstance(args, Mapping) else {"(unparsable)": args}})
    return out
