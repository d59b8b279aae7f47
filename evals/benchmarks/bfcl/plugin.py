"""BFCL as an ``evals run`` plugin: one entry's functions served as the tools of its endpoint.

Strategy ``fc`` (function calling, as BFCL runs its ``-FC`` models): the entry's messages are sent
as BFCL's FC handlers send them (all of them, in order: a live entry's system message stays a
system message, earlier user and assistant turns stay history, the last user message is the
turn), with the entry's functions as tools (:mod:`.tools`); the first turn in which the model calls tools
ends the episode (single-turn categories score that one response, and the calls get the
placeholder result). A reply without a call is a reply without a call. The calls (names as served,
arguments as the model sent them) are scored by :mod:`.checker`, the AST checker's rules.

The oracle (``--model oracle``) makes the gold calls (each parameter's first possible answer; a
parameter whose only answer is ``""`` is left out; a Java or JavaScript value written as the source
text BFCL's converters read back) in one turn, none for the irrelevance categories, and for
``live_relevance`` (whose wheel has no answers: any call is right) a call of the entry's first
function with its required parameters filled with empty values of their types.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.agent import run_agent
from client.messages import AssistantMessage, Message, SystemMessage, UserMessage
from client.runs import EpisodeOutcome
from server import BenchmarkMount

from ...core.metrics import TaskScore
from ...core.plugin import BenchmarkInfo, EpisodeEnv
from .agentic import AgenticVerdict
from .checker import Verdict, check_calls
from .data import BfclEntry, load_entries, verified_wheel
from .files import FORMAT_SENSITIVITY, MEMORY_SERVED, MULTI_TURN, SERVED, SINGLE_TURN, language, served_name
from .format_sensitivity import base_id, load_format_sensitivity
from .memory import MemoryCatalog
from .memory_run import MemoryRunner
from .metrics import task_score
from .multi_turn import MultiTurnCatalog, MultiTurnEntry, load_multi_turn, step_limit
from .multi_turn_checker import acheck_multi_turn, check_multi_turn
from .multi_turn_episode import multi_turn_view, run_multi_turn, turns_from_trace
from .tools import BfclCatalog, to_tool
from .type_conversion import java_text, js_text

if TYPE_CHECKING:
    from client.messages import ToolCall
    from client.runs import EpisodeRecorder

    from ...core.context import ScoreContext
    from ...core.formats import PredictionFormat

__all__ = ["BfclBenchmark", "calls_from_trace", "conversation", "gold_calls", "selected_categories"]

STRATEGIES = ("fc", "prompting")
NO_CALL_ANSWER = "None of the offered functions fits this request."


def selected_categories(option: Any) -> tuple[str, ...]:
    """The categories a ``--category`` value selects (None or ``all``: every served one), in BFCL's order."""
    chosen = set(option or ["all"])
    every = SERVED + MEMORY_SERVED
    picked = every if "all" in chosen else tuple(c for c in every if c in chosen)
    return picked + ((FORMAT_SENSITIVITY,) if FORMAT_SENSITIVITY in chosen else ())  # only when named


_NO_VALUE = object()


def _chosen(options: Mapping[str, Any], declared: Mapping[str, Any] | None = None, required: Sequence[str] = (),
            *, deep: bool = True) -> dict[str, Any]:
    """Each key's first possible value other than ``""`` (``None`` included), made concrete when
    ``deep``. A key whose only possible value is ``""`` is left out, unless the doc requires it (then
    ``""``, which passes as a string); so are optional keys the function doc does not declare
    (``declared``: its properties)."""
    out = {}
    for key, values in options.items():
        if not isinstance(values, list):
            continue
        if declared is not None and key not in declared and "" in values:
            continue  # a few answers name a parameter the doc lacks: only leaving it out is right
        value = next((v for v in values if v != ""), _NO_VALUE)
        if value is not _NO_VALUE:
            out[key] = _concrete(value) if deep else value
        elif key in required and "" in values:
            out[key] = ""
    return out


