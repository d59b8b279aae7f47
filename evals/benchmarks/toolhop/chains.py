"""ToolHop's gold call chains: one call per hop whose real output leads to the gold answer.

A chain is *explicit* when the record has ``gold_calls`` (parsed by
:meth:`~.tasks.ToolHopTask.explicit_chain`), else *derived* (:func:`derive_chains`: candidate calls
run in the sandbox, the first whose output holds the hop's gold answer is kept). Derived chains are
cached under ``$EVALS_CACHE_DIR/toolhop``, keyed by the tasks' content. The oracle plays them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tool_specs.sandbox import SandboxLimits, SandboxPool

from ...core.data import cache_dir
from .answers import answer_correct
from .feedback import tool_reported_error, value_text
from .files import NAME
from .tasks import Call, Hop, ToolHopDataError, ToolHopTask

__all__ = [
    "DERIVATION_VERSION", "Chain", "candidate_calls", "chains_cache_path", "derive_chain", "derive_chains",
    "gold_chains", "hop_output_matches",
]


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
    values: dict[str, list[Any]] = {
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


DERIVATION_VERSION = 3  # 3: the cache keeps each call's argument order (2 sorted it, so cached runs traced other bytes)


def chains_cache_path(tasks: Sequence[ToolHopTask]) -> Path:
    digest = hashlib.sha256()
    for t in tasks:
        digest.update(json.dumps([t.id, t.answer, [(h.source, h.answer) for h in t.hops]], sort_keys=True).encode())
    return cache_dir() / NAME / f"derived-chains-v{DERIVATION_VERSION}-{digest.hexdigest()[:16]}.json"


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
        # the calls' arguments keep their order: a run from the cache traces what a first run does
        tmp.write_text(json.dumps({tid: [c.to_dict() for c in ch.calls] for tid, ch in found.items()}))
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
