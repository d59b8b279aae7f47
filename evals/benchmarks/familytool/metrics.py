"""FamilyTool metrics per task, from traces alone.

The summary's ``metrics`` block is what the official FamilyTool code computes (strict mode, as the
paper reports it), to the last digit: see :mod:`.official` for every rule. ``nonstrict_metrics`` is
the official non-strict mode (string values stripped before comparing).

``--scoring project`` adds the project's own, stricter reading under other names (never under the
official ones):

``project_metrics``
    tool use with the whole matcher cascade (rule, response, llm: see :mod:`tool_specs.matching`):
    values compared by the schema's types, extra parameters penalised, an omitted parameter right
    when the gold value is the schema's default, a call matched as a whole counting all its
    parameters; ``value_acc`` over all gold parameters of the run (micro-average). KG extraction
    from what the server's ``kg_search_path`` returned (every link of each hop, not the first):
    ``kg_em`` / ``kg_f1`` of that triple set against the gold sub-KG; ``kg_no_hallucination`` every
    search started at a KG entity and used only KG relations (over all tasks); ``kg_coverage`` the
    gold entities the gold call uses are entities of the extracted triples; ``kg_format_error`` no
    valid search could be parsed (``kgetool``) or no KG tool call succeeded (``agent``).
``project_strict_metrics``
    the same with the rule matcher only; ``matchers`` counts which matcher decided.

A trace's ``outcome.exact_call_match`` is the rule matcher's verdict on that one episode (the
progress bar's score).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.metrics import Metric, TaskScore
from .names import KG_TOOL_PREFIX

if TYPE_CHECKING:
    from .data import FamilyToolTask

EXTRACTING = ("agent", "kgetool")  # the strategies whose KG extraction is scored
AGENT_KG_BLOCK = "agent_kg_metrics"  # the agent's: under our own names, not the paper's (no KG step)
KG_METRICS = ("kg_em", "kg_f1", "kg_no_hallucination", "kg_coverage", "kg_format_error")
TOOL_METRICS = ("tool_em", "tool_acc", "value_acc")

_SEARCH_RE = re.compile(r"KG\s*.\s*search\s*\((.*?)\)", re.S | re.I)  # any one character, as the official regex
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
    """Every valid ``KG.search(start=<entity>, path=[r1, r2, ...])`` in a model's text, in order (the
    project's reading, for the server's extraction; the official one is :func:`.official.parse_search`).

    It accepts what the official parser accepts and more: keys in any case, quotes of any kind,
    ``<relationship>`` tags, spaces inside names kept. A search without a start or with an empty
    path is not valid and is skipped.
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
    """One search in the paper's syntax (its prompt's examples)."""
    rels = ",".join(f'"<relationship>{r}"' for r in path)
    return f'KG.search(start="{start}", path=[{rels}])'


