"""The task file: JSON Lines or YAML, checked against ``task_file.schema.json`` and for what a schema
cannot say (unique ids, references to earlier calls, gold tools among the offered ones, per-argument
``match`` rules). Every problem is reported at once, each as ``FILE:LINE: task ID: where: what``;
:func:`tool_problems` adds the tool names that no tool source offers (with a did-you-mean).

Variables: ``${NAME}`` in the strings of a task's ``query``, ``messages`` contents, gold call
arguments, ``answer``, ``setup`` (files, call arguments) and ``checks`` (call arguments,
expectations) is replaced by the value the ``variables`` lookup gives (:mod:`tool_specs.variables`);
an undefined one is a problem at its line. ``setup.files`` are paths relative to the task file's
folder; each must exist when the file is read."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tool_specs import (
    DocumentError,
    UndefinedVariable,
    did_you_mean,
    expand_variables,
    load_json,
    load_yaml,
    pattern_groups,
)
from tool_specs.argument_matching import argument_rules
from tool_specs.bounded_read import bounded_text, read_text_lines

from .answers import answer_problem, normalize_answer_spec, oracle_answer
from .checks import expectation_problem
from .variables import fill_episode_dir, names_episode_dir

__all__ = ["SCHEMA_PATH", "GoldCall", "Task", "TaskFileError", "Variables", "is_reference", "load_task_file",
           "problem_line", "read_task_file", "references", "task_file_servers", "task_schema", "tool_problems"]

Variables = Callable[[str], "str | None"]
"""A variable's value by name (``None``: not defined)."""

SCHEMA_PATH = Path(__file__).with_name("task_file.schema.json")
MAX_SHOWN = 100


class TaskFileError(ValueError):
    """A task file with problems; the message lists every one, ``FILE:LINE: ...`` a line."""

    def __init__(self, path: Path, problems: Sequence[str]):
        self.problems = list(problems)
        shown = self.problems[:MAX_SHOWN]
        more = len(self.problems) - len(shown)
        head = f"{path}: {len(self.problems)} problem(s) in the task file:"
        super().__init__("\n".join([head, *shown, *([f"... and {more} more"] if more > 0 else [])]))


@cache
def task_schema() -> dict[str, Any]:
    """The published JSON Schema of one task."""
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


@dataclass(frozen=True)
class GoldCall:
    id: str
    name: str
    arguments: dict[str, Any]
    match: dict[str, Any] = field(default_factory=dict)  # per-argument rules (tool_specs.argument_matching.ARGUMENT_RULES)


@dataclass(frozen=True)
class Task:
    """One task of the file (see the schema for the fields)."""

    id: str
    line: int
    query: str | None = None
    messages: tuple[dict[str, str], ...] = ()
    tools: tuple[str, ...] | None = None  # None: all
    calls: tuple[GoldCall, ...] | None = None
    ordered: bool = True
    answer: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tool_names: tuple[tuple[str, int, str], ...] = ()  # (tool name, line, where) of `tools` and the calls' names
    setup_files: tuple[tuple[str, str], ...] = ()  # (absolute source path, destination relative to ${EPISODE_DIR})
    setup_calls: tuple[dict[str, Any], ...] = ()  # {name, arguments}: made by the harness before the model starts
    checks: tuple[dict[str, Any], ...] = ()  # {id, name, arguments, expect}: made after the episode (state checks)

    @property
    def needs_episode_dir(self) -> bool:
        """Does the task need a folder of its own (files to copy, or ``${EPISODE_DIR}`` named)?"""
        return bool(self.setup_files) or names_episode_dir(
            [self.query, list(self.messages), [c.arguments for c in self.calls or ()], self.answer,
             list(self.setup_calls), list(self.checks)])

    def in_folder(self, folder: str | None) -> Task:
        """The task with ``${EPISODE_DIR}`` replaced by ``folder`` (itself when ``folder`` is None)."""
        if folder is None:
            return self
        return Task(
            id=self.id, line=self.line, query=fill_episode_dir(self.query, folder),
            messages=tuple(fill_episode_dir(dict(m), folder) for m in self.messages), tools=self.tools,
            calls=None if self.calls is None else tuple(
                GoldCall(c.id, c.name, fill_episode_dir(c.arguments, folder), c.match) for c in self.calls),
            ordered=self.ordered, answer=fill_episode_dir(self.answer, folder), metadata=self.metadata,
            tool_names=self.tool_names, setup_files=self.setup_files,
            setup_calls=tuple(fill_episode_dir(c, folder) for c in self.setup_calls),
            checks=tuple(fill_episode_dir(c, folder) for c in self.checks))

    @property
    def system(self) -> str | None:
        first = self.messages[0] if self.messages else None
        return first["content"] if first and first["role"] == "system" else None

    @property
    def user_text(self) -> str:
        return self.query if self.query is not None else self.messages[-1]["content"]

    @property
    def history(self) -> list[dict[str, str]]:
        """The turns before the last user message (no system message)."""
        return [m for m in self.messages[:-1] if m["role"] != "system"]

    @property
    def request(self) -> str:
        """The user's request as one text (for the judge)."""
        if self.query is not None:
            return self.query
        return "\n".join(f"{m['role']}: {m['content']}" for m in self.messages if m["role"] != "system")

    def oracle_steps(self) -> list[list[dict[str, Any]]]:
        return [[{"name": c.name, "arguments": c.arguments, "id": c.id}] for c in self.calls or ()]

    def gold_calls(self) -> list[dict[str, Any]]:
        """The gold calls as the matchers take them (``match``: the per-argument rules)."""
        return [{"name": c.name, "arguments": c.arguments, "match": c.match} for c in self.calls or ()]

    def oracle_answer(self) -> str:
        return oracle_answer(self.answer) if self.answer is not None else "Done."


