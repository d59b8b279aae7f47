"""MCP resources of one mounted benchmark: its KG's entities and relation types, and task descriptions.

URIs (names percent-encoded, as an RFC 6570 template expands them):

- ``kg://<benchmark>/entity/<name>``: the facts around one entity (template ``kg://<benchmark>/entity/{name}``);
- ``kg://<benchmark>/relation/<name>``: the facts of one relation type (template ``.../relation/{name}``);
- ``task://<benchmark>/<task_id>``: a task's query and candidate tools, never its gold answer (listed on
  the task's endpoint; template ``task://<benchmark>/{task_id}`` on the playground).

Each read answers twice over the same URI: ``text/plain`` for people and ``application/json`` for
programs. Entity and relation names are kept in :class:`~server.names.NameIndex` objects (sorted, for
paginated listings and prefix completion), rebuilt after a write to the KG.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from mcp import types
from mcp.shared.exceptions import MCPError

from kg_store import KGError
from tool_specs import clipped, shown_name

from .kg_tools import KGConfig
from .names import NameIndex

__all__ = ["MAX_RELATION_FACTS", "RESOURCE_NOT_FOUND", "KGResources", "ParsedURI", "parse_uri"]

RESOURCE_NOT_FOUND = -32002  # the MCP spec's error code for resources/read of an unknown URI
MAX_RELATION_FACTS = 1000  # facts shown by one relation resource (its "total" counts them all)


@dataclass(frozen=True)
class ParsedURI:
    kind: str  # "entity", "relation" or "task"
    benchmark: str
    name: str


def parse_uri(uri: str) -> ParsedURI | None:
    """The parts of one of our resource URIs, or None for a URI that is not one."""
    for scheme, kinds in (("kg://", ("entity", "relation")), ("task://", ("task",))):
        if not uri.startswith(scheme):
            continue
        parts = uri[len(scheme):].split("/")
        if scheme == "task://" and len(parts) == 2 and parts[0] and parts[1]:
            return ParsedURI("task", unquote(parts[0]), unquote(parts[1]))
        if scheme == "kg://" and len(parts) == 3 and parts[1] in kinds and parts[0] and parts[2]:
            return ParsedURI(parts[1], unquote(parts[0]), unquote(parts[2]))
    return None


def _contents(uri: str, text: str, data: Any) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[
            types.TextResourceContents(uri=uri, mime_type="text/plain", text=text),
            types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(data, ensure_ascii=False)),
        ]
    )


def _not_found(message: str) -> MCPError:
    return MCPError(code=RESOURCE_NOT_FOUND, message=message)


class KGResources:
    """The resources of one benchmark (``kg`` None: only task descriptions)."""

    def __init__(self, benchmark: str, kg: KGConfig | None, task_query: Callable[[str], str | None] | None):
        self.benchmark = benchmark
        self.kg = kg
        self.task_query = task_query
        self._entities: NameIndex | None = None
        self._relations: NameIndex | None = None

    # ---- names -----------------------------------------------------------------------------------
    @property
    def entities(self) -> NameIndex:
        if self._entities is None:
            self._entities = NameIndex(self.kg.store.entities() if self.kg else [], presorted=True)
        return self._entities

    @property
    def relations(self) -> NameIndex:
        if self._relations is None:
            self._relations = NameIndex(self.kg.store.relations() if self.kg else [], presorted=True)
        return self._relations

    def changed(self) -> None:
        """The KG was written to: names are read again on next use."""
        self._entities = self._relations = None

    # ---- URIs ------------------------------------------------------------------------------------
    def entity_uri(self, name: str) -> str:
        return f"kg://{self.benchmark}/entity/{quote(name, safe='')}"

    def relation_uri(self, name: str) -> str:
        return f"kg://{self.benchmark}/relation/{quote(name, safe='')}"

    def task_uri(self, task_id: str) -> str:
        return f"task://{self.benchmark}/{quote(task_id, safe='')}"

    def templates(self, *, playground: bool) -> list[types.ResourceTemplate]:
        out = []
        if self.kg is not None:
            out += [
                types.ResourceTemplate(
                    name="kg-entity", title="KG entity", uri_template=f"kg://{self.benchmark}/entity/{{name}}",
                    description="The facts around one entity of the family knowledge graph.", mime_type="text/plain",
                ),
                types.ResourceTemplate(
                    name="kg-relation", title="KG relation type",
                    uri_template=f"kg://{self.benchmark}/relation/{{name}}",
                    description="The facts of one relation type of the family knowledge graph.", mime_type="text/plain",
                ),
            ]
        if playground and self.task_query is not None:
            out.append(types.ResourceTemplate(
                name="task", title="Task description", uri_template=f"task://{self.benchmark}/{{task_id}}",
                description="A task's query and candidate tools (never its answer).", mime_type="text/plain",
            ))
        return out

    # ---- listing ---------------------------------------------------------------------------------
    def listing(self, task_id: str | None, start: int, size: int) -> tuple[list[types.Resource], int]:
        """Resources ``start`` .. ``start + size`` of the listing (the task, relations, entities) and its length."""
        head: list[types.Resource] = []
        if task_id is not None and self.task_query is not None:
            head.append(types.Resource(
                name=f"task {task_id}", title=f"Task {task_id}", uri=self.task_uri(task_id), mime_type="text/plain",
                description="This task's query and candidate tools.",
            ))
        relations, entities = (self.relations, self.entities) if self.kg else (NameIndex(), NameIndex())
        total = len(head) + len(relations) + len(entities)
        out: list[types.Resource] = []
        i = start
        while len(out) < size and i < total:
            if i < len(head):
                out.append(head[i])
                i += 1
                continue
            j = i - len(head)
            if j < len(relations):
                names = relations.page(j, size - len(out))
                out += [types.Resource(name=f"relation {n}", title=n, uri=self.relation_uri(n), mime_type="text/plain")
                        for n in names]
            else:
                names = entities.page(j - len(relations), size - len(out))
                out += [types.Resource(name=n, title=n, uri=self.entity_uri(n), mime_type="text/plain") for n in names]
            i += len(names)
        return out, total

    # ---- reading ---------------------------------------------------------------------------------
    def serves(self, parsed: ParsedURI, task_tools: Callable[[str], list[Any]], endpoint_task: str | None) -> bool:
        """Whether the resource exists for an endpoint (``endpoint_task``: its task, ``None``: the
        playground): an entity or relation of the KG, or a task the endpoint describes."""
        if parsed.kind == "task":
            if self.task_query is None or (endpoint_task is not None and parsed.name != endpoint_task):
                return False
            try:
                task_tools(parsed.name)
            except LookupError:
                return False
            return True
        if self.kg is None:
            return False
        return parsed.name in (self.entities if parsed.kind == "entity" else self.relations)

    def read(self, uri: str, parsed: ParsedURI, task_tools: Callable[[str], list[Any]],
             endpoint_task: str | None) -> types.ReadResourceResult:
        if parsed.kind == "task":
            return self._read_task(uri, parsed.name, task_tools, endpoint_task)
        if self.kg is None:
            raise _not_found(f"benchmark {self.benchmark!r} has no knowledge graph: no resource {shown_name(uri)}")
        store = self.kg.store
        if parsed.kind == "entity":
            try:
                nb = store.neighbors(parsed.name)
            except KGError as exc:
                raise _not_found(f"no resource {shown_name(uri)}: {clipped(str(exc))}") from None
            out_, in_ = [list(t) for t in nb["out"]], [list(t) for t in nb["in"]]
            lines = [f"{parsed.name}: {len(out_)} outgoing, {len(in_)} incoming fact(s)"]
            lines += [f"  {h} --{r}--> {t}" for h, r, t in out_ + in_]
            return _contents(uri, "\n".join(lines), {"entity": parsed.name, "out": out_, "in": in_})
        if parsed.name not in self.relations:
            hint = self.relations.complete(parsed.name[:3], 5).values
            raise _not_found(f"no resource {shown_name(uri)}: relation {shown_name(parsed.name)} is not in the KG"
                             + (f" (relations starting alike: {', '.join(hint)})" if hint else ""))
        facts = [list(t) for t in store.triples() if t[1] == parsed.name]
        shown = facts[:MAX_RELATION_FACTS]
        lines = [f"relation {parsed.name}: {len(facts)} fact(s)" + (f", the first {len(shown)} shown" if len(shown) < len(facts) else "")]
        lines += [f"  {h} --{r}--> {t}" for h, r, t in shown]
        return _contents(uri, "\n".join(lines), {"relation": parsed.name, "total": len(facts), "facts": shown})

    def _read_task(self, uri: str, task_id: str, task_tools: Callable[[str], list[Any]],
                   endpoint_task: str | None) -> types.ReadResourceResult:
        if self.task_query is None:
            raise _not_found(f"benchmark {self.benchmark!r} publishes no task descriptions: no resource {shown_name(uri)}")
        if endpoint_task is not None and task_id != endpoint_task:
            raise _not_found(f"no resource {shown_name(uri)} on this endpoint: it serves task {endpoint_task!r} only")
        try:
            tools = task_tools(task_id)
            query = self.task_query(task_id)
        except LookupError:
            raise _not_found(f"no resource {shown_name(uri)}: unknown task {shown_name(task_id)} in benchmark {self.benchmark!r}") from None
        listed = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]
        text = f"Task {task_id} ({self.benchmark})\n\nQuery:\n{query or '(none)'}\n\nCandidate tools:\n"
        text += "\n".join(f"- {t['name']}: {t['description']}" for t in listed)
        return _contents(uri, text, {"benchmark": self.benchmark, "task_id": task_id, "query": query,
                                     "candidate_tools": listed})
