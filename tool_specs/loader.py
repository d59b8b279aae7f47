"""Load user tool specs from YAML / JSON files.

A spec file (``.yaml``, ``.yml`` or ``.json``) holds one tool mapping, a list of them, or
``{"tools": [...]}``. Each tool mapping has:

* ``name`` (required), ``description``;
* the input schema under ``input_schema`` (or ``parameters`` / ``arguments`` / ``inputSchema``) in
  any of the loose benchmark forms, normalised with :func:`~tool_specs.normalize_schema`; a
  a top-level ``required`` list is merged in;
* ``output_schema`` (or ``response`` / ``responses`` / ``results`` / ``outputSchema``), optional;
* ``executor``: optional, default ``simulated``; e.g. ``{kind: python, target: "pkg.mod:func"}``.
  A ``"file.py:func"`` target is resolved against the spec file's folder. Python targets are
  imported at load time so that a bad target fails here, not on the first call;
* ``validation``: ``strict`` (default) or ``warn``;
* ``annotations``: free metadata.

Every error is a :class:`~tool_specs.SpecLoadError` whose message names the file, and the tool's
index and name when the problem is inside one tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from tool_specs.errors import ExecutorConfigError, SchemaNormalizationError, SpecLoadError
from tool_specs.executors import resolve_executor
from tool_specs.spec import INPUT_SCHEMA_KEYS, OUTPUT_SCHEMA_KEYS, ToolSpec

__all__ = ["SPEC_FILE_SUFFIXES", "load_spec_dir", "load_spec_file", "spec_from_mapping"]

#: File name endings that :func:`load_spec_dir` reads (case-insensitive).
SPEC_FILE_SUFFIXES = (".yaml", ".yml", ".json")
_ALLOWED_KEYS = frozenset(
    {
        "name",
        "description",
        "required",
        "executor",
        "validation",
        "annotations",
        *INPUT_SCHEMA_KEYS,
        *OUTPUT_SCHEMA_KEYS,
    }
)


def _parse(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecLoadError(f"cannot read file: {exc}", path=path) from exc
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecLoadError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path=path
            ) from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecLoadError(f"invalid YAML{where}: {problem}", path=path) from exc


def _entries(document: Any, path: Path) -> list[Any]:
    if document is None:
        raise SpecLoadError(
            "file is empty; expected a tool mapping, a list of tools or {tools: [...]}", path=path
        )
    if isinstance(document, list):
        return document
    if isinstance(document, Mapping):
        if "tools" in document:
            extra = sorted(set(document) - {"tools"})
            if extra:
                raise SpecLoadError(
                    f"a file with a 'tools' list may hold nothing else, but it also has {', '.join(extra)}",
                    path=path,
                )
            tools = document["tools"]
            if not isinstance(tools, list):
                raise SpecLoadError(f"'tools' must be a list, got {type(tools).__name__}", path=path)
            return tools
        return [document]
    raise SpecLoadError(
        f"expected a tool mapping, a list of tools or {{tools: [...]}}, got {type(document).__name__}",
        path=path,
    )


def _describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error.get("loc", ()) if p != "__root__")
        msg = error.get("msg", "")
        msg = msg.removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def spec_from_mapping(
    entry: Any,
    *,
    path: str | Path | None = None,
    index: int | None = None,
    base_dir: str | Path | None = None,
) -> ToolSpec:
    """Build one :class:`ToolSpec` from a spec-file tool mapping (see the module docstring).

    ``path``/``index`` only label errors; ``base_dir`` resolves ``file.py:function`` targets.

    Raises:
        SpecLoadError: missing or bad name, unknown keys, a schema that cannot be normalised, a bad
            executor config or a python target that cannot be imported.
    """

    def fail(message: str, name: str | None = None) -> SpecLoadError:
        return SpecLoadError(message, path=path, tool_index=index, tool_name=name)

    if not isinstance(entry, Mapping):
        raise fail(f"a tool must be a mapping, got {type(entry).__name__}")
    name = entry.get("name")
    if name is None:
        raise fail(f"tool has no 'name' (keys: {', '.join(map(str, entry)) or 'none'})")
    if not isinstance(name, str):
        raise fail(f"'name' must be a string, got {type(name).__name__}")
    unknown = sorted(str(k) for k in entry if k not in _ALLOWED_KEYS)
    if unknown:
        raise fail(
            f"unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: {', '.join(sorted(_ALLOWED_KEYS))}",
            name,
        )
    for group in (INPUT_SCHEMA_KEYS, OUTPUT_SCHEMA_KEYS):
        present = [k for k in group if k in entry]
        if len(present) > 1:
            raise fail(f"give only one of {', '.join(present)}", name)
    try:
        executor = resolve_executor(entry.get("executor"), base_dir=base_dir)
        resolve = getattr(executor, "resolve", None)
        if callable(resolve):
            resolve()
    except ExecutorConfigError as exc:
        raise fail(f"bad executor: {exc}", name) from exc
    raw = {k: v for k, v in entry.items() if k not in ("executor", "validation", "annotations")}
    overrides: dict[str, Any] = {"executor": executor}
    if "validation" in entry:
        overrides["validation"] = entry["validation"]
    if "annotations" in entry:
        if not isinstance(entry["annotations"], Mapping):
            raise fail("'annotations' must be a mapping", name)
        overrides["annotations"] = dict(entry["annotations"])
    try:
        return ToolSpec.from_benchmark(raw, **overrides)
    except ValidationError as exc:
        raise fail(_describe_validation_error(exc), name) from exc
    except SchemaNormalizationError as exc:
        raise fail(f"invalid schema: {exc}", name) from exc


def load_spec_file(path: str | Path) -> list[ToolSpec]:
    """Load the tools of one ``.yaml``/``.yml``/``.json`` spec file, in file order.

    Raises:
        SpecLoadError: unreadable or unparsable file, a bad tool entry, or one name used twice in
            the file. The message names the file (and the tool index and name).
    """
    file = Path(path)
    if not file.is_file():
        raise SpecLoadError("no such file", path=file)
    if file.suffix.lower() not in SPEC_FILE_SUFFIXES:
        raise SpecLoadError(
            f"unsupported file type {file.suffix!r}; use one of {', '.join(SPEC_FILE_SUFFIXES)}", path=file
        )
    specs: list[ToolSpec] = []
    first_index: dict[str, int] = {}
    for index, entry in enumerate(_entries(_parse(file), file)):
        spec = spec_from_mapping(entry, path=file, index=index, base_dir=file.parent)
        if spec.name in first_index:
            raise SpecLoadError(
                f"tool name {spec.name!r} is used twice in this file (tools #{first_index[spec.name]} and #{index})",
                path=file,
                tool_index=index,
                tool_name=spec.name,
            )
        first_index[spec.name] = index
        specs.append(spec)
    return specs


def load_spec_dir(directory: str | Path) -> list[ToolSpec]:
    """Load every spec file directly inside ``directory`` (not recursive), files sorted by name.

    Only ``.yaml``/``.yml``/``.json`` files are read; other files and dot-files are ignored.

    Raises:
        SpecLoadError: ``directory`` is not a directory, any file fails to load, or two files
            define the same tool name (the message names both files).
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise SpecLoadError("not a directory", path=folder)
    files = sorted(
        (
            p
            for p in folder.iterdir()
            if p.is_file() and p.suffix.lower() in SPEC_FILE_SUFFIXES and not p.name.startswith(".")
        ),
        key=lambda p: p.name,
    )
    specs: list[ToolSpec] = []
    origin: dict[str, Path] = {}
    for file in files:
        for spec in load_spec_file(file):
            if spec.name in origin:
                raise SpecLoadError(
                    f"tool name {spec.name!r} is defined in both {origin[spec.name]} and {file}",
                    path=file,
                    tool_name=spec.name,
                )
            origin[spec.name] = file
            specs.append(spec)
    return specs
