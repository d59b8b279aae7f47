"""Checks a tool spec file's entries must pass before anything is served (see :mod:`tool_specs.loader`).

* **Tool names** follow MCP's tool-name guidance: 1 to 128 characters, each an ASCII letter, a digit,
  ``_``, ``-`` or ``.`` (so no spaces, no ``/``: ``../../etc/passwd`` and ``has space`` are refused).
* **Schemas** given as JSON Schema (``input_schema``/``inputSchema``, ``output_schema``/``outputSchema``)
  must be valid against the JSON Schema meta-schema of their draft (``$schema``, default 2020-12):
  ``type: strng`` or ``minimum: "one"`` is an error, not a constraint silently dropped. Loose
  benchmark forms (``parameters``, ``arguments``, ``response`` ...) are normalised, but a type or
  keyword value that normalisation would have to drop is an error there too.
* **Sandbox code** (``executor: {kind: sandbox, code: ...}`` or ``file: ...``) must compile.

Each check returns the problems it found (an empty list when there are none); the loader reports
every problem of every file at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["TOOL_NAME_RULE", "sandbox_code_problems", "schema_problems", "tool_name_problem"]

TOOL_NAME_RULE = "1 to 128 characters, each a letter A-Z/a-z, a digit, '_', '-' or '.' (MCP's tool-name rules)"
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def tool_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid MCP tool name, or ``None`` when it is one."""
    if _TOOL_NAME.fullmatch(name):
        return None
    if not name:
        return f"the tool name is empty; a tool name is {TOOL_NAME_RULE}"
    if len(name) > 128:
        return f"the tool name is {len(name)} characters long; a tool name is {TOOL_NAME_RULE}"
    bad = sorted({c for c in name if not _TOOL_NAME.fullmatch(c)})
    shown = ", ".join(repr(c) for c in bad[:5])
    return f"tool name {name!r} has the character(s) {shown}; a tool name is {TOOL_NAME_RULE}"


def _message(error: Any) -> str:
    """A meta-schema error's message; for ``type``'s anyOf, the enum alternative (which names the types)."""
    if error.validator == "anyOf" and error.context:
        enum = [c for c in error.context if c.validator == "enum"]
        if enum:
            return str(enum[0].message)
    return str(error.message)


def schema_problems(schema: Any) -> list[tuple[list[Any], str]]:
    """``(path in the schema, what is wrong)`` for every place where ``schema`` breaks the JSON Schema
    meta-schema of its draft (``$schema``; default draft 2020-12)."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    if not isinstance(schema, Mapping | bool):
        return [([], f"a schema must be a mapping, got {type(schema).__name__}")]
    try:
        cls = validator_for(schema, default=Draft202012Validator)
    except Exception as exc:  # an unknown $schema
        return [(["$schema"], f"unknown $schema: {exc}")]
    errors = sorted(cls(cls.META_SCHEMA).iter_errors(schema), key=lambda e: [str(p) for p in e.absolute_path])
    return [(list(e.absolute_path), _message(e)) for e in errors]


def sandbox_code_problems(executor: Any, base_dir: Path | None) -> list[tuple[int | None, str]]:
    """``(line in the code, what is wrong)`` when a ``sandbox`` executor's code does not compile."""
    if not isinstance(executor, Mapping) or executor.get("kind") != "sandbox":
        return []
    code, label = executor.get("code"), "sandbox code"
    if code is None and isinstance(executor.get("file"), str):
        file = Path(executor["file"])
        if not file.is_absolute() and base_dir is not None:
            file = base_dir / file
        label = f"sandbox code file {str(file)!r}"
        try:
            code = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return [(None, f"cannot read {label}: {exc}")]
    if not isinstance(code, str):
        return []
    try:
        compile(code, label, "exec")
    except SyntaxError as exc:
        where = f" at its line {exc.lineno}" if exc.lineno else ""
        return [(exc.lineno, f"{label} does not compile{where}: {exc.msg}")]
    except ValueError as exc:  # e.g. a NUL byte
        return [(None, f"{label} does not compile: {exc}")]
    return []
