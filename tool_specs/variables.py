"""``${NAME}`` variables in the text of a task file or a scripted model's file.

Only the braced form is a variable (a bare ``$NAME`` is left alone: ``$from`` keys, regex anchors);
``NAME`` is a letter or ``_`` then letters, digits or ``_``. ``$${NAME}`` is a literal ``${NAME}``.
Values come from a lookup (``--var`` values, then the environment, in ``evals``); a name the
lookup does not know raises :class:`UndefinedVariable`, which the caller turns into ``FILE:LINE``.
:func:`environment_value` reads one from the environment only when the user allows that name
(``--allow-env NAME``): a task or scripted-model file is untrusted, and many secrets have names no
pattern tells apart (``PGPASSWORD``, ``DATABASE_URL``); its value would end up in queries, tool calls
and traces. A name that looks like a secret's (``..._KEY``, ``..._TOKEN``, ``SECRET``,
``PASSWORD``...) is refused even when allowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = ["VARIABLE_NAME", "SecretVariable", "UndefinedVariable", "environment_value", "expand_value",
           "expand_variables", "looks_secret", "variable_names"]

VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET = re.compile(r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|AUTH|COOKIE)(_|$)", re.I)
_REFERENCE = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}")

Lookup = Callable[[str], "str | None"]


class UndefinedVariable(KeyError):
    """``${NAME}`` with no value."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return (f"${{{self.name}}} is not defined (give --var {self.name}=VALUE, or --allow-env {self.name} to read "
                "it from the environment)")


class SecretVariable(UndefinedVariable):
    """``${NAME}`` where NAME looks like a secret's and would be read from the environment."""

    def __str__(self) -> str:
        return (f"${{{self.name}}} looks like a secret and is not read from the environment (its value would be "
                f"written into queries, calls and traces); pass --var {self.name}=VALUE if you mean it")


def looks_secret(name: str) -> bool:
    """Does ``name`` look like the name of a key, token, password or other credential?"""
    return bool(_SECRET.search(name))


def environment_value(name: str, environ: Mapping[str, str], allowed: Collection[str]) -> str | None:
    """``environ[name]`` when ``name`` is one of the ``allowed`` names (None when unset or not allowed);
    :class:`SecretVariable` when ``name`` looks like a secret's."""
    if looks_secret(name):
        raise SecretVariable(name)
    return environ.get(name) if name in allowed else None


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
