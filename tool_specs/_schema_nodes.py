"""Normalising one loose schema tree: the walk over every node (types, properties given as a list,
``required``, sub-schemas) and the repair of what the meta-schema still refuses. Every change is
reported as a note. :mod:`tool_specs.schema` calls it (with caching) and is the public interface.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from tool_specs._schema_meta import META_VALIDATOR
from tool_specs._schema_types import map_type_name
from tool_specs.errors import SchemaNormalizationError

__all__ = ["normalize_node", "repair", "short_json"]

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


_MAX_REPAIRS = 200


def _where(path: str) -> str:
    return f"property {path!r}" if path else "the schema root"


def short_json(value: object, limit: int = 80) -> str:
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
            f"{_where(path)}: type {short_json(original)} is not a type name; removed the type "
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
                f"{_where(path)}: unknown type {short_json(original)}; removed the type constraint "
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
        notes.append(f"{_where(path)}: type {short_json(original)} mapped to {short_json(new)}")


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
                f"{_where(path)}: entry #{index} of the 'properties' list is {short_json(item)}, "
                "expected an object with a 'name'"
            )
        if not isinstance(name, str) or not name:
            raise SchemaNormalizationError(
                f"{_where(path)}: entry #{index} of the 'properties' list has no 'name': {short_json(item)}"
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


def normalize_node(node: Any, path: str, notes: list[str], *, depth: int = 0) -> Any:
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
                f"converted it to {{'type': {short_json(types[0] if len(types) == 1 else types)}}}"
            )
            out: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
            if not exact:
                out["x-original-type"] = node
            return out
        notes.append(
            f"{_where(path)}: schema was the plain string {short_json(node)}; used it as the description"
        )
        return {"description": node}
    if not isinstance(node, dict):
        notes.append(
            f"{_where(path)}: schema was {short_json(node)}, not an object; "
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
                new_props[str(name)] = normalize_node(sub, sub_path, notes, depth=depth + 1)
            out["properties"] = new_props
        else:
            out["x-invalid-properties"] = out.pop("properties")
            notes.append(
                f"{_where(path)}: 'properties' was {short_json(props)}, not an object; "
                "moved it to 'x-invalid-properties'"
            )

    if "required" in out or required_extra:
        _normalize_required(out, path, notes, required_extra)

    if "items" in out:
        items = out["items"]
        if isinstance(items, list):
            if "prefixItems" not in out:
                out["prefixItems"] = [
                    normalize_node(s, f"{path}[{i}]", notes, depth=depth + 1) for i, s in enumerate(items)
                ]
                del out["items"]
                notes.append(f"{_where(path)}: draft-4 tuple form 'items: [...]' converted to 'prefixItems'")
        else:
            out["items"] = normalize_node(items, f"{path}[]", notes, depth=depth + 1)

    for key in _SUBSCHEMA_KEYWORDS:
        if key in out and isinstance(out[key], dict | str):
            out[key] = normalize_node(out[key], f"{path}<{key}>", notes, depth=depth + 1)
    for key in _SCHEMA_LIST_KEYWORDS:
        if key in out and isinstance(out[key], list):
            out[key] = [
                normalize_node(s, f"{path}<{key}[{i}]>", notes, depth=depth + 1)
                for i, s in enumerate(out[key])
            ]
    for key in _SCHEMA_MAP_KEYWORDS:
        if key in out and isinstance(out[key], dict):
            out[key] = {
                k: normalize_node(s, f"{path}<{key}.{k}>", notes, depth=depth + 1)
                for k, s in out[key].items()
            }
    if "enum" in out and not isinstance(out["enum"], list):
        notes.append(
            f"{_where(path)}: 'enum' was {short_json(out['enum'])}, not a list; wrapped it in a list"
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
            f"{_where(path)}: 'required' was {short_json(required)}, not a list of names; "
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


def repair(schema: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """Move every keyword that the 2020-12 meta-schema rejects to ``x-invalid-<keyword>``."""
    for _ in range(_MAX_REPAIRS):
        error = next(iter(sorted(META_VALIDATOR.iter_errors(schema), key=lambda e: -len(e.path))), None)
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
                    f"schema at {where}: keyword {key!r} had an invalid value {short_json(value)} "
                    f"({error.message[:120]}); moved it to 'x-invalid-{key}'"
                )
                break
            location.pop()
        else:
            raise SchemaNormalizationError(f"schema is not valid JSON Schema: {error.message[:300]}")
    raise SchemaNormalizationError("schema could not be repaired into valid JSON Schema")

