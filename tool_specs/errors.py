"""Exceptions raised by :mod:`tool_specs`."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ExecutorConfigError", "SchemaNormalizationError", "SpecLoadError", "SpecLoadErrors"]


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
        line: int | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.tool_index = tool_index
        self.tool_name = tool_name
        self.line = line
        self.detail = message
        where = []
        if path is not None:
            where.append(f"{path}:{line}" if line is not None else str(path))
        if tool_index is not None:
            where.append(f"tool #{tool_index}" + (f" ({tool_name!r})" if tool_name else ""))
        elif tool_name:
            where.append(f"tool {tool_name!r}")
        prefix = ": ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class SpecLoadErrors(SpecLoadError):
    """Every problem found in one or more tool spec files (each a :class:`SpecLoadError` in
    :attr:`problems`, in file order). The message is one line per problem (the problem's own
    message when there is only one)."""

    def __init__(self, problems: list[SpecLoadError]) -> None:
        if not problems:
            raise ValueError("SpecLoadErrors needs at least one problem")
        self.problems = list(problems)
        first = problems[0]
        super().__init__(first.detail, path=first.path, tool_index=first.tool_index, tool_name=first.tool_name,
                         line=first.line)
        if len(problems) > 1:
            files = len({str(p.path) for p in problems})
            lines = [f"{len(problems)} problems in {files} tool spec file(s):", *(str(p) for p in problems)]
            self.args = ("\n".join(lines),)

    def __str__(self) -> str:
        return str(self.args[0])

    @classmethod
    def of(cls, errors: list[SpecLoadError]) -> SpecLoadErrors:
        """One :class:`SpecLoadErrors` of ``errors``, each flattened (a ``SpecLoadErrors`` adds its problems)."""
        flat: list[SpecLoadError] = []
        for error in errors:
            flat.extend(error.problems if isinstance(error, SpecLoadErrors) else [error])
        return cls(flat)
