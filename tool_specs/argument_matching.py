"""Are two calls' arguments the same? Type normalisation by the tool's schema, the schema's defaults,
and the per-argument rules a gold call may ask for (its ``match`` key: :data:`ARGUMENT_RULES`).

The values are compared here; which call goes with which, and the cascade of matchers that decides a
pair of calls, are :mod:`tool_specs.matching`'s.
"""

from __future__ import annotations

import copy
import json
import math
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ARGUMENT_RULES",
    "MATCH_KEY",
    "argument_differences",
    "argument_rules",
    "describe_differences",
    "normalize_arguments",
    "normalize_value",
    "param_matches",
    "with_defaults",
]

ARGUMENT_RULES = ("path", "case", "whitespace", "unordered")
"""Per-argument normalisations a gold call may ask for (with ``{"tolerance": x, "relative": bool}``
for numbers): ``path`` compares paths lexically normalised (``/a/b/`` = ``/a//b`` = ``/a/./b``),
``case`` case-folded, ``whitespace`` stripped with inner runs of white space collapsed, ``unordered``
compares lists as multisets, at every level inside the value (lists inside objects too). Without
``unordered`` lists are compared in order."""
MATCH_KEY = "match"
"""The key of a gold call that holds its per-argument rules (``{argument: rule or [rules]}``)."""
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


ArgumentRule = str | Mapping[str, Any]
MISSING: Any = object()


def argument_rules(spec: Any) -> dict[str, list[ArgumentRule]]:
    """A gold call's ``match`` value as ``{argument: [rules]}``; raises ``ValueError`` naming what is wrong."""
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise ValueError("'match' must map argument names to a rule or a list of rules")
    out: dict[str, list[ArgumentRule]] = {}
    for name, rules in spec.items():
        items = rules if isinstance(rules, list) else [rules]
        for rule in items:
            if isinstance(rule, str):
                if rule not in ARGUMENT_RULES:
                    raise ValueError(f"argument {name!r}: unknown rule {rule!r} (rules: {', '.join(ARGUMENT_RULES)}, "
                                     "{tolerance: x, relative: true|false})")
            elif isinstance(rule, Mapping) and set(rule) <= {"tolerance", "relative"} and "tolerance" in rule:
                tol = rule["tolerance"]
                if isinstance(tol, bool) or not isinstance(tol, int | float) or not math.isfinite(tol) or tol < 0:
                    raise ValueError(f"argument {name!r}: tolerance must be a finite number >= 0, got {tol!r}")
                if not isinstance(rule.get("relative", False), bool):
                    raise ValueError(f"argument {name!r}: relative must be true or false")
            else:
                raise ValueError(f"argument {name!r}: a rule is one of {', '.join(ARGUMENT_RULES)} or "
                                 f"{{tolerance: x, relative: true|false}}, got {rule!r}")
        out[str(name)] = list(items)
    return out


def _text_rules(value: Any, rules: Sequence[ArgumentRule]) -> Any:
    if isinstance(value, list):
        items = [_text_rules(v, rules) for v in value]
        if "unordered" in rules:
            items.sort(key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False, default=str))
        return items
    if isinstance(value, dict):
        return {k: _text_rules(v, rules) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    if "whitespace" in rules:
        value = " ".join(value.split())
    if "case" in rules:
        value = value.casefold()
    if "path" in rules and value:
        value = posixpath.normpath(value)
        value = "/" if value == "//" else value  # POSIX keeps a leading "//"; a person would not
    return value


def _same(pred: Any, gold: Any, rules: Sequence[ArgumentRule]) -> bool:
    if not rules:
        return bool(pred == gold)
    for rule in rules:
        if isinstance(rule, Mapping) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in (pred, gold)):
            limit = float(rule["tolerance"]) * (abs(gold) if rule.get("relative") else 1.0)
            return bool(abs(pred - gold) <= limit)
    return bool(_text_rules(pred, rules) == _text_rules(gold, rules))


def argument_differences(
    pred_args: Mapping[str, Any], gold_args: Mapping[str, Any], schema: Mapping[str, Any] | None, *,
    fill_defaults: bool = False, rules: Mapping[str, Sequence[ArgumentRule]] | None = None,
) -> list[tuple[str, Any, Any]]:
    """``(argument, predicted value, gold value)`` for every argument that differs after type
    normalisation (:data:`MISSING` where a call does not give it); with ``fill_defaults`` both calls
    first get the schema's defaults, and ``rules`` normalise the arguments they name."""
    if fill_defaults:
        pred_args, gold_args = with_defaults(pred_args, schema), with_defaults(gold_args, schema)
    pred, gold = normalize_arguments(pred_args, schema), normalize_arguments(gold_args, schema)
    out = []
    for name in sorted(set(pred) | set(gold)):
        p, g = pred.get(name, MISSING), gold.get(name, MISSING)
        if p is MISSING or g is MISSING or not _same(p, g, (rules or {}).get(name, ())):
            out.append((name, p, g))
    return out


def _shown(value: Any) -> str:
    if value is MISSING:
        return "not given"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def describe_differences(differences: Sequence[tuple[str, Any, Any]]) -> str:
    """``repo_path: "/r/" (gold "/r")``, for the first difference, and how many others there are."""
    if not differences:
        return "no argument differs"
    name, p, g = differences[0]
    more = f" and {len(differences) - 1} other argument(s)" if len(differences) > 1 else ""
    return f"{name}: {_shown(p)} (gold {_shown(g)}){more}"


def param_matches(
    pred_args: Mapping[str, Any] | None, gold_args: Mapping[str, Any], schema: Mapping[str, Any] | None, *,
    rules: Mapping[str, Sequence[ArgumentRule]] | None = None,
) -> dict[str, bool]:
    """Per gold parameter: does the prediction give it the same (normalised) value?

    A parameter the prediction omits matches only when the gold value is the schema's default.
    ``rules`` normalise the arguments they name (see :data:`ARGUMENT_RULES`).
    """
    pred = normalize_arguments(pred_args, schema) if isinstance(pred_args, Mapping) else {}
    out: dict[str, bool] = {}
    for name, value in gold_args.items():
        ps = _param_schema(schema, name)
        gold = normalize_value(value, ps)
        mine = (rules or {}).get(name, ())
        if name in pred:
            out[name] = _same(pred[name], gold, mine)
        else:
            out[name] = isinstance(ps, Mapping) and "default" in ps and _same(normalize_value(ps["default"], ps), gold, mine)
    return out


def with_defaults(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """``arguments`` plus the schema default of every omitted parameter that has one."""
    out = dict(arguments)
    props = (schema or {}).get("properties")
    for name, sub in (props.items() if isinstance(props, Mapping) else []):
        if name not in out and isinstance(sub, Mapping) and "default" in sub:
            out[name] = copy.deepcopy(sub["default"])
    return out
