"""The family KG as MCP tools: list relations, neighbours, path search, and (opt-in) add a fact.

Each tool is a :class:`tool_specs.ToolSpec` with a strict schema whose executor is bound to one
:class:`kg_store.KGStore`, so the KG tools are validated and reported exactly like any other tool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kg_store import SEARCH_MODES, KGError, KGStore
from tool_specs import CallContext, ToolLike, ToolResult, ToolSpec, clipped, shown_name

__all__ = ["SEARCH_MODES", "BoundExecutor", "KGConfig", "kg_tools"]

_ENTITY = {"type": "string", "minLength": 1, "maxLength": 256}
_TRIPLE = {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3}
_TRIPLES = {"type": "array", "items": _TRIPLE}

# MCP tool annotations (hints to clients): the KG is a closed world; reads change nothing; adding
# or removing a fact twice changes nothing the second time; kg_add_fact is flagged destructive
# because it changes what every later search (of every client) returns.
_READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
_WRITE = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}

NEIGHBORS_OUTPUT = {
    "type": "object",
    "properties": {"entity": {"type": "string"}, "out": _TRIPLES, "in": _TRIPLES},
    "required": ["entity", "out", "in"],
}
SEARCH_OUTPUT = {
    "type": "object",
    "properties": {
        "start": {"type": "string"},
        "path": {"type": "array", "items": {"type": "string"}},
        "mode": {"type": "string"},
        "start_found": {"type": "boolean"},
        "missing_relations": {"type": "array", "items": {"type": "string"}},
        "substitutions": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        "paths": {"type": "array", "items": _TRIPLES},
        "triples": _TRIPLES,
        "truncated": {"type": "boolean"},
        "note": {"type": "string"},
    },
    "required": ["start", "path", "mode", "start_found", "missing_relations", "paths", "triples", "note"],
}


def _edit_output(key: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {key: {"type": "boolean"}, "fact": _TRIPLE},
        "required": [key, "fact"],
    }


@dataclass
class KGConfig:
    """A KG served next to a benchmark's tools.

    ``search_mode`` is what ``kg_search_path`` falls back to when an exact path does not exist:
    ``exact`` (no fallback), ``greedy`` (the greedy search of the paper that introduced the family KG) or ``retrieval``
    (replace unknown relations by the ``top_k`` most similar existing ones).
    """

    store: KGStore
    search_mode: str = "greedy"
    top_k: int = 3
    allow_writes: bool = False

    def __post_init__(self) -> None:
        if self.search_mode not in SEARCH_MODES:
            raise ValueError(f"unknown KG search mode {self.search_mode!r}; expected one of {', '.join(SEARCH_MODES)}")
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k}")


class BoundExecutor:
    """Runs a plain function of the tool's arguments; a :class:`KGError` becomes an error result."""

    def __init__(self, fn: Callable[..., dict[str, Any]]):
        self.fn = fn

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult | dict[str, Any]:
        try:
            return self.fn(**arguments)
        except KGError as exc:
            return ToolResult(is_error=True, text=f"{spec.name}: {clipped(str(exc))}", structured=None, warnings=[])


def _triples(items: Any) -> list[list[str]]:
    return [list(t) for t in items]


