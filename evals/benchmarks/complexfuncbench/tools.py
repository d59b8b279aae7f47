"""The replay server: each sample's tools at ``/mcp/complexfuncbench/<id>``, decided by the official procedure.

Every MCP session holds one :class:`~.procedure.Episode`. The official procedure decides the calls of
a model turn together (they are paired with the pending gold calls as a set), so a client that
sends parallel calls first announces the turn with the hidden ``turn`` tool (the episode's own
agent loop does this; the tool is not shown to the model): the turn is decided at once and each
call of the turn, when it then arrives, gets its decided answer. A call that was not announced (a
plain MCP client) is a turn of its own. ``finish`` ends the episode with the model's final answer
and returns the official result with every decision made.

Tools are served under valid aliases (:func:`.data.alias_of`); names are mapped back to the
official names before anything is decided or recorded.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from tool_specs import ToolSpec
from tool_specs.results import CallContext, ToolResult

from .data import Sample
from .procedure import Episode, LLMCompare, ResponseCompare

__all__ = ["FINISH_TOOL", "HIDDEN_TOOLS", "TURN_TOOL", "OfficialToolSpec", "ReplayConfig", "sample_tools"]

TURN_TOOL = "complexfuncbench_turn"
FINISH_TOOL = "complexfuncbench_finish"
HIDDEN_TOOLS = frozenset({TURN_TOOL, FINISH_TOOL})
_STATE = "complexfuncbench"


class ReplayConfig:
    """What every session's episode is decided with: the exact-value list and the optional matchers."""

    def __init__(self, exact: Mapping[str, list[str]], response_compare: ResponseCompare | None = None,
                 llm_compare: LLMCompare | None = None):
        self.exact = exact
        self.response_compare = response_compare
        self.llm_compare = llm_compare


def _episode(sample: Sample, cfg: ReplayConfig, ctx: CallContext) -> tuple[Episode, dict[str, Any]]:
    state = ctx.state.setdefault(_STATE, {})
    if "episode" not in state:
        state["episode"] = Episode(sample, cfg.exact, cfg.response_compare, cfg.llm_compare)
        state["pending"] = []
    return state["episode"], state


def _answer(value: Any) -> ToolResult:
    # the model reads exactly what the official harness sends it: the JSON of the answer
    return ToolResult(text=json.dumps(value, ensure_ascii=False))


def _official_call(sample: Sample, call: Any) -> dict[str, Any] | None:
    """A served call as the official procedure sees it; ``None`` when it cannot be decoded."""
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        return None
    name = sample.official_name(call["name"])
    args = call.get("arguments")
    if name is None or not isinstance(args, Mapping):
        return None
    return {"name": name, "arguments": dict(args)}


class _ToolExecutor:
    kind = "complexfuncbench-replay"

    def __init__(self, sample: Sample, cfg: ReplayConfig):
        self.sample, self.cfg = sample, cfg

    def __repr__(self) -> str:
        return f"ComplexFuncBenchReplay({self.sample.id})"

    async def __call__(self, spec: Any, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        episode, state = _episode(self.sample, self.cfg, ctx)
        pending: list[dict[str, Any]] = state["pending"]
        for i, item in enumerate(pending):
            if item["name"] == spec.name and item["arguments"] == arguments:
                return _answer(pending.pop(i)["answer"])
        if episode.ended:
            return ToolResult.error(f"The episode has ended ({json.dumps((episode.result or {}).get('message'), ensure_ascii=False)}); "
                                    "no further calls are answered.")
        state["pending"] = []
        result = await episode.turn([_official_call(self.sample, {"name": spec.name, "arguments": arguments})])
        return _answer(result.answers[0])


class _TurnExecutor:
    kind = "complexfuncbench-turn"

    def __init__(self, sample: Sample, cfg: ReplayConfig):
        self.sample, self.cfg = sample, cfg

    def __repr__(self) -> str:
        return f"ComplexFuncBenchTurn({self.sample.id})"

    async def __call__(self, spec: Any, arguments: dict[str, Any], ctx: CallContext) -> ToolResult | dict[str, Any]:
        episode, state = _episode(self.sample, self.cfg, ctx)
        if episode.ended:
            return ToolResult.error("The episode has ended; no further turns are decided.")
        calls = arguments.get("calls") or []
        result = await episode.turn([_official_call(self.sample, c) for c in calls])
        state["pending"] = [
            {"name": c.get("name"), "arguments": copy.deepcopy(c.get("arguments")), "answer": a}
            for c, a in zip(calls, result.answers, strict=True) if isinstance(c, Mapping)
        ]
        return {"ended": result.ended, "message": result.message, "decisions": result.decisions}


class _FinishExecutor:
    kind = "complexfuncbench-finish"

    def __init__(self, sample: Sample, cfg: ReplayConfig):
        self.sample, self.cfg = sample, cfg

    def __repr__(self) -> str:
        return f"ComplexFuncBenchFinish({self.sample.id})"

    async def __call__(self, spec: Any, arguments: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        episode, _state = _episode(self.sample, self.cfg, ctx)
        final = arguments.get("final")
        result = episode.finish(final if isinstance(final, str) else None)
        return {"result": result, "count_dict": episode.counts(), "turns": episode.turns, "conversation": episode.history}


_TURN_SCHEMA = {
    "type": "object",
    "properties": {"calls": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "arguments": {"type": ["object", "null"]}}, "required": ["name"]}}},
    "required": ["calls"],
}
_FINISH_SCHEMA = {"type": "object", "properties": {"final": {"type": ["string", "null"]}}}


class OfficialToolSpec(ToolSpec):
    """A sample's tool: its arguments go to the official format check as they are (no schema
    validation, no warnings), so the model reads exactly what the official harness would send it."""

    async def call(self, arguments: object, ctx: CallContext | None = None) -> ToolResult:
        if not isinstance(arguments, Mapping):
            return ToolResult.error(f"{self.name} failed: arguments must be a JSON object")
        try:
            return ToolResult.from_value(await self.executor(self, copy.deepcopy(dict(arguments)), ctx or CallContext()))
        except Exception as exc:  # never a crashed server
            return ToolResult.error(f"{self.name} failed: {type(exc).__name__}: {exc}")


def sample_tools(sample: Sample, cfg: ReplayConfig) -> list[ToolSpec]:
    """The sample's tools (served names; the official format check decides on arguments) and the two
    hidden harness tools."""
    out: list[ToolSpec] = [
        OfficialToolSpec(name=sample.aliases[f["name"]], description=str(f.get("description") or ""),
                         input_schema=copy.deepcopy(f["parameters"]), executor=_ToolExecutor(sample, cfg),
                         annotations={"official_name": f["name"]})
        for f in sample.functions
    ]
    out.append(ToolSpec(name=TURN_TOOL, description="Harness tool (not shown to models): announce the calls of one "
                        "model turn so that they are decided together, as the official evaluation does.",
                        input_schema=_TURN_SCHEMA, executor=_TurnExecutor(sample, cfg)))
    out.append(ToolSpec(name=FINISH_TOOL, description="Harness tool (not shown to models): end the episode with the "
                        "model's final answer (null: none) and get the official result and every decision.",
                        input_schema=_FINISH_SCHEMA, executor=_FinishExecutor(sample, cfg)))
    return out
