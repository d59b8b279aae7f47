"""ToolHop's tasks: the records of both files, their hops, and each tool's code.

* **Data.** Two sources, the same record shape after loading: the official ``ToolHop.json``
  (``toolhop/ToolHop.json`` under the data dir, from ``evals data fetch toolhop``; 995 queries) and
  local-bench's 100-query subset (``toolhop/toolhop_subset100_localbench.jsonl``, see
  ``MANIFEST.md``). The option ``--dataset`` = ``auto`` (default: the full file when present, else
  the subset), ``full`` or ``subset`` picks one; :func:`dataset_in_use` says which. Task ids are the
  official ToolHop ids (``"202"``), the same in both files.
* **Hops.** Each query has one tool per hop. ``functions`` is in hop order (``tools`` and
  ``sub_task`` are keyed by sub-question and, in the subset, sorted alphabetically), so a hop is
  the tool whose ``def`` comes i-th. A tool's code is stripped of its example-usage block by
  parsing it (:func:`split_code`): imports, function and class definitions, and constant
  assignments the code uses are kept; top-level calls, prints and the assignments that hold their
  results are dropped (and their literal calls kept as *example calls*).
* **Gold calls.** ``gold_calls`` (22 subset rows; call strings such as
  ``extract_last_name('Oliver Russell')``) are parsed into keyword calls using each function's
  signature (:func:`parse_call`, :meth:`ToolHopTask.explicit_chain`); the chains built from them
  and the derived ones are in :mod:`.chains`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from kg_store.digest import file_sha256

from ...core.data import DATA_ENV, DataNotFound, data_dir, data_file
from .files import FULL, SUBSET

__all__ = [
    "DATASETS", "Call", "Hop", "ToolCode", "ToolHopDataError", "ToolHopTask", "data_path", "dataset_in_use",
    "load_file", "load_tasks", "parse_call", "parse_records", "split_code",
]

DATASETS = ("auto", "full", "subset")  # the --dataset option


class ToolHopDataError(ValueError):
    """A ToolHop record that cannot be used; the message names the record and what is wrong."""


# ================================================================================== code handling


@dataclass(frozen=True)
class Call:
    """One tool call: a tool name and keyword arguments."""

    name: str
    arguments: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": dict(self.arguments)}


class _Unresolved(Exception):
    pass


def _literal(node: ast.AST, env: Mapping[str, Any]) -> Any:
    """A literal value, or a name bound earlier to a literal; raises :class:`_Unresolved`."""
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise _Unresolved(node.id)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _Unresolved(ast.dump(node)[:60]) from None


def _bind(fn: ast.FunctionDef, call: ast.Call, env: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``call`` against ``fn``'s signature (positional ones named)."""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    out: dict[str, Any] = {}
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            values = _literal(arg.value, env)
            if not isinstance(values, list | tuple):
                raise _Unresolved("*args")
            for j, v in enumerate(values):
                if i + j >= len(params):
                    raise _Unresolved("too many positional arguments")
                out[params[i + j]] = v
            continue
        if i >= len(params):
            raise _Unresolved("too many positional arguments")
        out[params[i]] = _literal(arg, env)
    for kw in call.keywords:
        if kw.arg is None:
            mapping = _literal(kw.value, env)
            if not isinstance(mapping, dict):
                raise _Unresolved("**kwargs")
            out.update(mapping)
        else:
            out[kw.arg] = _literal(kw.value, env)
    return out


@dataclass(frozen=True)
class ToolCode:
    """A tool's code, split into what runs (``code``) and its example calls."""

    name: str
    code: str
    examples: tuple[Call, ...]
    params: tuple[str, ...]


