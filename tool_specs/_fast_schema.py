"""A fast yes-check for the plain JSON Schemas tools use, compiled once per schema.

``jsonschema`` is exact and general, and slow: walking a KG tool's result against its output schema
cost more than the KG search itself (issue 32). Most tool schemas use a small set of keywords
(``type``, ``properties``, ``required``, ``additionalProperties``, ``items``, lengths, bounds,
string enums); :func:`compile_check` turns such a schema into nested closures that answer "valid"
with a few ``isinstance`` calls per value. The check is one-sided: ``True`` means jsonschema would
find no error; ``False`` means "ask jsonschema" (which then finds the errors and their messages, or
none: anything unusual, such as a tuple or a ``Decimal``, goes that way). A schema with any other
keyword gets no fast check (``None``) and is validated by jsonschema alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Check", "compile_check"]

Check = Callable[[object], bool]

_ANNOTATIONS = frozenset({
    "$schema", "$id", "$comment", "title", "description", "default", "examples", "format",
    "readOnly", "writeOnly", "deprecated", "contentMediaType", "contentEncoding",
})
_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
    "minLength", "maxLength", "minimum", "maximum", "enum",
}) | _ANNOTATIONS
_MAX_DEPTH = 32


def _is_number(v: object) -> bool:
    return type(v) is int or type(v) is float


def _is_integer(v: object) -> bool:
    return type(v) is int or (type(v) is float and v.is_integer())  # draft 2020-12: 1.0 is an integer


_TYPES: dict[str, Check] = {
    "string": lambda v: type(v) is str,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}


def compile_check(schema: object, depth: int = 0) -> Check | None:
    """A fast check for ``schema``, or ``None`` when it uses a keyword (or a form) this module does
    not handle. Exact types only (``str``, ``int``, ``float``, ``bool``, ``None``, ``dict``,
    ``list``): values of other types fail the fast check and go to jsonschema."""
    if schema is True:
        return lambda v: True
    if not isinstance(schema, dict) or depth > _MAX_DEPTH or not _KEYWORDS.issuperset(schema):
        return None
    checks: list[Check] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else kind
        if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) and k in _TYPES for k in kinds):
            return None
        tests = tuple(_TYPES[k] for k in kinds)
        checks.append(tests[0] if len(tests) == 1 else (lambda v: any(t(v) for t in tests)))
    enum = schema.get("enum")
    if enum is not None:
        if not isinstance(enum, list) or not all(type(e) is str for e in enum):
            return None
        allowed = frozenset(enum)
        checks.append(lambda v: type(v) is str and v in allowed)
    for key in ("minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum"):
        if key in schema:
            bound = _bound_check(key, schema[key])
            if bound is None:
                return None
            checks.append(bound)
    handled, obj = _object_check(schema, depth)
    if not handled:
        return None
    if obj is not None:
        checks.append(obj)
    if "items" in schema:
        item = compile_check(schema["items"], depth + 1)
        if item is None:
            return None
        checks.append(_items_check(schema["items"], item))
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    every = tuple(checks)

    def check_all(v: object) -> bool:
        for c in every:
            if not c(v):
                return False
        return True

    return check_all


_SCALAR_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset({str}), "boolean": frozenset({bool}), "null": frozenset({type(None)}),
    "number": frozenset({int, float}), "integer": frozenset({int}),  # a float 1.0 goes the slow way
}


def _items_check(schema: object, item: Check) -> Check:
    """The check of ``items``; an array of one scalar type (``{"type": "string"}``) is checked by
    the types of its elements alone, without a call per element."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(schema, dict) and isinstance(kind, str) and kind in _SCALAR_TYPES and _ANNOTATIONS.issuperset(
        k for k in schema if k != "type"
    ):
        allowed = _SCALAR_TYPES[kind]
        return lambda v: type(v) is not list or allowed.issuperset(map(type, v))

    def check_items(v: object) -> bool:
        if type(v) is not list:
            return True
        for x in v:
            if not item(x):
                return False
        return True

    return check_items


def _bound_check(key: str, n: object) -> Check | None:
    """The check of one length or bound keyword (``None``: a bound that is not a number)."""
    if key in ("minimum", "maximum"):
        if not _is_number(n):
            return None
        limit: Any = n  # int or float, compared as they are (a float of a big int would round)
        if key == "minimum":
            return lambda v: not _is_number(v) or v >= limit
        return lambda v: not _is_number(v) or v <= limit
    if type(n) is not int:
        return None
    size = n
    kind: type = str if key.endswith("Length") else list
    if key.startswith("min"):
        return lambda v: type(v) is not kind or len(v) >= size  # type: ignore[arg-type]
    return lambda v: type(v) is not kind or len(v) <= size  # type: ignore[arg-type]


def _object_check(schema: dict[str, Any], depth: int) -> tuple[bool, Check | None]:
    """Whether ``properties``/``required``/``additionalProperties`` take a form handled here, and
    their check (``None``: none of them is given)."""
    props = schema.get("properties")
    required = schema.get("required")
    extra = schema.get("additionalProperties", True)
    if props is None and required is None and extra is True:
        return True, None
    if props is None:
        props = {}
    if not isinstance(props, dict) or (required is not None and not isinstance(required, list)):
        return False, None
    subs: dict[str, Check] = {}
    for name, sub in props.items():
        sub_check = compile_check(sub, depth + 1)
        if sub_check is None:
            return False, None
        subs[name] = sub_check
    need = tuple(required or ())
    if not all(isinstance(r, str) for r in need):
        return False, None
    if extra is True:
        rest: Check | None = None
    elif extra is False:
        rest = _never
    else:
        rest = compile_check(extra, depth + 1)
        if rest is None:
            return False, None

    def check(v: object) -> bool:
        if type(v) is not dict:
            return True  # not an object: only ``type`` speaks about it
        for r in need:
            if r not in v:
                return False
        for key, item in v.items():
            sub = subs.get(key)
            if sub is not None:
                if not sub(item):
                    return False
            elif rest is not None and not rest(item):
                return False
        return True

    return True, check


def _never(v: object) -> bool:
    return False
