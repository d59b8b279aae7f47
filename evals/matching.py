"""Is a predicted tool call the gold call? Three matchers, tried in order.

* ``rule``: equal after normalising JSON types by the tool's schema (``"5"`` == ``5`` where the
  schema says integer, ``"true"`` == ``True`` where it says boolean, ``5`` == ``"5"`` where it says
  string). Nothing else is forgiven: different strings, extra or missing parameters do not match.
* ``response``: the two calls produce the same tool response. Each call is completed with the
  schema's defaults for omitted parameters (what a real tool does with them) and run through the
  tool's executor; the structured results (or texts) are compared. Only deterministic executors are
  asked (the simulated ones of FamilyTool); a call whose arguments the schema rejects never matches.
* ``llm``: a judge model decides whether the calls are equivalent for the user's request. Its
  prompt, answer and cost go into the episode's trace and the decision is cached by request, so a
  rerun or ``evals score`` never asks again.

Scores are reported strict (``rule`` only) and with the whole cascade; each decision records the
matcher that made it (``None`` when nothing matched).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from client.adapters.base import ModelAdapter
    from client.cache import ResponseCache
    from tool_specs import ToolSpec

MATCHERS = ("rule", "response", "llm")

_INT_RE = re.compile(r"^[+-]?\d+$")
_TRUE = {"true", "yes"}
_FALSE = {"false", "no"}


def _types(schema: object) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    return []


def normalize_value(value: Any, schema: object) -> Any:
    """``value`` coerced to the schema's type when it is a lossless spelling of it; else unchanged."""
    types = _types(schema)
    if isinstance(value, str):
        s = value.strip()
        if "integer" in types and _INT_RE.match(s):
            return int(s)
        if "number" in types:
            try:
                f = float(s)
            except ValueError:
                pass
            else:
                if math.isfinite(f):
                    return int(f) if f.is_integer() else f
        if "boolean" in types and s.lower() in _TRUE | _FALSE:
            return s.lower() in _TRUE
        return value
    if isinstance(value, bool):
        if "string" in types and "boolean" not in types:
            return "true" if value else "false"
        return value
    if isinstance(value, int | float):
        if isinstance(value, float) and value.is_integer() and ("integer" in types or "number" in types):
            return int(value)
        if "string" in types and not ({"integer", "number"} & set(types)):
            return str(value)
        return value
    if isinstance(value, list):
        item = schema.get("items") if isinstance(schema, Mapping) else None
        return [normalize_value(v, item) for v in value]
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        props = props if isinstance(props, Mapping) else {}
        return {k: normalize_value(v, props.get(k)) for k, v in value.items()}
    return value


def _param_schema(schema: Mapping[str, Any] | None, name: str) -> object:
    props = (schema or {}).get("properties")
    return props.get(name) if isinstance(props, Mapping) else None


def normalize_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every argument normalised by its parameter's schema (see :func:`normalize_value`)."""
    return {k: normalize_value(v, _param_schema(schema, k)) for k, v in arguments.items()}


def rule_match(
    pred_name: str, pred_args: Mapping[str, Any] | None, gold_name: str, gold_args: Mapping[str, Any],
    schema: Mapping[str, Any] | None,
) -> bool:
    """Same tool and, after type normalisation, exactly the same arguments."""
    if pred_name != gold_name or not isinstance(pred_args, Mapping):
        return False
    return normalize_arguments(pred_args, schema) == normalize_arguments(gold_args, schema)


def param_matches(
    pred_args: Mapping[str, Any] | None, gold_args: Mapping[str, Any], schema: Mapping[str, Any] | None
) -> dict[str, bool]:
    """Per gold parameter: does the prediction give it the same (normalised) value?

    A parameter the prediction omits matches only when the gold value is the schema's default.
    """
    pred = normalize_arguments(pred_args, schema) if isinstance(pred_args, Mapping) else {}
    out: dict[str, bool] = {}
    for name, value in gold_args.items():
        ps = _param_schema(schema, name)
        gold = normalize_value(value, ps)
        if name in pred:
            out[name] = pred[name] == gold
        else:
            out[name] = isinstance(ps, Mapping) and "default" in ps and normalize_value(ps["default"], ps) == gold
    return out


