"""BFCL's function docs as MCP tools, and the catalog of the served entries.

A function doc becomes a tool the way BFCL's own function-calling handlers present it to an
OpenAI-style API: a dot in a name becomes ``_`` (such APIs allow ``^[a-zA-Z0-9_-]{1,64}$``), the
parameters' ``dict`` becomes ``object``, and each property's BFCL type name is mapped to a JSON
Schema type (:data:`TYPE_TO_JSON`; a type it does not know becomes ``string``); a ``float``
property also gets ``format: float`` and "This is a float type value." appended to its
description. Nested properties and array items are mapped the same way. Single-turn categories
execute nothing: every call is answered with the same placeholder result.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from tool_specs import CallContext, TaskNotFound, ToolLike, ToolSpec

from .data import BfclEntry
from .files import NAME, served_name

__all__ = ["PLACEHOLDER", "TYPE_TO_JSON", "BfclCatalog", "to_schema", "to_tool"]

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


def _map_property(prop: Any) -> Any:
    if not isinstance(prop, dict):
        return prop
    kind = prop.get("type")
    if kind == "float":
        prop["format"] = "float"
        prop["description"] = str(prop.get("description", "")) + FLOAT_NOTE
    prop["type"] = TYPE_TO_JSON.get(kind, "string") if isinstance(kind, str) else "string"
    if isinstance(prop.get("properties"), dict):
        prop["properties"] = {k: _map_property(v) for k, v in prop["properties"].items()}
    if isinstance(prop.get("items"), dict):
        prop["items"] = _map_property(prop["items"])
    return prop


def to_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL ``parameters`` block as a JSON Schema object (a copy: the doc is left as it is)."""
    schema = copy.deepcopy(dict(parameters))
    schema["type"] = "object"
    props = schema.get("properties")
    schema["properties"] = {k: _map_property(v) for k, v in props.items()} if isinstance(props, dict) else {}
    return schema


async def _placeholder(spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    return dict(PLACEHOLDER)


def to_tool(doc: Mapping[str, Any], entry_id: str = "") -> ToolSpec:
    """One BFCL function doc as an MCP tool answered with :data:`PLACEHOLDER`. Arguments are not
    refused for their schema (``validation="warn"``): the call is what is scored, as BFCL scores it."""
    name = str(doc.get("name", ""))
    return ToolSpec(name=served_name(name), description=str(doc.get("description", "")),
                    input_schema=to_schema(doc.get("parameters") or {}), executor=_placeholder, validation="warn",
                    annotations={"benchmark": NAME, "task_id": entry_id, "bfcl_name": name})


class BfclCatalog:
    """The :class:`tool_specs.Catalog` of the served entries: a task's endpoint offers its
    entry's functions, in the entry's order. Specs are built on first use."""

    def __init__(self, entries: Sequence[BfclEntry], name: str = NAME) -> None:
        self.name = name
        self.entries = {e.id: e for e in entries}
        self._specs: dict[str, list[ToolSpec]] = {}

    def task_ids(self) -> list[str]:
        return list(self.entries)

    def task_tools(self, task_id: str) -> list[ToolSpec]:
        if task_id not in self._specs:
            try:
                entry = self.entries[task_id]
            except KeyError:
                raise TaskNotFound(task_id, self.entries, catalog=self.name) from None
            tools = [to_tool(doc, task_id) for doc in entry.functions]
            names = [t.name for t in tools]
            if len(set(names)) != len(names):
                raise ValueError(f"BFCL entry {task_id}: two functions are served under one name: {names}")
            self._specs[task_id] = tools
        return list(self._specs[task_id])

    def playground_tools(self) -> list[ToolSpec]:
        """Every entry's tools; names repeat across entries (with other docs): the first one wins."""
        seen: dict[str, ToolSpec] = {}
        for task_id in self.entries:
            for spec in self.task_tools(task_id):
                seen.setdefault(spec.name, spec)
        return list(seen.values())
