"""Is a predicted tool call the gold call, and which predicted call goes with which gold call?

One pair of calls is decided by a cascade of matchers, tried in order; the first that accepts
decides, and every decision says which matcher made it and why:

* ``rule``: equal after normalising JSON types by the tool's schema (``"5"`` == ``5`` where the
  schema says integer, ``"true"`` == ``True`` where it says boolean, ``5`` == ``"5"`` where it says
  string). Nothing else is forgiven by default: different strings, extra or missing parameters do
  not match. Two options, off by default (the built-in benchmarks' official checkers do not use
  them), make it forgive what a person would: ``fill_defaults`` completes both calls with the
  schema's defaults before comparing (``max_count: 10`` given or omitted, where 10 is the default),
  and ``argument_rules`` reads per-argument normalisation from the gold call's ``match`` key
  (:data:`~tool_specs.argument_matching.ARGUMENT_RULES`: ``path``, ``case``, ``whitespace``,
  ``{"tolerance": x, "relative": bool}``; the comparison of values is :mod:`tool_specs.argument_matching`'s).
  A rejection names the first argument that differed and both values.
* ``response``: the two calls produce the same tool response. Each call is completed with the
  schema's defaults for omitted parameters (what a real tool does with them) and run through the
  tool's executor; the structured results (or texts) are compared. Only deterministic executors are
  asked; a call whose arguments the schema rejects never matches.
* ``llm``: a judge model (defined above this package, in ``evals``; it plugs in as a
  :class:`Matcher`).

Several calls against several gold calls are first paired by :func:`align_calls`: an optimal
assignment (Hungarian method, :func:`scipy.optimize.linear_sum_assignment`) over a pluggable pair
cost (tool name, arguments, text, or any function such as an embedding distance). Ties go to the
pairing that keeps the calls' order.

A call is any mapping with ``name`` and ``arguments`` (other keys, such as a recorded
``response``, are carried along untouched).
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any, Protocol

from tool_specs.argument_matching import (
    MATCH_KEY,
    ArgumentRule,
    argument_differences,
    argument_rules,
    describe_differences,
    normalize_arguments,
    with_defaults,
)

if TYPE_CHECKING:
    from tool_specs.protocols import ToolLike

__all__ = [
    "MATCHERS",
    "Alignment",
    "AlignedPair",
    "CallLike",
    "CostFn",
    "MatchDecision",
    "Matcher",
    "ResponseMatcher",
    "RuleMatcher",
    "align_calls",
    "argument_cost",
    "combined_cost",
    "decide",
    "embedding_cost",
    "name_cost",
    "response_match",
    "rule_match",
    "text_cost",
]

MATCHERS = ("rule", "response", "llm")

CallLike = Mapping[str, Any]
"""A call: ``{"name": str, "arguments": mapping or None, ...}``."""


def rule_match(
    pred_name: str, pred_args: Mapping[str, Any] | None, gold_name: str, gold_args: Mapping[str, Any],
    schema: Mapping[str, Any] | None, *, fill_defaults: bool = False,
    rules: Mapping[str, Sequence[ArgumentRule]] | None = None,
) -> bool:
    """Same tool and, after type normalisation (and the options of :func:`argument_differences`),
    exactly the same arguments."""
    if pred_name != gold_name or not isinstance(pred_args, Mapping):
        return False
    if not fill_defaults and not rules:
        return normalize_arguments(pred_args, schema) == normalize_arguments(gold_args, schema)
    return not argument_differences(pred_args, gold_args, schema, fill_defaults=fill_defaults, rules=rules)


def _deterministic(spec: ToolLike) -> bool:
    return getattr(spec.executor, "kind", None) == "simulated"


async def response_match(spec: ToolLike, pred_args: Mapping[str, Any] | None, gold_args: Mapping[str, Any]) -> bool:
    """Do the two calls of ``spec`` produce the same response (defaults filled in; see module doc)?"""
    if not isinstance(pred_args, Mapping) or not _deterministic(spec):
        return False
    schema = spec.input_schema
    pred = await spec.call(normalize_arguments(with_defaults(pred_args, schema), schema))
    gold = await spec.call(normalize_arguments(with_defaults(gold_args, schema), schema))
    if pred.is_error or gold.is_error:
        return False
    if pred.structured is not None or gold.structured is not None:
        return pred.structured == gold.structured
    return pred.text == gold.text


# ---- matchers of one pair ------------------------------------------------------------------------
@dataclass
class MatchDecision:
    """One matcher's verdict on one (predicted, gold) pair, with its reason."""

    matched: bool
    matcher: str | None  # the matcher that accepted the pair; None when none did
    reason: str
    details: dict[str, Any] = field(default_factory=dict)  # e.g. a judge's prompt and answer

    def to_dict(self) -> dict[str, Any]:
        return {"matched": self.matched, "matcher": self.matcher, "reason": self.reason, **self.details}


class Matcher(Protocol):
    """Decides one pair: a :class:`MatchDecision` when it accepts it, ``None`` when it does not."""

    name: str

    def __call__(self, pred: CallLike, gold: CallLike) -> Awaitable[MatchDecision | None]: ...


