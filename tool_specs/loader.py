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

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from tool_specs.bounded_read import LineTooLong, bounded_bytes
from tool_specs.errors import ExecutorConfigError, SchemaNormalizationError, SpecLoadError, SpecLoadErrors
from tool_specs.executors import resolve_executor
from tool_specs.safe_load import DocumentError, load_json, load_yaml
from tool_specs.spec import INPUT_SCHEMA_KEYS, OUTPUT_SCHEMA_KEYS, ToolSpec
from tool_specs.spec_checks import sandbox_code_problems, schema_problems, tool_name_problem

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


def _read(path: Path) -> str:
    """The text of a spec file, read under :data:`~tool_specs.bounded_read.MAX_LINE_BYTES` (untrusted)."""
    try:
        return bounded_bytes(path).decode("utf-8")
    except LineTooLong as exc:
        raise SpecLoadError(exc.problem, path=path, line=exc.lineno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecLoadError(f"cannot read file: {exc}", path=path) from exc


def _parse(path: Path, text: str | None = None) -> tuple[Any, yaml.Node | None]:
    """The file's document and its YAML node tree (for line numbers; a JSON file is read as YAML for
    them too, None where that fails), through :mod:`tool_specs.safe_load`'s bounds."""
    if text is None:
        text = _read(path)
    try:
        if path.suffix.lower() != ".json":
            return load_yaml(text, path)
        document = load_json(text, path)
    except DocumentError as exc:
        raise SpecLoadError(exc.problem, path=path, line=exc.line) from None
    try:
        return document, load_yaml(text)[1]
    except DocumentError:
        return document, None


def _entry_nodes(root: yaml.Node | None) -> list[yaml.Node]:
    """The YAML nodes of a file's tool entries, or none."""
    if isinstance(root, yaml.SequenceNode):
        return list(root.value)
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "tools" and isinstance(value, yaml.SequenceNode):
                return list(value.value)
        return [root]
    return []


def _node_at(node: yaml.Node | None, path: Sequence[Any]) -> tuple[yaml.Node | None, int | None]:
    """The node at ``path`` below ``node`` (as deep as it goes) and the line (1-based) of the key that
    leads to it (of the node itself for list items)."""
    if node is None:
        return None, None
    line = node.start_mark.line + 1
    for step in path:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(step)), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            break
    return node, line


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


#: keys whose value must already be JSON Schema (checked against the meta-schema); the other schema
#: keys take the loose benchmark forms
_JSON_SCHEMA_KEYS = ("input_schema", "inputSchema", "output_schema", "outputSchema")
#: normalisation notes that mean a constraint was dropped (an unknown type, an invalid keyword value)
_DROPPED = ("unknown type", "had an invalid value")


def spec_from_mapping(
    entry: Any,
    *,
    path: str | Path | None = None,
    index: int | None = None,
    base_dir: str | Path | None = None,
    node: yaml.Node | None = None,
) -> ToolSpec:
    """Build one :class:`ToolSpec` from a spec-file tool mapping (see the module docstring).

    ``path``/``index`` only label errors; ``base_dir`` resolves ``file.py:function`` targets;
    ``node`` (the entry's YAML node) gives problems their line numbers.

    Raises:
        SpecLoadErrors: every problem of the entry (a :class:`SpecLoadError`): missing or bad name
            (MCP's tool-name rules), unknown keys, a JSON Schema that breaks the meta-schema, a schema
            that cannot be normalised, a bad executor config, a python target that cannot be imported,
            sandbox code that does not compile.
    """
    problems: list[SpecLoadError] = []
    shown_name: str | None = None

    def fail(message: str, *where: Any, line: int | None = None) -> None:
        at = line if line is not None else _node_at(node, where)[1]
        problems.append(SpecLoadError(message, path=path, tool_index=index, tool_name=shown_name, line=at))

    if not isinstance(entry, Mapping):
        fail(f"a tool must be a mapping, got {type(entry).__name__}")
        raise SpecLoadErrors(problems)
    name = entry.get("name")
    if name is None:
        fail(f"tool has no 'name' (keys: {', '.join(map(str, entry)) or 'none'})")
    elif not isinstance(name, str):
        fail(f"'name' must be a string, got {type(name).__name__}", "name")
    else:
        shown_name = name
        problem = tool_name_problem(name)
        if problem is not None:
            fail(problem, "name")
    unknown = sorted(str(k) for k in entry if k not in _ALLOWED_KEYS)
    if unknown:
        fail(f"unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: {', '.join(sorted(_ALLOWED_KEYS))}",
             unknown[0])
    for group in (INPUT_SCHEMA_KEYS, OUTPUT_SCHEMA_KEYS):
        present = [k for k in group if k in entry]
        if len(present) > 1:
            fail(f"give only one of {', '.join(present)}", present[1])
    for key in _JSON_SCHEMA_KEYS:
        if key in entry and isinstance(entry[key], Mapping):
            for where, message in schema_problems(entry[key]):
                shown = ".".join([key, *map(str, where)])
                fail(f"{shown}: {message}", key, *where)
    executor: Any = None
    base = Path(base_dir) if base_dir is not None else None
    try:
        executor = resolve_executor(entry.get("executor"), base_dir=base_dir)
        resolve = getattr(executor, "resolve", None)
        if callable(resolve):
            resolve()
    except ExecutorConfigError as exc:
        fail(f"bad executor: {exc}", "executor")
    for code_line, message in sandbox_code_problems(entry.get("executor"), base):
        code_node, key_line = _node_at(node, ["executor", "code"])
        line = key_line
        if code_line is not None and isinstance(code_node, yaml.ScalarNode) and code_node.style in ("|", ">"):
            line = code_node.start_mark.line + 1 + code_line  # a block scalar starts on the next line
        fail(f"bad executor: {message}", "executor", line=line if "code" in (entry.get("executor") or {}) else None)
    if "annotations" in entry and not isinstance(entry["annotations"], Mapping):
        fail("'annotations' must be a mapping", "annotations")
    if problems:
        raise SpecLoadErrors(problems)
    raw = {k: v for k, v in entry.items() if k not in ("executor", "validation", "annotations")}
    overrides: dict[str, Any] = {"executor": executor}
    if "validation" in entry:
        overrides["validation"] = entry["validation"]
    if "annotations" in entry:
        overrides["annotations"] = dict(entry["annotations"])
    schema_key = [k for k in (*INPUT_SCHEMA_KEYS, *OUTPUT_SCHEMA_KEYS) if k in entry][:1]  # a problem's line
    try:
        spec = ToolSpec.from_benchmark(raw, **overrides)
    except ValidationError as exc:
        field = next((str(e["loc"][0]) for e in exc.errors() if e.get("loc") and str(e["loc"][0]) in entry), None)
        fail(_describe_validation_error(exc), *([field] if field is not None else schema_key))
        raise SpecLoadErrors(problems) from exc
    except SchemaNormalizationError as exc:
        fail(f"invalid schema: {exc}", *schema_key)
        raise SpecLoadErrors(problems) from exc
    for note in spec.normalization_notes:
        if any(phrase in note for phrase in _DROPPED):
            fail(f"schema: {note}; fix the schema (a spec file's schema is used as written, never loosened)",
                 *schema_key)
    if problems:
        raise SpecLoadErrors(problems)
    return spec