def split_code(source: str, name: str) -> ToolCode:
    """Strip the example-usage block of a ToolHop function string; see the module docstring.

    Raises:
        ToolHopDataError: the code does not parse, or does not define ``def <name>``.
    """
    try:
        module = ast.parse(source)
    except SyntaxError as exc:
        raise ToolHopDataError(f"the code of tool {name!r} does not parse: {exc}") from None
    fn = next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        defined = [n.name for n in module.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        raise ToolHopDataError(f"the code of tool {name!r} defines no function {name!r} (it defines {defined})")
    defs = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    lines = source.splitlines(keepends=True)
    kept: list[str] = []
    dropped: list[ast.stmt] = []
    for node in module.body:
        keep = isinstance(node, defs)
        if isinstance(node, ast.Assign | ast.AnnAssign) and not any(isinstance(x, ast.Call) for x in ast.walk(node)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            # a constant the definitions read (not one only the example reads)
            keep = bool(names) and any(
                isinstance(x, ast.Name) and x.id in names
                for d in module.body if isinstance(d, defs) for x in ast.walk(d)
            )
        if keep:
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            kept.append("".join(lines[start - 1 : node.end_lineno]))
        else:
            dropped.append(node)
    # example calls: literal calls of the tool in the dropped statements, with simple variables
    env: dict[str, Any] = {}
    examples: list[Call] = []
    for node in dropped:
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            if isinstance(call.func, ast.Name) and call.func.id == name:
                try:
                    examples.append(Call(name, _bind(fn, call, env)))
                except _Unresolved:
                    pass
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                env[node.targets[0].id] = _literal(node.value, env)
            except _Unresolved:
                pass
    params = tuple(a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs))
    unique = list({json.dumps(e.to_dict(), sort_keys=True, default=repr): e for e in examples}.values())
    return ToolCode(name, "\n".join(part.rstrip("\n") for part in kept) + "\n", tuple(unique), params)


def parse_call(text: str, hop: Hop) -> Call:
    """A call string such as ``"extract_last_name('Oliver Russell')"`` as a keyword call of the
    hop's tool, positional arguments named by the signature of the hop's code.

    Raises:
        ToolHopDataError: not a single call with literal arguments, or not a call of this hop's code.
    """
    try:
        expr = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ToolHopDataError(f"gold call {text!r} does not parse: {exc}") from None
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Name):
        raise ToolHopDataError(f"gold call {text!r} is not a call of a named function")
    if expr.func.id != hop.function:
        raise ToolHopDataError(f"gold call {text!r} calls {expr.func.id!r}, but hop {hop.index + 1} is {hop.function!r}")
    fn = next(n for n in ast.parse(hop.source).body if isinstance(n, ast.FunctionDef) and n.name == hop.function)
    try:
        return Call(hop.name, _bind(fn, expr, {}))
    except _Unresolved as exc:
        raise ToolHopDataError(f"gold call {text!r} has a non-literal argument ({exc})") from None


# ================================================================================== tasks


@dataclass(frozen=True)
class Hop:
    index: int
    question: str  # the atomic sub-question
    answer: str  # its gold intermediate answer
    tool: dict[str, Any]  # the tool schema as published (``name`` made unique within the task)
    source: str  # the tool's code as published (with its example block)
    function: str  # the ``def`` name in ``source``

    @property
    def name(self) -> str:
        """The tool's name on the task's endpoint: the published name, with ``_2`` appended for the
        second hop of a task whose two hops publish the same name."""
        return str(self.tool["name"])

    @cached_property
    def code(self) -> ToolCode:
        return split_code(self.source, self.function)


@dataclass(frozen=True)
class ToolHopTask:
    id: str  # the official ToolHop id
    question: str
    answer: str
    answer_type: str
    previous_answer_type: str
    domain: str
    hops: tuple[Hop, ...]
    gold_calls: tuple[str, ...] = ()  # subset only: call strings
    local_id: str | None = None  # subset only: local-bench's id

    @property
    def hop_count(self) -> int:
        return len(self.hops)

    @cached_property
    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """Tool name -> input schema (``parameters``) as published."""
        return {h.name: h.tool.get("parameters") or {} for h in self.hops}

    def explicit_chain(self) -> list[Call] | None:
        """The parsed ``gold_calls`` (one per hop), or ``None`` when the record has none."""
        if not self.gold_calls:
            return None
        if len(self.gold_calls) != self.hop_count:
            raise ToolHopDataError(f"task {self.id}: {len(self.gold_calls)} gold calls for {self.hop_count} hops")
        return [parse_call(text, hop) for text, hop in zip(self.gold_calls, self.hops, strict=True)]


_DEF_NAME = re.compile(r"^def\s+(\w+)\s*\(", re.M)
_DEF_SIGNATURE = re.compile(r"def\s+\w+\s*\((.*?)\)\s*(->[^:]*)?:", re.S)  # matched where a _DEF_NAME starts


def _signature(source: str, function: str) -> re.Match[str] | None:
    """The first ``def function(...):`` of ``source`` (one compiled pattern for every name)."""
    for found in _DEF_NAME.finditer(source):
        if found.group(1) == function and (match := _DEF_SIGNATURE.match(source, found.start())):
            return match
    return None


def _overlap(source: str, function: str, tool: Mapping[str, Any]) -> int:
    match = _signature(source, function)
    params = set(re.findall(r"(\w+)\s*(?:[:=,]|$)", match.group(1))) if match else set()
    props = set((tool.get("parameters") or {}).get("properties") or {})
    return len(params & props) - len(props - params)


