"""Checks a tool spec file's entries must pass before anything is served (see :mod:`tool_specs.loader`).

* **Tool names** follow MCP's tool-name guidance: 1 to 128 characters, each an ASCII letter, a digit,
  ``_``, ``-`` or ``.`` (so no spaces, no ``/``: ``../../etc/passwd`` and ``has space`` are refused).
* **Schemas** given as JSON Schema (``input_schema``/``inputSchema``, ``output_schema``/``outputSchema``)
  must be valid against the JSON Schema meta-schema of their draft (``$schema``, default 2020-12):
  ``type: strng`` or ``minimum: "one"`` is an error, not a constraint silently dropped; so is a
  ``$ref`` that is not local (``#...``): a schema is never fetched from a URL or a file. Loose
  benchmark forms (``parameters``, ``arguments``, ``response`` ...) are normalised, but a type or
  keyword value that normalisation would have to drop is an error there too.
* **Sandbox code** (``executor: {kind: sandbox, code: ...}`` or ``file: ...``) must compile.

Each check returns the problems it found (an empty list when there are none); the loader reports
every problem of every file at once. The same rules hold for the tools an MCP server lists and a
recording replays (:func:`listed_tool_problems`, used by :mod:`server.upstream`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tool_specs._schema_refs import nonlocal_ref_message, nonlocal_refs
from tool_specs.bounded_read import LineTooLong, bounded_bytes

__all__ = [
    "TOOL_NAME_RULE",
    "listed_tool_problems",
    "sandbox_code_problems",
    "schema_problems",
    "tool_name_problem",
]

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
    meta-schema of its draft (``$schema``; default draft 2020-12; the message ends "(not a valid JSON
    Schema)"), and every ``$ref`` that is not local (the path ends with the keyword)."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    if not isinstance(schema, Mapping | bool):
        return [([], f"a schema must be a mapping, got {type(schema).__name__}")]
    try:
        cls = validator_for(schema, default=Draft202012Validator)
    except Exception as exc:  # an unknown $schema
        return [(["$schema"], f"unknown $schema: {exc}")]
    errors = sorted(cls(cls.META_SCHEMA).iter_errors(schema), key=lambda e: [str(p) for p in e.absolute_path])
    found: list[tuple[list[Any], str]] = [
        (list(e.absolute_path), f"{_message(e)} (not a valid JSON Schema)") for e in errors
    ]
    found += [(where, nonlocal_ref_message(str(where[-1]), ref)) for where, ref in nonlocal_refs(schema)]
    return found


_MAX_LISTED_PROBLEMS = 5


def listed_tool_problems(name: object, input_schema: object, output_schema: object) -> list[str]:
    """Why a tool that an MCP server lists (or a recording of one replays) may not be served: the
    rules of a spec file's ``name``, ``inputSchema`` and ``outputSchema`` (:func:`tool_name_problem`,
    :func:`schema_problems`). At most five problems per schema, then a count of the rest."""
    problems: list[str] = []
    problem = tool_name_problem(name) if isinstance(name, str) else f"the tool name must be a string, got {type(name).__name__}"
    if problem is not None:
        problems.append(problem)
    for key, schema in (("inputSchema", input_schema), ("outputSchema", output_schema)):
        if schema is None and key == "outputSchema":
            continue
        found = schema_problems(schema)
        problems += [f"{'.'.join([key, *map(str, where)])}: {message}" for where, message in found[:_MAX_LISTED_PROBLEMS]]
        if len(found) > _MAX_LISTED_PROBLEMS:
            problems.append(f"{key}: {len(found) - _MAX_LISTED_PROBLEMS} more problem(s)")
    return problems


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
            code = bounded_bytes(file).decode("utf-8")  # untrusted: no more than MAX_LINE_BYTES read
        except (OSError, UnicodeDecodeError, LineTooLong) as exc:
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
