"""BFCL as an ``evals run`` plugin: one entry's functions served as the tools of its endpoint.

Strategy ``fc`` (function calling, as BFCL runs its ``-FC`` models): the entry's user turn is sent
with the entry's functions as tools (:mod:`.tools`); the first turn in which the model calls tools
ends the episode (single-turn categories score that one response, and the calls get the
placeholder result). A reply without a call is a reply without a call. The calls (names as served,
arguments as the model sent them) are scored by :mod:`.checker`, the AST checker's rules.

The oracle (``--model oracle``) makes the gold calls (each parameter's first possible answer; a
parameter whose only answer is ``""`` is left out) in one turn, or none for irrelevance; it scores
100 in every served category.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.agent import run_agent
from client.runs import EpisodeOutcome
from server import BenchmarkMount

from ...core.metrics import TaskScore
from ...core.plugin import BenchmarkInfo, EpisodeEnv
from .agentic import AgenticVerdict
from .checker import Verdict, check_calls
from .data import BfclEntry, load_entries, verified_wheel
from .files import MEMORY_SERVED, SERVED, served_name
from .memory import MemoryCatalog
from .memory_run import MemoryRunner
from .metrics import task_score
from .tools import BfclCatalog

if TYPE_CHECKING:
    from client.messages import ToolCall
    from client.runs import EpisodeRecorder

    from ...core.context import ScoreContext

__all__ = ["BfclBenchmark", "calls_from_trace", "gold_calls", "selected_categories"]

STRATEGIES = ("fc",)
NO_CALL_ANSWER = "None of the offered functions fits this request."


def selected_categories(option: Any) -> tuple[str, ...]:
    """The categories a ``--category`` value selects (None or ``all``: every served one), in BFCL's order."""
    chosen = set(option or ["all"])
    every = SERVED + MEMORY_SERVED
    return every if "all" in chosen else tuple(c for c in every if c in chosen)


def _chosen(options: Mapping[str, Any], declared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Each key's first possible value (made concrete); keys whose only possible value is ``""`` left
    out, and so are optional keys the function doc does not declare (``declared``: its properties)."""
    out = {}
    for key, values in options.items():
        if declared is not None and key not in declared and isinstance(values, list) and "" in values:
            continue  # a few answers name a parameter the doc lacks: only leaving it out is right
        value = next((v for v in values if v != ""), None) if isinstance(values, list) else None
        if value is not None:
            out[key] = _concrete(value)
    return out


def _concrete(value: Any) -> Any:
    """A possible value as a value: a dict answer maps keys to lists of possible values, and so
    does each dict of a list-of-dicts answer."""
    if isinstance(value, dict):
        return _chosen(value)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_chosen(v) for v in value]
    return value


def gold_calls(entry: BfclEntry) -> list[dict[str, Any]]:
    """The oracle's calls: each answer's function (as served) with each parameter's first possible
    value, parameters whose only possible value is ``""`` (optional) left out."""
    docs = {d.get("name"): d for d in entry.functions}
    calls = []
    for answer in entry.ground_truth or ():
        name, params = next(iter(answer.items()))
        declared = ((docs.get(name) or {}).get("parameters") or {}).get("properties") or {}
        calls.append({"name": served_name(name), "arguments": _chosen(params, declared)})
    return calls


def calls_from_trace(trace: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    """The (served name, arguments) of the calls of the trace's first turn with calls; arguments are
    ``None`` where the model's text was not JSON. An errored or missing episode made no call."""
    if trace is None or trace.get("status") != "completed":
        return []
    calls = [c for c in (trace.get("outcome") or {}).get("calls") or [] if isinstance(c, dict)]
    if not calls:
        return []
    first = calls[0].get("turn")
    return [(str(c.get("name")), c.get("arguments") if isinstance(c.get("arguments"), dict) else None)
            for c in calls if c.get("turn") == first]


class BfclBenchmark:
    """BFCL v4's served categories (see the module docstring)."""

    def __init__(self, info: BenchmarkInfo, options: Mapping[str, Any]) -> None:
        self.info = info
        self.name = info.name
        self.options = options
        self.categories = selected_categories(options.get("category"))
        self.entries: dict[str, BfclEntry] = {
            e.id: e for e in load_entries(tuple(c for c in self.categories if c in SERVED))}
        memory = tuple(c for c in self.categories if c in MEMORY_SERVED)
        self.memory: MemoryRunner | None = MemoryRunner(memory, self.name) if memory else None

    def task_ids(self) -> list[str]:
        return [*self.entries, *(self.memory.entries if self.memory else ())]

    def check(self, strategy: str, *, own_server: bool) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"bfcl has no strategy {strategy!r}; available: {', '.join(STRATEGIES)}")

    def mounts(self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *,
               strategy: str | None = None) -> list[BenchmarkMount]:
        catalog: Any = BfclCatalog(list(self.entries.values()), self.name)
        if self.memory is not None:
            catalog = MemoryCatalog(self.memory.endpoints(), catalog, self.name)
        return [BenchmarkMount(catalog=catalog)]

    def data_files(self) -> list[Path]:
        return [verified_wheel()]

    def task_query(self, task_id: str) -> str | None:
        if self.memory is not None and task_id in self.memory.entries:
            return self.memory.entries[task_id].question
        return self.entries[task_id].query if task_id in self.entries else None

    async def prepare(self, env: EpisodeEnv) -> None:
        pass

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        if self.memory is not None and task_id in self.memory.entries:
            return await self.memory.episode(env, task_id, recorder)
        entry = self.entries[task_id]
        calls = gold_calls(entry)
        model = env.model(task_id, [calls] if calls else [], final_answer=None if calls else NO_CALL_ANSWER)

        async def one_response(turn: int, made: list[ToolCall]) -> bool:
            return True  # single-turn: the first response with calls is the one scored

        async with env.session(self.name, task_id) as session:
            outcome = await run_agent(model, session, entry.query, recorder, env.agent_cfg, limiter=env.limiter,
                                      on_turn=one_response)
        outcome.data["category"] = entry.category
        return outcome

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        task_id = str(trace.get("task_id"))
        known = task_id in self.entries or (self.memory is not None and task_id in self.memory.entries)
        return float(self.verdict(task_id, trace).valid) if known else None

    def verdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict | AgenticVerdict:
        if self.memory is not None and task_id in self.memory.entries:
            return self.memory.verdict(task_id, trace)
        entry = self.entries[task_id]
        return check_calls(entry.category, entry.functions, calls_from_trace(trace), entry.ground_truth)

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: a memory question's accepted answers beside its final answer, the verdict, the
        prerequisite conversations (:mod:`.memory_view`)."""
        if self.memory is not None and task_id in self.memory.entries:
            from .memory_view import memory_episode_sections

            verdict = self.memory.verdict(task_id, trace) if trace is not None else None
            return memory_episode_sections(self.memory.entries[task_id], self.memory.prereq_by_id(), trace, verdict)
        return []

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        memory = self.memory.entries if self.memory is not None else {}
        if task_id not in self.entries and task_id not in memory:
            raise ValueError(f"the run has a task id that is not among its BFCL entries: {task_id!r}")
        errored = trace is None or trace.get("status") != "completed"
        category = memory[task_id].category if task_id in memory else self.entries[task_id].category
        return task_score(category, self.verdict(task_id, trace), errored=errored)