def is_reference(value: Any) -> bool:
    return isinstance(value, Mapping) and "$from" in value


def references(value: Any, where: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every reference inside an argument value, with its path."""
    if is_reference(value):
        yield where, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from references(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from references(v, f"{where}[{i}]")


# ---- reading, with line numbers ---------------------------------------------------------------
def _yaml_lines(node: yaml.Node, path: tuple[Any, ...], out: dict[tuple[Any, ...], int]) -> None:
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _yaml_lines(value, (*path, key.value), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _yaml_lines(item, (*path, i), out)


def _read(path: Path) -> tuple[list[tuple[Any, dict[tuple[Any, ...], int]]], list[str]]:
    """``[(task object, {path within it: line})]`` and the problems of reading. A task file is untrusted:
    none of its lines (of a YAML or JSON file: none of it) is read past ``MAX_LINE_BYTES``."""
    items: list[tuple[Any, dict[tuple[Any, ...], int]]] = []
    problems: list[str] = []
    try:
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            for number, line in read_text_lines(path):
                if line.lstrip().startswith("//"):
                    continue
                try:
                    items.append((load_json(line, path, line=number), {(): number}))
                except DocumentError as exc:
                    problems.append(str(exc))
            return items, problems
        text = bounded_text(path)
    except OSError as exc:
        return [], [f"{path}: cannot read the task file: {exc}"]
    except ValueError as exc:  # a line (or YAML/JSON file) past the bound, LineTooLong, or not UTF-8: FILE:LINE
        return items, [*problems, str(exc)]
    try:
        document, node = load_yaml(text, path)
    except DocumentError as exc:
        return [], [str(exc) if exc.line is not None else f"{path}:1: {exc.problem}"]
    if node is None:
        return [], []
    lines: dict[tuple[Any, ...], int] = {}
    _yaml_lines(node, (), lines)
    prefix: tuple[Any, ...] = ()
    if isinstance(document, Mapping) and "tasks" in document:
        extra = sorted(set(document) - {"tasks", "servers"})
        if extra:
            problems.append(f"{path}:1: a file with a 'tasks' list holds only 'servers' besides, but it also has "
                            f"{', '.join(map(str, extra))}")
        if "servers" in document and not (isinstance(document["servers"], Mapping) and document["servers"]):
            problems.append(f"{path}:{_line(lines, ('servers',))}: servers: expected a mapping NAME: {{command, args, env, "
                            "cwd, per_episode}} or {url, headers, bearer_token_env}, with at least one server")
        document, prefix = document["tasks"], ("tasks",)
    if not isinstance(document, list):
        return [], [*problems, f"{path}:1: expected a list of tasks (or {{tasks: [...]}}), got {type(document).__name__}"]
    for i, task in enumerate(document):
        base = (*prefix, i)
        items.append((task, {p[len(base):]: n for p, n in lines.items() if p[: len(base)] == base}))
    return items, problems


def _line(lines: Mapping[tuple[Any, ...], int], where: Sequence[Any]) -> int:
    where = tuple(where)
    while where not in lines and where:
        where = where[:-1]
    return lines.get(where, lines.get((), 1))


def _where(where: Sequence[Any]) -> str:
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(task)"


# ---- checking -----------------------------------------------------------------------------------
def _check_id(raw: Any, ids: dict[str, int], line: int) -> list[tuple[tuple[Any, ...], str]]:
    """A task id used by an earlier task (checked whatever else is wrong with either task)."""
    tid = raw.get("id") if isinstance(raw, Mapping) else None
    if not isinstance(tid, str):
        return []
    if tid in ids:
        return [(("id",), f"task id {tid!r} is used twice (first at line {ids[tid]})")]
    ids[tid] = line
    return []


def _expand(raw: Any, variables: Variables | None) -> tuple[Any, list[tuple[tuple[Any, ...], str]]]:
    """The task with ``${NAME}`` replaced in its query, messages, gold arguments and answer."""
    if not isinstance(raw, Mapping):
        return raw, []
    problems: list[tuple[tuple[Any, ...], str]] = []

    def lookup(name: str) -> str | None:
        return variables(name) if variables is not None else None

    def walk(value: Any, where: tuple[Any, ...]) -> Any:
        if isinstance(value, str):
            try:
                return expand_variables(value, lookup)
            except UndefinedVariable as exc:
                problems.append((where, str(exc)))
                return value
        if isinstance(value, Mapping):
            return {k: walk(v, (*where, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, (*where, i)) for i, v in enumerate(value)]
        return value

    out = dict(raw)
    for key in ("query", "answer"):
        if key in out:
            out[key] = walk(out[key], (key,))
    if isinstance(out.get("messages"), list):
        out["messages"] = [{**m, "content": walk(m["content"], ("messages", i, "content"))}
                           if isinstance(m, Mapping) and "content" in m else m for i, m in enumerate(out["messages"])]
    if isinstance(out.get("calls"), list):
        out["calls"] = [{**c, "arguments": walk(c["arguments"], ("calls", i, "arguments"))}
                        if isinstance(c, Mapping) and "arguments" in c else c for i, c in enumerate(out["calls"])]
    for key in ("setup", "checks"):
        if key in out:
            out[key] = walk(out[key], (key,))
    return out, problems


MAX_SETUP_FILES = 10_000
MAX_SETUP_BYTES = 256 << 20
"""At most this many files and bytes are copied into one episode's folder (a task file is untrusted)."""


@cache
def _tree_size(path: str, base: str) -> tuple[int, int, str | None]:
    """(files, bytes, a symbolic link under ``path`` that points outside ``base``, or None); links are counted
    as files of their own, never followed; the walk stops past the bounds."""
    root = Path(path)
    if not root.is_dir():
        return 1, root.lstat().st_size, None
    files = size = 0
    for item in root.rglob("*"):
        if item.is_symlink() and not item.resolve().is_relative_to(base):
            return files, size, str(item)
        if item.is_symlink() or item.is_file():
            files += 1
            size += item.lstat().st_size
            if files > MAX_SETUP_FILES or size > MAX_SETUP_BYTES:
                break
    return files, size, None


def _setup_files(raw: Mapping[str, Any], base: Path) -> list[tuple[tuple[Any, ...], str | tuple[str, str]]]:
    """Each of ``setup.files`` as ``(where, (absolute source, destination))``, or ``(where, problem)``: a
    source must lie inside the task file's folder (symbolic links resolved: a task file cannot have a
    file of yours copied where a model reads it), and all of a task's files stay within the bounds."""
    out: list[tuple[tuple[Any, ...], str | tuple[str, str]]] = []
    files = size = 0
    base = base.resolve()
    for i, item in enumerate((raw.get("setup") or {}).get("files") or []):
        src = item if isinstance(item, str) else item["from"]
        path = (base / src).resolve()
        dest = Path(path.name if isinstance(item, str) else item.get("to", path.name))
        where: tuple[Any, ...] = ("setup", "files", i)
        if not path.is_relative_to(base):
            out.append((where, f"{src!r} is outside the task file's folder {base}; set-up files come from beside the task file"))
            continue
        if not path.exists():
            out.append((where, f"no such file or folder: {path}"))
            continue
        if dest.is_absolute() or ".." in dest.parts:
            out.append((where, f"'to' must be a relative path inside ${{EPISODE_DIR}}, got {str(dest)!r}"))
            continue
        more_files, more_bytes, link = _tree_size(str(path), str(base))
        files, size = files + more_files, size + more_bytes
        if link is not None:
            out.append((where, f"{link} is a symbolic link to a place outside the task file's folder"))
        elif files > MAX_SETUP_FILES or size > MAX_SETUP_BYTES:
            out.append((where, f"the task's set-up files pass the bounds ({MAX_SETUP_FILES} files, {MAX_SETUP_BYTES >> 20} MiB)"))
        else:
            out.append((where, (str(path), dest.as_posix())))
    return out


def _check_task(raw: Mapping[str, Any], base: Path) -> list[tuple[tuple[Any, ...], str]]:
    """Problems a schema cannot see, as (path within the task, message)."""
    out: list[tuple[tuple[Any, ...], str]] = [(w, p) for w, p in _setup_files(raw, base) if isinstance(p, str)]
    for i, check in enumerate(raw.get("checks") or []):
        for j, expect in enumerate(check.get("expect") or []):
            found = expectation_problem(expect)
            if found:
                field_, message = found
                out.append((("checks", i, "expect", j, *((field_,) if field_ else ())), message))
    ids = [str(c.get("id", i)) for i, c in enumerate(raw.get("checks") or [])]
    for i, cid in enumerate(ids):
        if cid in ids[:i]:
            out.append((("checks", i, "id"), f"check id {cid!r} is used twice"))
    if ("query" in raw) == ("messages" in raw):
        out.append(((), "give exactly one of 'query' and 'messages'"))
    messages = raw.get("messages") or []
    for i, m in enumerate(messages):
        if m.get("role") == "system" and i != 0:
            out.append((("messages", i), "a system message may only come first"))
    if messages and messages[-1].get("role") != "user":
        out.append((("messages", len(messages) - 1), "the last message must be the user's"))
    if "calls" not in raw and "answer" not in raw:
        out.append(((), "give the gold 'calls', the gold 'answer', or both"))
    tools = raw.get("tools", "all")
    seen: dict[str, int] = {}
    for i, call in enumerate(raw.get("calls") or []):
        cid = str(call.get("id", i))
        if cid in seen or (cid != str(i) and cid.isdigit()):
            out.append((("calls", i, "id"), f"call id {cid!r} is used twice or is the index of another call"))
        if isinstance(tools, list) and call.get("name") not in tools:
            out.append((("calls", i, "name"), f"gold tool {call.get('name')!r} is not among the task's tools {tools}"))
        for where, ref in references(call.get("arguments") or {}):
            target = str(ref.get("$from"))
            path = ("calls", i, "arguments", *where.replace("[", ".").replace("]", "").split("."))
            if target not in seen:
                out.append((path, f"reference to {target!r}: not an earlier call of this task (earlier: "
                                  f"{', '.join(seen) or 'none'})"))
            pattern = ref.get("pattern")
            if isinstance(pattern, str):
                try:
                    if pattern_groups(pattern) > 1:
                        out.append((path, "a reference's pattern may have at most one group"))
                except ValueError as exc:
                    out.append((path, f"bad pattern: {exc}"))
        if "match" in call:
            try:
                rules = argument_rules(call["match"])
            except ValueError as exc:
                out.append((("calls", i, "match"), str(exc)))
            else:
                for name in sorted(set(rules) - set(call.get("arguments") or {})):
                    out.append((("calls", i, "match", name), f"a rule for {name!r}, which is not an argument of the "
                                f"call{did_you_mean(name, list(call.get('arguments') or {}))}"))
        seen[cid] = i
        seen.setdefault(str(i), i)
    answer = raw.get("answer")
    if isinstance(answer, Mapping) and answer.get("type") != "number" and "strict" in answer:
        out.append((("answer", "strict"), "strict goes with a number answer"))
    if "answer" in raw:
        problem = answer_problem(normalize_answer_spec(raw["answer"]))
        if problem:
            field, message = problem
            out.append((("answer", field) if field else ("answer",), message))
    return out


def _task(raw: Mapping[str, Any], lines: Mapping[tuple[Any, ...], int], base: Path) -> Task:
    calls = None
    if "calls" in raw:
        calls = tuple(GoldCall(str(c.get("id", i)), c["name"], dict(c.get("arguments") or {}),
                               argument_rules(c.get("match"))) for i, c in enumerate(raw["calls"]))
    tools = raw.get("tools", "all")
    names = [(str(n), _line(lines, ("tools", i)), f"tools[{i}]") for i, n in enumerate(tools if isinstance(tools, list) else [])]
    names += [(c.name, _line(lines, ("calls", i, "name")), f"calls[{i}].name") for i, c in enumerate(calls or ())]
    setup = raw.get("setup") or {}
    setup_calls = tuple({"name": c["name"], "arguments": dict(c.get("arguments") or {})} for c in setup.get("calls") or ())
    checks = tuple({"id": str(c.get("id", i)), "name": c["name"], "arguments": dict(c.get("arguments") or {}),
                    "expect": [dict(e) for e in c["expect"]]} for i, c in enumerate(raw.get("checks") or ()))
    names += [(c["name"], _line(lines, ("setup", "calls", i, "name")), f"setup.calls[{i}].name") for i, c in enumerate(setup_calls)]
    names += [(c["name"], _line(lines, ("checks", i, "name")), f"checks[{i}].name") for i, c in enumerate(checks)]
    line = lines.get((), 1)
    return Task(
        id=raw["id"], line=line, query=raw.get("query"), messages=tuple(dict(m) for m in raw.get("messages") or ()),
        tools=None if tools == "all" else tuple(tools), calls=calls, ordered=raw.get("order", "ordered") == "ordered",
        answer=normalize_answer_spec(raw["answer"]) if "answer" in raw else None, metadata=dict(raw.get("metadata") or {}),
        tool_names=tuple(names), setup_files=tuple(p for _, p in _setup_files(raw, base) if not isinstance(p, str)),
        setup_calls=setup_calls, checks=checks,
    )


def read_task_file(path: str | Path, variables: Variables | None = None) -> tuple[list[Task], list[str]]:
    """The tasks of a task file that have no problem, and every problem of the file (``FILE:LINE: ...``)."""
    from jsonschema import Draft202012Validator

    p = Path(path)
    if not p.is_file():
        return [], [f"{p}: no such task file"]
    items, problems = _read(p)
    validator = Draft202012Validator(task_schema())
    ids: dict[str, int] = {}
    tasks: list[Task] = []
    for raw, lines in items:
        label = f"task {raw.get('id')!r}" if isinstance(raw, Mapping) and isinstance(raw.get("id"), str) else "task"
        found = _check_id(raw, ids, lines.get((), 1))
        raw, undefined = _expand(raw, variables)
        found += undefined
        schema_errors = [(tuple(e.absolute_path), _schema_message(e))
                         for e in sorted(validator.iter_errors(raw), key=lambda e: list(map(str, e.absolute_path)))]
        found += schema_errors
        if not schema_errors and isinstance(raw, Mapping):
            found += _check_task(raw, p.parent)
        for where, message in found:
            problems.append(f"{p}:{_line(lines, where)}: {label}: {_where(where)}: {message}")
        if not found:
            tasks.append(_task(raw, lines, p.parent))
    if not items and not problems:
        problems.append(f"{p}:1: the task file holds no tasks")
    return tasks, sorted(problems, key=problem_line)


def task_file_servers(path: str | Path) -> dict[str, Any]:
    """The MCP servers a YAML task file declares (``{servers: {NAME: {...}}, tasks: [...]}``, each server as an
    entry of ``mcpServers``); ``{}`` when it declares none (a JSON Lines file never does)."""
    p = Path(path)
    if p.suffix.lower() in (".jsonl", ".ndjson") or not p.is_file():
        return {}
    try:
        document, _node = load_yaml(bounded_text(p), p)
    except (OSError, ValueError):  # DocumentError, LineTooLong, not UTF-8
        return {}  # read_task_file reports it
    servers = document.get("servers") if isinstance(document, Mapping) and "tasks" in document else None
    return dict(servers) if isinstance(servers, Mapping) else {}


def load_task_file(path: str | Path, variables: Variables | None = None) -> list[Task]:
    """The tasks of a task file; :class:`TaskFileError` lists every problem (``FILE:LINE: ...``)."""
    tasks, problems = read_task_file(path, variables)
    if problems:
        raise TaskFileError(Path(path), problems)
    return tasks


def tool_problems(path: str | Path, tasks: Sequence[Task], known: Sequence[str]) -> list[str]:
    """``FILE:LINE`` problems for the tool names of ``tasks`` (their ``tools`` lists and gold calls)
    that no tool source offers, each with a did-you-mean among ``known``."""
    out = []
    offered = ", ".join(sorted(known)) or "none"
    for task in tasks:
        for name, line, where in task.tool_names:
            if name not in known:
                hint = did_you_mean(name, list(known)) or f" The sources offer: {offered}."
                out.append(f"{path}:{line}: task {task.id!r}: {where}: tool {name!r} is offered by no tool source.{hint}")
    return out


def problem_line(problem: str) -> int:
    """The line number of a ``FILE:LINE: ...`` problem (0 when it has none), to sort problems by."""
    m = re.match(r"^.*?:(\d+): ", problem)
    return int(m.group(1)) if m else 0


def _schema_message(error: Any) -> str:
    if error.validator == "oneOf" and error.context:  # say what the branches of the instance's type wanted
        here = list(error.absolute_path)
        wanted = [e for e in error.context if not (e.validator in ("type", "const") and list(e.absolute_path) == here)]
        if wanted:
            return "; ".join(dict.fromkeys(str(e.message) for e in wanted))
    if error.validator == "number" or (isinstance(error.instance, float) and not math.isfinite(error.instance)):
        return "must be a finite number"
    return str(error.message)
