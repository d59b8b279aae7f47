"""FamilyTool's sections of an episode in ``evals view``: the gold call beside the predicted one with the
scorer's decision, the gold KG path, and the KG paths the episode walked (see :mod:`evals.core.episode_view`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core.episode_view import call_pair, calls_section, chains_section, table_section
from .data import FamilyToolTask
from .metrics import gold_paths
from .names import KG_TOOL_PREFIX

__all__ = ["episode_sections"]

OFFICIAL = "official scorer (strict: same tool, every gold parameter equal as JSON)"


def _reason(gold: Mapping[str, Any], pred: Mapping[str, Any] | None) -> str:
    if pred is None:
        return "the episode made no call to a candidate tool"
    if pred.get("name") != gold.get("name"):
        return f"another tool was called: {pred.get('name')} instead of {gold.get('name')}"
    got: Mapping[str, Any] = pred["arguments"] if isinstance(pred.get("arguments"), Mapping) else {}
    wrong = [k for k, v in (gold.get("arguments") or {}).items() if json.dumps(got.get(k)) != json.dumps(v)]
    if not wrong:
        return "same tool and every gold parameter equal"
    return "; ".join(f"{k}: gold {json.dumps((gold.get('arguments') or {})[k], ensure_ascii=False)}, "
                     f"predicted {json.dumps(got.get(k), ensure_ascii=False) if k in got else '(absent)'}" for k in wrong)


def _chain(triples: list[Any]) -> list[str]:
    steps = [str(triples[0][0])] if triples else []
    for t in triples:
        steps += [str(t[1]), str(t[2])]
    return steps


def episode_sections(task: FamilyToolTask, trace: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    outcome = ((trace or {}).get("outcome") or {}) if (trace or {}).get("status") == "completed" else {}
    record = (score or {}).get("score") or {}
    samples = record.get("samples") or {}
    details = record.get("details") or {}
    calls = [c for c in outcome.get("calls") or [] if not str(c.get("name", "")).startswith(KG_TOOL_PREFIX)]
    pairs = []
    for gold in task.gold_calls:
        g = gold.to_dict()
        pred = next((c for c in calls if c.get("name") == gold.name), None) or outcome.get("prediction")
        em = samples.get("tool_em")
        match = None if em is None else bool(em[0] >= em[1])
        matcher = OFFICIAL
        if details.get("matcher"):
            matcher += f"; project matcher cascade: {details['matcher']}"
        p = {"name": pred.get("name"), "arguments": pred.get("arguments")} if pred else None
        pairs.append(call_pair(g, p, match=match, matcher=matcher, reason=_reason(g, p)))
    sections = [calls_section("Gold call and predicted call", pairs,
                              note="The predicted call is the episode's last call to a candidate (non-KG) tool.")]
    gold_chains: list[dict[str, Any]] = [{"label": "gold path", "steps": _chain(list(p)), "ok": None} for p in gold_paths(task.gold_kg)]
    kg = outcome.get("kg") or {}
    gold_set = {tuple(t) for t in task.gold_kg}
    walked: list[dict[str, Any]] = []
    for e in (trace or {}).get("events") or []:
        if e.get("kind") != "tool_call" or e.get("name") != "kg_search_path":
            continue
        st: Mapping[str, Any] = e["structured"] if isinstance(e.get("structured"), Mapping) else {}
        args: Mapping[str, Any] = e["arguments"] if isinstance(e.get("arguments"), Mapping) else {}
        found = [p for p in st.get("paths") or [] if p]
        for p in found[:5]:
            walked.append({"label": "walked", "steps": _chain(p), "ok": all(tuple(t) in gold_set for t in p)})
        if not found:
            steps = [str(args.get("start"))] + [x for r in args.get("path") or [] for x in (str(r), "?")]
            walked.append({"label": "walked", "steps": steps, "ok": False,
                           "note": "error" if e.get("is_error") else "no path found in the KG"})
    extracted = [list(t) for t in kg.get("extracted") or []]
    sections.append(chains_section("KG path", gold_chains + walked,
                                   note="The gold sub-KG as root-to-leaf paths, then the paths each kg_search_path of the episode found "
                                        "(ok: every triple is in the gold sub-KG)."))
    if extracted:
        sections.append(table_section("Triples the episode retrieved", ["head", "relation", "tail", "in gold"],
                                      [[*t[:3], "yes" if tuple(t[:3]) in gold_set else "no"] for t in extracted]))
    return sections
