"""BFCL's single-turn entries as one :class:`~.kinds.Kind`: an entry's functions served as the tools of its
endpoint, answered with a placeholder.

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

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from client.messages import Message
from client.runs import EpisodeOutcome

from .checker import Verdict, check_calls, handed_verdict
from .data import BfclEntry, load_entries
from .files import FORMAT_SENSITIVITY, NAME, SINGLE_TURN, language, served_name
from .format_sensitivity import base_id, load_format_sensitivity
from .tools import first_by_name, to_tool
from .type_conversion import java_text, js_text

if TYPE_CHECKING:
    from client.messages import ToolCall
    from client.runs import EpisodeRecorder
    from tool_specs import ToolSpec

    from ...core.plugin import EpisodeEnv

__all__ = ["NO_CALL_ANSWER", "SingleTurnKind", "calls_from_trace", "conversation", "entry_verdict", "gold_calls"]

NO_CALL_ANSWER = "None of the offered functions fits this request."

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
    from .prompting import as_messages

    return as_messages(entry.messages[:-1]), str(entry.messages[-1].get("content") or "")


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
    return [(str(c.get("name")), _with_tuples(c) if isinstance(c.get("arguments"), dict) else None)
            for c in calls if c.get("turn") == first]


def _with_tuples(call: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded call's arguments with the values the model wrote as Python tuples (``tuple_params``, kept by
    :func:`.results.decode_result`) tuples again, as BFCL's checker is given them (a tuple is not an array)."""
    arguments = dict(call["arguments"])
    for param in call.get("tuple_params") or ():
        if isinstance(arguments.get(param), list):
            arguments[param] = tuple(arguments[param])
    return arguments


async def _one_response(turn: int, made: list[ToolCall]) -> bool:
    return True  # single-turn: the first response (under fc: the first with calls) is the one scored


def entry_verdict(entry: BfclEntry, trace: Mapping[str, Any] | None) -> Verdict:
    """A single-turn entry's verdict; an imported or prompting trace carries how its result decoded and the
    model's ``underscore_to_dot``; a format_sensitivity entry is checked as its original entry."""
    outcome = (trace or {}).get("outcome") or {}
    completed = trace is not None and trace.get("status") == "completed"
    category = base_id(entry.id) if entry.category == FORMAT_SENSITIVITY else entry.category
    return check_calls(category, entry.functions, calls_from_trace(trace), entry.ground_truth,
                       decoded=outcome.get("bfcl_decode") if completed else None,
                       underscore_to_dot=bool(outcome.get("underscore_to_dot", True)))


class SingleTurnKind:
    """The single-turn entries of the selected categories (``format_sensitivity``'s too, when named):
    each endpoint offers its entry's functions, in the entry's order (specs built on first use)."""

    def __init__(self, categories: Sequence[str], name: str = NAME) -> None:
        self.name = name
        chosen = tuple(c for c in categories if c in SINGLE_TURN)
        self.entries: dict[str, BfclEntry] = {e.id: e for e in load_entries(chosen)}
        if FORMAT_SENSITIVITY in categories:
            self.entries.update((e.id, e) for e in load_format_sensitivity())
        self._specs: dict[str, list[ToolSpec]] = {}

    def endpoints(self) -> list[str]:
        return list(self.entries)

    def serve(self) -> None:
        pass  # a placeholder answers every call: nothing to start

    def task_tools(self, endpoint: str) -> list[ToolSpec]:
        if endpoint not in self._specs:
            entry = self.entries[endpoint]
            tools = [to_tool(doc, endpoint, entry.category) for doc in entry.functions]
            names = [t.name for t in tools]
            if len(set(names)) != len(names):
                raise ValueError(f"BFCL entry {endpoint}: two functions are served under one name: {names}")
            self._specs[endpoint] = tools
        return list(self._specs[endpoint])

    def playground_tools(self) -> list[ToolSpec]:
        return first_by_name(spec for task_id in self.entries for spec in self.task_tools(task_id))

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        # imported only where an episode runs (not when a result folder is scored: 9 ms)
        from client.agent import run_agent

        entry = self.entries[task_id]
        if env.opts.strategy == "prompting":
            return await self._prompting_episode(env, entry, recorder)
        calls = gold_calls(entry)
        model = env.model(task_id, [calls] if calls else [], final_answer=None if calls else NO_CALL_ANSWER)
        history, user_text = conversation(entry)
        async with env.session(self.name, task_id) as session:
            outcome = await run_agent(model, session, user_text, recorder, env.agent_cfg,
                                      on_turn=_one_response, history=history)
        outcome.data["category"] = entry.category
        return outcome

    async def _prompting_episode(self, env: EpisodeEnv, entry: BfclEntry, recorder: EpisodeRecorder) -> EpisodeOutcome:
        """One single-turn entry in BFCL's prompting mode (:mod:`.prompting`)."""
        from client.agent import run_agent

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
        history, user_text = prompting_conversation(entry)
        async with env.session(self.name, entry.id) as session:
            outcome = await run_agent(model, session, user_text, recorder, env.agent_cfg,
                                      on_turn=_one_response, history=history)
        text = wrapper.texts[0] if wrapper.texts else ""
        calls, status, _ = decode_result(text, PROMPTING, entry.category, config)
        outcome.data.update(category=entry.category, bfcl_result=text, bfcl_decode=status, bfcl_calls=calls,
                            underscore_to_dot=PROMPTING.underscore_to_dot, bfcl_sent_tools=wrapper.sent_tools)
        return outcome

    async def averdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict:
        return self.verdict(task_id, trace)

    def verdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict:
        """The entry's verdict (:func:`entry_verdict`), or the one made of this very trace already
        (:func:`.checker.hand_over`)."""
        handed = handed_verdict(task_id, trace)
        return handed if handed is not None else entry_verdict(self.entries[task_id], trace)

    def view(self, task_id: str, trace: Mapping[str, Any] | None,
             score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: the entry's possible answers beside the predicted calls, with the checker's
        decisions (:mod:`.view`)."""
        from .view import episode_sections

        dots = bool(((trace or {}).get("outcome") or {}).get("underscore_to_dot", True))
        return episode_sections(self.entries[task_id], calls_from_trace(trace), self.verdict(task_id, trace), trace,
                                underscore_to_dot=dots)
