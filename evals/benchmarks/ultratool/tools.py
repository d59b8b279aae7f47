"""Tool usage's toolsets as live MCP tools: ``/mcp/ultratool/<id>`` lists the sample's tools.

UltraTool's tools are skeletons (name, description, ``arguments``, ``results``) with no
implementation. Each becomes a :class:`~tool_specs.ToolSpec` through ``ToolSpec.from_benchmark``
(``arguments`` read as the input schema, ``results`` as the output schema; there is no ``required``
list, so no argument is required). A call is answered by the ``simulated`` executor: the
``results`` object filled from the arguments of the same name, else with fixed placeholders, so
the same arguments always give the same result. Arguments are checked against the schema in
``warn`` mode: the gold arguments are all written as text (``"5000"`` for an integer), and a
call the paper would accept is not refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tool_specs import ToolSpec

from .tasks import Record

__all__ = ["UltraToolCatalog", "build_tools"]


def build_tools(toolset: Sequence[Mapping[str, Any]], *, source: str) -> list[ToolSpec]:
    """A sample's toolset as tool specs (simulated results, arguments checked in warn mode)."""
    return [ToolSpec.from_benchmark(dict(t), executor="simulated", validation="warn",
                                    annotations={"benchmark": "ultratool", "source": source}) for t in toolset]


class UltraToolCatalog:
    """The toolsets of the records that have one (tool usage), built on first use per task."""

    def __init__(self, name: str, records: Sequence[Record]):
        self.name = name
        self._records = {r.id: r for r in records if r.data.get("toolset")}
        self._tools: dict[str, list[ToolSpec]] = {}
        self._playground: list[ToolSpec] | None = None

    def task_ids(self) -> list[str]:
        return list(self._records)

    def task_tools(self, task_id: str) -> list[ToolSpec]:
        from tool_specs.catalog import TaskNotFound

        record = self._records.get(task_id)
        if record is None:
            raise TaskNotFound(task_id, self._records, catalog=self.name)
        if task_id not in self._tools:
            self._tools[task_id] = build_tools(record.data["toolset"], source=f"{record.task}#{task_id}")
        return list(self._tools[task_id])

    def playground_tools(self) -> list[ToolSpec]:
        if self._playground is None:
            seen: dict[str, ToolSpec] = {}
            for task_id in self._records:
                for tool in self.task_tools(task_id):
                    seen.setdefault(tool.name, tool)
            self._playground = list(seen.values())
        return list(self._playground)
