"""Normalise the loose tool schemas found in tool-use benchmarks into valid JSON Schema (draft 2020-12).

Benchmarks describe tool parameters in many half-JSON-Schema dialects:

* MTU-Bench style: properties without ``type`` (only a ``default``), Python or odd type names
  (``float``, ``int``, ``Dict``), ``properties`` given as a *list* of ``{"name", "description"}``
  entries, names in ``required`` that are missing from ``properties``, and a ``response`` that is a
  map of output field -> schema.
* bare parameter maps: ``parameters`` is a map of parameter name -> ``{"type": "str", ...}`` with a
  top-level ``required`` next to it.
* JSON Schema under ``arguments``/``results`` (sometimes with draft-4 keywords).
* plain JSON Schema: kept as it is.

:func:`normalize_schema` turns any of these into a draft 2020-12 object schema and reports every
change it made as a human-readable note. It never silently drops information: a type name it does
not know is kept under ``x-original-type``; a keyword whose value is not valid JSON Schema is moved
to ``x-invalid-<keyword>``. Normalising an already-normal schema changes nothing and yields no
notes (the function is idempotent).

This module is the interface (with a cache of results, as benchmarks repeat their tools); the walk
over a schema tree is in ``_schema_nodes``, the type-name vocabulary in ``_schema_types`` and the
meta-schema's validator in ``_schema_meta``.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from tool_specs._schema_meta import META_VALIDATOR
from tool_specs._schema_nodes import normalize_node, repair, short_json
from tool_specs._schema_refs import nonlocal_ref_message, nonlocal_refs
from tool_specs._schema_types import JSON_TYPES, looks_like_schema, map_type_name
from tool_specs.errors import SchemaNormalizationError

__all__ = [
    "JSON_TYPES",
    "describe_schema",
    "looks_like_schema",
    "map_type_name",
    "normalize_output_schema",
    "normalize_schema",
    "remember_normalizations",
    "remembered_normalizations",
]

_META_VALIDATOR = META_VALIDATOR  # the draft 2020-12 meta-schema's validator (tool_specs.validation uses it)


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


class _ResultCache:
    """A small thread-safe LRU cache of normalisation results (benchmarks repeat the same tools across
    thousands of tasks). Each result is also stored under its own output, since normalising a
    normalised schema changes nothing: a ``ToolSpec`` built from a normalised schema costs nothing."""

    def __init__(self, maxsize: int = 16384) -> None:
        self._data: OrderedDict[tuple[str, ...], tuple[str, tuple[str, ...]]] = OrderedDict()
        self._lock = threading.Lock()
        self._maxsize = maxsize

    def get(self, key: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(
        self, key: tuple[str, ...], value: tuple[str, tuple[str, ...]], fixed_point: tuple[str, ...]
    ) -> None:
        with self._lock:
            self._data[key] = value
            self._data[fixed_point] = (value[0], ())
            while len(self._data) > self._maxsize:
                self._data.popitem(last=False)


    def items(self) -> list[tuple[tuple[str, ...], tuple[str, tuple[str, ...]]]]:
        with self._lock:
            return list(self._data.items())

    def update(self, items: Iterable[tuple[tuple[str, ...], tuple[str, tuple[str, ...]]]]) -> None:
        with self._lock:
            for key, value in items:
                self._data[key] = value
                self._data.move_to_end(key)
            while len(self._data) > self._maxsize:
                self._data.popitem(last=False)


_INPUT_CACHE = _ResultCache()
_OUTPUT_CACHE = _ResultCache()


def _normalize_input_cached(raw_json: str, required_json: str) -> tuple[str, tuple[str, ...]]:
    key = (raw_json, required_json)
    hit = _INPUT_CACHE.get(key)
    if hit is None:
        hit = _normalize_input(raw_json, required_json)
        _INPUT_CACHE.put(key, hit, (hit[0], "[]"))
    return hit


def _normalize_input(raw_json: str, required_json: str) -> tuple[str, tuple[str, ...]]:
    raw = json.loads(raw_json)
    required = json.loads(required_json)
    notes: list[str] = []
    if raw is None:
        raw = {"type": "object", "properties": {}}
        notes.append("no input schema given; using an empty object schema (no parameters)")
    elif isinstance(raw, list):
        notes.append("input schema was a list of parameter entries; treated it as the 'properties' list")
        raw = {"type": "object", "properties": raw}
    elif isinstance(raw, dict) and not looks_like_schema(raw):
        notes.append(
            "input schema was a bare map of parameter name -> schema; wrapped it in an object schema"
        )
        raw = {"type": "object", "properties": raw}
    elif not isinstance(raw, dict):
        raise SchemaNormalizationError(f"input schema must be an object, got {short_json(raw)}")
    if required:
        existing = raw.get("required", [])
        existing = [existing] if isinstance(existing, str) else existing
        if isinstance(existing, list):
            added = [r for r in required if r not in existing]
            if added:
                raw = {**raw, "required": [*existing, *added]}
                notes.append(
                    f"merged top-level required name(s) {', '.join(map(repr, added))} into the schema"
                )
    schema = normalize_node(raw, "", notes)
    type_ = schema.get("type")
    if type_ is None:
        schema = {"type": "object", **schema}
        notes.append("the schema root had no type; set it to 'object'")
    elif type_ != "object":
        if isinstance(type_, list) and "object" in type_:
            schema["x-original-type"] = schema.get("x-original-type", type_)
            schema["type"] = "object"
            notes.append(
                f"the schema root type {short_json(type_)} narrowed to 'object' (tool arguments are "
                "always an object)"
            )
        else:
            raise SchemaNormalizationError(
                f"the input schema root must describe an object, but its type is {short_json(type_)}"
            )
    if "properties" not in schema:
        schema["properties"] = {}
    schema = repair(schema, notes)
    _refuse_nonlocal_refs(schema, "input")
    return _canonical_keep_order(schema), tuple(notes)


def _refuse_nonlocal_refs(schema: object, which: str) -> None:
    """A schema that names another document is refused, wherever it comes from (nothing is fetched)."""
    found = nonlocal_refs(schema)
    if found:
        where, ref = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        at = ".".join(map(str, where[:-1])) or "the root"
        raise SchemaNormalizationError(f"the {which} schema at {at}: {nonlocal_ref_message(str(where[-1]), ref)}{more}")


def _canonical_keep_order(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def is_normalized_json(schema_json: str) -> bool:
    """Whether ``schema_json`` is, as is, the JSON text of an input schema that
    :func:`normalize_schema` returned in this process (so known to pass the meta-schema check; it
    is looked up among the remembered normalisation results, and forgotten ones answer False)."""
    hit = _INPUT_CACHE.get((schema_json, "[]"))
    return hit is not None and hit[0] == schema_json


def normalize_schema(
    raw: object, *, required: Iterable[str] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Normalise a loose tool-parameter schema into a valid draft 2020-12 JSON Schema object schema.

    ``raw`` may be a JSON(-ish) schema, a list of ``{"name", ...}`` property entries, a bare map of
    parameter name -> schema, or ``None`` (no parameters). ``required`` adds names from a
    ``required`` list that a benchmark keeps next to the schema instead of inside it.

    Returns ``(schema, notes)``: ``schema`` always has ``"type": "object"`` and ``properties`` at the
    root and passes ``Draft202012Validator.check_schema``; ``notes`` lists, in plain words, every
    change made (empty when ``raw`` was already normal). Property and key order is preserved.

    What is changed:

    * Python / odd type names are mapped (``float``->``number``, ``int``->``integer``,
      ``Dict``/``dict``->``object``, ``str``->``string``, ``bool``->``boolean``,
      ``list``/``tuple``->``array``, ``List[str]``, ``Optional[int]``, ``str | None``); an unknown
      type name removes the type constraint and is kept under ``x-original-type``.
    * ``properties`` given as a list of named entries becomes an object keyed by name.
    * Names in ``required`` that are absent from ``properties`` are added as properties with no
      type constraint and a description saying the type was not given; property-level
      ``required: true`` (Swagger style) moves into the parent's ``required`` list.
    * Draft-4 tuple ``items: [...]`` becomes ``prefixItems``; a non-list ``enum`` is wrapped.
    * Any remaining keyword the meta-schema rejects (e.g. an invalid regex in ``pattern``) is
      moved to ``x-invalid-<keyword>``.

    Raises:
        SchemaNormalizationError: the root is not an object schema, a property entry has no name, or
            a ``$ref`` is not local (``#...``): a schema is never fetched from a URL or a file.
    """
    required_list = list(required or [])
    try:
        raw_json = json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise SchemaNormalizationError(f"schema is not JSON-serialisable: {exc}") from exc
    schema_json, notes = _normalize_input_cached(raw_json, json.dumps(required_list))
    return json.loads(schema_json), list(notes)


