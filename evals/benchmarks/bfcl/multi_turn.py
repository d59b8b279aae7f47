"""BFCL's multi-turn entries, read out of the pinned wheel, and their tools: BFCL's backends behind MCP.

An entry is several user turns over one set of stateful backends (``involved_classes``, loaded
from the entry's ``initial_config``). Its functions are the function docs of those classes
(``data/multi_turn_func_doc/``, the files BFCL's ``MULTI_TURN_FUNC_DOC_FILE_MAPPING`` names), each
description with BFCL's " Note that the provided function is in Python 3 syntax." appended, as
BFCL's loader does. In ``multi_turn_miss_func`` the functions of ``missed_function`` are held out
until their turn (an empty turn, to which BFCL says :func:`added_functions_prompt`), and they keep
their descriptions without the hint (BFCL's loader moves them out of the list before it adds it).

Every function is served as an MCP tool of the entry's endpoint (:class:`.multi_turn_episode.MultiTurnKind`,
:func:`.backends.backend_tool`: the schema as :mod:`.tools` maps it, each call run on the MCP
session's own fresh instances). The
held-out functions are listed from the start: the episode shows them to the model only from
their turn on (``run_agent``'s ``visible``). ``excluded_function`` (on 18 entries of each file) is
read by no code of BFCL's and is ignored here too.
"""

from __future__ import annotations

import copy
import functools
import inspect
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .backends import BackendError, Instances, fresh_instances, make_op
from .data import WheelError, read_answers, read_func_docs, read_jsonl, verified_wheel
from .files import MULTI_TURN
from .wheel_code import import_module

__all__ = ["PYTHON_HINT", "MultiTurnEntry", "added_functions_prompt", "gold_steps",
           "load_multi_turn", "parse_call", "read_multi_turn", "step_limit"]

PYTHON_HINT = " Note that the provided function is in Python 3 syntax."
_DATA = "bfcl_eval/data/"


def _prompts() -> Any:
    return import_module("bfcl_eval.constants.default_prompts")


@functools.cache  # one pinned wheel per process (wheel_code): looked up once, not per episode
def step_limit() -> int:
    """BFCL's ``MAXIMUM_STEP_LIMIT``: a user turn ends the entry ("force-terminated") once the model
    has answered with calls more than this many times in it (kept in the user cache with the wheel's
    other derived data: reading it imports BFCL's prompt module)."""
    from ...core.derived_cache import cached_derivation

    return cached_derivation("bfcl-step-limit", [verified_wheel()], lambda: int(_prompts().MAXIMUM_STEP_LIMIT),
                             code=[__file__], decode=int)


@functools.cache
def added_functions_prompt() -> str:
    """What BFCL says in a held-out function's turn (``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``;
    kept in the user cache as :func:`step_limit` is)."""
    from ...core.derived_cache import cached_derivation

    return cached_derivation("bfcl-added-functions-prompt", [verified_wheel()],
                             lambda: str(_prompts().DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC), code=[__file__],
                             decode=_text)


def _text(raw: Any) -> str:
    if not isinstance(raw, str):
        raise TypeError("not a text")
    return raw


