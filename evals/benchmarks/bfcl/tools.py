"""BFCL's function docs as MCP tools.

A function doc becomes a tool the way BFCL's own function-calling handlers present it to an
OpenAI-style API, in two steps. First the language-specific pre-processing BFCL applies to every
entry before inference (:func:`language_doc`): the description gets " Note that the provided
function is in Python 3 syntax." (or "... in Java 8 SDK syntax." / "... in JavaScript syntax."), and
for Java and JavaScript every parameter becomes a ``string`` whose description says which type's
source text it holds ("This is Java long type parameter in string representation."), an array's
item type moved into the description (its ``items`` dropped), a JavaScript dict's ``properties``
likewise (as JSON). Then the OpenAI-style cast (:func:`to_schema`): a dot in a name becomes ``_``
(such APIs allow ``^[a-zA-Z0-9_-]{1,64}$``), the parameters' ``dict`` becomes ``object``, and each
property's BFCL type name is mapped to a JSON Schema type (:data:`TYPE_TO_JSON`; a type it does not
know, or no type, becomes ``string``); a ``float`` property also gets ``format: float`` and " This
is a float type value." appended to its description. An object's properties are cast the same way;
an array's items get their type mapped (one more level for an array of arrays, and an array of
objects has its items' properties cast). Single-turn categories execute nothing: every call is
answered with the same placeholder result.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .files import NAME, language, served_name

if TYPE_CHECKING:
    from tool_specs import CallContext, ToolLike, ToolSpec

__all__ = ["PLACEHOLDER", "TYPE_TO_JSON", "first_by_name", "language_doc", "to_schema", "to_tool"]

# BFCL's type names (Python's, Java's, JavaScript's) -> JSON Schema types, as its FC handlers map them
TYPE_TO_JSON: dict[str, str] = {
    "integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
    "bool": "boolean", "array": "array", "list": "array", "dict": "object", "object": "object", "tuple": "array",
    "any": "string", "byte": "integer", "short": "integer", "long": "integer", "double": "number", "char": "string",
    "ArrayList": "array", "Array": "array", "HashMap": "object", "Hashtable": "object", "Queue": "array",
    "Stack": "array", "Any": "string", "String": "string", "Bigint": "integer",
}
FLOAT_NOTE = " This is a float type value."
PLACEHOLDER = {"status": "received", "note": "this BFCL category executes no call"}


def _json_type(kind: Any) -> str:
    return TYPE_TO_JSON.get(kind, "string") if isinstance(kind, str) else "string"


def _cast(properties: dict[str, Any]) -> dict[str, Any]:
    """BFCL's OpenAI-style cast of a ``properties`` block, in place."""
    for prop in properties.values():
        if not isinstance(prop, dict):
            continue
        kind = prop.get("type")
        if kind == "float":
            prop["format"] = "float"
            prop["description"] = str(prop.get("description", "")) + FLOAT_NOTE
        prop["type"] = _json_type(kind)
        if prop["type"] not in ("array", "object"):
            continue
        if isinstance(prop.get("properties"), dict):
            prop["properties"] = _cast(prop["properties"])
        elif isinstance(prop.get("items"), dict):
            items = prop["items"]
            items["type"] = _json_type(items.get("type"))
            if items["type"] == "array" and isinstance(items.get("items"), dict):
                items["items"]["type"] = _json_type(items["items"].get("type"))
            elif items["type"] == "object" and isinstance(items.get("properties"), dict):
                items["properties"] = _cast(items["properties"])
    return properties


def to_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL ``parameters`` block as a JSON Schema object (a copy: the doc is left as it is)."""
    schema = copy.deepcopy(dict(parameters))
    schema["type"] = "object"
    props = schema.get("properties")
    schema["properties"] = _cast(props) if isinstance(props, dict) else {}
    return schema


_HINT = {"python": " Note that the provided function is in Python 3 syntax.",
         "java": " Note that the provided function is in Java 8 SDK syntax.",
         "javascript": " Note that the provided function is in JavaScript syntax."}
_LANGUAGE_NAME = {"java": "Java", "javascript": "JavaScript"}
_LIST_TYPES = {"java": ("ArrayList", "Array"), "javascript": ("array",)}


def language_doc(doc: Mapping[str, Any], category: str) -> dict[str, Any]:
    """A function doc after BFCL's language-specific pre-processing for ``category`` (a copy)."""
    lang = language(category)
    out = copy.deepcopy(dict(doc))
    out["description"] = str(out.get("description", "")) + _HINT[lang]
    props = (out.get("parameters") or {}).get("properties")
    if lang == "python" or not isinstance(props, dict):
        return out
    name = _LANGUAGE_NAME[lang]
    for prop in props.values():
        kind, text = prop.get("type"), str(prop.get("description", ""))
        if kind == "any":
            text += f" This parameter can be of any type of {name} object in string representation."
        else:
            text += f" This is {name} {kind} type parameter in string representation."
        if kind in _LIST_TYPES[lang]:
            text += (f" The list elements are of type {(prop.get('items') or {}).get('type')}; "
                     "they are not in string representation.")
            prop.pop("items", None)
        if lang == "javascript" and kind == "dict" and "properties" in prop:
            text += (" The dictionary entries have the following schema; they are not in string representation. "
                     + json.dumps(prop.pop("properties")))
        prop["description"] = text
        prop["type"] = "string"
    return out


async def _placeholder(spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    return dict(PLACEHOLDER)


def to_tool(doc: Mapping[str, Any], entry_id: str = "", category: str = "simple_python") -> ToolSpec:
    """One BFCL function doc of ``category`` as an MCP tool answered with :data:`PLACEHOLDER`.
    Arguments are not refused for their schema (``validation="warn"``): the call is what is scored,
    as BFCL scores it."""
    from tool_specs.spec import ToolSpec  # on use: scoring imports no pydantic

    name = str(doc.get("name", ""))
    shown = language_doc(doc, category)
    return ToolSpec(name=served_name(name), description=str(shown.get("description", "")),
                    input_schema=to_schema(shown.get("parameters") or {}), executor=_placeholder, validation="warn",
                    annotations={"benchmark": NAME, "task_id": entry_id, "bfcl_name": name})



def first_by_name(specs: Iterable[ToolSpec]) -> list[ToolSpec]:
    """The tools of an endpoint without a task: names repeat across entries (with other docs), the
    first one wins."""
    seen: dict[str, ToolSpec] = {}
    for spec in specs:
        seen.setdefault(spec.name, spec)
    return list(seen.values())