def official_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The predicted calls the official scorer sees: those to candidate (non-KG) tools made in the
    last turn that made one (the official tool-use step is a single model response), as
    ``{"name", "parameters"}``."""
    tool_calls = [c for c in calls if not str(c.get("name", "")).startswith(KG_TOOL_PREFIX)]
    if not tool_calls:
        return []
    last = tool_calls[-1].get("turn")
    return [{"name": c["name"], "parameters": c.get("arguments")} for c in tool_calls if c.get("turn") == last]


def step1_text(kg: Mapping[str, Any] | None, strategy: str) -> str:
    """The step-1 text the official KG post-processing reads: ``kgetool``'s generation; for
    ``agent``, its ``kg_search_path`` calls written as ``KG.search`` lines (``kg_neighbors``
    lookups are no searches and are left out)."""
    if not kg:
        return ""
    if "generation" in kg or strategy != "agent":
        return str(kg.get("generation") or "")
    lines = []
    for p in kg.get("paths", []):
        if p.get("tool") != "kg_search_path":
            continue
        args = p.get("arguments") or {}
        start, path = p.get("start") or args.get("start"), p.get("path") or args.get("path")
        if isinstance(start, str) and isinstance(path, list):
            lines.append(format_kg_search(start, [str(r) for r in path]))
    return "\n".join(lines)


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
    # imported on use: the registry imports this module for `evals --help`
    from tool_specs.argument_matching import param_matches

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


_KG_LABELS = (("kg_em", "KG extraction EM"), ("kg_f1", "KG extraction F1"),
              ("kg_no_hallucination", "KG No-Hallucination"), ("kg_coverage", "KG Coverage"),
              ("kg_format_error", "KG Format Error"))


def _kg_metrics(block: str, suffix: str = "") -> tuple[Metric, ...]:
    return tuple(_pct(k, label + suffix, block=block, better=k != "kg_format_error",
                      over="tasks without a format error" if k == "kg_no_hallucination" and block in ("metrics", AGENT_KG_BLOCK)
                 else "tasks")
                 for k, label in _KG_LABELS)


METRICS: tuple[Metric, ...] = (
    # the official code's numbers (see .official): strict mode, as the paper reports
    _pct("tool_em", "Tool EM"),
    _pct("tool_acc", "Tool Acc"),
    _pct("value_acc", "Value Acc"),
    *_kg_metrics("metrics"),
    # the agent does no KG extraction step of the paper's: the official post-processing of its
    # kg_search_path calls, under our own names (its kg_format_error is "no such call")
    *_kg_metrics(AGENT_KG_BLOCK, " (ours: the agent's kg_search_path calls)"),
    # the official code's non-strict mode (is_strict=False: string values stripped)
    _pct("tool_em", "Tool EM (official non-strict)", block="nonstrict_metrics"),
    _pct("tool_acc", "Tool Acc (official non-strict)", block="nonstrict_metrics"),
    _pct("value_acc", "Value Acc (official non-strict)", block="nonstrict_metrics"),
    # --scoring project: the project's reading (matcher cascade / rule matcher; all links extracted)
    _pct("tool_em", "Tool EM (project: matcher cascade)", block="project_metrics"),
    _pct("tool_acc", "Tool Acc (project)", block="project_metrics"),
    _pct("value_acc", "Value Acc (project: matcher cascade)", over="gold parameters", block="project_metrics"),
    *_kg_metrics("project_metrics", " (project)"),
    _pct("tool_em", "Tool EM (project: rule matcher only)", block="project_strict_metrics"),
    _pct("tool_acc", "Tool Acc (project)", block="project_strict_metrics"),
    _pct("value_acc", "Value Acc (project: rule matcher only)", over="gold parameters", block="project_strict_metrics"),
    *_kg_metrics("project_strict_metrics", " (project)"),
    *(Metric(m, f"calls matched by the {m} matcher (project)", kind="count", block="matchers") for m in ("rule", "response", "llm")),
)


def task_groups(task: FamilyToolTask) -> dict[str, str]:
    return {"hops": str(task.hops), "speaker": task.speaker or "(none)", "tool": task.gold_calls[0].name,
            "dataset": task.dataset}


def add_official(score: TaskScore, strict: Mapping[str, float], nonstrict: Mapping[str, float],
                 kg: Mapping[str, float] | None) -> None:
    """The official values of one task (``.official.tool_values`` strict and non-strict,
    ``.official.kg_values``): each a per-task sample, averaged over the tasks as the official code does."""
    for key in TOOL_METRICS:
        score.add(key, strict[key])
        score.add(f"nonstrict_metrics.{key}", nonstrict[key])
    for key, value in (kg or {}).items():
        score.add(key, value)


def add_project(score: TaskScore, tool: Mapping[str, Any], kg: Mapping[str, float] | None) -> None:
    """The project's reading of one task (``--scoring project``): ``value_acc`` counts its gold parameters."""
    for block, mode in (("project_metrics", "cascade"), ("project_strict_metrics", "strict")):
        values = tool[mode]
        score.add(f"{block}.tool_em", values["tool_em"])
        score.add(f"{block}.tool_acc", values["tool_acc"])
        score.add(f"{block}.value_acc", values["values_right"], tool["params"])
        if kg is not None:  # the KG part has no matcher: the same values in both blocks
            for key in KG_METRICS:
                score.add(f"{block}.{key}", kg[key])
    for m in ("rule", "response", "llm"):
        score.add(f"matchers.{m}", float(tool["matcher"] == m), 0.0)
    score.details["matcher"] = tool["matcher"]