def _concrete(value: Any) -> Any:
    """A possible value as a value: a dict answer maps keys to lists of possible values (compared
    as they are: not made concrete again), and so does each dict of a list-of-dicts answer."""
    if isinstance(value, dict):
        return _chosen(value, deep=False)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_chosen(v, deep=False) for v in value]
    return value


_EMPTY: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}


def _as_text(arguments: dict[str, Any], declared: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """Java or JavaScript arguments as the source text the FC handler asks for."""
    write = java_text if lang == "java" else js_text
    out = {}
    for key, value in arguments.items():
        prop = declared.get(key) or {}
        out[key] = write(value, str(prop.get("type")), (prop.get("items") or {}).get("type"))
    return out


def gold_calls(entry: BfclEntry, *, served: bool = True) -> list[dict[str, Any]]:
    """The oracle's calls: each answer's function (as served; ``served=False``: as BFCL's docs name it,
    for a prompting model) with each parameter's first possible value, parameters whose only possible
    value is ``""`` (optional) left out (see the module docstring for Java, JavaScript and ``live_relevance``)."""
    if entry.category == "live_relevance" and entry.functions:
        first = to_tool(entry.functions[0], entry.id, entry.category)
        props = first.input_schema.get("properties") or {}
        required = [p for p in first.input_schema.get("required") or [] if isinstance(props.get(p), dict)]
        name = first.name if served else str(entry.functions[0].get("name"))
        return [{"name": name, "arguments": {p: _EMPTY.get(props[p].get("type"), "") for p in required}}]
    docs = {d.get("name"): d for d in entry.functions}
    lang = language(entry.category)
    calls = []
    for answer in entry.ground_truth or ():
        name, params = next(iter(answer.items()))
        parameters = (docs.get(name) or {}).get("parameters") or {}
        declared = parameters.get("properties") or {}
        arguments = _chosen(params, declared, parameters.get("required") or ())
        if lang != "python":
            arguments = _as_text(arguments, declared, lang)
        calls.append({"name": served_name(name) if served else name, "arguments": arguments})
    return calls


def conversation(entry: BfclEntry) -> tuple[list[Message], str]:
    """The entry's messages as BFCL sends them: (the messages before the last, the last user message)."""
    kinds: dict[str, Callable[[str], Message]] = {"system": SystemMessage, "user": UserMessage,
                                                  "assistant": lambda text: AssistantMessage(text=text)}
    history = [kinds[str(m.get("role"))](str(m.get("content") or "")) for m in entry.messages[:-1]]
    return history, str(entry.messages[-1].get("content") or "")


def calls_from_trace(trace: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    """The (served name, arguments) of the calls of the trace's first turn with calls; arguments are
    ``None`` where the model's text was not JSON. An errored or missing episode made no call."""
    if trace is None or trace.get("status") != "completed":
        return []
    outcome = trace.get("outcome") or {}
    found = outcome["bfcl_calls"] if "bfcl_calls" in outcome else outcome.get("calls")  # prompting: as decoded
    calls = [c for c in found or [] if isinstance(c, dict)]
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
        if FORMAT_SENSITIVITY in self.categories:
            self.entries.update((e.id, e) for e in load_format_sensitivity())
        self.multi: dict[str, MultiTurnEntry] = {
            e.id: e for e in load_multi_turn(tuple(c for c in self.categories if c in MULTI_TURN))}
        memory = tuple(c for c in self.categories if c in MEMORY_SERVED)
        self.memory: MemoryRunner | None = MemoryRunner(memory, self.name) if memory else None

    def task_ids(self) -> list[str]:
        """Every selected entry in BFCL's order; with ``--limit-per-category N``, the first N of each category."""
        memory = self.memory.entries if self.memory else {}
        every: list[Any] = [*self.entries.values(), *self.multi.values(), *memory.values()]
        limit = self.options.get("limit_per_category")
        taken: dict[str, int] = {}
        out = []
        for entry in every:
            taken[entry.category] = taken.get(entry.category, 0) + 1
            if limit is None or taken[entry.category] <= limit:
                out.append(entry.id)
        return out

    def summary_extras(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A run over the first N entries of each category is a subset, whatever the core's selection says."""
        limit = self.options.get("limit_per_category")
        if limit is None:
            return {}
        every = len(self.entries) + len(self.multi) + len(self.memory.entries if self.memory else ())
        return {"benchmark_tasks": every,
                "subset_note": f"the first {limit} entries of each category (--limit-per-category): not comparable "
                               "with BFCL's leaderboard (over every entry)"}

    def config_extras(self) -> dict[str, Any]:
        """BFCL's per-turn step limit (read from the wheel), when multi-turn entries run."""
        return {"bfcl_step_limit": step_limit()} if self.multi else {}

    def check(self, strategy: str, *, own_server: bool) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"bfcl has no strategy {strategy!r}; available: {', '.join(STRATEGIES)}")
        if strategy == "prompting":
            from .prompting import refused_category

            for category in self.categories:
                reason = refused_category(category)
                if reason is not None:
                    raise ValueError(f"BFCL category {category!r} is not served with --strategy prompting: {reason}")
        elif FORMAT_SENSITIVITY in self.categories:
            raise ValueError(f"BFCL category {FORMAT_SENSITIVITY!r} runs with --strategy prompting only (BFCL runs it "
                             "only for prompting models and skips it for function-calling ones)")

    def mounts(self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *,
               strategy: str | None = None) -> list[BenchmarkMount]:
        catalog: Any = BfclCatalog(list(self.entries.values()), self.name)
        if self.multi:
            catalog = MultiTurnCatalog(catalog, list(self.multi.values()), self.name)
        if self.memory is not None:
            catalog = MemoryCatalog(self.memory.endpoints(), catalog, self.name)
        return [BenchmarkMount(catalog=catalog)]

    def data_files(self) -> list[Path]:
        return [verified_wheel()]

    def task_query(self, task_id: str) -> str | None:
        if self.memory is not None and task_id in self.memory.entries:
            return self.memory.entries[task_id].question
        if task_id in self.multi:
            return self.multi[task_id].query
        return self.entries[task_id].query if task_id in self.entries else None

    async def prepare(self, env: EpisodeEnv) -> None:
        pass

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        if self.memory is not None and task_id in self.memory.entries:
            return await self.memory.episode(env, task_id, recorder)
        if task_id in self.multi:
            return await run_multi_turn(self.multi[task_id], env, recorder, self.name)
        entry = self.entries[task_id]
        if env.opts.strategy == "prompting":
            return await self._prompting_episode(env, entry, recorder)
        calls = gold_calls(entry)
        model = env.model(task_id, [calls] if calls else [], final_answer=None if calls else NO_CALL_ANSWER)

        async def one_response(turn: int, made: list[ToolCall]) -> bool:
            return True  # single-turn: the first response with calls is the one scored

        history, user_text = conversation(entry)
        async with env.session(self.name, task_id) as session:
            outcome = await run_agent(model, session, user_text, recorder, env.agent_cfg,
                                      on_turn=one_response, history=history)
        outcome.data["category"] = entry.category
        return outcome

    async def _prompting_episode(self, env: EpisodeEnv, entry: BfclEntry, recorder: EpisodeRecorder) -> EpisodeOutcome:
        """One single-turn entry in BFCL's prompting mode (:mod:`.prompting`)."""
        from .prompting import PROMPTING, entry_format, oracle_text, prompting_conversation, prompting_model
        from .results import decode_result

        return_format, tag = entry_format(entry)
        gold = gold_calls(entry, served=False)
        oracle = env.model(entry.id, [], final_answer=oracle_text(gold, return_format, tag) if gold else NO_CALL_ANSWER)
        config = entry.id.split(":")[1] if entry.category == FORMAT_SENSITIVITY else None

        def decoded(text: str) -> list[tuple[str, Any]]:
            calls, _, _ = decode_result(text, PROMPTING, entry.category, config)
            return [(c["name"], c["arguments"]) for c in calls]

        model, wrapper = prompting_model(oracle, decoded)

        async def one_response(turn: int, made: list[ToolCall]) -> bool:
            return True  # single-turn: the first response is the one scored

        history, user_text = prompting_conversation(entry)
        async with env.session(self.name, entry.id) as session:
            outcome = await run_agent(model, session, user_text, recorder, env.agent_cfg,
                                      on_turn=one_response, history=history)
        text = wrapper.texts[0] if wrapper.texts else ""
        calls, status, _ = decode_result(text, PROMPTING, entry.category, config)
        outcome.data.update(category=entry.category, bfcl_result=text, bfcl_decode=status, bfcl_calls=calls,
                            underscore_to_dot=PROMPTING.underscore_to_dot, bfcl_sent_tools=wrapper.sent_tools)
        return outcome

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        task_id = str(trace.get("task_id"))
        known = (task_id in self.entries or task_id in self.multi
                 or (self.memory is not None and task_id in self.memory.entries))
        return float(self.verdict(task_id, trace).valid) if known else None

    def verdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict | AgenticVerdict:
        if self.memory is not None and task_id in self.memory.entries:
            return self.memory.verdict(task_id, trace)
        if task_id in self.multi:
            return check_multi_turn(self.multi[task_id], turns_from_trace(trace))
        return self._single_verdict(self.entries[task_id], trace)

    @staticmethod
    def _single_verdict(entry: BfclEntry, trace: Mapping[str, Any] | None) -> Verdict:
        """A single-turn entry's verdict; an imported or prompting trace carries how its result decoded and
        the model's ``underscore_to_dot``; a format_sensitivity entry is checked as its original entry."""
        outcome = (trace or {}).get("outcome") or {}
        completed = trace is not None and trace.get("status") == "completed"
        category = base_id(entry.id) if entry.category == FORMAT_SENSITIVITY else entry.category
        return check_calls(category, entry.functions, calls_from_trace(trace), entry.ground_truth,
                           decoded=outcome.get("bfcl_decode") if completed else None,
                           underscore_to_dot=bool(outcome.get("underscore_to_dot", True)))

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        memory = self.memory.entries if self.memory is not None else {}
        entry: Any = self.entries.get(task_id) or self.multi.get(task_id) or memory.get(task_id)
        if entry is None:
            raise ValueError(f"the run has a task id that is not among its BFCL entries: {task_id!r}")
        errored = trace is None or trace.get("status") != "completed"
        if task_id in self.multi:  # concurrent scorings' replays go to the holder together
            return task_score(entry.category, await acheck_multi_turn(entry, turns_from_trace(trace)), errored=errored)
        return task_score(entry.category, self.verdict(task_id, trace), errored=errored)

    def formats(self) -> list[PredictionFormat]:
        """BFCL's own result files (``bfcl-official``, also named ``bfcl`` as issue 39 calls it, :mod:`.results`):
        read by ``evals score --format``, written by ``evals export``."""
        from .export import FORMAT, official_format

        official = official_format(calls_from_trace, self.options)
        return [official, dataclasses.replace(official, name="bfcl", description=f"the same as {FORMAT}")]

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None,
                     score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: a single-turn entry's possible answers beside the predicted calls, with the
        checker's decisions (:mod:`.view`); a multi-turn entry's turns (the model's calls beside the
        ground truth's) and, when it failed, the first failing turn's state differences; a memory
        question's accepted answers beside its final answer, the verdict, the prerequisite
        conversations (:mod:`.memory_view`)."""
        if self.memory is not None and task_id in self.memory.entries:
            from .memory_view import memory_episode_sections

            mem_verdict = self.memory.verdict(task_id, trace) if trace is not None else None
            return memory_episode_sections(self.memory.entries[task_id], self.memory.prereq_by_id(), trace, mem_verdict)
        if task_id in self.multi:
            verdict = (((score or {}).get("score") or {}).get("details") or {}).get("verdict")
            return multi_turn_view(self.multi[task_id], trace, verdict)
        if task_id not in self.entries:
            return []
        from .view import episode_sections

        entry, calls = self.entries[task_id], calls_from_trace(trace)
        verdict_ = self._single_verdict(entry, trace)
        dots = bool(((trace or {}).get("outcome") or {}).get("underscore_to_dot", True))
        return episode_sections(entry, calls, verdict_, trace, underscore_to_dot=dots)