def with_defaults(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """``arguments`` plus the schema default of every omitted parameter that has one."""
    out = dict(arguments)
    props = (schema or {}).get("properties")
    for name, sub in (props.items() if isinstance(props, Mapping) else []):
        if name not in out and isinstance(sub, Mapping) and "default" in sub:
            out[name] = copy.deepcopy(sub["default"])
    return out


def _deterministic(spec: ToolSpec) -> bool:
    return getattr(spec.executor, "kind", None) == "simulated"


async def response_match(spec: ToolSpec, pred_args: Mapping[str, Any] | None, gold_args: Mapping[str, Any]) -> bool:
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


# ---- the LLM judge -------------------------------------------------------------------------------
JUDGE_SYSTEM = (
    "You judge tool calls. Given a user's request, a tool's description and parameters, a reference "
    "call and a candidate call, decide whether the candidate does the same thing for the user as the "
    "reference: the same tool, and parameter values that mean the same (different spelling, format or "
    "an explicit default are fine; a different entity, date, amount or option is not). Answer with "
    "one word on the last line: EQUIVALENT or DIFFERENT."
)


@dataclass
class JudgeDecision:
    equivalent: bool
    answer: str
    prompt: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    cached: bool = False
    response: Any = None  # the judge's ModelResponse when it was asked now (not cached); not serialised

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "response"}


def judge_prompt(request: str, tool: Mapping[str, Any], gold: Mapping[str, Any], pred: Mapping[str, Any]) -> str:
    def dump(obj: Any) -> str:
        return json.dumps(obj, ensure_ascii=False, sort_keys=True)

    return (
        f"User request:\n{request}\n\nTool:\n{dump(tool)}\n\n"
        f"Reference call:\n{dump(gold)}\n\nCandidate call:\n{dump(pred)}\n\n"
        "Is the candidate call equivalent to the reference call? Last line: EQUIVALENT or DIFFERENT."
    )


def parse_judgement(text: str) -> bool | None:
    """EQUIVALENT -> True, DIFFERENT -> False, from the last line that says one of them; else None."""
    for line in reversed((text or "").strip().splitlines()):
        words = set(re.findall(r"[A-Z]+", line.upper()))
        if "EQUIVALENT" in words and "NOT" not in words and "DIFFERENT" not in words:
            return True
        if "DIFFERENT" in words or ("NOT" in words and "EQUIVALENT" in words):
            return False
    return None


class LLMJudge:
    """Asks ``adapter`` whether two calls are equivalent; decisions are cached in ``cache`` (if any)."""

    def __init__(self, adapter: ModelAdapter, cache: ResponseCache | None = None, *, max_tokens: int = 256):
        self.adapter = adapter
        self.cache = cache
        self.max_tokens = max_tokens

    async def decide(
        self, request: str, tool: Mapping[str, Any], gold: Mapping[str, Any], pred: Mapping[str, Any]
    ) -> JudgeDecision:
        from client.adapters.pricing import price_for
        from client.messages import SystemMessage, UserMessage

        prompt = judge_prompt(request, tool, gold, pred)
        model = getattr(self.adapter, "name", None) or self.adapter.model
        key = {"judge": model, "system": JUDGE_SYSTEM, "prompt": prompt}
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                return JudgeDecision(**{**hit, "cached": True, "cost_usd": 0.0})
        response = await self.adapter.complete(
            [SystemMessage(JUDGE_SYSTEM), UserMessage(prompt)], [], "auto", max_tokens=self.max_tokens, temperature=0.0
        )
        verdict = parse_judgement(response.text or "")
        decision = JudgeDecision(
            equivalent=bool(verdict),
            answer=response.text or "",
            prompt=prompt,
            model=model,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cost_usd=response.usage.cost_usd(price_for(self.adapter.model)),
            response=response,
        )
        if self.cache is not None and verdict is not None:
            await self.cache.put(key, decision.to_dict())
        return decision