def load_spec_file(path: str | Path) -> list[ToolSpec]:
    """Load the tools of one ``.yaml``/``.yml``/``.json`` spec file, in file order.

    Raises:
        SpecLoadErrors: every problem of the file (each tool is checked; see :func:`spec_from_mapping`),
            including a name used twice in it; each problem names the file, the line where known, and
            the tool's index and name.
    """
    specs, problems, _ = _load_file(Path(path))
    if problems:
        raise SpecLoadErrors.of(problems)
    return specs


def _load_file(file: Path) -> tuple[list[ToolSpec], list[SpecLoadError], list[str]]:
    """The tools of one spec file that load, the problems of the file, and every tool name it gives
    (loaded or not; each once)."""
    if not file.is_file():
        return [], [SpecLoadError("no such file", path=file)], []
    if file.suffix.lower() not in SPEC_FILE_SUFFIXES:
        return [], [SpecLoadError(
            f"unsupported file type {file.suffix!r}; use one of {', '.join(SPEC_FILE_SUFFIXES)}", path=file
        )], []
    try:
        document, root = _parse(file)
        entries = _entries(document, file)
    except SpecLoadError as exc:
        return [], [exc], []
    nodes = _entry_nodes(root)
    specs: list[ToolSpec] = []
    problems: list[SpecLoadError] = []
    first_index: dict[str, int] = {}
    for index, entry in enumerate(entries):
        node = nodes[index] if index < len(nodes) else None
        name = entry.get("name") if isinstance(entry, Mapping) else None
        twice = isinstance(name, str) and name in first_index
        try:
            spec = spec_from_mapping(entry, path=file, index=index, base_dir=file.parent, node=node)
        except SpecLoadError as exc:
            problems.append(exc)
            spec = None
        if isinstance(name, str) and twice:
            problems.append(SpecLoadError(
                f"tool name {name!r} is used twice in this file (tools #{first_index[name]} and #{index})",
                path=file, tool_index=index, tool_name=name, line=_node_at(node, ["name"])[1],
            ))
            continue
        if isinstance(name, str):
            first_index[name] = index
        if spec is not None:
            specs.append(spec)
    return specs, problems, list(first_index)


def load_spec_dir(
    directory: str | Path,
    *,
    suffixes: tuple[str, ...] = SPEC_FILE_SUFFIXES,
    load_file: Callable[[Path], tuple[list[ToolSpec], list[SpecLoadError], list[str]]] | None = None,
) -> list[ToolSpec]:
    """Load every spec file directly inside ``directory`` (not recursive), files sorted by name.

    Only ``suffixes`` files (default ``.yaml``/``.yml``/``.json``) are read; other files and dot-files
    are ignored. ``load_file(path)`` gives a file's tools that load, its problems and every tool name it
    gives (default: this project's spec format; :func:`tool_specs.load_tool_dir` reads other formats too).

    Raises:
        SpecLoadErrors: ``directory`` is not a directory, or the problems of every file (each tool of
            each file is checked), including a tool name defined in two files (naming both).
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise SpecLoadErrors([SpecLoadError("not a directory", path=folder)])
    files = sorted(
        (
            p
            for p in folder.iterdir()
            if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith(".")
        ),
        key=lambda p: p.name,
    )
    specs: list[ToolSpec] = []
    problems: list[SpecLoadError] = []
    origin: dict[str, Path] = {}
    for file in files:
        loaded, found, names = (load_file or _load_file)(file)
        problems.extend(found)
        for name in names:
            if name in origin:
                problems.append(SpecLoadError(
                    f"tool name {name!r} is defined in both {origin[name]} and {file}", path=file, tool_name=name,
                ))
            else:
                origin[name] = file
        specs.extend(spec for spec in loaded if origin[spec.name] == file)
    if problems:
        raise SpecLoadErrors.of(problems)
    return specs
