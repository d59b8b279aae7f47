"""Tool definitions in the formats users already have, read as spec files.

* **OpenAI function tools** (JSON): a list of ``{"type": "function", "function": {"name",
  "description", "parameters": <JSON Schema>, "strict"?}}`` (Chat Completions), or the flat
  Responses form ``{"type": "function", "name", "description", "parameters"}``; also wrapped as
  ``{"tools": [...]}``.
* **BFCL function docs** (JSON list, or JSON Lines with one function per line, as the Berkeley
  Function Calling Leaderboard ships them): ``{"name": "math.factorial", "description",
  "parameters": {"type": "dict", "properties": {...}, "required": [...]}}``; BFCL's Python type
  names (``dict``, ``float``, ``tuple``, ``any``) are mapped to JSON Schema by
  :func:`~tool_specs.normalize_schema`.

Both become ordinary :class:`~tool_specs.ToolSpec` values answered by the ``simulated`` executor;
``annotations["format"]`` says where a tool came from. :func:`load_tool_file` reads any spec file
(these two formats, and the project's own, through :func:`~tool_specs.load_spec_file`);
:func:`load_tool_dir` a folder of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tool_specs.errors import SpecLoadError, SpecLoadErrors
from tool_specs.loader import (
    SPEC_FILE_SUFFIXES,
    _entry_nodes,
    _load_file,
    _node_at,
    load_spec_dir,
    load_spec_file,
    spec_from_mapping,
)
from tool_specs.loader import (
    _read as _read_text,
)
from tool_specs.safe_load import DocumentError, load_json, load_yaml
from tool_specs.spec import ToolSpec

__all__ = ["TOOL_FILE_SUFFIXES", "detect_tool_format", "load_tool_dir", "load_tool_file"]

#: What :func:`load_tool_dir` reads: the spec files, plus JSON Lines (BFCL).
TOOL_FILE_SUFFIXES = (*SPEC_FILE_SUFFIXES, ".jsonl")


def _items(document: Any) -> list[Any] | None:
    if isinstance(document, Mapping) and set(document) == {"tools"} and isinstance(document["tools"], list):
        return list(document["tools"])
    if isinstance(document, list):
        return document
    if isinstance(document, Mapping):
        return [document]
    return None


def _is_openai(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") == "function" and (
        isinstance(item.get("function"), Mapping) or "parameters" in item)


def _is_bfcl(item: Any) -> bool:
    params = item.get("parameters") if isinstance(item, Mapping) else None
    return isinstance(params, Mapping) and params.get("type") == "dict" and "name" in item


def detect_tool_format(document: Any) -> str | None:
    """``"openai"``, ``"bfcl"`` or ``None`` (the project's own format, or not tools at all)."""
    items = _items(document)
    if not items:
        return None
    if all(_is_openai(i) for i in items):
        return "openai"
    if all(_is_bfcl(i) for i in items):
        return "bfcl"
    return None


def _openai_entry(item: Mapping[str, Any]) -> dict[str, Any]:
    fn = item["function"] if isinstance(item.get("function"), Mapping) else item
    unknown = sorted(set(fn) - {"type", "name", "description", "parameters", "strict"})
    if unknown:
        raise ValueError(f"unknown key(s) in an OpenAI function: {', '.join(unknown)}")
    out: dict[str, Any] = {"name": fn.get("name"), "annotations": {"format": "openai"}}
    if fn.get("description") is not None:
        out["description"] = fn["description"]
    out["input_schema"] = fn.get("parameters") or {"type": "object", "properties": {}}
    if fn.get("strict") is not None:
        out["annotations"]["strict"] = bool(fn["strict"])
    return out


def _bfcl_entry(item: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(item) - {"name", "description", "parameters", "response"})
    if unknown:
        raise ValueError(f"unknown key(s) in a BFCL function: {', '.join(unknown)}")
    out: dict[str, Any] = {"name": item.get("name"), "annotations": {"format": "bfcl"},
                           "parameters": dict(item["parameters"])}  # a loose form: BFCL type names normalised
    if item.get("description") is not None:
        out["description"] = item["description"]
    if item.get("response") is not None:
        out["response"] = item["response"]
    return out


def _read(path: Path) -> Any:
    text = _read_text(path)
    try:
        if path.suffix.lower() == ".jsonl":
            return [load_json(line, path, line=number) for number, line in enumerate(text.splitlines(), 1)
                    if line.strip()]
        if path.suffix.lower() != ".json":
            return None
        return load_json(text, path)
    except DocumentError as exc:
        if path.suffix.lower() == ".json" and exc.problem.startswith("invalid JSON"):
            return None  # the project's loader reports it with its own message
        raise SpecLoadError(exc.problem, path=path, line=exc.line) from None


def _item_nodes(path: Path, count: int) -> list[yaml.Node | None]:
    """The YAML node of each tool of a ``.json`` file (its problems get their lines from them; a JSON
    document is YAML too), or Nones (a ``.jsonl`` file: each tool's line is its line number)."""
    if path.suffix.lower() == ".json":
        try:
            nodes: list[yaml.Node | None] = list(_entry_nodes(load_yaml(_read_text(path))[1]))
        except (DocumentError, SpecLoadError):
            nodes = []
        if len(nodes) == count:
            return nodes
    return [None] * count


def _as_entry_node(node: yaml.Node | None, kind: str) -> yaml.Node | None:
    """``node`` seen as the entry :func:`_openai_entry` / :func:`_bfcl_entry` makes of it (the keys it
    renames), so that a problem at ``input_schema...`` finds its line under ``function.parameters...``."""
    if kind == "openai":
        fn, _ = _node_at(node, ["function"])
        node = fn if isinstance(fn, yaml.MappingNode) else node
        if isinstance(node, yaml.MappingNode):
            renamed = [(yaml.ScalarNode(k.tag, "input_schema", k.start_mark, k.end_mark)
                        if isinstance(k, yaml.ScalarNode) and k.value == "parameters" else k, v) for k, v in node.value]
            return yaml.MappingNode(node.tag, renamed, node.start_mark, node.end_mark)
    return node


def load_tool_file(path: str | Path) -> list[ToolSpec]:
    """The tools of one file: OpenAI function tools or BFCL function docs (see the module doc), or
    a spec file of the project's own format.

    Raises:
        SpecLoadError: the message names the file (and the tool's index and name).
    """
    file = Path(path)
    if not file.is_file():
        raise SpecLoadError("no such file", path=file)
    document = _read(file)
    kind = detect_tool_format(document)
    if kind is None:
        if file.suffix.lower() == ".jsonl":
            raise SpecLoadError("a .jsonl tool file must hold BFCL function docs (one per line)", path=file)
        return load_spec_file(file)
    convert = _openai_entry if kind == "openai" else _bfcl_entry
    specs: list[ToolSpec] = []
    problems: list[SpecLoadError] = []  # every problem of the file, reported at once
    seen: dict[str, int] = {}
    items = _items(document) or []
    nodes = _item_nodes(file, len(items))
    jsonl_lines = [n for n, line in enumerate(_read_text(file).splitlines(), 1) if line.strip()] \
        if file.suffix.lower() == ".jsonl" else []
    for index, item in enumerate(items):
        line = jsonl_lines[index] if index < len(jsonl_lines) else _node_at(nodes[index], [])[1]
        try:
            entry = convert(item)
            spec = spec_from_mapping(entry, path=file, index=index, base_dir=file.parent,
                                     node=_as_entry_node(nodes[index], kind))
        except ValueError as exc:
            problems.append(SpecLoadError(str(exc), path=file, tool_index=index, tool_name=str(item.get("name")),
                                          line=line))
            continue
        except SpecLoadErrors as exc:
            problems.extend(p if p.line is not None else _with_line(p, line) for p in exc.problems)
            continue
        except SpecLoadError as exc:
            problems.append(exc)
            continue
        if spec.name in seen:
            problems.append(SpecLoadError(f"tool name {spec.name!r} is used twice in this file (tools "
                                          f"#{seen[spec.name]} and #{index})", path=file, tool_index=index,
                                          tool_name=spec.name, line=line))
            continue
        seen[spec.name] = index
        specs.append(spec)
    if problems:
        raise SpecLoadErrors.of(problems)
    return specs


def _with_line(problem: SpecLoadError, line: int | None) -> SpecLoadError:
    return SpecLoadError(problem.detail, path=problem.path, tool_index=problem.tool_index, tool_name=problem.tool_name,
                         line=line)


def _load_any(file: Path) -> tuple[list[ToolSpec], list[SpecLoadError], list[str]]:
    """A tool file of any format: its tools that load, its problems, every tool name it gives."""
    try:
        kind = detect_tool_format(_read(file))
    except SpecLoadError as exc:
        return [], [exc], []
    if kind is None and file.suffix.lower() != ".jsonl":
        return _load_file(file)  # the project's own format: problems and names of every tool
    try:
        loaded = load_tool_file(file)
    except SpecLoadError as exc:
        return [], [exc], []
    return loaded, [], [spec.name for spec in loaded]


def load_tool_dir(directory: str | Path) -> list[ToolSpec]:
    """Every tool file directly inside ``directory`` (``.yaml``, ``.yml``, ``.json``, ``.jsonl``),
    files sorted by name; every problem of every file is reported at once (:class:`SpecLoadErrors`),
    a name defined in two files among them (naming both)."""
    return load_spec_dir(directory, suffixes=TOOL_FILE_SUFFIXES, load_file=_load_any)
