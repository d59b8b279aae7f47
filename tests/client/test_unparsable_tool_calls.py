"""Tool calls the server could not parse (cut off by max_tokens, bad JSON) are recorded, never dropped.

The real openai SDK against the fake Chat Completions server, answering the way vLLM's hermes parser
does: a call it cannot parse stays in the message text (``<tool_call>`` with no closing tag when the
generation stopped at ``max_tokens``), with ``finish_reason`` ``"length"``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fake_providers import FakeProviderServer, openai_chat, tool_call

from client.adapters.base import GenerateParams
from client.adapters.openai_adapter import OpenAIAdapter
from client.adapters.vllm_adapter import TOOL_CALL_MARKERS, VLLMAdapter
from client.agent import AgentConfig, run_agent
from client.messages import STOP_MAX_TOKENS, ToolDef, UserMessage
from client.retry import RetryPolicy
from client.runs import EpisodeRecorder

HERMES = ("<tool_call>", "</tool_call>")
TOOLS = [ToolDef("x", "A tool", {"type": "object", "properties": {"a": {"type": "integer"}}})]
CUT_OFF = '<tool_call>\n{"name": "x", "arguments": {"a": '
ONE_TURN = AgentConfig(max_turns=1, retry=RetryPolicy(max_attempts=1))


class FakeSession:
    """Just enough of an MCP session for run_agent: the tools, and the calls that reached it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def list_tools(self, cursor: str | None = None):  # noqa: ANN201
        from mcp import types

        return types.ListToolsResult(
            tools=[types.Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in TOOLS]
        )

    async def call_tool(self, name: str, arguments: dict[str, Any]):  # noqa: ANN201
        from mcp import types

        self.calls.append((name, arguments))
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])


@pytest.fixture
async def adapter(fake_server: FakeProviderServer) -> AsyncIterator[OpenAIAdapter]:
    # as the vllm: adapter builds it for a hermes-format model
    a = OpenAIAdapter(
        "smol", base_url=fake_server.openai_base_url, timeout=60.0, tool_call_markers=HERMES,
        history_malformed_arguments="empty", seed=0,
    )
    yield a
    await a.aclose()


def events(recorder: EpisodeRecorder, kind: str) -> list[dict[str, Any]]:
    return [e for e in recorder.events if e["kind"] == kind]


async def test_call_cut_off_at_max_tokens_is_an_unparsable_call(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter
) -> None:
    fake_server.openai.script(openai_chat(CUT_OFF, finish_reason="length", usage=(300, 256)))
    response = await adapter.complete([UserMessage("q")], TOOLS, "required", GenerateParams(max_tokens=256, temperature=0.0))
    assert response.stop_reason == STOP_MAX_TOKENS
    assert response.text is None  # the marked block became the call
    [call] = response.tool_calls
    assert (call.name, call.arguments) == ("x", None)
    assert call.raw_arguments == '{"name": "x", "arguments": {"a":'
    assert call.parse_error is not None and "token limit" in call.parse_error and "</tool_call>" in call.parse_error
    assert response.raw["choices"][0]["finish_reason"] == "length"
    body = fake_server.openai.last_body
    assert body["seed"] == 0 and body["temperature"] == 0.0 and body["max_tokens"] == 256


async def test_agent_records_the_cut_off_call_with_its_error_and_the_truncated_turn(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter
) -> None:
    fake_server.openai.script(
        openai_chat(CUT_OFF, finish_reason="length", usage=(300, 256)),
        openai_chat(tool_calls=[tool_call("x", {"a": 1})]),
        openai_chat("finished"),
    )
    session = FakeSession()
    recorder = EpisodeRecorder("t1")
    cfg = AgentConfig(max_turns=3, tool_choice="required", retry=RetryPolicy(max_attempts=1))
    outcome = await run_agent(adapter, session, "q", recorder, cfg)  # type: ignore[arg-type]

    first, second, third = events(recorder, "model_response")
    assert first["truncated"] is True and first["finish_reason"] == "length"
    assert first["response"]["stop_reason"] == "max_tokens"
    assert first["response"]["raw"]["choices"][0]["message"]["content"] == CUT_OFF  # what the server sent, kept
    assert "truncated" not in second and "truncated" not in third
    bad, good = events(recorder, "tool_call")
    assert bad["is_error"] is True and bad["name"] == "x" and bad["call_id"] == first["response"]["tool_calls"][0]["id"]
    assert "token limit" in bad["parse_error"] and bad["parse_error"] in bad["result_text"]
    assert bad["arguments"] == '{"name": "x", "arguments": {"a":'  # the raw text, since nothing parsed
    assert good["is_error"] is False and "parse_error" not in good
    assert session.calls == [("x", {"a": 1})]  # the unparsable call never reached the server
    assert outcome.final_answer == "finished" and recorder.totals.tool_errors == 1

    # the model is told: the next request carries the call (arguments "{}": vLLM parses history) and the error
    messages = fake_server.openai.bodies[1]["messages"]
    assert messages[-2]["tool_calls"][0]["function"] == {"name": "x", "arguments": "{}"}
    assert messages[-1]["role"] == "tool" and "token limit" in messages[-1]["content"]


