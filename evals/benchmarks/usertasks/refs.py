"""References from a gold call's arguments to an earlier call's result: ``{"$from": ID, "path": "a.b.0",
"pattern": "T(\\d\\d:\\d\\d)"}`` stands for that part of the result of the call that answered gold call
``ID`` in this episode (as the ``API_call_N`` placeholders of nested-call benchmarks stand for an earlier
output).

A call's result is its text parsed as JSON when it parses, else its structured result, else its
text. ``path`` walks keys and list indices; ``pattern`` is searched in the value as text and gives
its first group (or the whole match), searched within :data:`~tool_specs.REGEX_TIMEOUT` seconds. What
cannot be resolved (a pattern that runs out of time included) stays an :data:`UNRESOLVED` marker,
which equals no argument a model can pass; where a person reads the gold call (the scores' details,
``evals view``) the marker is replaced by the reference named (:func:`name_unresolved`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from tool_specs import RegexTimeout, bounded_search

__all__ = ["UNRESOLVED", "describe_reference", "is_reference", "name_unresolved", "name_unresolved_in_text", "resolve_arguments", "resolve_reference",
           "references_in", "result_value", "strip_references", "walk_path"]

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


def walk_path(value: Any, path: str) -> Any:
    """The part of ``value`` that the dotted ``path`` names (keys, list indices), or :data:`UNRESOLVED`."""
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
    value = walk_path(result, str(ref.get("path") or ""))
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
    if is_reference(value):
        return resolve_reference(value, result_of(str(value["$from"])), timeouts)
    if isinstance(value, Mapping):
        return {k: resolve_arguments(v, result_of, timeouts) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_arguments(v, result_of, timeouts) for v in value]
    return value


def strip_references(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments without the ones that are references (for pairing calls before they are resolved)."""
    return {k: v for k, v in arguments.items() if not is_reference(v)}


def is_reference(value: Any) -> bool:
    return isinstance(value, Mapping) and "$from" in value


def describe_reference(ref: Mapping[str, Any]) -> str:
    """``the result of gold call "find", at paths.0.1.2, matching T(\\d\\d)``."""
    parts = [f"the result of gold call {json.dumps(str(ref.get('$from')), ensure_ascii=False)}"]
    if ref.get("path"):
        parts.append(f"at {ref.get('path')}")
    if ref.get("pattern"):
        parts.append(f"matching {ref.get('pattern')}")
    return ", ".join(parts)


def name_unresolved_in_text(text: str) -> str:
    """``text`` (a matcher's reason) with the :data:`UNRESOLVED` marker, raw or JSON-escaped, named as
    ``<unresolved reference>``: the NUL-bearing marker never reaches the score details or a page."""
    return text.replace(json.dumps(UNRESOLVED), '"<unresolved reference>"').replace(UNRESOLVED, "<unresolved reference>")


def name_unresolved(written: Any, resolved: Any) -> Any:
    """``resolved`` (a gold call's arguments after :func:`resolve_arguments` of ``written``) with every
    reference that did not resolve named as text, ``<unresolved: the result of gold call "find", at ...>``;
    a marker with no reference written at its place (the task changed since) is named as such."""
    if is_reference(written):
        if resolved is UNRESOLVED or resolved == UNRESOLVED:
            return f"<unresolved: {describe_reference(written)}>"
        return resolved
    if isinstance(written, Mapping) and isinstance(resolved, Mapping):
        return {k: name_unresolved(written.get(k), v) for k, v in resolved.items()}
    if isinstance(written, list) and isinstance(resolved, list):
        return [name_unresolved(written[i] if i < len(written) else None, v) for i, v in enumerate(resolved)]
    if resolved == UNRESOLVED:
        return "<unresolved reference>"
    if isinstance(resolved, Mapping):
        return {k: name_unresolved(None, v) for k, v in resolved.items()}
    if isinstance(resolved, list):
        return [name_unresolved(None, v) for v in resolved]
    return resolved


def references_in(written: Any, where: str = "") -> list[tuple[str, Mapping[str, Any]]]:
    """``(argument path, reference)`` of every reference in a gold call's written arguments."""
    if is_reference(written):
        return [(where, written)]
    if isinstance(written, Mapping):
        return [r for k, v in written.items() for r in references_in(v, f"{where}.{k}" if where else str(k))]
    if isinstance(written, list):
        return [r for i, v in enumerate(written) for r in references_in(v, f"{where}.{i}" if where else str(i))]
    return []