def kg_tools(cfg: KGConfig) -> list[ToolSpec]:
    """The KG tools for one store. ``kg_add_fact`` is included only when writes are allowed."""
    store = cfg.store

    def list_relations() -> dict[str, Any]:
        rels = store.relations()
        return {"relations": rels, "count": len(rels)}

    def neighbors(entity: str) -> dict[str, Any]:
        nb = store.neighbors(entity)
        return {"entity": entity, "out": _triples(nb["out"]), "in": _triples(nb["in"])}

    def search_path(start: str, path: list[str], mode: str | None = None) -> dict[str, Any]:
        res = store.search(start, path, mode=mode or cfg.search_mode, top_k=cfg.top_k)
        out = res.to_dict()
        notes = []
        if not res.start_found:
            notes.append(f"Start entity {shown_name(start)} is not in the KG.")
        if res.missing_relations:
            notes.append(
                "Relations not in the KG: " + ", ".join(res.missing_relations)
                + f" (searched with mode {res.mode!r})."
            )
        if not res.paths:
            notes.append("No path matched.")
        out["note"] = " ".join(notes) or f"{len(res.paths)} path(s) matched exactly."
        return out

    def add_fact(head: str, relation: str, tail: str) -> dict[str, Any]:
        added = store.add_fact(head, relation, tail)
        return {"added": added, "fact": [head, relation, tail]}

    def remove_fact(head: str, relation: str, tail: str) -> dict[str, Any]:
        removed = store.remove_fact(head, relation, tail)
        return {"removed": removed, "fact": [head, relation, tail]}

    bound = BoundExecutor
    annotations = {"kind": "kg"}
    tools = [
        ToolSpec(
            name="kg_list_relations",
            description="List every relation name in the family knowledge graph.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            output_schema={
                "type": "object",
                "properties": {"relations": {"type": "array", "items": {"type": "string"}}, "count": {"type": "integer"}},
                "required": ["relations", "count"],
            },
            executor=bound(list_relations),
            annotations=annotations,
            title="List KG relations",
            hints=_READ,
        ),
        ToolSpec(
            name="kg_neighbors",
            description=(
                "Show the facts around one entity of the family knowledge graph: outgoing facts "
                "[entity, relation, other] and incoming facts [other, relation, entity]."
            ),
            input_schema={
                "type": "object",
                "properties": {"entity": {**_ENTITY, "description": "Entity name, e.g. 'Bob' or 'dinnertime_0002'."}},
                "required": ["entity"],
                "additionalProperties": False,
            },
            output_schema=NEIGHBORS_OUTPUT,
            executor=bound(neighbors),
            annotations=annotations,
            title="Facts around an entity",
            hints=_READ,
        ),
        ToolSpec(
            name="kg_search_path",
            description=(
                "Follow a path of relations from a start entity in the family knowledge graph and "
                "return the matching facts, e.g. start='Bob', path=['mother', 'prefer_dinnertime']. "
                f"When a relation does not exist the search falls back to mode '{cfg.search_mode}' "
                "and says which relations were not found."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "start": {**_ENTITY, "description": "The entity to start from (often the speaker)."},
                    "path": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": 256},
                        "minItems": 1,
                        "maxItems": 10,
                        "description": "Relation names to follow, in order.",
                    },
                    "mode": {
                        "type": "string",
                        "enum": list(SEARCH_MODES),
                        "description": f"Search mode; default '{cfg.search_mode}'.",
                    },
                },
                "required": ["start", "path"],
                "additionalProperties": False,
            },
            output_schema=SEARCH_OUTPUT,
            executor=bound(search_path),
            annotations=annotations,
            title="Follow a relation path",
            hints=_READ,
        ),
    ]
    if cfg.allow_writes:
        fact_schema = {
            "type": "object",
            "properties": {"head": _ENTITY, "relation": _ENTITY, "tail": _ENTITY},
            "required": ["head", "relation", "tail"],
            "additionalProperties": False,
        }
        edits = [
            ("kg_add_fact", "Add a fact [head, relation, tail] to the family knowledge graph (new people and relations allowed).",
             "added", add_fact, "Add a KG fact"),
            ("kg_remove_fact", "Remove the fact [head, relation, tail] from the family knowledge graph (a correction).",
             "removed", remove_fact, "Remove a KG fact"),
        ]
        tools += [
            ToolSpec(name=name, description=description, input_schema=fact_schema, output_schema=_edit_output(verb),
                     executor=bound(edit), annotations=annotations, title=title, hints=_WRITE)
            for name, description, verb, edit, title in edits
        ]
    return tools