SchemaFor = Callable[[str], "Mapping[str, Any] | None"]
SpecFor = Callable[[str], "ToolLike | None"]


def _gold_rules(gold: CallLike, enabled: bool) -> dict[str, list[ArgumentRule]] | None:
    return argument_rules(gold.get(MATCH_KEY)) if enabled else None


class RuleMatcher:
    """Same name and the same arguments after type normalisation by the tool's input schema (with
    ``fill_defaults`` and ``argument_rules``: see the module docstring). A rejection of a call of
    the same tool says which argument differed, with both values."""

    name = "rule"

    def __init__(self, schema_for: SchemaFor = lambda _name: None, *, fill_defaults: bool = False,
                 argument_rules: bool = False):
        self.schema_for = schema_for
        self.fill_defaults = fill_defaults
        self.argument_rules = argument_rules

    async def __call__(self, pred: CallLike, gold: CallLike) -> MatchDecision | None:
        name = str(gold.get("name"))
        schema = self.schema_for(name)
        rules = _gold_rules(gold, self.argument_rules)
        args = pred.get("arguments")
        if rule_match(str(pred.get("name")), args, name, gold.get("arguments") or {}, schema,
                      fill_defaults=self.fill_defaults, rules=rules):
            how = " (schema defaults filled in)" if self.fill_defaults else ""
            return MatchDecision(True, self.name, f"same tool and equal arguments after type normalisation{how}")
        if pred.get("name") == name and isinstance(args, Mapping):
            differences = argument_differences(args, gold.get("arguments") or {}, schema,
                                               fill_defaults=self.fill_defaults, rules=rules)
            return MatchDecision(False, None, describe_differences(differences))
        return None


class ResponseMatcher:
    """The two calls of one tool produce the same response from a deterministic executor."""

    name = "response"

    def __init__(self, spec_for: SpecFor):
        self.spec_for = spec_for

    async def __call__(self, pred: CallLike, gold: CallLike) -> MatchDecision | None:
        if pred.get("name") != gold.get("name"):
            return None
        spec = self.spec_for(str(gold.get("name")))
        if spec is not None and await response_match(spec, pred.get("arguments"), gold.get("arguments") or {}):
            return MatchDecision(True, self.name, "both calls give the same response (schema defaults filled in)")
        return None


async def decide(pred: CallLike, gold: CallLike, matchers: Sequence[Matcher]) -> MatchDecision:
    """The first matcher of ``matchers`` that accepts the pair decides; otherwise no match (the
    reason quotes the first rejection that said why, e.g. the rule matcher's differing argument)."""
    why = ""
    for matcher in matchers:
        decision = await matcher(pred, gold)
        if decision is not None and decision.matched:
            return decision
        if decision is not None and not why:
            why = f" ({decision.reason})"
    tried = ", ".join(m.name for m in matchers) or "no matcher"
    if pred.get("name") != gold.get("name"):
        return MatchDecision(False, None, f"different tools ({pred.get('name')!r} vs {gold.get('name')!r})")
    return MatchDecision(False, None, f"same tool, arguments differ{why}; rejected by {tried}")


# ---- pair costs for the alignment --------------------------------------------------------------
CostFn = Callable[[CallLike, CallLike], float]
"""Cost of pairing a predicted call with a gold call, in [0, 1] (0 = identical, 1 = unrelated)."""


def name_cost(pred: CallLike, gold: CallLike) -> float:
    """0 for the same tool name, 1 otherwise."""
    return 0.0 if pred.get("name") == gold.get("name") else 1.0


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def argument_cost(schema_for: SchemaFor = lambda _name: None, *, fill_defaults: bool = False,
                  argument_rules: bool = False) -> CostFn:
    """1 for different tools; else the share of parameters (of either call) whose values differ
    after type normalisation (a parameter only one call gives counts as different); the options
    are :class:`RuleMatcher`'s."""

    def cost(pred: CallLike, gold: CallLike) -> float:
        if pred.get("name") != gold.get("name"):
            return 1.0
        schema = schema_for(str(gold.get("name")))
        p = pred.get("arguments")
        g = gold.get("arguments") or {}
        if not isinstance(p, Mapping):
            return 1.0
        if fill_defaults or argument_rules:
            keys = set(with_defaults(p, schema) if fill_defaults else p) | set(with_defaults(g, schema) if fill_defaults else g)
            differ = len(argument_differences(p, g, schema, fill_defaults=fill_defaults,
                                              rules=_gold_rules(gold, argument_rules)))
            return 0.99 * differ / len(keys) if keys else 0.0
        pn, gn = normalize_arguments(p, schema), normalize_arguments(g, schema)
        keys = set(pn) | set(gn)
        if not keys:
            return 0.0
        differ = sum(1 for k in keys if k not in pn or k not in gn or _canonical(pn[k]) != _canonical(gn[k]))
        # different arguments of the same tool always cost less than a different tool
        return 0.99 * differ / len(keys)

    return cost


