"""What the server needs from a benchmark: a catalog of tasks and the tools each task offers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tool_specs.names import did_you_mean, suggest_names

if TYPE_CHECKING:
    from tool_specs.spec import ToolSpec

# ``suggest_names`` lives in :mod:`tool_specs.names` (a leaf, so that validation can use it without
# importing the catalog); it is re-exported here for the code that imported it from this module.
__all__ = ["Catalog", "StaticCatalog", "TaskNotFound", "ToolNotFound", "find_tool", "suggest_names"]


class ToolNotFound(KeyError):
    """A tool name that is not offered. The message suggests close names and lists what is available."""

    def __init__(self, name: str, known: Iterable[str] = (), *, where: str = "") -> None:
        self.name = name
        self.known = list(known)
        shown = ", ".join(self.known[:50]) + (
            f", … ({len(self.known)} in all)" if len(self.known) > 50 else ""
        )
        place = f" in {where}" if where else ""
        available = f" Available tools: {shown}." if self.known else " No tools are available."
        self.message = f"Unknown tool '{name}'{place}.{did_you_mean(name, self.known)}{available}"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class TaskNotFound(KeyError):
    """A task id that the catalog does not hold."""

    def __init__(self, task_id: str, known: Iterable[str] = (), *, catalog: str = "") -> None:
        self.task_id = task_id
        known_list = list(known)
        place = f" in catalog '{catalog}'" if catalog else ""
        self.message = f"Unknown task id '{task_id}'{place} ({len(known_list)} tasks).{did_you_mean(task_id, known_list)}"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def find_tool(tools: Iterable[ToolSpec], name: str, *, where: str = "") -> ToolSpec:
    """The tool called ``name`` among ``tools``.

    Raises:
        ToolNotFound: no tool has that name (the error suggests close names).
    """
    tool_list = list(tools)
    for tool in tool_list:
        if tool.name == name:
            return tool
    raise ToolNotFound(name, [t.name for t in tool_list], where=where)


@runtime_checkable
class Catalog(Protocol):
    """A benchmark's tasks and tools, as the MCP server sees them.

    ``name`` identifies the catalog in URLs (e.g. ``"my-benchmark"``). ``task_tools`` raises
    :class:`TaskNotFound` for an unknown id. ``playground_tools`` is the union of every task's
    tools (deduplicated by name), served on an endpoint without gold.
    """

    name: str

    def task_ids(self) -> list[str]:
        """All task ids, in the benchmark's order."""
        ...

    def task_tools(self, task_id: str) -> list[ToolSpec]:
        """The tools offered in one task."""
        ...

    def playground_tools(self) -> list[ToolSpec]:
        """The union of all tasks' tools, deduplicated by name."""
        ...


class StaticCatalog:
    """A :class:`Catalog` held in memory: a dict of task id -> tools, plus extra playground tools.

    With no tasks and the tools of a spec directory as ``extra_playground`` it serves user-defined
    tools. In the playground the first tool seen with a name wins: tasks in order, then
    ``extra_playground``.

    Raises:
        ValueError: one task (or ``extra_playground``) lists two tools with the same name.
    """

    def __init__(
        self,
        name: str,
        tasks: Mapping[str, Sequence[ToolSpec]] | None = None,
        extra_playground: Iterable[ToolSpec] = (),
    ) -> None:
        self.name = name
        self._tasks: dict[str, list[ToolSpec]] = {}
        for task_id, tools in (tasks or {}).items():
            self._tasks[str(task_id)] = _unique(tools, f"task '{task_id}' of catalog '{name}'")
        self._extra = _unique(extra_playground, f"the playground tools of catalog '{name}'")
        self._playground: list[ToolSpec] | None = None

    def __repr__(self) -> str:
        return f"StaticCatalog(name={self.name!r}, tasks={len(self._tasks)}, extra_playground={len(self._extra)})"

    def task_ids(self) -> list[str]:
        """All task ids, in insertion order."""
        return list(self._tasks)

    def task_tools(self, task_id: str) -> list[ToolSpec]:
        """The tools of one task (a new list each time).

        Raises:
            TaskNotFound: unknown ``task_id``.
        """
        try:
            return list(self._tasks[task_id])
        except KeyError:
            raise TaskNotFound(task_id, self._tasks, catalog=self.name) from None

    def playground_tools(self) -> list[ToolSpec]:
        """The union of all tasks' tools and ``extra_playground``, first occurrence of a name wins."""
        if self._playground is None:
            seen: dict[str, ToolSpec] = {}
            for tools in self._tasks.values():
                for tool in tools:
                    seen.setdefault(tool.name, tool)
            for tool in self._extra:
                seen.setdefault(tool.name, tool)
            self._playground = list(seen.values())
        return list(self._playground)


def _unique(tools: Iterable[ToolSpec], where: str) -> list[ToolSpec]:
    out: list[ToolSpec] = []
    names: set[str] = set()
    for tool in tools:
        if tool.name in names:
            raise ValueError(f"{where} lists tool '{tool.name}' twice")
        names.add(tool.name)
        out.append(tool)
    return out
