"""State checks: calls the harness (not the model) makes after an episode, and what their results must hold.

A task's ``checks`` is a list of ``{id?, name, arguments, expect: [expectation, ...]}``. After the model's
last turn the harness makes each call on the episode's tools (the same server, folder and state the
model worked on) and keeps the results in the trace; scoring decides each expectation from those
results, so ``evals score`` needs no server. An expectation looks at the result value (the result's
text parsed as JSON, else its structured result, else its text: :func:`~.refs.result_value`), or at
the part of it that ``path`` names (keys and list indices, dotted), and holds one test:

* ``equals: V``: the value is ``V`` (JSON equality; a number equals the same number written as text);
* ``contains: V``: a list has an item equal to ``V``; a mapping has every key of ``V`` with its value;
  text has ``V`` (as text) in it;
* ``pattern: P``: the regular expression ``P`` is found in the value as text (``ignore_case``;
  at most 1 s, as an answer's pattern);
* ``number: X``: the value (a number; a list or mapping: how many items it has; a text: the only
  number written in it) is within ``tolerance`` (default 1e-6; a fraction of ``X`` with ``relative``)
  of ``X``.

A check call that returns an error fails every expectation of it (its error text is shown as the value).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from tool_specs import RegexTimeout, bounded_search, pattern_groups

from .answers import DEFAULT_TOLERANCE, numbers_in
from .refs import UNRESOLVED, walk_path

__all__ = ["OPERATORS", "evaluate_checks", "expectation_problem", "is_empty"]

OPERATORS = ("equals", "contains", "pattern", "number")


def expectation_problem(expect: Mapping[str, Any]) -> tuple[str | None, str] | None:
    """What is wrong with one expectation the schema accepts: ``(field or None, message)``, or None."""
    given = [op for op in OPERATORS if op in expect]
    if len(given) != 1:
        return None, f"give exactly one of {', '.join(OPERATORS)} (got {', '.join(given) or 'none'})"
    if "pattern" in expect:
        try:
            pattern_groups(str(expect["pattern"]))
        except ValueError as exc:
            return "pattern", f"bad pattern: {exc}"
    if ("tolerance" in expect or "relative" in expect) and "number" not in expect:
        return "tolerance", "tolerance and relative go with number"
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want or got == want and type(got) is type(want)
    if isinstance(want, int | float) and isinstance(got, str):
        try:
            return float(got.strip()) == float(want)
        except ValueError:
            return False
    if isinstance(want, Mapping) and isinstance(got, Mapping):
        return set(want) == set(got) and all(_same(got[k], v) for k, v in want.items())
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_same(g, w) for g, w in zip(got, want, strict=True))
    return bool(got == want)


def _contains(got: Any, want: Any) -> bool:
    if isinstance(got, list):
        return any(_same(item, want) or (isinstance(want, Mapping) and _contains(item, want)) for item in got)
    if isinstance(got, Mapping) and isinstance(want, Mapping):
        return all(k in got and (_same(got[k], v) or _contains(got[k], v)) for k, v in want.items())
    if isinstance(got, str):
        return _text(want) in got
    return _same(got, want)


def _number(got: Any, expect: Mapping[str, Any]) -> bool:
    if isinstance(got, bool):
        return False
    if isinstance(got, int | float):
        found = [float(got)]
    elif isinstance(got, list | Mapping):  # a count
        found = [float(len(got))]
    else:
        found = list(dict.fromkeys(numbers_in(_text(got))))
        if len(found) != 1:  # no number, or several: not "the" number
            return False
    want = float(expect["number"])
    tol = float(expect.get("tolerance", DEFAULT_TOLERANCE))
    limit = tol * abs(want) if expect.get("relative") else tol
    return math.isfinite(found[0]) and abs(found[0] - want) <= limit


def _holds(got: Any, expect: Mapping[str, Any], timeouts: list[str]) -> bool:
    if got is UNRESOLVED:
        return False
    if "equals" in expect:
        return _same(got, expect["equals"])
    if "contains" in expect:
        return _contains(got, expect["contains"])
    if "pattern" in expect:
        try:
            return bounded_search(str(expect["pattern"]), _text(got), ignore_case=bool(expect.get("ignore_case"))) is not None
        except RegexTimeout as exc:
            timeouts.append(str(exc))
            return False
    return _number(got, expect)


def _shown(value: Any) -> Any:
    return "<no such path in the result>" if value is UNRESOLVED else value


def evaluate_checks(checks: Sequence[Mapping[str, Any]], results: Sequence[Mapping[str, Any]] | None,
                    timeouts: list[str]) -> list[dict[str, Any]]:
    """One entry per expectation: ``{check, call, path, test, want, got, ok}`` (``got``: the value looked at,
    or the check call's error). ``results[i]``: check ``i``'s call ``{value, is_error, text}`` as the
    episode kept it; a check without a result (the episode ended before it) fails."""
    out = []
    for i, check in enumerate(checks):
        result = results[i] if results is not None and i < len(results) else None
        for expect in check.get("expect") or ():
            op = next(op for op in OPERATORS if op in expect)
            path = str(expect.get("path") or "")
            if result is None:
                got, ok = "<the check was not made: the episode did not complete>", False
            elif result.get("is_error"):
                got, ok = f"<error> {result.get('text') or ''}".strip(), False
            else:
                value = walk_path(result.get("value"), path)
                got, ok = _shown(value), _holds(value, expect, timeouts)
            want = {k: v for k, v in expect.items() if k not in ("path",)}
            out.append({"check": str(check.get("id", i)), "call": {"name": check.get("name"), "arguments": check.get("arguments") or {}},
                        "path": path, "test": op, "want": want, "got": got, "ok": ok})
    return out


def is_empty(value: Any) -> bool:
    """Does a tool result hold nothing: no text, or only empty lists, mappings, strings and nulls?"""
    if value is None or value == "":
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, Mapping):
        return all(is_empty(v) for v in value.values())
    if isinstance(value, list):
        return all(is_empty(v) for v in value)
    return False