Normalizations = tuple[list[tuple[tuple[str, ...], tuple[str, tuple[str, ...]]]], ...]


def remembered_normalizations() -> Normalizations:
    """The normalisation results this process remembers (input and output schemas), as plain strings
    and tuples: what :func:`remember_normalizations` takes back, e.g. in a later process from a cache
    (one kept for the same code: a result is this code's answer to the exact JSON text of its key)."""
    return _INPUT_CACHE.items(), _OUTPUT_CACHE.items()


def remember_normalizations(saved: Normalizations) -> None:
    """Remember results that :func:`remembered_normalizations` returned: normalising those schemas
    again costs a lookup. ``ValueError`` for anything else (nothing is remembered then)."""
    def valid(items: Any, width: int) -> bool:
        return isinstance(items, list) and all(
            isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], tuple) and len(item[0]) == width
            and all(isinstance(k, str) for k in item[0]) and isinstance(item[1], tuple) and len(item[1]) == 2
            and isinstance(item[1][0], str) and isinstance(item[1][1], tuple)
            and all(isinstance(n, str) for n in item[1][1])
            for item in items
        )

    if not (isinstance(saved, tuple) and len(saved) == 2 and valid(saved[0], 2) and valid(saved[1], 1)):
        raise ValueError("not the normalisation results of remembered_normalizations()")
    _INPUT_CACHE.update(saved[0])
    _OUTPUT_CACHE.update(saved[1])