def text_cost(pred: CallLike, gold: CallLike) -> float:
    """1 - the similarity ratio of the two calls written as JSON text (difflib)."""
    a = _canonical({"name": pred.get("name"), "arguments": pred.get("arguments")})
    b = _canonical({"name": gold.get("name"), "arguments": gold.get("arguments")})
    return 1.0 - SequenceMatcher(None, a, b, autojunk=False).ratio()


def embedding_cost(embed: Callable[[str], Sequence[float]]) -> CostFn:
    """1 - cosine similarity (clipped to [0, 1]) of the embeddings of the calls' JSON text."""

    def cost(pred: CallLike, gold: CallLike) -> float:
        a = embed(_canonical({"name": pred.get("name"), "arguments": pred.get("arguments")}))
        b = embed(_canonical({"name": gold.get("name"), "arguments": gold.get("arguments")}))
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        na = math.sqrt(sum(x * x for x in a))
        nb = math.sqrt(sum(y * y for y in b))
        if na == 0 or nb == 0:
            return 1.0
        return min(1.0, max(0.0, 1.0 - dot / (na * nb)))

    return cost


def combined_cost(*weighted: tuple[CostFn, float]) -> CostFn:
    """A weighted mean of several costs, e.g. ``combined_cost((name_cost, 0.5), (text_cost, 0.5))``."""
    total = sum(w for _, w in weighted)
    if not weighted or total <= 0:
        raise ValueError("combined_cost needs at least one cost with a positive weight")

    def cost(pred: CallLike, gold: CallLike) -> float:
        return sum(fn(pred, gold) * w for fn, w in weighted) / total

    return cost


# ---- alignment of two call lists ---------------------------------------------------------------
@dataclass
class AlignedPair:
    """A predicted call paired with a gold call, with the pair's cost and (after matching) its decision."""

    pred_index: int
    gold_index: int
    cost: float
    decision: MatchDecision | None = None

    @property
    def matched(self) -> bool:
        return self.decision is not None and self.decision.matched

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pred": self.pred_index, "gold": self.gold_index, "cost": round(self.cost, 6)}
        if self.decision is not None:
            out["decision"] = self.decision.to_dict()
        return out


@dataclass
class Alignment:
    """The result of :func:`align_calls`: pairs, and the calls left without a partner."""

    pairs: list[AlignedPair]
    unmatched_pred: list[int]
    unmatched_gold: list[int]

    @property
    def matched_pairs(self) -> list[AlignedPair]:
        return [p for p in self.pairs if p.matched]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pairs": [p.to_dict() for p in self.pairs],
            "unmatched_pred": list(self.unmatched_pred),
            "unmatched_gold": list(self.unmatched_gold),
        }


def _assignment(matrix: list[list[float]]) -> list[tuple[int, int]]:
    """The (row, column) pairs of the lowest-cost assignment of ``matrix`` (at least 1 x 1).

    One call against one gold call has a single assignment, given without importing scipy (about
    0.45 s of a one-task run's exit, ``bench/bench_cli_startup.py``); any larger matrix goes to
    :func:`scipy.optimize.linear_sum_assignment`.
    """
    if len(matrix) == 1 and len(matrix[0]) == 1:
        return [(0, 0)]
    from scipy.optimize import linear_sum_assignment  # imported here: scipy is slow to import

    rows, cols = linear_sum_assignment(matrix)
    return list(zip(rows.tolist(), cols.tolist(), strict=True))


async def align_calls(
    predicted: Sequence[CallLike],
    gold: Sequence[CallLike],
    *,
    cost: CostFn | None = None,
    max_cost: float = 0.999,
    matchers: Sequence[Matcher] | None = None,
) -> Alignment:
    """Pair ``predicted`` with ``gold`` calls at the lowest total ``cost`` (default :func:`argument_cost`).

    A pair whose cost exceeds ``max_cost`` is not made (by default: calls of different tools are
    never paired); its calls are reported unmatched. Among pairings of equal cost the one that keeps
    the calls' order is chosen (a cost of ``1e-9 * |i - j|`` breaks ties). With ``matchers``, every
    pair is then decided by :func:`decide`, which records the matcher that accepted it and why.
    """
    cost_fn = cost or argument_cost()
    n, m = len(predicted), len(gold)
    pairs: list[AlignedPair] = []
    used_p: set[int] = set()
    used_g: set[int] = set()
    if n and m:
        big = 1e6  # a forbidden pair: the assignment may still use it, and it is dropped below
        base = [[float(cost_fn(p, g)) for g in gold] for p in predicted]
        matrix = [
            [(c if c <= max_cost else big) + 1e-9 * abs(i - j) for j, c in enumerate(row)]
            for i, row in enumerate(base)
        ]
        for i, j in _assignment(matrix):
            if base[i][j] <= max_cost:
                pairs.append(AlignedPair(i, j, base[i][j]))
                used_p.add(i)
                used_g.add(j)
    pairs.sort(key=lambda p: p.gold_index)
    if matchers is not None:
        for pair in pairs:
            pair.decision = await decide(predicted[pair.pred_index], gold[pair.gold_index], matchers)
    return Alignment(
        pairs,
        [i for i in range(n) if i not in used_p],
        [j for j in range(m) if j not in used_g],
    )