@dataclass(frozen=True)
class MultiTurnEntry:
    """One multi-turn entry: its user turns (each a list of messages; a held-out turn is empty), its
    backends and their initial config, the functions offered from the start, those added at a later
    turn, and the ground truth: per turn, the calls as BFCL writes them (``cd(folder='document')``)."""

    id: str
    category: str
    turns: tuple[tuple[dict[str, Any], ...], ...]
    involved_classes: tuple[str, ...]
    initial_config: Mapping[str, Any]
    functions: tuple[dict[str, Any], ...]
    missed: Mapping[int, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    ground_truth: tuple[tuple[str, ...], ...] = ()

    @property
    def long_context(self) -> bool:
        """BFCL loads the backends with ``long_context=True`` for these (its test: the id's category)."""
        category = self.id.rsplit("_", 1)[0]
        return "long_context" in category or "composite" in category

    @property
    def query(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in (self.turns[0] if self.turns else ()))

    def all_functions(self) -> tuple[dict[str, Any], ...]:
        return self.functions + tuple(d for turn in sorted(self.missed) for d in self.missed[turn])

    def instances(self) -> Instances:
        """Fresh backend instances for this entry, initialised as BFCL initialises them."""
        return fresh_instances(self.involved_classes, self.initial_config, long_context=self.long_context)

    def make_op(self) -> dict[str, Any]:
        """The holder operation that makes them in a holder process (:mod:`.backend_host`)."""
        return make_op(self.involved_classes, self.initial_config, long_context=self.long_context)


@functools.cache
def _docs(path: Path, class_name: str) -> tuple[dict[str, Any], ...]:
    files = import_module("bfcl_eval.constants.executable_backend_config").MULTI_TURN_FUNC_DOC_FILE_MAPPING
    if class_name not in files:
        raise WheelError(f"{path}: BFCL has no function docs for backend class {class_name!r}")
    return tuple(read_func_docs(files[class_name], path))


def _with_hint(doc: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(doc))
    out["description"] = str(out.get("description", "")) + PYTHON_HINT
    return out


@functools.cache
def _hinted_docs(path: Path, class_name: str) -> tuple[dict[str, Any], ...]:
    """A class's docs with BFCL's Python hint, made once: the entries share them (nothing changes a
    doc in place; a tool's schema is a copy)."""
    return tuple(_with_hint(d) for d in _docs(path, class_name))


def read_multi_turn(category: str, wheel: Path | None = None) -> list[MultiTurnEntry]:
    """The entries of one multi-turn category, in the file's order, with their ground truth (from the
    user cache while the wheel and this code are the same: :mod:`~evals.core.derived_cache`)."""
    if category not in MULTI_TURN:
        raise WheelError(f"BFCL category {category!r} is not a multi-turn category ({', '.join(MULTI_TURN)})")
    return list(_memo(category, verified_wheel(wheel).resolve()))


@functools.lru_cache(maxsize=16)
def _memo(category: str, path: Path) -> tuple[MultiTurnEntry, ...]:
    """One category's entries, kept for the process, as the single-turn ones are (``data._memo``): ``evals score``
    of a result folder asks for them three times (the import, the imported run's plugin, its scoring), 15 ms a
    category each time from the user cache. The wheel's bytes are the pinned ones (checked first): its path is the
    key. Nothing changes an entry (frozen; its docs and config are shared already by the entries of a load)."""
    from ...core.derived_cache import cached_derivation

    entries: list[MultiTurnEntry] = cached_derivation(
        f"bfcl-{category}", [path], lambda: _read_multi_turn(category, path),
        code=[__file__, Path(__file__).with_name("files.py")], encode=_encode, decode=_decode)
    return tuple(entries)


def _encode(entries: Sequence[MultiTurnEntry]) -> dict[str, Any]:
    """Entries for the user cache, each function doc once (the entries of a class share its docs:
    27 docs an entry, a few dozen different ones in a category), an entry's docs as numbers."""
    numbers: dict[int, int] = {}
    docs: list[dict[str, Any]] = []

    def number(doc: dict[str, Any]) -> int:
        if id(doc) not in numbers:
            numbers[id(doc)] = len(docs)
            docs.append(doc)
        return numbers[id(doc)]

    rows = [(e.id, e.category, e.turns, e.involved_classes, dict(e.initial_config), [number(d) for d in e.functions],
             {n: [number(d) for d in held] for n, held in e.missed.items()}, e.ground_truth) for e in entries]
    return {"docs": docs, "entries": rows}


def _decode(value: dict[str, Any]) -> list[MultiTurnEntry]:
    """:func:`_encode`'s entries, sharing their docs again (nothing changes a doc in place): a doc's
    tool is built once (:func:`.backends.backend_tool`)."""
    docs = value["docs"]
    return [MultiTurnEntry(i, c, tuple(map(tuple, t)), tuple(k), dict(ic), tuple(docs[n] for n in f),
                           {int(n): tuple(docs[d] for d in held) for n, held in m.items()}, tuple(map(tuple, g)))
            for i, c, t, k, ic, f, m, g in value["entries"]]


def _read_multi_turn(category: str, path: Path) -> list[MultiTurnEntry]:
    with zipfile.ZipFile(path) as archive:
        rows = read_jsonl(archive, f"{_DATA}BFCL_v4_{category}.json", str(path))
        answers = read_answers(archive, category, str(path))
    out = []
    for row in rows:
        where = f"{path}: entry {row['id']}"
        turns, classes, truth = row.get("question"), row.get("involved_classes"), answers.get(row["id"])
        if not (isinstance(turns, list) and all(isinstance(t, list) for t in turns) and isinstance(classes, list)):
            raise WheelError(f"{where} is not a multi-turn entry (question, involved_classes)")
        if not (isinstance(truth, list) and len(truth) == len(turns) and all(isinstance(t, list) for t in truth)):
            raise WheelError(f"{where} has no ground truth of one call list per turn")
        # (doc as read, doc with the hint): BFCL moves a held-out doc out before it adds the hint to the others
        docs = [pair for c in classes for pair in zip(_docs(path.resolve(), str(c)),
                                                      _hinted_docs(path.resolve(), str(c)), strict=True)]
        missed: dict[int, tuple[dict[str, Any], ...]] = {}
        for turn, names in (row.get("missed_function") or {}).items():
            held = []
            for name in names:  # BFCL moves the first doc of that name out of the offered list
                index = next((i for i, (d, _) in enumerate(docs) if d.get("name") == name), None)
                if index is not None:
                    held.append(copy.deepcopy(dict(docs.pop(index)[0])))
            missed[int(turn)] = tuple(held)
        out.append(MultiTurnEntry(row["id"], category, tuple(tuple(t) for t in turns), tuple(map(str, classes)),
                                  dict(row.get("initial_config") or {}), tuple(h for _, h in docs), missed,
                                  tuple(tuple(map(str, t)) for t in truth)))
    return out


def load_multi_turn(categories: Sequence[str] = MULTI_TURN, wheel: Path | None = None) -> list[MultiTurnEntry]:
    return [e for c in categories for e in read_multi_turn(c, wheel)]


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """A ground-truth call (``sort('a.pdf')``) as (name, positional values, keyword values)."""
    import ast

    call = ast.parse(text, mode="eval").body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        raise ValueError(f"not a plain call: {text!r}")
    return (call.func.id, [ast.literal_eval(a) for a in call.args],
            {str(k.arg): ast.literal_eval(k.value) for k in call.keywords})


_P = inspect.Parameter
_KINDS = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD, _P.VAR_POSITIONAL, _P.KEYWORD_ONLY, _P.VAR_KEYWORD)  # by value


