"""What the generic parts of ``tool_specs`` need from a tool, and what an executor is.

:class:`ToolLike` is the read-only view of a tool that executors, argument validation and call
matching use; :class:`~tool_specs.ToolSpec` satisfies it. Defining it here, below everything else,
keeps ``spec`` (which builds on executors and validation) out of their imports: the package has no
import cycle, not even one under ``TYPE_CHECKING``. This module imports only :mod:`tool_specs.results`.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from tool_specs.results import CallContext, ToolResult

__all__ = ["Executor", "ExecutorReturn", "Policy", "ToolLike"]

#: The argument policy of a tool: ``"strict"`` (schema violations are errors) or ``"warn"``.
Policy = Literal["strict", "warn"]

#: What an executor may return: a :class:`ToolResult`, a ``dict`` (structured result) or a ``str`` (text).
ExecutorReturn = ToolResult | dict[str, Any] | str


class ToolLike(Protocol):
    """A tool as executors, validation and matching see it (:class:`~tool_specs.ToolSpec` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def input_schema(self) -> dict[str, Any]: ...

    @property
    def output_schema(self) -> dict[str, Any] | None: ...

    @property
    def advertised_output_schema(self) -> dict[str, Any] | None: ...

    @property
    def validation(self) -> Policy: ...

    @property
    def executor(self) -> Executor: ...

    async def call(self, arguments: object, ctx: CallContext | None = None) -> ToolResult:
        """Validate ``arguments`` and run the executor; never raises."""
        ...


@runtime_checkable
class Executor(Protocol):
    """Answers calls to a tool. Arguments have already been validated (per the spec's policy).

    Return a :class:`ToolResult`, a ``dict`` (structured result) or a ``str`` (text). Raising is
    allowed: :meth:`ToolSpec.call <tool_specs.ToolSpec.call>` turns any exception into an error result.
    An executor may also define ``output_schema_for(spec) -> dict | None`` when the structured
    results it returns are not shaped like ``spec.output_schema`` (the simulated executor wraps them
    in an envelope); the server then advertises that schema.
    """

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ExecutorReturn:
        """Run one call."""
        ...
