"""The variables of a task-file run: ``${NAME}`` in the task file and the MCP servers' command lines
takes its value from ``--var NAME=VALUE`` (repeatable), else from the environment when the name is
allowed with ``--allow-env NAME`` (repeatable; no other environment variable is read: a task file is
untrusted and could name ``PGPASSWORD`` or ``DATABASE_URL``).

What the run's ``config.json`` records: a ``--var`` value as given (it is one of the options), and
for a variable read from the environment only its name and the SHA-256 of its value (under
``variables``), so that two runs with different values are told apart. A name that looks like a
secret's (``OPENAI_API_KEY``, ``GH_TOKEN``, ``DB_PASSWORD``...) is refused, from ``--var`` and from
the environment alike: its value would be written into queries, tool calls, traces and ``config.json``
(a secret goes to an MCP server through its ``env``: there, and only there, a secret-like name is
read from the environment, and ``config.json`` records nothing of it).

Two names are the run's own: ``${TASK_DIR}``, the task file's folder (absolute), and
``${EPISODE_DIR}``, the episode's own folder (made afresh for every episode, with the task's
``setup.files`` copied in). The task file is read with ``${EPISODE_DIR}`` left as a marker
(:data:`EPISODE_MARK`) that :func:`fill_episode_dir` replaces once the episode's folder exists (and
scoring, from the folder the trace recorded).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

from tool_specs import VARIABLE_NAME, environment_value, looks_secret

__all__ = ["EPISODE_DIR", "EPISODE_MARK", "TASK_DIR", "TaskVariables", "allow_env_problem", "fill_episode_dir", "names_episode_dir",
           "var_problem"]

EPISODE_DIR = "EPISODE_DIR"
TASK_DIR = "TASK_DIR"
EPISODE_MARK = "\x00EPISODE_DIR\x00"
"""What ``${EPISODE_DIR}`` reads as until an episode's folder exists."""


def fill_episode_dir(value: Any, folder: str | None) -> Any:
    """``value`` with every ``${EPISODE_DIR}`` marker replaced by ``folder`` (strings, lists and mapping values)."""
    if folder is None:
        return value
    if isinstance(value, str):
        return value.replace(EPISODE_MARK, folder)
    if isinstance(value, Mapping):
        return {k: fill_episode_dir(v, folder) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [fill_episode_dir(v, folder) for v in value]
    return value


def names_episode_dir(value: Any) -> bool:
    """Does ``value`` use ``${EPISODE_DIR}`` anywhere (after expansion)?"""
    if isinstance(value, str):
        return EPISODE_MARK in value
    if isinstance(value, Mapping):
        return any(names_episode_dir(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(names_episode_dir(v) for v in value)
    return False


def var_problem(text: str | None) -> str | None:
    """What is wrong with one ``--var`` value (``NAME=VALUE``), or None."""
    if text is None:
        return None
    name, eq, _value = text.partition("=")
    if not eq:
        return f"expected NAME=VALUE, got {text!r}"
    if not VARIABLE_NAME.match(name):
        return f"{name!r} is not a variable name (a letter or _, then letters, digits or _)"
    if name in (EPISODE_DIR, TASK_DIR):
        return f"{name!r} is the run's own variable (the episode's folder, the task file's folder); pick another name"
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
                 allowed: Sequence[str] | None = None, *, task_dir: str | None = None):
        self.given: dict[str, str] = {}
        for item in given or ():
            name, _, value = item.partition("=")
            if name in self.given and self.given[name] != value:
                raise ValueError(f"--var {name} is given twice, with different values")
            self.given[name] = value
        self.environ = os.environ if environ is None else environ
        self.allowed = frozenset(allowed or ())
        self.from_environment: dict[str, str] = {}
        self.task_dir = task_dir

    def __call__(self, name: str) -> str | None:
        if name == EPISODE_DIR:
            return EPISODE_MARK
        if name == TASK_DIR and self.task_dir is not None:
            return self.task_dir
        if name in self.given:
            return self.given[name]
        value = environment_value(name, self.environ, self.allowed)  # SecretVariable: a secret-like name is refused
        if value is not None:
            self.from_environment[name] = value
        return value

    def for_env(self, name: str) -> str | None:
        """A value for ``${NAME}`` in an MCP server's ``env``: as :meth:`__call__`, but a secret-like name is
        read from the environment (that is where a secret goes) and recorded nowhere."""
        if looks_secret(name) and name not in self.given:
            return self.environ.get(name)
        return self(name)

    def recorded(self) -> dict[str, Any]:
        """``{NAME: {"from": "--var", "value": ...} or {"from": "environment", "sha256": ...}}``."""
        out: dict[str, Any] = {name: {"from": "--var", "value": value} for name, value in sorted(self.given.items())}
        for name, value in sorted(self.from_environment.items()):
            out[name] = {"from": "environment", "sha256": hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()}
        return out
