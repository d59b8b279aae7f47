"""The agent loop: one episode of a model driving MCP tools until it gives a final answer.

model -> tool calls -> MCP results (errors included, so the model can correct itself) -> model ...
until the model answers without calling a tool, the turn limit, or a stop tool was called.
Every request, response, failed attempt and tool call goes to the episode's recorder as it happens.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .adapters.base import GenerateParams, ModelAdapter
from .messages import (
    STOP_MAX_TOKENS,
    Message,
    ModelResponse,
    SystemMessage,
    ToolCall,
    ToolChoice,
    ToolDef,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .model import Model, is_cached
from .retry import RetryPolicy
from .runs import EpisodeOutcome, EpisodeRecorder, outcome_raw_arguments

if TYPE_CHECKING:  # the MCP SDK is imported on use: scoring recorded episodes imports this module, not the SDK
    from mcp import Client, types

__all__ = ["AgentConfig", "model_step", "provider_finish_reason", "result_text", "run_agent"]


@dataclass
class AgentConfig:
    """How an episode is driven.

    ``tool_choice`` applies to the first turn and ``later_tool_choice`` to the rest (``"required"``
    then ``"auto"`` suits small models that otherwise answer without looking anything up).
    ``stop_after_tools``: the episode ends once one of these tools has been called (for
    benchmarks whose answer *is* a call).
    """

    max_turns: int = 10
    tool_choice: ToolChoice = "auto"
    later_tool_choice: ToolChoice = "auto"
    max_tokens: int | None = 1024
    temperature: float | None = 0.0
    system_prompt: str | None = None
    stop_after_tools: frozenset[str] = frozenset()
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @property
    def params(self) -> GenerateParams:
        """The sampling settings every request of the episode is sent with."""
        return GenerateParams(max_tokens=self.max_tokens, temperature=self.temperature)


def provider_finish_reason(raw: Any) -> Any:
    """The provider's own finish reason in a raw response: ``choices[0].finish_reason`` (OpenAI and
    compatible servers) or ``stop_reason`` (Anthropic); ``None`` when there is none."""
    if not isinstance(raw, dict):
        return None
    choices = raw.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("finish_reason")
    return raw.get("stop_reason")


def _forced_tool(choice: ToolChoice, tools: list[ToolDef]) -> str | None:
    """The tool name a forced ``choice`` names, ``""`` for ``"required"``, ``None`` when nothing is forced."""
    if not tools:
        return None
    if choice == "required":
        return ""
    if isinstance(choice, dict):
        return str(choice.get("name") or "")
    return None


def _truncated_forced_call(response: ModelResponse, choice: ToolChoice, tools: list[ToolDef], turn: int) -> None:
    """A forced tool call cut off by the token limit with nothing parsed (and no text markers for the
    adapter to find): record it as an unparsable call, not as a final answer."""
    forced = _forced_tool(choice, tools)
    if response.tool_calls or response.stop_reason != STOP_MAX_TOKENS or forced is None:
        return
    response.tool_calls.append(
        ToolCall(
            f"call_truncated_{turn}", forced, None, response.text or "",
            "unparsable tool call: the forced tool call was cut off at the token limit before it was complete",
        )
    )


async def model_step(model: Model, messages: list[Message], tools: list[ToolDef], choice: ToolChoice,
                     params: GenerateParams, recorder: EpisodeRecorder, turn: int) -> ModelResponse:
    """One recorded model call of an episode: the request, the call (its failed attempts and its error
    recorded), a forced call cut off by the token limit made an unparsable call, and the response with
    its cost (none when the response cache served it) and, when the token limit cut it off, the
    provider's own finish reason."""
    recorder.model_request(messages=messages, tools=tools, tool_choice=choice, turn=turn)
    try:
        response = await model.generate(messages, tools, choice, params, on_attempt=recorder.attempt_failed)
    except Exception as exc:
        recorder.model_error(exc)
        raise
    _truncated_forced_call(response, choice, tools, turn)
    cut: dict[str, Any] = {}
    if response.stop_reason == STOP_MAX_TOKENS:
        cut = {"truncated": True, "finish_reason": provider_finish_reason(response.raw)}
    if is_cached(response):  # served by the response cache: nothing was billed
        recorder.model_response(response, usage=Usage(), cost_usd=0.0, cached=True, **cut)
    else:
        recorder.model_response(response, cost_usd=model.cost_usd(response), **cut)
    return response


def result_text(result: types.CallToolResult) -> str:
    """The text a model reads from an MCP tool result."""
    from mcp import types

    parts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    return "\n".join(parts)


_MAX_TOOL_DEFS = 4096
_tool_defs: dict[int, tuple[types.Tool, ToolDef]] = {}  # by id() of the listed tool, which is kept


