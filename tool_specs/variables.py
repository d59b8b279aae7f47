"""``${NAME}`` variables in the text of a task file or a scripted model's file.

Only the braced form is a variable (a bare ``$NAME`` is left alone: ``$from`` keys, regex anchors);
``NAME`` is a letter or ``_`` then letters, digits or ``_``. ``$${NAME}`` is a literal ``${NAME}``.
Values come from a lookup (``--var`` values, then the environment, in ``evals``); a name the
lookup does not know raises :class:`UndefinedVariable`, which the caller turns into ``FILE:LINE``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["VARIABLE_NAME", "UndefinedVariable", "expand_value", "expand_variables", "variable_names"]

VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REFERENCE = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}")

Lookup = Callable[[str], "str | None"]


class UndefinedVariable(KeyError):
    """``${NAME}`` with no value."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"${{{self.name}}} is not defined (give --var {self.name}=VALUE or set it in the environment)"


def variable_names(text: str) -> list[str]:
    """The names of the variables ``text`` uses, in order, each once (escaped ones left out)."""
    return list(dict.fromkeys(m.group(2) for m in _REFERENCE.finditer(text) if not m.group(1)))


def expand_variables(text: str, lookup: Lookup) -> str:
    """``text`` with every ``${NAME}`` replaced by ``lookup(NAME)``; :class:`UndefinedVariable` if it is None."""
    def one(m: re.Match[str]) -> str:
        if m.group(1):
            return "${" + m.group(2) + "}"
        value = lookup(m.group(2))
        if value is None:
            raise UndefinedVariable(m.group(2))
        return value

    return _REFERENCE.sub(one, text) if "$" in text else text


def expand_value(value: Any, lookup: Lookup) -> Any:
    """Every string inside a JSON-like value expanded (mapping keys are left as they are)."""
    if isinstance(value, str):
        return expand_variables(value, lookup)
    if isinstance(value, Mapping):
        return {k: expand_value(v, lookup) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [expand_value(v, lookup) for v in value]
    return value
