"""The vocabulary of loose benchmark schemas: JSON Schema's type names, the type names benchmarks
use instead (Python, Java-ish, TypeScript-ish, generics, unions) and how to tell a schema from a
bare map of parameters. Used by :mod:`tool_specs.schema`, which re-exports the public names.
"""

from __future__ import annotations

import re

__all__ = ["JSON_TYPES", "looks_like_schema", "map_type_name"]


#: The seven JSON Schema type names.
JSON_TYPES: frozenset[str] = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})

# Lower-cased type names seen in benchmarks (Python, Java-ish, TypeScript-ish) -> JSON Schema type.
_TYPE_ALIASES: dict[str, str] = {
    "str": "string",
    "string": "string",
    "text": "string",
    "char": "string",
    "int": "integer",
    "integer": "integer",
    "long": "integer",
    "float": "number",
    "double": "number",
    "number": "number",
    "decimal": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "dict": "object",
    "object": "object",
    "map": "object",
    "mapping": "object",
    "list": "array",
    "array": "array",
    "tuple": "array",
    "set": "array",
    "sequence": "array",
    "none": "null",
    "nonetype": "null",
    "null": "null",
}
# Type names that explicitly mean "anything": no constraint, but the original is kept.
_ANY_TYPE_NAMES = frozenset({"any", "typing.any", "mixed", "json"})


# Keywords that only make sense in a schema (used to tell a schema from a map of parameters).
_SCHEMA_CONTAINER_KEYWORDS = frozenset(
    {
        "properties",
        "patternProperties",
        "$defs",
        "definitions",
        "additionalProperties",
        "items",
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "unevaluatedProperties",
    }
)

_GENERIC_RE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\[(.*)\]\s*$")


def map_type_name(name: str) -> tuple[list[str] | None, bool]:
    """Map one benchmark type name to JSON Schema type names.

    Returns ``(types, exact)``: ``types`` is the list of JSON Schema types (``None`` when the name
    is unknown or means "any"), and ``exact`` tells whether the mapping lost nothing, in which
    case the caller need not keep the original name. Handles Python names (``str``, ``Dict``,
    ``tuple``), generics (``List[str]``, ``Optional[int]``) and unions (``str | None``).
    """
    raw = name.strip()
    low = raw.lower()
    if low in JSON_TYPES and raw == low:
        return [low], True
    if low in _TYPE_ALIASES:
        return [_TYPE_ALIASES[low]], True
    if low in _ANY_TYPE_NAMES:
        return None, False
    if "|" in raw:
        parts = [p for p in raw.split("|") if p.strip()]
        out: list[str] = []
        for part in parts:
            types, _ = map_type_name(part)
            if types is None:
                return None, False
            out.extend(t for t in types if t not in out)
        return out, False
    match = _GENERIC_RE.match(raw)
    if match:
        base = match.group(1).split(".")[-1].lower()
        if base == "optional":
            inner, _ = map_type_name(match.group(2))
            if inner is None:
                return None, False
            return [*inner, "null"] if "null" not in inner else inner, False
        if base == "union":
            return map_type_name(match.group(2).replace(",", "|"))
        if base in _TYPE_ALIASES:
            return [_TYPE_ALIASES[base]], False
    return None, False


def looks_like_schema(value: object) -> bool:
    """Guess whether a mapping is a JSON-Schema-ish object schema (True) or a bare map of parameter
    name -> parameter schema (False)."""
    if not isinstance(value, dict):
        return False
    if not value:
        return True
    type_ = value.get("type")
    if isinstance(type_, str) or (isinstance(type_, list) and all(isinstance(t, str) for t in type_)):
        return True
    if isinstance(value.get("properties"), list):
        return True
    if any(not isinstance(v, dict | bool) for v in value.values()):
        # A parameter map holds only parameter schemas; a schema holds strings, lists, numbers...
        return True
    if set(value) <= _SCHEMA_CONTAINER_KEYWORDS:
        props = value.get("properties", {})
        return isinstance(props, dict) and all(isinstance(v, dict | bool) for v in props.values())
    return False