def _record_to_task(raw: Mapping[str, Any], where: str) -> ToolHopTask:
    for key in ("question", "answer", "sub_task", "tools", "functions"):
        if key not in raw:
            raise ToolHopDataError(f"{where}: missing field {key!r}")
    sub_task, tools, functions = raw["sub_task"], raw["tools"], raw["functions"]
    if not isinstance(sub_task, Mapping) or not isinstance(tools, Mapping) or not isinstance(functions, list):
        raise ToolHopDataError(f"{where}: 'sub_task' and 'tools' must be objects and 'functions' a list")
    if set(sub_task) != set(tools):
        raise ToolHopDataError(f"{where}: 'sub_task' and 'tools' are not keyed by the same sub-questions")
    unassigned: dict[str, list[str]] = {}  # def name -> its sub-questions not yet given a code
    for question, tool in tools.items():
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise ToolHopDataError(f"{where}: the tool for {question!r} has no name")
        unassigned.setdefault(tool["name"], []).append(question)
    hops: list[Hop] = []
    used: dict[str, int] = {}
    for source in functions:
        names = _DEF_NAME.findall(source) if isinstance(source, str) else []
        names = [n for n in names if unassigned.get(n)]
        if not names:
            raise ToolHopDataError(f"{where}: a function in 'functions' defines none of the tools {sorted(unassigned)}")
        function = names[0]
        # two hops may use tools of the same name with different code (7 subset rows): give this
        # code the sub-question whose schema lists the parameters this code takes
        question = max(unassigned[function], key=lambda q: _overlap(source, function, tools[q]))
        unassigned[function].remove(question)
        used[function] = used.get(function, 0) + 1
        name = function if used[function] == 1 else f"{function}_{used[function]}"
        tool = {**tools[question], "name": name}
        hops.append(Hop(len(hops), question, str(sub_task[question]), tool, source, function))
    left = sorted(n for n, qs in unassigned.items() if qs)
    if left:
        raise ToolHopDataError(f"{where}: tool(s) {left} have no code in 'functions'")
    task_id = raw.get("source_id", raw.get("id"))
    if task_id is None:
        raise ToolHopDataError(f"{where}: no 'id' (or 'source_id')")
    return ToolHopTask(
        id=str(task_id),
        question=str(raw["question"]),
        answer=str(raw["answer"]),
        answer_type=str(raw.get("answer_type", "")),
        previous_answer_type=str(raw.get("previous_answer_type", "")),
        domain=str(raw.get("domain", "")),
        hops=tuple(hops),
        gold_calls=tuple(raw.get("gold_calls") or ()),
        local_id=raw.get("id") if "source_id" in raw else None,
    )


def parse_records(text: str, where: str) -> list[dict[str, Any]]:
    """Records from a JSON array, an object holding one (``data``), or JSON lines."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        records = json.loads(text)
    elif stripped.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("data"), list):
            records = obj["data"]
        elif isinstance(obj, dict) and "question" in obj:
            records = [obj]
        else:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        raise ToolHopDataError(f"{where}: neither a JSON array nor JSON lines")
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ToolHopDataError(f"{where}: every record must be a JSON object")
    out: list[dict[str, Any]] = records
    return out


def load_file(path: Path) -> list[ToolHopTask]:
    """Tasks of one ToolHop file (official or subset format).

    Raises:
        ToolHopDataError: a malformed record (the message names it) or a duplicate id.
    """
    records = parse_records(path.read_text(encoding="utf-8"), str(path))
    tasks = [_record_to_task(r, f"{path.name} record {i + 1} (id {r.get('id')!r})") for i, r in enumerate(records)]
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            raise ToolHopDataError(f"{path}: task id {t.id!r} appears twice")
        seen.add(t.id)
    return tasks


def dataset_in_use(choice: str = "auto") -> str:
    """``"full"`` or ``"subset100"`` for the ``--dataset`` option (``auto``: the full file when present)."""
    if choice not in DATASETS:
        raise ValueError(f"the ToolHop dataset must be one of {', '.join(DATASETS)}, got {choice!r}")
    if choice == "full":
        data_file(*FULL)  # a clear error when absent
        return "full"
    if choice == "subset":
        return "subset100"
    return "full" if data_dir().joinpath(*FULL).is_file() else "subset100"


def data_path(dataset: str | None = None) -> Path:
    """The file of ``"full"`` or ``"subset100"`` (None: the one ``--dataset auto`` picks)."""
    dataset = dataset or dataset_in_use()
    try:
        return data_file(*(FULL if dataset == "full" else SUBSET))
    except DataNotFound as exc:
        raise DataNotFound(f"{exc} (ToolHop: run `evals data fetch toolhop` for the full file; ${DATA_ENV})") from None


@lru_cache(maxsize=4)
def _loaded(path: str, sha256: str) -> tuple[ToolHopTask, ...]:
    return tuple(load_file(Path(path)))


def load_tasks(dataset: str | None = None) -> list[ToolHopTask]:
    """The tasks of the dataset in use (or ``"full"``/``"subset100"``), parsed once per process and
    version of the file's bytes (its :func:`~kg_store.digest.file_sha256`, which the run's config
    records anyway: one ``stat`` on a second load)."""
    path = data_path(dataset)
    return list(_loaded(str(path), file_sha256(path)))