def _normalize_output_cached(raw_json: str) -> tuple[str, tuple[str, ...]]:
    hit = _OUTPUT_CACHE.get((raw_json,))
    if hit is None:
        hit = _normalize_output(raw_json)
        _OUTPUT_CACHE.put((raw_json,), hit, (hit[0],))
    return hit


def _normalize_output(raw_json: str) -> tuple[str, tuple[str, ...]]:
    raw = json.loads(raw_json)
    notes: list[str] = []
    if isinstance(raw, list):
        notes.append("output schema was a list of field entries; treated it as the 'properties' list")
        raw = {"type": "object", "properties": raw}
    elif isinstance(raw, dict) and not looks_like_schema(raw):
        notes.append("output schema was a map of field name -> schema; converted it to an object schema")
        raw = {"type": "object", "properties": raw}
    schema = normalize_node(raw, "", notes)
    if not isinstance(schema, dict):
        schema = {}
    type_ = schema.get("type")
    if type_ is None and isinstance(schema.get("properties"), dict):
        schema = {"type": "object", **schema}
        notes.append("the output schema root had properties but no type; set it to 'object'")
    elif type_ != "object":
        schema = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        notes.append(
            "the output schema root is not an object; wrapped it as {'result': <schema>} "
            "(non-object results are returned as {'result': value})"
        )
    schema = repair(schema, notes)
    _refuse_nonlocal_refs(schema, "output")
    return _canonical_keep_order(schema), tuple(notes)


def normalize_output_schema(raw: object) -> tuple[dict[str, Any] | None, list[str]]:
    """Normalise a tool's output description into an object JSON Schema, or ``None`` when there is none.

    ``raw`` may be a JSON(-ish) schema (a ``results`` schema), a map of output field -> schema
    (a ``response`` or ``responses`` map; field schemas may be ``{}``), or a list of
    named field entries. ``None`` and ``{}`` mean "no output schema". A schema whose root is not an
    object is wrapped as ``{"type": "object", "properties": {"result": <schema>}}``, matching how
    executors wrap non-object return values; MCP requires object output schemas.
    """
    if raw is None or raw == {} or raw == []:
        return None, []
    try:
        raw_json = json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise SchemaNormalizationError(f"output schema is not JSON-serialisable: {exc}") from exc
    schema_json, notes = _normalize_output_cached(raw_json)
    return json.loads(schema_json), list(notes)


def describe_schema(schema: object, *, limit: int = 10) -> str:
    """A short English description of what a (sub-)schema accepts, e.g. ``"integer"``,
    ``"string or null"``, ``"array of string"``, ``"one of \\"a\\", \\"b\\""``, ``"any type"``."""
    if schema is True or schema is None or not isinstance(schema, dict):
        return "any type" if schema is not False else "nothing (no value is allowed)"
    if "const" in schema:
        return f"the constant {short_json(schema['const'], 40)}"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        shown = ", ".join(short_json(v, 40) for v in enum[:limit])
        return f"one of {shown}" + (f", … ({len(enum)} values)" if len(enum) > limit else "")
    type_ = schema.get("type")
    if isinstance(type_, list):
        return " or ".join(str(t) for t in type_)
    if type_ == "array" and isinstance(schema.get("items"), dict):
        inner = describe_schema(schema["items"], limit=limit)
        return "array" if inner == "any type" else f"array of {inner}"
    if isinstance(type_, str):
        return type_
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            parts = [describe_schema(b, limit=limit) for b in branches]
            if "any type" not in parts:
                return " or ".join(dict.fromkeys(parts))
    return "any type"
