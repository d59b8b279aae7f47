"""The regular expressions of a tool's JSON Schema (``pattern``, ``patternProperties``), run with a time
limit: the schema comes from a spec file, an MCP server or a recording, the string it is matched
against from a model, and ``^(a|aa)+$`` against sixty ``a`` and a ``b`` would hold the server's event
loop for hours under jsonschema's own keywords (Python's ``re``).

:data:`BoundedValidator` is draft 2020-12 with those keywords (and ``additionalProperties``, which
reads ``patternProperties``) replaced by ones that search with :func:`~tool_specs.bounded_search`. A
search that runs out of time is a validation error naming the pattern: the call is refused with
``isError``, never hung. A string or key that matches is treated exactly as jsonschema treats it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators

from tool_specs.bounded_regex import RegexTimeout, bounded_search

__all__ = ["BoundedValidator", "key_matches"]


def key_matches(pattern: str, key: str) -> bool | Exception:
    """Whether ``pattern`` finds a match in ``key``, or why it could not tell (a :class:`RegexTimeout`,
    or a ``ValueError`` for a pattern too large to run)."""
    try:
        return bounded_search(pattern, key) is not None
    except (RegexTimeout, ValueError) as exc:
        return exc


def _pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    found = key_matches(pattern, instance)
    if isinstance(found, Exception):
        yield ValidationError(str(found), cause=found)
    elif not found:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any,
                        schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            found = key_matches(pattern, key)
            if isinstance(found, Exception):
                yield ValidationError(f"key {key!r}: {found}", cause=found)
            elif found:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


_PLAIN_ADDITIONAL = Draft202012Validator.VALIDATORS["additionalProperties"]


def _additional_properties(validator: Any, additional: Any, instance: Any,
                           schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    patterns = schema.get("patternProperties")
    if not isinstance(patterns, Mapping) or not patterns:  # no regex involved: jsonschema's own keyword
        yield from _PLAIN_ADDITIONAL(validator, additional, instance, schema)
        return
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties") or {}
    # a key whose match could not be decided counts as matching no pattern (its search is reported
    # by patternProperties)
    extras = sorted(k for k in instance if k not in properties and not any(key_matches(p, k) is True for p in patterns))
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        verb = "does" if len(extras) == 1 else "do"
        yield ValidationError(f"{', '.join(map(repr, extras))} {verb} not match any of the regexes: "
                              f"{', '.join(map(repr, sorted(patterns)))}")


BoundedValidator: Any = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    {"pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional_properties},
)
"""Draft 2020-12 whose regex keywords search within :data:`~tool_specs.REGEX_TIMEOUT` seconds."""
