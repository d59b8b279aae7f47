"""Prompts a benchmark offers to MCP clients (``prompts/list``, ``prompts/get``).

The server imports no benchmark: a benchmark hands it :class:`PromptSpec` objects (through its
plugin's optional ``prompts()`` hook, see ``evals.core.plugin``), each rendering the benchmark's
own published prompt text from the arguments a user fills in. An argument may say what completes
it (``completes``: ``"entity"``, ``"relation"`` or ``"task_id"``), which ``completion/complete``
uses to offer names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from mcp import types

from tool_specs import shown_name

__all__ = ["TASK_ARGUMENT", "Completes", "PromptArgument", "PromptError", "PromptSpec"]

Completes = Literal["entity", "relation", "task_id"]


class PromptError(ValueError):
    """A prompt cannot be rendered from the given arguments (the message says why); an MCP invalid-params error."""


@dataclass(frozen=True)
class PromptArgument:
    """One argument of a prompt; ``task_id`` arguments default to the task of a task endpoint."""

    name: str
    description: str
    required: bool = True
    completes: Completes | None = None


TASK_ARGUMENT = PromptArgument("task_id", "The task (default: the endpoint's task)", required=False, completes="task_id")


@dataclass(frozen=True)
class PromptSpec:
    """A benchmark prompt: ``render(arguments)`` returns the text of the user message.

    ``render`` gets every argument as a string (the endpoint's task id filled in for an absent
    ``task_id`` on a task endpoint) and raises :class:`PromptError` for one it cannot use.
    """

    name: str
    title: str
    description: str
    render: Callable[[Mapping[str, str]], str]
    arguments: Sequence[PromptArgument] = field(default_factory=tuple)

    @classmethod
    def for_task(cls, name: str, title: str, description: str, render: Callable[[str], str]) -> PromptSpec:
        """A prompt of one task (argument ``task_id``): ``render(task_id)`` raises LookupError for an unknown one."""

        def rendered(args: Mapping[str, str]) -> str:
            task_id = args.get("task_id", "")
            try:
                return render(task_id)
            except LookupError:
                raise PromptError(f"prompt {name!r}: unknown task {shown_name(task_id)}") from None

        return cls(name=name, title=title, description=description, render=rendered, arguments=(TASK_ARGUMENT,))

    def to_mcp(self) -> types.Prompt:
        return types.Prompt(
            name=self.name,
            title=self.title,
            description=self.description,
            arguments=[
                types.PromptArgument(name=a.name, description=a.description, required=a.required)
                for a in self.arguments
            ],
        )

    def get(self, arguments: Mapping[str, str] | None, task_id: str | None = None) -> types.GetPromptResult:
        """The rendered prompt; :class:`PromptError` for a missing or unusable argument."""
        given = dict(arguments or {})
        known = {a.name for a in self.arguments}
        unknown = sorted(set(given) - known)
        if unknown:
            raise PromptError(
                f"prompt {self.name!r} has no argument {', '.join(map(repr, unknown))}; "
                f"its arguments: {', '.join(sorted(known)) or '(none)'}"
            )
        if task_id is not None and "task_id" in known and not given.get("task_id"):
            given["task_id"] = task_id
        missing = [a.name for a in self.arguments if a.required and not given.get(a.name)]
        if missing:
            raise PromptError(f"prompt {self.name!r} needs argument(s) {', '.join(missing)}")
        text = self.render(given)
        return types.GetPromptResult(
            description=self.description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )
