"""References from a gold call's arguments to an earlier call's result: ``{"$from": ID, "path": "a.b.0",
"pattern": "T(\\d\\d:\\d\\d)"}`` stands for that part of the result of the call that answered gold call
``ID`` in this episode (as the ``API_call_N`` placeholders of nested-call benchmarks stand for an earlier
output).

A call's result is its text parsed as JSON when it parses, else its structured result, else its
text. ``path`` walks keys and list indices; ``pattern`` is searched in the value as text and gives
its first group (or the whole match), searched within :data:`~tool_specs.REGEX_TIMEOUT` seconds. What
cannot be resolved (a pattern that runs out of time included) stays an :data:`UNRESOLVED` marker,
which equals no argument a model can pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from tool_specs import RegexTimeout, bounded_search

__all__ = ["UNRESOLVED", "resolve_arguments", "resolve_reference", "result_value", "strip_references"]

UNRESOLVED = "\x00unresolved reference\x00"


def result_value(text: str | None, structured: Any = None) -> Any:
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            pass
    if isinstance(structured, dict):
        return structured
    return text


def _walk(value: Any, path: str) -> Any:
    for part in [p for p in path.split(".") if p != ""]:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and re.fullmatch(r"-?\d+", part) and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            return UNRESOLVED
    return value


def resolve_reference(ref: Mapping[str, Any], result: Any, timeouts: list[str] | None = None) -> Any:
    """The value ``ref`` stands for, given the referenced call's result value; a pattern that runs out
    of time leaves it unresolved and adds its message to ``timeouts``."""
    if result is UNRESOLVED:
        return UNRESOLVED
    value = _walk(result, str(ref.get("path") or ""))
    pattern = ref.get("pattern")
    if value is UNRESOLVED or not pattern:
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    try:
        m = bounded_search(str(pattern), text)
    except (RegexTimeout, ValueError) as exc:
        if timeouts is not None and isinstance(exc, RegexTimeout):
            timeouts.append(str(exc))
        return UNRESOLVED
    if m is None:
        return UNRESOLVED
    return m.group(1) if m.re.groups else m.group(0)


def resolve_arguments(value: Any, result_of: Callable[[str], Any], timeouts: list[str] | None = None) -> Any:
    """``value`` with every reference replaced (``result_of(call id)``: that call's result value, or
    :data:`UNRESOLVED`); ``timeouts`` collects the patterns that ran out of time."""
    if isinstance(value, Mapping) and "$from" in value:
        return resolve_reference(value, result_of(str(value["$from"])), timeouts)
    if isinstance(value, Mapping):
        return {k: resolve_arguments(v, result_of, timeouts) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_arguments(v, result_of, timeouts) for v in value]
    return value


def strip_references(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments without the ones that are references (for pairing calls before they are resolved)."""
    return {k: v for k, v in arguments.items() if not (isinstance(v, Mapping) and "$from" in v)}
