"""ToolHop (Ye et al., ACL 2025): multi-hop queries whose tools are real Python code.

* **Data.** Two sources, the same record shape after loading: the official ``ToolHop.json``
  (``toolhop/ToolHop.json`` under the data dir, from ``evals data fetch toolhop``; 995 queries) and
  local-bench's 100-query subset (``toolhop/toolhop_subset100_localbench.jsonl``, see
  ``MANIFEST.md``). ``$EVALS_TOOLHOP`` = ``auto`` (default: the full file when present, else the
  subset), ``full`` or ``subset`` picks one; :func:`dataset_in_use` says which. Task ids are the
  official ToolHop ids (``"202"``), the same in both files.
* **Hops.** Each query has one tool per hop. ``functions`` is in hop order (``tools`` and
  ``sub_task`` are keyed by sub-question and, in the subset, sorted alphabetically), so a hop is
  the tool whose ``def`` comes i-th. A tool's code is stripped of its example-usage block by
  parsing it: imports, function and class definitions, and constant assignments the code uses are
  kept; top-level calls, prints and the assignments that hold their results are dropped (and
  their literal calls kept as *example calls*).
* **Gold chains.** ``gold_calls`` (22 subset rows; call strings such as
  ``extract_last_name('Oliver Russell')``) are parsed into keyword calls using each function's
  signature: these are the *explicit* chains. :func:`derive_chains` adds *derived* chains, see
  its docstring.
* **Scoring** (from traces alone): :func:`answer_correct` and :func:`invocation_errors`, combined by
  :func:`metrics`.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tool_specs import TaskNotFound, ToolResult, ToolSpec
from tool_specs.sandbox import (
    GENERIC_ERROR,
    SandboxExecutor,
    SandboxLimits,
    SandboxPool,
    tool_reported_error,
    value_text,
)

from ..data import DATA_ENV, DataNotFound, cache_dir, data_dir, data_file

if TYPE_CHECKING:
    from tool_specs import CallContext

NAME = "toolhop"
FULL_FILE = ("toolhop", "ToolHop.json")
SUBSET_FILE = ("toolhop", "toolhop_subset100_localbench.jsonl")
DATASET_ENV = "EVALS_TOOLHOP"
Feedback = Literal["detailed", "minimal"]

SYSTEM_PROMPT = (
    "You answer multi-hop questions with the tools you are given. Break the question into steps, "
    "call one tool per step and use each result in the next call. When you know the answer, reply "
    "without calling a tool and end with a line 'Final answer: <answer>' (just the answer: a number, "
    "a name, a word or a date)."
)
DIRECT_PROMPT = (
    "Answer the multi-hop question from your own knowledge; no tools are available. Think step by "
    "step, then end with a line 'Final answer: <answer>' (just the answer: a number, a name, a word "
    "or a date)."
)


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
        return self.tool["name"]

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


def _overlap(source: str, function: str, tool: Mapping[str, Any]) -> int:
    match = re.search(rf"^def\s+{function}\s*\((.*?)\)\s*(->[^:]*)?:", source, re.M | re.S)
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
        names = re.findall(r"^def\s+(\w+)\s*\(", source, re.M) if isinstance(source, str) else []
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
    if not all(isinstance(r, dict) for r in records):
        raise ToolHopDataError(f"{where}: every record must be a JSON object")
    return records


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


def dataset_in_use() -> str:
    """``"full"`` or ``"subset100"``, per ``$EVALS_TOOLHOP`` (``auto``/``full``/``subset``)."""
    choice = (os.environ.get(DATASET_ENV) or "auto").strip().lower()
    if choice not in ("auto", "full", "subset"):
        raise ValueError(f"${DATASET_ENV} must be 'auto', 'full' or 'subset', got {choice!r}")
    if choice == "full":
        data_file(*FULL_FILE)  # a clear error when absent
        return "full"
    if choice == "subset":
        return "subset100"
    return "full" if data_dir().joinpath(*FULL_FILE).is_file() else "subset100"


def data_path(dataset: str | None = None) -> Path:
    dataset = dataset or dataset_in_use()
    try:
        return data_file(*(FULL_FILE if dataset == "full" else SUBSET_FILE))
    except DataNotFound as exc:
        raise DataNotFound(f"{exc} (ToolHop: run `evals data fetch toolhop` for the full file; ${DATA_ENV})") from None


@lru_cache(maxsize=4)
def _load_cached(path: str, mtime: float) -> tuple[ToolHopTask, ...]:
    return tuple(load_file(Path(path)))


def load_tasks(dataset: str | None = None) -> list[ToolHopTask]:
    """The tasks of the dataset in use (or ``"full"``/``"subset100"``)."""
    path = data_path(dataset)
    return list(_load_cached(str(path), path.stat().st_mtime))


# ================================================================================== answers


_ARTICLES = {"a", "an", "the"}
_MARKER = re.compile(r"final answer\s*[:：]", re.IGNORECASE)
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


def _canonical_number(token: str) -> str:
    if _NUMBER.match(token):
        if "." in token:
            token = token.rstrip("0").rstrip(".")
        return token.lstrip("0") or "0" if not token.startswith("-") else "-" + (token[1:].lstrip("0") or "0")
    return token


def normalize_answer(text: str) -> list[str]:
    """Answer tokens: Unicode NFKD without accents, case-folded; thousands separators dropped
    (``1,234`` -> ``1234``); every other punctuation mark is a separator, except a decimal point
    between digits; numbers canonical (``015``, ``15.0`` -> ``15``); articles (a, an, the) dropped."""
    text = unicodedata.normalize("NFKD", str(text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", text)
    text = re.sub(r"[^\w.]+|_", " ", text)
    return [_canonical_number(t) for t in text.split() if t not in _ARTICLES]


def final_answer_part(prediction: str) -> str:
    """The text after the last ``Final answer:`` marker, else the whole prediction."""
    parts = _MARKER.split(prediction or "")
    return parts[-1] if len(parts) > 1 else (prediction or "")


def answer_correct(prediction: str | None, gold: str) -> bool:
    """Is the final answer right? Both sides are tokenised by :func:`normalize_answer`; the answer
    is right when the gold tokens appear as a contiguous sequence in the prediction's tokens (after
    its last ``Final answer:`` marker when there is one), or are equal. An empty gold or
    prediction is never right."""
    if not prediction:
        return False
    want = normalize_answer(gold)
    got = normalize_answer(final_answer_part(prediction))
    if not want or not got:
        return False
    n = len(want)
    return any(got[i : i + n] == want for i in range(len(got) - n + 1))


# ================================================================================== invocation errors


def invocation_errors(call: Mapping[str, Any], tools: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The paper's three invocation errors of one call, from the call and the task's tool schemas.

    ``tool_hallucination``: the tool does not exist in the task; ``param_hallucination``: a
    parameter the schema's ``properties`` do not define; ``param_omission``: a ``required``
    parameter missing. A call whose arguments were not a JSON object counts as neither parameter
    error (its parameters are unknown). Returns the flags and the offending parameter names.
    """
    name = call.get("name")
    schema = tools.get(name) if isinstance(name, str) else None
    out: dict[str, Any] = {"tool_hallucination": schema is None, "param_hallucination": False, "param_omission": False}
    args = call.get("arguments")
    if schema is None or not isinstance(args, Mapping):
        return out
    props = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    extra = sorted(k for k in args if k not in props)
    missing = [r for r in required if r not in args]
    out.update(param_hallucination=bool(extra), param_omission=bool(missing))
    if extra:
        out["hallucinated_params"] = extra
    if missing:
        out["omitted_params"] = missing
    return out