def _tool_def(tool: types.Tool) -> ToolDef:
    """The ``ToolDef`` of a listed tool, one per listed object: a harness that sends several user
    turns (one ``run_agent`` each) over a session it lists once offers the very same ``ToolDef``
    objects every turn, which the recorder then takes as the same tool list without writing it
    again (:meth:`EpisodeRecorder.model_request`)."""
    hit = _tool_defs.get(id(tool))
    if hit is None or hit[0] is not tool:
        if len(_tool_defs) >= _MAX_TOOL_DEFS:
            _tool_defs.clear()
        hit = _tool_defs[id(tool)] = (tool, ToolDef.from_mcp(tool))
    return hit[1]


async def run_agent(
    model: Model | ModelAdapter,
    session: Client | None,
    user_text: str,
    recorder: EpisodeRecorder,
    cfg: AgentConfig,
    *,
    visible: Callable[[str], bool] | None = None,
    on_turn: Callable[[int, list[ToolCall]], Awaitable[bool]] | None = None,
    history: Sequence[Message] = (),
    transcript: list[Message] | None = None,
) -> EpisodeOutcome:
    """Run one episode over an open MCP session; returns the outcome with the calls made.

    Every request goes through :class:`client.model.Model`: ``model`` as it was built, once per role,
    with its cache, rate limit and retries (``evals.core``'s ``EpisodeEnv`` builds them); a bare
    adapter is wrapped with ``cfg.retry`` and no cache or rate limit.
    ``session=None`` runs the model without tools (one turn: its answer is the final answer).
    ``visible(name)``: which of the session's tools the model is shown (default: all of them).

    A model failure that survives the retries is raised (the runner records the episode as
    errored, with every attempt). Tool errors are not failures: they go back to the model. A call
    to a tool the model was not shown is refused here: recorded with ``refused`` and answered as an
    unknown tool; it never reaches the server.

    ``on_turn(turn, calls)`` is awaited with each turn's tool calls before any of them runs (for a
    harness that decides a turn's calls together); when it returns True the episode ends after this
    turn's calls (stop ``"on_turn"``). ``history``: earlier turns of the conversation (user and
    assistant messages), sent between the system prompt and ``user_text``. ``transcript``: when
    given, this call's messages from ``user_text`` on (the user message, the model's replies, the
    tool results) are appended to it: the next call's history, for a harness that sends several
    user turns one after another.
    """
    from .mcp_session import list_all_tools

    listed = await list_all_tools(session) if session is not None else []
    tools = [_tool_def(t) for t in listed if visible is None or visible(t.name)]
    shown = {t.name: None for t in tools}  # the only tools a call may reach
    messages: list[Message] = []
    if cfg.system_prompt:
        messages.append(SystemMessage(cfg.system_prompt))
    messages.extend(history)
    messages.append(UserMessage(user_text))
    first_new = len(messages) - 1
    if not isinstance(model, Model):
        model = Model(model, retry=cfg.retry)
    params = cfg.params
    calls: list[dict[str, Any]] = []
    stop = "max_turns"
    for turn in range(cfg.max_turns):
        choice = cfg.tool_choice if turn == 0 else cfg.later_tool_choice
        response = await model_step(model, messages, tools, choice, params, recorder, turn)
        for note in response.notes:
            recorder.note(note, turn=turn)
        messages.append(response.to_assistant_message())
        if not response.tool_calls:
            recorder.final_answer(response.text)
            stop = "final_answer"
            break
        end_after = bool(await on_turn(turn, list(response.tool_calls))) if on_turn is not None else False
        for tc in response.tool_calls:  # executed and recorded in the order the model gave them
            t0 = time.perf_counter()
            unparsable: dict[str, Any] = {}
            if tc.arguments is None:
                text = f"Error: the call to {tc.name or 'a tool'} could not be used ({tc.parse_error}); nothing was run."
                structured, is_error = None, True
                unparsable["parse_error"] = tc.parse_error
            elif tc.name not in shown or session is None:  # no session: no tool is shown
                # a tool the model was not shown (one the harness hides, or a guess) never reaches the server
                text = f"Error: unknown tool {tc.name!r}. Available tools: {', '.join(shown) or '(none)'}."
                structured, is_error = None, True
                unparsable["refused"] = "not a tool shown to the model"
            else:
                res = await session.call_tool(tc.name, tc.arguments)
                text, structured, is_error = result_text(res), res.structured_content, bool(res.is_error)
            latency = time.perf_counter() - t0
            recorder.tool_call(
                tc.name, tc.arguments if tc.arguments is not None else tc.raw_arguments, text,
                structured=structured, is_error=is_error, latency_s=latency, call_id=tc.id, turn=turn,
                **unparsable,
            )
            calls.append({"name": tc.name, "arguments": tc.arguments, "raw_arguments": outcome_raw_arguments(tc),
                          "is_error": is_error, "turn": turn})
            messages.append(ToolResultMessage(tc.id, tc.name, text, is_error))
        if cfg.stop_after_tools and any(c["name"] in cfg.stop_after_tools for c in calls):
            stop = "stop_tool_called"
            break
        if end_after:
            stop = "on_turn"
            break
    if transcript is not None:
        transcript.extend(messages[first_new:])
    return EpisodeOutcome(final_answer=recorder.answer, data={"calls": calls, "stop": stop})
