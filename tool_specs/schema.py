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
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema_specifications import REGISTRY as SPECIFICATIONS

from tool_specs.errors import SchemaNormalizationError

__all__ = [
    "JSON_TYPES",
    "describe_schema",
    "looks_like_schema",
    "map_type_name",
    "normalize_output_schema",
    "normalize_schema",
]

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

# Keywords whose value is a single sub-schema.
_SUBSCHEMA_KEYWORDS = (
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "additionalItems",
)
# Keywords whose value is a list of sub-schemas.
_SCHEMA_LIST_KEYWORDS = ("anyOf", "oneOf", "allOf", "prefixItems")
# Keywords whose value is a map of name -> sub-schema.
_SCHEMA_MAP_KEYWORDS = ("$defs", "definitions", "patternProperties", "dependentSchemas")

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

_META_BASE = "https://json-schema.org/draft/2020-12/"


def _flat_meta_schema() -> dict[str, Any]:
    """The draft 2020-12 meta-schema merged into one document, with ``$dynamicRef: "#meta"`` turned
    into ``$ref: "#"``.

    For schemas that do not extend the meta-schema (ours never do) this accepts exactly what the
    official meta-schema accepts, but ``jsonschema`` checks against it about 4x faster, because it
    does not have to resolve dynamic references through seven vocabulary documents. Loading
    thousands of benchmark tools (one benchmark has 3,034) depends on this.
    """
    root = Draft202012Validator.META_SCHEMA
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}

    def rewrite(node: Any, vocab: str) -> Any:
        if isinstance(node, list):
            return [rewrite(item, vocab) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$dynamicRef":
                if value != "#meta":
                    raise ValueError(f"unexpected $dynamicRef {value!r}")
                out["$ref"] = "#"
            elif key == "$ref":
                target, _, fragment = value.partition("#")
                if not fragment.startswith("/$defs/"):
                    raise ValueError(f"unexpected $ref {value!r}")
                owner = target.removeprefix("meta/") if target else vocab
                out["$ref"] = f"#/$defs/{owner}__{fragment.removeprefix('/$defs/')}"
            else:
                out[key] = rewrite(value, vocab)
        return out

    known_keys = {"$schema", "$id", "$vocabulary", "$dynamicAnchor", "title", "type", "properties", "$defs"}
    for ref in root["allOf"]:
        vocab = ref["$ref"].removeprefix("meta/")
        document = SPECIFICATIONS.contents(_META_BASE + ref["$ref"])
        if set(document) - known_keys:
            raise ValueError(f"unexpected keys in meta-schema {vocab}: {set(document) - known_keys}")
        for key, value in document.get("properties", {}).items():
            if key in properties:
                raise ValueError(f"keyword {key!r} defined twice")
            properties[key] = rewrite(value, vocab)
        for key, value in document.get("$defs", {}).items():
            defs[f"{vocab}__{key}"] = rewrite(value, vocab)
    for key, value in root.get("properties", {}).items():
        if key in properties:
            raise ValueError(f"keyword {key!r} defined twice")
        properties[key] = rewrite(value, "")
    return {
        "$schema": _META_BASE + "schema",
        "type": ["object", "boolean"],
        "properties": properties,
        "$defs": defs,
    }


def _meta_validator() -> Draft202012Validator:
    try:
        meta = _flat_meta_schema()
    except (KeyError, ValueError, LookupError):  # a future meta-schema layout: use the official one
        meta = Draft202012Validator.META_SCHEMA
    return Draft202012Validator(meta, format_checker=Draft202012Validator.FORMAT_CHECKER)


_META_VALIDATOR = _meta_validator()
_MAX_REPAIRS = 200
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


def _where(path: str) -> str:
    return f"property {path!r}" if path else "the schema root"


def _short_json(value: object, limit: int = 80) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _normalize_type(node: dict[str, Any], path: str, notes: list[str]) -> None:
    """Rewrite ``node["type"]`` in place into valid JSON Schema type(s)."""
    if "type" not in node:
        return
    original = node["type"]
    names = original if isinstance(original, list) else [original]
    if not names or not all(isinstance(n, str) for n in names):
        del node["type"]
        node["x-original-type"] = original
        notes.append(
            f"{_where(path)}: type {_short_json(original)} is not a type name; removed the type "
            "constraint and kept the original under 'x-original-type'"
        )
        return
    mapped: list[str] = []
    exact = True
    for name in names:
        types, is_exact = map_type_name(name)
        if types is None:
            del node["type"]
            node["x-original-type"] = original
            notes.append(
                f"{_where(path)}: unknown type {_short_json(original)}; removed the type constraint "
                "and kept the original under 'x-original-type'"
            )
            return
        exact = exact and is_exact
        mapped.extend(t for t in types if t not in mapped)
    new: str | list[str] = mapped if isinstance(original, list) or len(mapped) > 1 else mapped[0]
    if new != original:
        node["type"] = new
        if not exact:
            node["x-original-type"] = original
        notes.append(f"{_where(path)}: type {_short_json(original)} mapped to {_short_json(new)}")


def _properties_from_list(
    items: list[Any], path: str, notes: list[str], required: list[str]
) -> dict[str, Any]:
    """Convert a list of ``{"name": ..., ...}`` property entries into a ``properties`` object."""
    props: dict[str, Any] = {}
    for index, item in enumerate(items):
        name: object
        schema: dict[str, Any]
        if isinstance(item, str):
            name, schema = item, {}
        elif isinstance(item, dict):
            name = item.get("name")
            schema = {k: v for k, v in item.items() if k != "name"}
        else:
            raise SchemaNormalizationError(
                f"{_where(path)}: entry #{index} of the 'properties' list is {_short_json(item)}, "
                "expected an object with a 'name'"
            )
        if not isinstance(name, str) or not name:
            raise SchemaNormalizationError(
                f"{_where(path)}: entry #{index} of the 'properties' list has no 'name': {_short_json(item)}"
            )
        if name in props:
            raise SchemaNormalizationError(
                f"{_where(path)}: the 'properties' list names {name!r} twice (entries "
                f"#{list(props).index(name)} and #{index})"
            )
        if isinstance(schema.get("required"), bool):
            if schema.pop("required") and name not in required:
                required.append(name)
        props[name] = schema
    notes.append(
        f"{_where(path)}: 'properties' was a list of {len(items)} named entries; "
        "converted it to an object keyed by name"
    )
    return props


def _normalize_node(node: Any, path: str, notes: list[str], *, depth: int = 0) -> Any:
    """Return a normalised copy of one (sub-)schema. ``path`` is a dotted location used in notes."""
    if depth > 64:
        raise SchemaNormalizationError(f"{_where(path)}: schema is nested more than 64 levels deep")
    if isinstance(node, bool):
        return node
    if node is None:
        notes.append(f"{_where(path)}: schema was null; replaced it with {{}} (any value)")
        return {}
    if isinstance(node, str):
        types, exact = map_type_name(node)
        if types is not None:
            notes.append(
                f"{_where(path)}: schema was the bare type name {node!r}; "
                f"converted it to {{'type': {_short_json(types[0] if len(types) == 1 else types)}}}"
            )
            out: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
            if not exact:
                out["x-original-type"] = node
            return out
        notes.append(
            f"{_where(path)}: schema was the plain string {_short_json(node)}; used it as the description"
        )
        return {"description": node}
    if not isinstance(node, dict):
        notes.append(
            f"{_where(path)}: schema was {_short_json(node)}, not an object; "
            "kept it under 'x-original-schema' with no constraint"
        )
        return {"x-original-schema": copy.deepcopy(node)}

    out = copy.deepcopy(node)
    _normalize_type(out, path, notes)

    required_extra: list[str] = []
    if "properties" in out:
        props = out["properties"]
        if isinstance(props, list):
            props = _properties_from_list(props, path, notes, required_extra)
        if isinstance(props, dict):
            new_props: dict[str, Any] = {}
            for name, sub in props.items():
                sub_path = f"{path}.{name}" if path else str(name)
                if isinstance(sub, dict) and isinstance(sub.get("required"), bool):
                    sub = dict(sub)
                    flag = sub.pop("required")
                    notes.append(
                        f"{_where(sub_path)}: property-level 'required: {str(flag).lower()}' "
                        "moved into the parent's 'required' list"
                    )
                    if flag:
                        required_extra.append(str(name))
                new_props[str(name)] = _normalize_node(sub, sub_path, notes, depth=depth + 1)
            out["properties"] = new_props
        else:
            out["x-invalid-properties"] = out.pop("properties")
            notes.append(
                f"{_where(path)}: 'properties' was {_short_json(props)}, not an object; "
                "moved it to 'x-invalid-properties'"
            )

    if "required" in out or required_extra:
        _normalize_required(out, path, notes, required_extra)

    if "items" in out:
        items = out["items"]
        if isinstance(items, list):
            if "prefixItems" not in out:
                out["prefixItems"] = [
                    _normalize_node(s, f"{path}[{i}]", notes, depth=depth + 1) for i, s in enumerate(items)
                ]
                del out["items"]
                notes.append(f"{_where(path)}: draft-4 tuple form 'items: [...]' converted to 'prefixItems'")
        else:
            out["items"] = _normalize_node(items, f"{path}[]", notes, depth=depth + 1)

    for key in _SUBSCHEMA_KEYWORDS:
        if key in out and isinstance(out[key], dict | str):
            out[key] = _normalize_node(out[key], f"{path}<{key}>", notes, depth=depth + 1)
    for key in _SCHEMA_LIST_KEYWORDS:
        if key in out and isinstance(out[key], list):
            out[key] = [
                _normalize_node(s, f"{path}<{key}[{i}]>", notes, depth=depth + 1)
                for i, s in enumerate(out[key])
            ]
    for key in _SCHEMA_MAP_KEYWORDS:
        if key in out and isinstance(out[key], dict):
            out[key] = {
                k: _normalize_node(s, f"{path}<{key}.{k}>", notes, depth=depth + 1)
                for k, s in out[key].items()
            }
    if "enum" in out and not isinstance(out["enum"], list):
        notes.append(
            f"{_where(path)}: 'enum' was {_short_json(out['enum'])}, not a list; wrapped it in a list"
        )
        out["enum"] = [out["enum"]]
    return out


def _normalize_required(out: dict[str, Any], path: str, notes: list[str], extra: Sequence[str]) -> None:
    """Make ``out["required"]`` a duplicate-free list of names that all appear in ``properties``."""
    required = out.get("required", [])
    if isinstance(required, str):
        notes.append(f"{_where(path)}: 'required' was the string {required!r}; wrapped it in a list")
        required = [required]
    elif not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        out["x-invalid-required"] = out.pop("required")
        notes.append(
            f"{_where(path)}: 'required' was {_short_json(required)}, not a list of names; "
            "moved it to 'x-invalid-required'"
        )
        required = []
    merged = list(dict.fromkeys([*required, *extra]))
    duplicates = sorted({name for name in required if required.count(name) > 1})
    if duplicates:
        notes.append(
            f"{_where(path)}: dropped duplicate name(s) {', '.join(map(repr, duplicates))} from 'required'"
        )
    if not merged and "required" not in out:
        return
    props = out.get("properties")
    is_objectish = (
        isinstance(props, dict)
        or out.get("type") == "object"
        or (isinstance(out.get("type"), list) and "object" in out["type"])
        or not path
    )
    if is_objectish:
        if not isinstance(props, dict):
            props = {}
            out["properties"] = props
        missing = [name for name in merged if name not in props]
        for name in missing:
            props[name] = {
                "description": "Required parameter; its type and description were not given by "
                "the source schema."
            }
        if missing:
            notes.append(
                f"{_where(path)}: required name(s) {', '.join(map(repr, missing))} were missing from "
                "'properties'; added them with no type constraint"
            )
    out["required"] = merged


def _repair(schema: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """Move every keyword that the 2020-12 meta-schema rejects to ``x-invalid-<keyword>``."""
    for _ in range(_MAX_REPAIRS):
        error = next(iter(sorted(_META_VALIDATOR.iter_errors(schema), key=lambda e: -len(e.path))), None)
        if error is None:
            return schema
        location = list(error.path)
        # Walk up to the innermost keyword of an object schema that holds the bad value.
        while location:
            parent: Any = schema
            for part in location[:-1]:
                parent = parent[part]
            key = location[-1]
            if isinstance(parent, dict) and isinstance(key, str) and not key.startswith("x-"):
                value = parent.pop(key)
                parent[f"x-invalid-{key}"] = value
                where = ".".join(str(p) for p in location[:-1]) or "root"
                notes.append(
                    f"schema at {where}: keyword {key!r} had an invalid value {_short_json(value)} "
                    f"({error.message[:120]}); moved it to 'x-invalid-{key}'"
                )
                break
            location.pop()
        else:
            raise SchemaNormalizationError(f"schema is not valid JSON Schema: {error.message[:300]}")
    raise SchemaNormalizationError("schema could not be repaired into valid JSON Schema")


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
        raise SchemaNormalizationError(f"input schema must be an object, got {_short_json(raw)}")
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
    schema = _normalize_node(raw, "", notes)
    type_ = schema.get("type")
    if type_ is None:
        schema = {"type": "object", **schema}
        notes.append("the schema root had no type; set it to 'object'")
    elif type_ != "object":
        if isinstance(type_, list) and "object" in type_:
            schema["x-original-type"] = schema.get("x-original-type", type_)
            schema["type"] = "object"
            notes.append(
                f"the schema root type {_short_json(type_)} narrowed to 'object' (tool arguments are "
                "always an object)"
            )
        else:
            raise SchemaNormalizationError(
                f"the input schema root must describe an object, but its type is {_short_json(type_)}"
            )
    if "properties" not in schema:
        schema["properties"] = {}
    schema = _repair(schema, notes)
    return _canonical_keep_order(schema), tuple(notes)


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
        SchemaNormalizationError: the root is not an object schema, or a property entry has no name.
    """
    required_list = list(required or [])
    try:
        raw_json = json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise SchemaNormalizationError(f"schema is not JSON-serialisable: {exc}") from exc
    schema_json, notes = _normalize_input_cached(raw_json, json.dumps(required_list))
    return json.loads(schema_json), list(notes)


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
    schema = _normalize_node(raw, "", notes)
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
    schema = _repair(schema, notes)
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
        return f"the constant {_short_json(schema['const'], 40)}"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        shown = ", ".join(_short_json(v, 40) for v in enum[:limit])
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
