"""The variables of a task-file run: ``${NAME}`` in the task file and the MCP servers' command lines
takes its value from ``--var NAME=VALUE`` (repeatable), else from the environment when the name is
allowed with ``--allow-env NAME`` (repeatable; no other environment variable is read: a task file is
untrusted and could name ``PGPASSWORD`` or ``DATABASE_URL``).

What the run's ``config.json`` records: a ``--var`` value as given (it is one of the options), and
for a variable read from the environment only its name and the SHA-256 of its value (under
``variables``), so that two runs with different values are told apart. A name that looks like a
secret's (``OPENAI_API_KEY``, ``GH_TOKEN``, ``DB_PASSWORD``...) is refused, from ``--var`` and from
the environment alike: its value would be written into queries, tool calls, traces and ``config.json``
(a secret goes to an MCP server through its ``env`` or ``headers``, which are never expanded).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

from tool_specs import VARIABLE_NAME, environment_value, looks_secret

__all__ = ["TaskVariables", "allow_env_problem", "var_problem"]


def var_problem(text: str | None) -> str | None:
    """What is wrong with one ``--var`` value (``NAME=VALUE``), or None."""
    if text is None:
        return None
    name, eq, _value = text.partition("=")
    if not eq:
        return f"expected NAME=VALUE, got {text!r}"
    if not VARIABLE_NAME.match(name):
        return f"{name!r} is not a variable name (a letter or _, then letters, digits or _)"
    if looks_secret(name):
        return (f"{name!r} looks like a secret's name: its value would be written into queries, calls, traces "
                "and config.json; give a secret to the MCP server through its env or headers instead")
    return None


def allow_env_problem(name: str | None) -> str | None:
    """What is wrong with one ``--allow-env`` name, or None."""
    if name is None or VARIABLE_NAME.match(name):
        return None
    return f"{name!r} is not a variable name (a letter or _, then letters, digits or _)"


class TaskVariables:
    """``--var`` values, then the environment variables named in ``allowed``; remembers which were read."""

    def __init__(self, given: Sequence[str] | None, environ: Mapping[str, str] | None = None,
                 allowed: Sequence[str] | None = None):
        self.given: dict[str, str] = {}
        for item in given or ():
            name, _, value = item.partition("=")
            if name in self.given and self.given[name] != value:
                raise ValueError(f"--var {name} is given twice, with different values")
            self.given[name] = value
        self.environ = os.environ if environ is None else environ
        self.allowed = frozenset(allowed or ())
        self.from_environment: dict[str, str] = {}

    def __call__(self, name: str) -> str | None:
        if name in self.given:
            return self.given[name]
        value = environment_value(name, self.environ, self.allowed)  # SecretVariable: a secret-like name is refused
        if value is not None:
            self.from_environment[name] = value
        return value

    def recorded(self) -> dict[str, Any]:
        """``{NAME: {"from": "--var", "value": ...} or {"from": "environment", "sha256": ...}}``."""
        out: dict[str, Any] = {name: {"from": "--var", "value": value} for name, value in sorted(self.given.items())}
        for name, value in sorted(self.from_environment.items()):
            out[name] = {"from": "environment", "sha256": hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()}
        return out