ERROR_KINDS = ("tool_hallucination", "param_hallucination", "param_omission")
METRIC_KEYS = ("answer_accuracy", *ERROR_KINDS, "query_error_rate", "instance_error_rate")


def trace_calls(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The calls of a trace: ``outcome.calls`` when present, else the ``tool_call`` events."""
    outcome = trace.get("outcome") or {}
    if isinstance(outcome.get("calls"), list):
        return list(outcome["calls"])
    return [e for e in trace.get("events") or [] if e.get("kind") == "tool_call"]


@dataclass
class TaskScore:
    task_id: str
    correct: bool
    calls: int
    error_calls: int
    kinds: dict[str, int] = field(default_factory=dict)


def score_trace(task: ToolHopTask, trace: Mapping[str, Any] | None) -> TaskScore:
    """One task's score from its trace (a missing or errored trace scores as wrong, no calls)."""
    if not trace or trace.get("status") != "completed":
        return TaskScore(task.id, False, 0, 0, dict.fromkeys(ERROR_KINDS, 0))
    kinds = dict.fromkeys(ERROR_KINDS, 0)
    error_calls = 0
    calls = trace_calls(trace)
    for call in calls:
        errs = invocation_errors(call, task.tool_schemas)
        flagged = [k for k in ERROR_KINDS if errs[k]]
        for k in flagged:
            kinds[k] += 1
        error_calls += bool(flagged)
    return TaskScore(task.id, answer_correct(trace.get("final_answer"), task.answer), len(calls), error_calls, kinds)


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def metrics(scores: Sequence[TaskScore]) -> dict[str, Any]:
    """Percentages over tasks (``answer_accuracy``, ``query_error_rate``: tasks with at least one
    invocation error) and over calls (``instance_error_rate``: calls with at least one error; each
    error kind: calls with that error)."""
    n = len(scores)
    calls = sum(s.calls for s in scores)
    out: dict[str, Any] = {"tasks": n, "calls": calls}
    out["answer_accuracy"] = _pct(sum(s.correct for s in scores), n)
    for kind in ERROR_KINDS:
        out[kind] = _pct(sum(s.kinds.get(kind, 0) for s in scores), calls)
    out["query_error_rate"] = _pct(sum(1 for s in scores if s.error_calls), n)
    out["instance_error_rate"] = _pct(sum(s.error_calls for s in scores), calls)
    return out


# ================================================================================== tools and catalog


class ToolHopSpec(ToolSpec):
    """A ToolHop tool. Its code always runs with the model's arguments (``validation="warn"``),
    and the model sees only what the tool itself returns or raises, as in the paper: the server's
    schema warnings are dropped from the result (invocation errors are scored from the traces).
    With ``feedback="minimal"`` every failure reads :data:`GENERIC_ERROR`."""

    feedback: Feedback = "detailed"

    async def call(self, arguments: object, ctx: CallContext | None = None) -> ToolResult:
        result = await super().call(arguments, ctx)
        if result.is_error and self.feedback == "minimal":
            return ToolResult.error(GENERIC_ERROR)
        return ToolResult(is_error=result.is_error, text=result.text, structured=result.structured)


def build_spec(task: ToolHopTask, hop: Hop, *, feedback: Feedback = "detailed", pool: SandboxPool | None = None,
               limits: SandboxLimits | None = None) -> ToolHopSpec:
    executor = SandboxExecutor(hop.code.code, hop.function, feedback=feedback, limits=limits, pool=pool)
    return ToolHopSpec.from_benchmark(
        hop.tool, executor=executor, validation="warn", feedback=feedback,
        annotations={"benchmark": NAME, "task_id": task.id, "hop": hop.index},
    )


class ToolHopCatalog:
    """The :class:`tool_specs.Catalog` of ToolHop: a task's endpoint offers its hops' tools (in
    hop order), each running its own code in the sandbox. Specs are built on first use."""

    def __init__(self, name: str = NAME, tasks: Sequence[ToolHopTask] | None = None, *,
                 feedback: Feedback = "detailed", pool: SandboxPool | None = None,
                 limits: SandboxLimits | None = None) -> None:
        self.name = name
        self.tasks = {t.id: t for t in (tasks if tasks is not None else load_tasks())}
        self.feedback = feedback
        self.pool = pool
        self.limits = limits
        self._specs: dict[str, list[ToolSpec]] = {}
        self._playground: list[ToolSpec] | None = None

    def task(self, task_id: str) -> ToolHopTask:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise TaskNotFound(task_id, self.tasks, catalog=self.name) from None

    def task_ids(self) -> list[str]:
        return list(self.tasks)

    def task_tools(self, task_id: str) -> list[ToolSpec]:
        if task_id not in self._specs:
            task = self.task(task_id)
            self._specs[task_id] = [
                build_spec(task, h, feedback=self.feedback, pool=self.pool, limits=self.limits) for h in task.hops
            ]
        return list(self._specs[task_id])

    def playground_tools(self) -> list[ToolSpec]:
        """Every task's tools; tasks reuse names (with different code), the first one wins."""
        if self._playground is None:
            seen: dict[str, ToolSpec] = {}
            for task_id in self.tasks:
                for spec in self.task_tools(task_id):
                    seen.setdefault(spec.name, spec)
            self._playground = list(seen.values())
        return list(self._playground)

    def stats(self) -> dict[str, Any]:
        tasks = list(self.tasks.values())
        hops: dict[str, int] = {}
        for t in tasks:
            hops[str(t.hop_count)] = hops.get(str(t.hop_count), 0) + 1
        return {
            "tasks": len(tasks),
            "tools": sum(t.hop_count for t in tasks),
            "hops": dict(sorted(hops.items(), key=lambda kv: int(kv[0]))),
            "with_gold_calls": sum(1 for t in tasks if t.gold_calls),
        }


# ================================================================================== gold chains


@dataclass
class Chain:
    """A task's gold call chain: one call per hop, in hop order; ``source`` is ``explicit`` (the
    record's ``gold_calls``) or ``derived`` (see :func:`derive_chains`)."""

    task_id: str
    calls: list[Call]
    source: str

    def steps(self) -> list[list[dict[str, Any]]]:
        return [[c.to_dict()] for c in self.calls]


def hop_output_matches(text: str, gold: str) -> bool:
    """Does a tool's output show the hop's gold answer? The same rule as :func:`answer_correct`."""
    return answer_correct(text, gold)


_STOP = {"who", "what", "which", "when", "where", "how", "is", "are", "was", "were", "of", "the", "a", "an",
         "in", "on", "by", "to", "and", "or", "does", "do", "did", "many", "much", "there", "that", "this", "with"}


def _entities(question: str) -> list[str]:
    """Word n-grams of a sub-question that start with a capital letter or a digit (up to 8 words),
    longest first: the spans a tool's code may compare its input with."""
    words = re.sub(r"[?!]+$", "", question.strip()).split()
    out: list[str] = []
    for n in range(min(8, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            span = " ".join(words[i : i + n]).strip(" ,;:\"")
            span = re.sub(r"'s$", "", span)
            if span and (span[0].isupper() or span[0].isdigit()) and span.lower() not in _STOP:
                out.append(span)
    return list(dict.fromkeys(out))


def _keywords(question: str) -> list[str]:
    return list(dict.fromkeys(w for w in re.findall(r"[a-z]+", question.lower()) if w not in _STOP and len(w) > 2))


def _numbers(texts: Iterable[str]) -> list[int | float]:
    out: list[int | float] = []
    for text in texts:
        for m in re.findall(r"-?\d+(?:\.\d+)?", text):
            out.append(float(m) if "." in m else int(m))
    return list(dict.fromkeys(out))


def _options(prop: Mapping[str, Any], main: bool, values: Mapping[str, list[Any]]) -> list[Any]:
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return list(prop["enum"])[:8]
    kind = prop.get("type")
    if kind in ("integer", "number"):
        return values["numbers"]
    if kind == "array":
        items = prop.get("items") or {}
        if items.get("type") in ("integer", "number"):
            return [[n] for n in values["numbers"]]
        return [[v] for v in (values["entities"] if main else values["keywords"])]
    if kind == "boolean":
        return [True, False]
    if kind in ("string", None):
        return values["entities"] if main else values["keywords"]
    return []


def candidate_calls(task: ToolHopTask, hop: Hop, limit: int = 600) -> list[Call]:
    """Calls to try for one hop, in order:

    1. the tool's own example calls (literal calls in its example-usage block);
    2. those calls with one string (or list-of-strings) argument replaced by an earlier hop's gold
       answer or a span of the sub-question;
    3. calls built from the schema: every ``required`` parameter filled from its ``enum``, or, for
       the first string/array parameter, an earlier hop's gold answer or a span of the
       sub-question (:func:`_entities`), for the other ones a word of the sub-question; numbers
       from the sub-question and earlier answers. At most ``limit`` calls in all.
    """
    previous = [h.answer for h in task.hops[: hop.index]][::-1]
    values = {
        "entities": list(dict.fromkeys([*previous, *_entities(hop.question)])),
        "keywords": _keywords(hop.question),
        "numbers": _numbers([*previous, hop.question]),
    }
    out: list[Call] = [Call(hop.name, e.arguments) for e in hop.code.examples]
    for example in hop.code.examples:
        for key, value in example.arguments.items():
            if isinstance(value, str):
                out += [Call(hop.name, {**example.arguments, key: v}) for v in values["entities"]]
            elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                out += [Call(hop.name, {**example.arguments, key: [v]}) for v in values["entities"]]
    schema = hop.tool.get("parameters") or {}
    props = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str) and r in props] or list(props)[:1]
    if required:
        main = next((r for r in required if (props[r] or {}).get("type") in ("string", "array") and not props[r].get("enum")), None)
        choices = [_options(props[r] or {}, r == main, values) for r in required]
        if all(choices):
            for combo in itertools.product(*choices):
                out.append(Call(hop.name, dict(zip(required, combo, strict=True))))
                if len(out) >= 4 * limit:
                    break
    unique = list({json.dumps(c.to_dict(), sort_keys=True, default=repr): c for c in out}.values())
    return unique[:limit]


def derive_chain(task: ToolHopTask, pool: SandboxPool) -> Chain | None:
    """A chain whose every call really returns its hop's gold answer, or ``None`` when some hop
    has no such call among :func:`candidate_calls`. All candidates of a hop run in one sandbox
    child (:meth:`SandboxPool.run_batch`); the first, in order, whose output is not an error and
    contains the hop's gold intermediate answer (the task's gold answer for the last hop; the rule
    of :func:`answer_correct`) is chosen."""
    calls: list[Call] = []
    limits = SandboxLimits(wall_s=30.0, cpu_s=30.0)
    for hop in task.hops:
        gold = task.answer if hop.index == task.hop_count - 1 else hop.answer
        candidates = candidate_calls(task, hop)
        if not candidates:
            return None
        reply = pool.run_batch(hop.code.code, hop.function, [c.arguments for c in candidates], limits=limits)
        if not reply.ok or not isinstance(reply.value, list):
            return None
        found = None
        for call, result in zip(candidates, reply.value, strict=False):
            if result.get("ok") and not tool_reported_error(result.get("value")):
                if hop_output_matches(value_text(result.get("value")), gold):
                    found = call
                    break
        if found is None:
            return None
        calls.append(found)
    return Chain(task.id, calls, "derived")


DERIVATION_VERSION = 2


def chains_cache_path(tasks: Sequence[ToolHopTask]) -> Path:
    digest = hashlib.sha256()
    for t in tasks:
        digest.update(json.dumps([t.id, t.answer, [(h.source, h.answer) for h in t.hops]], sort_keys=True).encode())
    return cache_dir() / "toolhop" / f"derived-chains-v{DERIVATION_VERSION}-{digest.hexdigest()[:16]}.json"


def derive_chains(tasks: Sequence[ToolHopTask], pool: SandboxPool | None = None, *, use_cache: bool = True) -> dict[str, Chain]:
    """Derived gold chains for the tasks without explicit ones.

    For each hop the candidates are the literal calls of the tool's own example-usage block, and
    those calls with a string argument replaced by an earlier hop's gold answer or an entity
    quoted in the sub-question (plus the bare call with the one required parameter). Each
    candidate really runs in the sandbox; the first whose output contains the hop's gold
    intermediate answer (the task's gold answer for the last hop; the rule of
    :func:`answer_correct`) is the hop's call. A task is covered only when every hop has one.
    Results are cached under ``$EVALS_CACHE_DIR/toolhop`` (keyed by the tasks' content).
    """
    path = chains_cache_path(tasks)
    if use_cache and path.is_file():
        raw = json.loads(path.read_text())
        return {tid: Chain(tid, [Call(**c) for c in calls], "derived") for tid, calls in raw.items()}
    own = pool is None
    pool = pool or SandboxPool()
    try:
        found = {}
        for task in tasks:
            if task.gold_calls:
                continue
            chain = derive_chain(task, pool)
            if chain is not None:
                found[task.id] = chain
    finally:
        if own:
            pool.close()
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({tid: [c.to_dict() for c in ch.calls] for tid, ch in found.items()}, sort_keys=True))
        os.replace(tmp, path)
    return found


