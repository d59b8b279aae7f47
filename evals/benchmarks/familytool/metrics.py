"""FamilyTool metrics, as the paper defines them (Section 5 and Appendix C.2), from traces alone.

Per task, then averaged over the run's tasks as percentages (a task that did not complete scores 0
on every accuracy metric and counts as a format error):

KG extraction (strategies that extract: ``kgetool``, ``agent``)
    ``kg_em``      the extracted triple set equals the gold sub-KG;
    ``kg_f1``      F1 of the extracted triple set against the gold sub-KG (0 when either is empty);
    ``kg_no_hallucination``  every generated relation path starts at an entity of the KG and uses
                   only relations of the KG (a task that generated no valid path scores 0);
    ``kg_coverage`` every gold sub-KG entity that the gold call uses (appears in the gold call's
                   JSON) is an entity of the extracted triples (1 when the gold call uses none);
    ``kg_format_error`` no valid ``KG.search(Start=..., Path=[...])`` could be parsed (``kgetool``),
                   or no KG tool call succeeded (``agent``).
Tool use
    ``tool_em``    the predicted call is the gold call (name and every parameter);
    ``tool_acc``   the predicted tool name is the gold one;
    ``value_acc``  each gold parameter is one sample (micro-average over all gold parameters of the
                   run): the prediction calls the gold tool and gives the parameter the gold value
                   (an omitted parameter is right when the gold value is the schema's default).

``metrics`` use the whole matcher cascade (rule, response, llm: see :mod:`tool_specs.matching`) for
``tool_em`` and ``value_acc`` (a call matched as a whole counts all its parameters as right);
``strict_metrics`` use the rule matcher only. Each quantity has one name: the rule-only exact
match is ``strict_metrics["tool_em"]`` (the summary no longer repeats it as ``exact_call_match``,
nor ``tool_acc`` as ``tool_name_match``). A trace's ``outcome.exact_call_match`` is something else:
the rule matcher's verdict on that one episode (the progress bar's score); the response matcher
and the judge are asked in the scoring phase (``FamilyToolBenchmark.score``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tool_specs.matching import param_matches

from ...core.metrics import Metric, TaskScore

if TYPE_CHECKING:
    from .data import FamilyToolTask

KG_METRICS = ("kg_em", "kg_f1", "kg_no_hallucination", "kg_coverage", "kg_format_error")
TOOL_METRICS = ("tool_em", "tool_acc", "value_acc")

_SEARCH_RE = re.compile(r"KG\s*\.\s*search\s*\((.*?)\)", re.S | re.I)
_START_RE = re.compile(r"\bstart\s*=\s*(\"[^\"]*\"|'[^']*'|[^,\]\)]+)", re.I)
_PATH_RE = re.compile(r"\bpath\s*=\s*\[(.*?)\]", re.S | re.I)
_QUOTES = "\"'`‘’“”"


@dataclass(frozen=True)
class KGSearch:
    start: str
    path: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "path": list(self.path)}


def _clean(token: str) -> str:
    token = re.sub(r"<[^>]*>", "", token)  # "<relationship>mother" -> "mother"
    return token.strip().strip(_QUOTES).strip()


def parse_kg_searches(text: str | None) -> list[KGSearch]:
    """Every valid ``KG.search(Start=<entity>, Path=[r1, r2, ...])`` in a model's text, in order.

    Keys are case-insensitive; entity and relations may be quoted with any quote character. A
    search without a start or with an empty path is not valid and is skipped.
    """
    found: list[KGSearch] = []
    for body in _SEARCH_RE.findall(text or ""):
        body = body.replace("，", ",").replace("【", "[").replace("】", "]")
        sm, pm = _START_RE.search(body), _PATH_RE.search(body)
        if not sm or not pm:
            continue
        start = _clean(sm.group(1))
        path = tuple(r for r in (_clean(p) for p in pm.group(1).split(",")) if r)
        if start and path:
            found.append(KGSearch(start, path))
    return found


def format_kg_search(start: str, path: Iterable[str]) -> str:
    return f"KG.search(Start={start}, Path=[{', '.join(path)}])"


def gold_paths(gold: Iterable[tuple[str, str, str]]) -> list[list[tuple[str, ...]]]:
    """The gold sub-KG as root-to-leaf relation paths (it is a tree of chains, e.g. two
    preferences of one person): each leaf triple with the chain of triples leading to it."""
    triples = list(dict.fromkeys(tuple(t) for t in gold))
    by_tail = {t[2]: t for t in triples}
    paths = []
    for t in triples:
        if any(o[0] == t[2] and o != t for o in triples):
            continue  # not a leaf: another gold triple goes on from its tail
        chain = [t]
        seen = {t}
        while chain[0][0] in by_tail and by_tail[chain[0][0]] not in seen:
            prev = by_tail[chain[0][0]]
            chain.insert(0, prev)
            seen.add(prev)
        paths.append(chain)
    return paths


def triple_f1(pred: set[tuple[str, ...]], gold: set[tuple[str, ...]]) -> float:
    tp = len(pred & gold)
    if not tp:
        return 0.0
    p, r = tp / len(pred), tp / len(gold)
    return 2 * p * r / (p + r)


def used_gold_entities(task: FamilyToolTask) -> set[str]:
    """Gold sub-KG entities that the gold call uses (they appear in the gold call's JSON)."""
    call_json = json.dumps([c.to_dict() for c in task.gold_calls], ensure_ascii=False)
    ents = {e for t in task.gold_kg for e in (t.head, t.tail)}
    return {e for e in ents if e in call_json}


def kg_scores(task: FamilyToolTask, kg: Mapping[str, Any] | None) -> dict[str, float]:
    """The five KG-extraction values of one task from its outcome's ``kg`` record (None = not run)."""
    if not kg or kg.get("format_error", True):
        return {"kg_em": 0.0, "kg_f1": 0.0, "kg_no_hallucination": 0.0,
                "kg_coverage": float(not used_gold_entities(task)), "kg_format_error": 1.0}
    extracted = {tuple(t) for t in kg.get("extracted", [])}
    gold = {tuple(t) for t in task.gold_kg}
    paths = kg.get("paths", [])
    hallucinated = any(p.get("hallucinated") for p in paths)
    ents = {e for t in extracted for e in (t[0], t[2])}
    return {
        "kg_em": float(extracted == gold),
        "kg_f1": triple_f1(extracted, gold),
        "kg_no_hallucination": float(bool(paths) and not hallucinated),
        "kg_coverage": float(used_gold_entities(task) <= ents),
        "kg_format_error": 0.0,
    }


def tool_scores(
    task: FamilyToolTask, pred: Mapping[str, Any] | None, schema: Mapping[str, Any] | None,
    *, rule_ok: bool, response_ok: bool = False, judged_equivalent: bool = False,
) -> dict[str, Any]:
    """Tool-use values of one task, strict and with the cascade, plus which matcher decided.

    ``rule_ok``, ``response_ok``, ``judged_equivalent``: the verdicts of the rule matcher, the
    response matcher and the judge (the last two asked only when the rule matcher rejects the call)."""
    gold = task.gold_calls[0]
    n_params = len(gold.arguments)
    if not pred:
        zero = {"tool_em": 0.0, "tool_acc": 0.0, "values_right": 0}
        return {"cascade": dict(zero), "strict": dict(zero), "params": n_params, "matcher": None}
    rule = rule_ok
    matcher = "rule" if rule else ("response" if response_ok else None)
    if matcher is None and judged_equivalent:
        matcher = "llm"
    name_ok = float(pred["name"] == gold.name)
    # a parameter counts only as a parameter of the gold tool: a wrong tool gets no value right
    strict_values = sum(param_matches(pred.get("arguments"), gold.arguments, schema).values()) if name_ok else 0
    return {
        "strict": {"tool_em": float(rule), "tool_acc": name_ok, "values_right": strict_values},
        "cascade": {"tool_em": float(matcher is not None), "tool_acc": name_ok,
                    "values_right": n_params if matcher is not None else strict_values},
        "params": n_params,
        "matcher": matcher,
    }


def _pct(name: str, label: str, *, over: str = "tasks", block: str = "metrics", better: bool = True,
         breakdown: bool = True) -> Metric:
    return Metric(name, label, higher_is_better=better, over=over, block=block, in_breakdowns=breakdown)


METRICS: tuple[Metric, ...] = (
    _pct("tool_em", "Tool EM"),
    _pct("tool_acc", "Tool Acc"),
    _pct("value_acc", "Value Acc", over="gold parameters"),
    _pct("kg_em", "KG extraction EM"),
    _pct("kg_f1", "KG extraction F1"),
    _pct("kg_no_hallucination", "KG No-Hallucination"),
    _pct("kg_coverage", "KG Coverage"),
    _pct("kg_format_error", "KG Format Error", better=False),
    _pct("tool_em", "Tool EM (rule matcher only)", block="strict_metrics"),
    _pct("tool_acc", "Tool Acc (rule matcher only)", block="strict_metrics"),
    _pct("value_acc", "Value Acc (rule matcher only)", over="gold parameters", block="strict_metrics"),
    *(_pct(k, label, block="strict_metrics", better=k != "kg_format_error") for k, label in (
        ("kg_em", "KG extraction EM"), ("kg_f1", "KG extraction F1"), ("kg_no_hallucination", "KG No-Hallucination"),
        ("kg_coverage", "KG Coverage"), ("kg_format_error", "KG Format Error"))),
    *(Metric(m, f"calls matched by the {m} matcher", kind="count", block="matchers") for m in ("rule", "response", "llm")),
)


def task_score(task: FamilyToolTask, tool: Mapping[str, Any], kg: Mapping[str, float] | None) -> TaskScore:
    """One task's metric samples (every task counts once; ``value_acc`` counts its gold parameters)."""
    score = TaskScore(groups={"hops": str(task.hops), "speaker": task.speaker or "(none)",
                              "tool": task.gold_calls[0].name, "dataset": task.dataset})
    for prefix, mode in (("", "cascade"), ("strict_metrics.", "strict")):
        values = tool[mode]
        score.add(prefix + "tool_em", values["tool_em"])
        score.add(prefix + "tool_acc", values["tool_acc"])
        score.add(prefix + "value_acc", values["values_right"], tool["params"])
    for m in ("rule", "response", "llm"):
        score.add(f"matchers.{m}", float(tool["matcher"] == m), 0.0)
    if kg is not None:  # the KG part has no matcher: the same values in both blocks
        for key in KG_METRICS:
            score.add(key, kg[key])
            score.add(f"strict_metrics.{key}", kg[key])
    score.details["matcher"] = tool["matcher"]
    return score
