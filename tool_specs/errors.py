"""Exceptions raised by :mod:`tool_specs`."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ExecutorConfigError", "SchemaNormalizationError", "SpecLoadError"]


class SchemaNormalizationError(ValueError):
    """A raw tool schema cannot be turned into a valid JSON Schema without losing its meaning.

    Raised, for example, when the root of an input schema is not an object, or when a list of
    properties holds an entry without a name.
    """


class ExecutorConfigError(ValueError):
    """An executor configuration is invalid: unknown kind, bad options, or a target that cannot be imported."""


class SpecLoadError(Exception):
    """A tool spec file (or directory) cannot be loaded.

    The message always names the file, and, when the problem is inside one tool entry, the
    entry's index and name. The parts are also available as attributes.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        tool_index: int | None = None,
        tool_name: str | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.tool_index = tool_index
        self.tool_name = tool_name
        self.detail = message
        where = []
        if path is not None:
            where.append(str(path))
        if tool_index is not None:
            where.append(f"tool #{tool_index}" + (f" ({tool_name!r})" if tool_name else ""))
        elif tool_name:
            where.append(f"tool {tool_name!r}")
        prefix = ": ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