@pytest.mark.parametrize(
    ("text", "finish", "error", "name"),
    [
        ('<tool_call>\n{"name": "x", "arguments": {"a": 1}}\n</tool_call>', "stop", "parser did not return", "x"),
        ('<tool_call>{"name": "x", "arguments": {a: 1}}</tool_call>', "stop", "not valid JSON", "x"),
        ('<tool_call>{"name": "x", "arguments": "a=1"}</tool_call>', "stop", '"arguments" (an object)', "x"),
        ("<tool_call>\n{", "stop", "no closing </tool_call> (finish_reason 'stop')", ""),
    ],
    ids=["complete-but-unparsed", "bad-json", "arguments-not-object", "unclosed-stop"],
)
async def test_other_calls_left_in_the_text(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter, text: str, finish: str, error: str, name: str
) -> None:
    fake_server.openai.script(openai_chat("Let me look.\n" + text, finish_reason=finish))
    response = await adapter.complete([UserMessage("q")], TOOLS)
    assert response.text == "Let me look."
    [call] = response.tool_calls
    assert call.name == name and call.arguments is None and error in (call.parse_error or "")


async def test_two_blocks_give_two_calls(fake_server: FakeProviderServer, adapter: OpenAIAdapter) -> None:
    fake_server.openai.script(
        openai_chat('<tool_call>{"name": "x", "arguments": {"a": 1}}</tool_call>\n' + CUT_OFF, finish_reason="length")
    )
    response = await adapter.complete([UserMessage("q")], TOOLS)
    first, second = response.tool_calls
    assert "parser did not return" in (first.parse_error or "") and "token limit" in (second.parse_error or "")
    assert first.id != second.id


async def test_without_markers_text_stays_text_and_the_turn_is_still_marked_truncated(
    fake_server: FakeProviderServer,
) -> None:
    plain = OpenAIAdapter("gpt-test", base_url=fake_server.openai_base_url, timeout=60.0)
    try:
        fake_server.openai.script(openai_chat("a long answer that ran o", finish_reason="length"))
        recorder = EpisodeRecorder("t1")
        outcome = await run_agent(plain, FakeSession(), "q", recorder, ONE_TURN)  # type: ignore[arg-type]
        [response] = events(recorder, "model_response")
        assert response["truncated"] is True and response["finish_reason"] == "length"
        assert outcome.final_answer == "a long answer that ran o" and not events(recorder, "tool_call")
        assert "seed" not in fake_server.openai.last_body
        # a marker in plain text is not a call for a model without a text tool-call format
        fake_server.openai.script(openai_chat(CUT_OFF, finish_reason="length"))
        response_obj = await plain.complete([UserMessage("q")], TOOLS)
        assert response_obj.text == CUT_OFF and response_obj.tool_calls == []
    finally:
        await plain.aclose()


@pytest.mark.parametrize(("choice", "name"), [("required", ""), ({"name": "x"}, "x")])
async def test_forced_call_cut_off_with_nothing_left_is_an_unparsable_call(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter, choice: Any, name: str
) -> None:
    # a server whose forced-call parser drops what it could not parse (older vLLM: JSON-list format)
    fake_server.openai.script(openai_chat(None, finish_reason="length"))
    session = FakeSession()
    recorder = EpisodeRecorder("t1")
    cfg = AgentConfig(max_turns=1, tool_choice=choice, retry=RetryPolicy(max_attempts=1))
    outcome = await run_agent(adapter, session, "q", recorder, cfg)  # type: ignore[arg-type]
    [response] = events(recorder, "model_response")
    assert response["truncated"] is True and len(response["response"]["tool_calls"]) == 1
    [call] = events(recorder, "tool_call")
    assert call["is_error"] is True and call["name"] == name and "token limit" in call["parse_error"]
    assert session.calls == [] and not events(recorder, "final_answer") and outcome.data["stop"] == "max_turns"


def test_bad_options() -> None:
    with pytest.raises(ValueError, match="tool_call_markers"):
        OpenAIAdapter("m", base_url="http://127.0.0.1:9/v1", tool_call_markers=["<tool_call>"])
    with pytest.raises(ValueError, match="seed"):
        OpenAIAdapter("m", base_url="http://127.0.0.1:9/v1", seed="0")  # type: ignore[arg-type]
    # a JSON list (--model-arg tool_call_markers='["<a>", "</a>"]') is fine
    assert OpenAIAdapter("m", base_url="http://127.0.0.1:9/v1", tool_call_markers=["<a>", "</a>"]).tool_call_markers == (
        "<a>", "</a>"
    )


def test_vllm_adapter_passes_its_parsers_markers_and_the_seed() -> None:
    exe = [sys.executable]
    hermes = VLLMAdapter("HuggingFaceTB/SmolLM2-135M-Instruct", executable=exe, seed=7)
    assert hermes.tool_parser == "hermes"
    assert hermes._openai_options["tool_call_markers"] == TOOL_CALL_MARKERS["hermes"] == HERMES
    assert hermes._openai_options["seed"] == 7
    assert "tool_call_markers" not in VLLMAdapter("meta-llama/Llama-3.1-8B-Instruct", executable=exe)._openai_options
    assert json.dumps(TOOL_CALL_MARKERS["hermes"])  # JSON-able, as --model-arg gives it
