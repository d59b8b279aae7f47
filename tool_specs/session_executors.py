"""Executors whose answers depend on the MCP session: ``placeholder`` and ``replay``.

Both keep their state in :attr:`CallContext.state <tool_specs.CallContext.state>`, which the server
gives each MCP session apart, so two sessions of one endpoint never see each other's handles or
replayed calls.

* ``placeholder`` (:class:`PlaceholderExecutor`): answers every call with one handle per declared
  response field, ``{"book_details": "API_call_0", "availability": "API_call_1"}``, numbered per
  session across all of the session's tools. A later call that passes such a handle as an argument
  is a nested call.
* ``replay`` (:class:`ReplayExecutor`): answers a call with the recorded response of the gold call
  it matches (through the matchers of :mod:`tool_specs.matching`; default: the rule matcher), each
  recorded call used once per session before any is used again; a call that matches none gets a
  configurable error text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tool_specs.errors import ExecutorConfigError
from tool_specs.executors import Executor, _check_options, register_executor_kind
from tool_specs.matching import Matcher, RuleMatcher, decide
from tool_specs.results import CallContext, ToolResult

if TYPE_CHECKING:
    from tool_specs.protocols import ToolLike

__all__ = ["PlaceholderExecutor", "ReplayExecutor"]

_COUNTER_KEY = "placeholder.next"
_REPLAY_KEY = "replay.used"


class PlaceholderExecutor:
    """One handle ``<prefix><n>`` per response field; ``n`` counts the session's handles from 0.

    ``fields``: the response fields, in order (default: the properties of the tool's output schema,
    in their order; a tool with none gets the single field ``result``).
    """

    kind = "placeholder"

    def __init__(self, fields: Sequence[str] | None = None, *, prefix: str = "API_call_"):
        if fields is not None and (isinstance(fields, str) or not all(isinstance(f, str) for f in fields)):
            raise ExecutorConfigError(f"placeholder 'fields' must be a list of names, got {fields!r}")
        self.fields = list(fields) if fields is not None else None
        self.prefix = prefix

    def __repr__(self) -> str:
        return f"PlaceholderExecutor(fields={self.fields!r}, prefix={self.prefix!r})"

    def config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "prefix": self.prefix}
        if self.fields is not None:
            out["fields"] = list(self.fields)
        return out

    def fields_of(self, spec: ToolLike) -> list[str]:
        if self.fields is not None:
            return self.fields or ["result"]
        props = (spec.output_schema or {}).get("properties")
        return list(props) if isinstance(props, dict) and props else ["result"]

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        first = int(ctx.state.get(_COUNTER_KEY, 0))
        names = self.fields_of(spec)
        ctx.state[_COUNTER_KEY] = first + len(names)
        return {name: f"{self.prefix}{first + i}" for i, name in enumerate(names)}

    def output_schema_for(self, spec: ToolLike) -> dict[str, Any] | None:
        names = self.fields_of(spec)
        return {
            "type": "object",
            "properties": {name: {"type": "string"} for name in names},
            "required": names,
        }


DEFAULT_NO_MATCH = "Error: no recorded response matches this call of {name} with arguments {arguments}."


class ReplayExecutor:
    """Answers with the recorded response of the matching gold call.

    ``calls``: the recorded calls of this tool, each ``{"arguments": {...}, "response": ...}`` (a
    dict response is a structured result, a string is text). ``no_match``: the error text for a
    call that matches none (``{name}`` and ``{arguments}`` are filled in). ``matchers``: the
    cascade (default: rule matching by the tool's input schema).
    """

    kind = "replay"

    def __init__(
        self,
        calls: Sequence[Mapping[str, Any]],
        *,
        no_match: str = DEFAULT_NO_MATCH,
        matchers: Sequence[Matcher] | None = None,
    ):
        bad = [i for i, c in enumerate(calls) if not isinstance(c, Mapping) or "response" not in c]
        if bad:
            raise ExecutorConfigError(f"replay 'calls' items need 'arguments' and 'response'; items {bad[:5]} do not")
        self.calls = [dict(c) for c in calls]
        self.no_match = no_match
        self.matchers = list(matchers) if matchers is not None else None

    def __repr__(self) -> str:
        return f"ReplayExecutor({len(self.calls)} recorded calls)"

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "calls": self.calls, "no_match": self.no_match}

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult | dict[str, Any] | str:
        matchers = self.matchers if self.matchers is not None else [RuleMatcher(lambda _n: spec.input_schema)]
        used: set[int] = ctx.state.setdefault(_REPLAY_KEY, {}).setdefault(spec.name, set())
        pred = {"name": spec.name, "arguments": arguments}
        matching: list[int] = []
        for i, call in enumerate(self.calls):
            gold = {"name": spec.name, "arguments": call.get("arguments") or {}}
            if (await decide(pred, gold, matchers)).matched:
                if i not in used:
                    used.add(i)
                    return ToolResult.from_value(call["response"])
                matching.append(i)
        if matching:  # every matching recorded call was replayed already: the same answer again
            return ToolResult.from_value(self.calls[matching[0]]["response"])
        return ToolResult.error(self.no_match.format(name=spec.name, arguments=arguments))


def _placeholder_factory(options: dict[str, Any], base_dir: Path | None) -> Executor:
    _check_options("placeholder", options, {"fields", "prefix"}, set())
    return PlaceholderExecutor(options.get("fields"), prefix=str(options.get("prefix", "API_call_")))


def _replay_factory(options: dict[str, Any], base_dir: Path | None) -> Executor:
    _check_options("replay", options, {"calls", "no_match"}, {"calls"})
    calls = options["calls"]
    if not isinstance(calls, list):
        raise ExecutorConfigError(f"replay 'calls' must be a list, got {type(calls).__name__}")
    return ReplayExecutor(calls, no_match=str(options.get("no_match", DEFAULT_NO_MATCH)))


register_executor_kind("placeholder", _placeholder_factory)
register_executor_kind("replay", _replay_factory)