def gold_chains(tasks: Sequence[ToolHopTask], pool: SandboxPool | None = None, *, derive: bool = True) -> dict[str, Chain]:
    """Every task's chain: explicit when the record has ``gold_calls``, else derived (when
    ``derive``). Explicit chains that do not parse are left out (and reported by the tests)."""
    chains: dict[str, Chain] = {}
    for task in tasks:
        if task.gold_calls:
            try:
                chains[task.id] = Chain(task.id, task.explicit_chain() or [], "explicit")
            except ToolHopDataError:
                pass
    if derive:
        for tid, chain in derive_chains(tasks, pool).items():
            chains.setdefault(tid, chain)
    return chains


def describe_task(task: ToolHopTask) -> dict[str, Any]:
    """A JSON-ready summary (for ``data stats`` and debugging)."""
    return {
        "id": task.id, "question": task.question, "answer": task.answer, "domain": task.domain,
        "hops": [{"tool": h.name, "question": h.question, "answer": h.answer} for h in task.hops],
    }


def iter_tool_names(tasks: Iterable[ToolHopTask]) -> set[str]:
    return {h.name for t in tasks for h in t.hops}


__all__ = [
    "Call", "Chain", "Hop", "ToolHopCatalog", "ToolHopDataError", "ToolHopSpec", "ToolHopTask", "ToolCode",
    "answer_correct", "dataset_in_use", "derive_chains", "gold_chains", "invocation_errors",
    "load_file", "load_tasks", "metrics", "normalize_answer", "parse_call", "score_trace", "split_code",
]
