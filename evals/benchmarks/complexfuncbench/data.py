"""Loading ComplexFuncBench records (the official format), the tool schemas and the official lists.

A record is ``{"id": "<Domain>-<n>", "conversations": [...], "functions": [...]}``: the user's query,
then assistant turns whose ``function_call`` list is one step of parallel gold calls, each followed by
an ``observation`` turn holding the recorded response of every call in the same order, and the gold
final answer (an assistant turn with ``content``). ``functions`` are the sample's tools in the
official ``{"name", "description", "parameters"}`` form.

Two API names (``Get_Hotel_Reviews(Tips)`` and ``Get_Hotel_Reviews(Tips)_Sort_Option``) hold
characters that tool-calling APIs reject. They are served under the alias the official harness
itself sends to models (every character outside ``[A-Za-z0-9_-]`` becomes ``-``, cut at 64) and
mapped back to the official name before any decision, in traces, scores and exports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DOMAINS", "Sample", "alias_of", "domain_of", "load_exact_match", "load_first_turn", "load_samples",
           "load_tool_schemas", "parse_record"]

DOMAINS = ("Hotels", "Flights", "Car-Rental", "Attraction", "Cross")
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def alias_of(name: str) -> str:
    """The name a tool-calling API accepts: the official harness's own replacement (``-`` for every
    character outside ``[A-Za-z0-9_-]``, at most 64 characters)."""
    return _INVALID.sub("-", name)[:64]


def domain_of(sample_id: str) -> str:
    """The domain as the official metrics read it: the id up to its last ``-``."""
    return sample_id.rsplit("-", 1)[0]


@dataclass
class Sample:
    """One record: the query, the gold steps and their recorded responses, the final answer, the tools."""

    id: str
    query: str
    steps: list[list[dict[str, Any]]]
    observations: list[list[Any]]
    final: str | None
    functions: list[dict[str, Any]]
    record: dict[str, Any] = field(repr=False)

    @property
    def domain(self) -> str:
        return domain_of(self.id)

    @property
    def gold_calls(self) -> int:
        return sum(len(s) for s in self.steps)

    @property
    def aliases(self) -> dict[str, str]:
        """official name -> served name."""
        return {f["name"]: alias_of(f["name"]) for f in self.functions}

    def official_name(self, served: str) -> str | None:
        for name, alias in self.aliases.items():
            if alias == served:
                return name
        return None


def _fail(where: str, what: str) -> ValueError:
    return ValueError(f"ComplexFuncBench record {where}: {what}")


def _check_call(where: str, call: Any) -> None:
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str) or not isinstance(call.get("arguments"), Mapping):
        raise _fail(where, f"a function_call item must be {{'name': str, 'arguments': object}}, got {str(call)[:200]}")


def _check_function(where: str, fn: Any) -> None:
    params = fn.get("parameters") if isinstance(fn, Mapping) else None
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not isinstance(params, Mapping):
        raise _fail(where, f"a function must have 'name' and 'parameters', got {str(fn)[:200]}")
    if not isinstance(params.get("properties"), Mapping) or not isinstance(params.get("required", []), list):
        raise _fail(where, f"function {fn['name']!r}: 'parameters' needs 'properties' (object) and 'required' (list)")


def parse_record(record: Any, where: str = "?") -> Sample:
    """One record in the official format; a clear ``ValueError`` naming what is wrong otherwise."""
    if not isinstance(record, Mapping):
        raise _fail(where, f"expected an object, got {type(record).__name__}")
    sid = record.get("id")
    if not isinstance(sid, str) or "-" not in sid:
        raise _fail(where, f"'id' must be '<Domain>-<n>', got {sid!r}")
    where = f"{sid} ({where})"
    convs = record.get("conversations")
    if not isinstance(convs, list) or not convs:
        raise _fail(where, "'conversations' must be a non-empty list")
    first = convs[0]
    if not isinstance(first, Mapping) or first.get("role") != "user" or not isinstance(first.get("content"), str):
        raise _fail(where, "the first conversation turn must be the user's query")
    functions = record.get("functions")
    if not isinstance(functions, list) or not functions:
        raise _fail(where, "'functions' must be a non-empty list")
    for fn in functions:
        _check_function(where, fn)
    aliases = [alias_of(f["name"]) for f in functions]
    if len(set(aliases)) != len(aliases):
        raise _fail(where, f"two functions share a served name: {aliases}")
    steps: list[list[dict[str, Any]]] = []
    observations: list[list[Any]] = []
    final: str | None = None
    for i, turn in enumerate(convs[1:], 1):
        if not isinstance(turn, Mapping):
            raise _fail(where, f"turn {i} is not an object")
        if "function_call" in turn:
            calls = turn["function_call"]
            if not isinstance(calls, list) or not calls:
                raise _fail(where, f"turn {i}: 'function_call' must be a non-empty list")
            for c in calls:
                _check_call(f"{where} turn {i}", c)
            steps.append([dict(c) for c in calls])
        elif turn.get("role") == "observation":
            content = turn.get("content")
            if not isinstance(content, list):
                raise _fail(where, f"turn {i}: an observation's 'content' must be a list (one response per call)")
            observations.append(list(content))
        elif turn.get("role") == "assistant":
            final = turn.get("content") if isinstance(turn.get("content"), str) else None
    if len(steps) != len(observations):
        raise _fail(where, f"{len(steps)} function_call turns but {len(observations)} observation turns")
    for k, (calls, obs) in enumerate(zip(steps, observations, strict=True)):
        if len(calls) != len(obs):
            raise _fail(where, f"step {k}: {len(calls)} calls but {len(obs)} recorded responses")
    if not steps:
        raise _fail(where, "no gold function_call step")
    names = {f["name"] for f in functions}
    unknown = sorted({c["name"] for s in steps for c in s} - names)
    if unknown:
        raise _fail(where, f"gold calls to functions the sample does not list: {unknown}")
    return Sample(sid, first["content"], steps, observations, final, [dict(f) for f in functions], dict(record))


def _records(path: Path) -> Iterable[tuple[str, Any]]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if path.suffix == ".json" and stripped.startswith("["):
        for i, rec in enumerate(json.loads(text)):
            yield f"{path.name} item {i}", rec
        return
    if path.suffix == ".json":
        yield path.name, json.loads(text)
        return
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {n} is not JSON: {exc}") from None
            yield f"{path.name} line {n}", rec


def load_samples(paths: Sequence[Path]) -> list[Sample]:
    """Records from ``.jsonl`` files (one per line) or ``.json`` files (one record or a list), in order;
    ids must be unique."""
    out: list[Sample] = []
    seen: set[str] = set()
    for path in paths:
        for where, rec in _records(path):
            sample = parse_record(rec, where)
            if sample.id in seen:
                raise ValueError(f"ComplexFuncBench: sample id {sample.id!r} appears twice ({where})")
            seen.add(sample.id)
            out.append(sample)
    return out


def load_tool_schemas(path: Path) -> dict[str, dict[str, Any]]:
    """``All_Tools.json`` (``{"function": [...]}``): every schema by its official name."""
    data = json.loads(path.read_text(encoding="utf-8"))
    fns = data.get("function") if isinstance(data, Mapping) else None
    if not isinstance(fns, list):
        raise ValueError(f"{path}: expected {{'function': [schemas]}}")
    out: dict[str, dict[str, Any]] = {}
    for fn in fns:
        _check_function(path.name, fn)
        out[fn["name"]] = dict(fn)
    return out


def load_exact_match(path: Path) -> dict[str, list[str]]:
    """The official list of parameters compared by exact value, per API name."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, Mapping) or not all(isinstance(v, list) for v in data.values()):
        raise ValueError(f"{path}: expected {{API name: [parameter names]}}")
    return {str(k): [str(p) for p in v] for k, v in data.items()}


def load_first_turn(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The first step's gold calls of every sample (``{"id", "ground_truth": [{name: arguments}]}``),
    as ``{id: [{"name", "arguments"}]}``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        rec = json.loads(line)
        calls = []
        for item in rec.get("ground_truth") or []:
            if not isinstance(item, Mapping) or len(item) != 1:
                raise ValueError(f"{path} line {n}: a ground_truth item must be {{name: arguments}}")
            (name, args), = item.items()
            calls.append({"name": name, "arguments": args})
        out[str(rec["id"])] = calls
    return out