@functools.cache  # one pinned wheel per process (wheel_code)
def _signatures(class_name: str) -> dict[str, inspect.Signature]:
    """The public methods' signatures of BFCL's backend class ``class_name`` (what binds a ground
    truth's positional values to names), kept in the user cache with the wheel's other derived data:
    this process need not import BFCL's backend modules for them."""
    from ...core.derived_cache import cached_derivation

    table = cached_derivation(f"bfcl-signatures-{class_name}", [verified_wheel()],
                              lambda: _read_signatures(class_name), code=[__file__])
    return {name: inspect.Signature([inspect.Parameter(p, _KINDS[kind], default=None if optional else inspect.Parameter.empty)
                                     for p, kind, optional in params])
            for name, params in table.items()}


def _read_signatures(class_name: str) -> dict[str, list[tuple[str, int, bool]]]:
    module = import_module(import_module("bfcl_eval.constants.executable_backend_config")
                           .CLASS_FILE_PATH_MAPPING[class_name])
    return {name: [(p.name, int(p.kind), p.default is not inspect.Parameter.empty)
                   for p in inspect.signature(member).parameters.values()]
            for name, member in inspect.getmembers(getattr(module, class_name), predicate=inspect.isfunction)
            if not name.startswith("_")}


def gold_steps(entry: MultiTurnEntry) -> list[list[dict[str, Any]]]:
    """The ground truth as MCP calls, one list per turn: positional values bound to the backend
    method's parameter names (its signature), keyword values as they are."""
    methods: dict[str, inspect.Signature] = {}
    for class_name in entry.involved_classes:
        methods.update(_signatures(class_name))
    out = []
    for turn in entry.ground_truth:
        calls = []
        for text in turn:
            name, args, kwargs = parse_call(text)
            if name not in methods:
                raise BackendError(f"BFCL entry {entry.id}: the ground truth calls {name!r}, which no backend has")
            bound = methods[name].bind(None, *args, **kwargs)
            calls.append({"name": name, "arguments": {k: v for k, v in list(bound.arguments.items())[1:]}})
        out.append(calls)
    return out

