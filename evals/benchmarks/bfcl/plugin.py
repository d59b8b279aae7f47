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
from .checker import Verdict, check_calls
from .data import BfclEntry, load_entries, verified_wheel
from .files import MULTI_TURN, SERVED, SINGLE_TURN, served_name
from .metrics import task_score
from .multi_turn import MultiTurnCatalog, MultiTurnEntry, load_multi_turn, step_limit
from .multi_turn_checker import check_multi_turn
from .multi_turn_episode import multi_turn_view, run_multi_turn, turns_from_trace
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
    return SERVED if "all" in chosen else tuple(c for c in SERVED if c in chosen)


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
            e.id: e for e in load_entries(tuple(c for c in self.categories if c in SINGLE_TURN))}
        self.multi: dict[str, MultiTurnEntry] = {
            e.id: e for e in load_multi_turn(tuple(c for c in self.categories if c in MULTI_TURN))}

    def task_ids(self) -> list[str]:
        return [*self.entries, *self.multi]

    def config_extras(self) -> dict[str, Any]:
        """BFCL's per-turn step limit (read from the wheel), when multi-turn entries run."""
        return {"bfcl_step_limit": step_limit()} if self.multi else {}

    def check(self, strategy: str, *, own_server: bool) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"bfcl has no strategy {strategy!r}; available: {', '.join(STRATEGIES)}")

    def mounts(self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *,
               strategy: str | None = None) -> list[BenchmarkMount]:
        single = BfclCatalog(list(self.entries.values()), self.name)
        if not self.multi:
            return [BenchmarkMount(catalog=single)]
        return [BenchmarkMount(catalog=MultiTurnCatalog(single, list(self.multi.values()), self.name))]

    def data_files(self) -> list[Path]:
        return [verified_wheel()]

    def task_query(self, task_id: str) -> str:
        return self.multi[task_id].query if task_id in self.multi else self.entries[task_id].query

    async def prepare(self, env: EpisodeEnv) -> None:
        pass

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        if task_id in self.multi:
            return await run_multi_turn(self.multi[task_id], env, recorder, self.name)
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
        known = task_id in self.entries or task_id in self.multi
        return float(self.verdict(task_id, trace).valid) if known else None

    def verdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict:
        if task_id in self.multi:
            return check_multi_turn(self.multi[task_id], turns_from_trace(trace))
        entry = self.entries[task_id]
        return check_calls(entry.category, entry.functions, calls_from_trace(trace), entry.ground_truth)

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        entry = self.entries.get(task_id) or self.multi.get(task_id)
        if entry is None:
            raise ValueError(f"the run has a task id that is not among its BFCL entries: {task_id!r}")
        errored = trace is None or trace.get("status") != "completed"
        return task_score(entry.category, self.verdict(task_id, trace), errored=errored)

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None,
                     score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """A multi-turn entry's turns (the model's calls beside the ground truth's) and, when it
        failed, the verdict with the first failing turn's state differences; nothing for the others."""
        if task_id not in self.multi:
            return []
        verdict = (((score or {}).get("score") or {}).get("details") or {}).get("verdict")
        return multi_turn_view(self.multi[task_id], trace, verdict)
