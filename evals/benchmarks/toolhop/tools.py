"""ToolHop's tools and catalog: each hop's tool runs its own code in the sandbox.

A task's endpoint offers its hops' tools in hop order (:class:`ToolHopCatalog`); each is a
:class:`ToolHopSpec` whose executor is the sandbox with ToolHop's reading of the results
(:mod:`.feedback`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tool_specs import TaskNotFound, ToolResult, ToolSpec
from tool_specs.sandbox import SandboxExecutor, SandboxLimits, SandboxPool

from .feedback import FEEDBACK_LEVELS, Feedback, shown, tool_result
from .files import NAME
from .tasks import Hop, ToolHopTask, load_tasks

if TYPE_CHECKING:
    from tool_specs import CallContext

__all__ = ["ToolHopCatalog", "ToolHopSpec", "build_spec"]


class ToolHopSpec(ToolSpec):
    """A ToolHop tool. Its code always runs with the model's arguments (``validation="warn"``),
    and the model sees only what the tool itself returns or raises, as in the paper: the server's
    schema warnings are dropped from the result (invocation errors are scored from the traces).
    With ``feedback="minimal"`` every failure reads :data:`.feedback.GENERIC_ERROR` (:func:`.feedback.shown`)."""

    feedback: Feedback = "detailed"

    async def call(self, arguments: object, ctx: CallContext | None = None) -> ToolResult:
        return shown(await super().call(arguments, ctx), self.feedback)


def build_spec(task: ToolHopTask, hop: Hop, *, feedback: Feedback = "detailed", pool: SandboxPool | None = None,
               limits: SandboxLimits | None = None) -> ToolHopSpec:
    """The tool of one hop: its code (example block stripped) in the sandbox, results read by
    :func:`.feedback.tool_result`."""
    executor = SandboxExecutor(hop.code.code, hop.function, limits=limits, pool=pool, to_result=tool_result)
    spec = ToolHopSpec.from_benchmark(
        hop.tool, executor=executor, validation="warn", feedback=feedback,
        annotations={"benchmark": NAME, "task_id": task.id, "hop": hop.index},
    )
    assert isinstance(spec, ToolHopSpec)  # from_benchmark builds the class it is called on
    return spec


class ToolHopCatalog:
    """The :class:`tool_specs.Catalog` of ToolHop: a task's endpoint offers its hops' tools (in
    hop order), each running its own code in the sandbox. Specs are built on first use."""

    def __init__(self, name: str = NAME, tasks: Sequence[ToolHopTask] | None = None, *,
                 feedback: Feedback = "detailed", pool: SandboxPool | None = None,
                 limits: SandboxLimits | None = None) -> None:
        if feedback not in FEEDBACK_LEVELS:
            raise ValueError(f"feedback must be one of {', '.join(FEEDBACK_LEVELS)}, got {feedback!r}")
        self.name = name
        self.tasks = {t.id: t for t in (tasks if tasks is not None else load_tasks())}
        self.feedback: Feedback = feedback
        self.pool = pool
        self.limits = limits
        self._specs: dict[str, list[ToolSpec]] = {}
        self._playground: list[ToolSpec] | None = None

    def task(self, task_id: str) -> ToolHopTask:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise TaskNotFound(task_id, self.tasks, catalog=self.name) from None

    def task_ids(self) -> list[str]:
        return list(self.tasks)

    def task_tools(self, task_id: str) -> list[ToolSpec]:
        if task_id not in self._specs:
            task = self.task(task_id)
            self._specs[task_id] = [
                build_spec(task, h, feedback=self.feedback, pool=self.pool, limits=self.limits) for h in task.hops
            ]
        return list(self._specs[task_id])

    def playground_tools(self) -> list[ToolSpec]:
        """Every task's tools; tasks reuse names (with different code), the first one wins."""
        if self._playground is None:
            seen: dict[str, ToolSpec] = {}
            for task_id in self.tasks:
                for spec in self.task_tools(task_id):
                    seen.setdefault(spec.name, spec)
            self._playground = list(seen.values())
        return list(self._playground)

    def stats(self) -> dict[str, Any]:
        tasks = list(self.tasks.values())
        hops: dict[str, int] = {}
        for t in tasks:
            hops[str(t.hop_count)] = hops.get(str(t.hop_count), 0) + 1
        return {
            "tasks": len(tasks),
            "tools": sum(t.hop_count for t in tasks),
            "hops": dict(sorted(hops.items(), key=lambda kv: int(kv[0]))),
            "with_gold_calls": sum(1 for t in tasks if t.gold_calls),
        }
