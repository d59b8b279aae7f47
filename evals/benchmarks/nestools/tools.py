"""NesTools' tools as MCP tools: the schema of each api, answered with handles.

Each api becomes a :class:`~tool_specs.ToolSpec` with the ``placeholder`` executor: a call that
passes the schema check is answered ``{"<response field>": "API_call_<n>", ...}``, one handle per
declared response field in the order of the api's ``responses`` keys, numbered per MCP session
(an api without responses answers ``{}``).

The schema is the api's own (Python type names mapped to JSON Schema: ``str`` string, ``int``
integer, ``float`` number, ``bool`` boolean, ``list`` array, ``dict`` object; its ``required``
list), except that a parameter of another type than ``str`` also accepts a handle, because a nested
call passes an earlier output there (the gold calls do: ``{"availability": "API_call_1"}`` for a
``bool``). A handle is a string ``API_call_<digits>``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tool_specs import ToolSpec
from tool_specs.session_executors import PlaceholderExecutor

from .data import Api, TaskSet

if TYPE_CHECKING:
    from tool_specs.protocols import ToolLike

__all__ = ["HANDLE_PATTERN", "NesToolsCatalog", "cached_spec", "input_schema", "tool_spec"]

HANDLE_PATTERN = r"^API_call_[0-9]+$"
_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "list": "array", "dict": "object"}


def _param_schema(raw: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if raw.get("description"):
        out["description"] = str(raw["description"])
    json_type = _TYPES.get(str(raw.get("type", "")).strip().lower())
    if json_type == "string":
        out["type"] = "string"
    elif json_type is not None:
        out["anyOf"] = [{"type": json_type}, {"type": "string", "pattern": HANDLE_PATTERN,
                                              "description": "an output of an earlier call"}]
    return out  # an unknown type name: any value


def input_schema(api: Mapping[str, Any]) -> dict[str, Any]:
    params = api.get("parameters") or {}
    return {
        "type": "object",
        "properties": {name: _param_schema(p if isinstance(p, Mapping) else {}) for name, p in params.items()},
        "required": [r for r in api.get("required") or [] if r in params],
    }


def output_schema(api: Mapping[str, Any]) -> dict[str, Any]:
    responses = api.get("responses") or {}
    props = {}
    for name, r in responses.items():
        desc = str(r.get("description") or "") if isinstance(r, Mapping) else ""
        kind = str(r.get("type") or "") if isinstance(r, Mapping) else ""
        props[name] = {"type": "string", "description": f"a handle to this output ({kind}): {desc}".rstrip(": ")}
    return {"type": "object", "properties": props, "required": list(props)}


class _Handles(PlaceholderExecutor):
    """The placeholder executor with exactly the api's response fields: an api that declares no
    response answers ``{}`` and uses no handle (the shared one would answer ``result``)."""

    def fields_of(self, spec: ToolLike) -> list[str]:
        return list(self.fields or [])


def tool_spec(api: Api) -> ToolSpec:
    raw = api.raw
    return ToolSpec(
        name=api.name,
        description=str(raw.get("api_description") or ""),
        input_schema=input_schema(raw),
        output_schema=output_schema(raw),
        executor=_Handles(list(raw.get("responses") or {})),
        annotations={"benchmark": "nestools", "api_id": api.api_id},
    )


_SPECS: dict[tuple[int, str], ToolSpec] = {}  # built once per process (normalising a schema takes milliseconds)


def cached_spec(api: Api) -> ToolSpec:
    """:func:`tool_spec`, once per api id and schema in this process (a spec is immutable and its
    executor keeps its state in the session)."""
    key = (api.api_id, json.dumps(api.raw, sort_keys=True))
    spec = _SPECS.get(key)
    if spec is None:
        spec = _SPECS[key] = tool_spec(api)
    return spec


class NesToolsCatalog:
    """Each task's offered tools (:meth:`TaskSet.offered`), built on first use. The playground
    offers every api, the first of a name."""

    def __init__(self, name: str, tasks: TaskSet):
        self.name = name
        self._tasks = tasks

    def task_ids(self) -> list[str]:
        return list(self._tasks.tasks)

    def task_tools(self, task_id: str) -> list[ToolSpec]:
        from tool_specs.catalog import TaskNotFound

        if task_id not in self._tasks.tasks:
            raise TaskNotFound(task_id, self._tasks.tasks, catalog=self.name)
        return [cached_spec(a) for a in self._tasks.offered(task_id)]

    def playground_tools(self) -> list[ToolSpec]:
        seen: dict[str, ToolSpec] = {}
        for task in self._tasks.tasks.values():
            for api in task.gold_apis:
                if api.name not in seen:
                    seen[api.name] = cached_spec(api)
        return list(seen.values())
