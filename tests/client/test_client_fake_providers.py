"""The fake provider server itself: scripts, handlers, strict validation, recording."""

from __future__ import annotations

import openai
import pytest
from fake_providers import (
    FakeProviderServer,
    Reply,
    anthropic_message,
    openai_chat,
    validate_anthropic_request,
    validate_openai_request,
)

from client.adapters.errors import ModelError
from client.adapters.openai_adapter import OpenAIAdapter
from client.messages import UserMessage


async def test_script_then_handler_then_exhausted(fake_server: FakeProviderServer) -> None:
    adapter = OpenAIAdapter("m", base_url=fake_server.openai_base_url)
    try:
        fake_server.openai.script(openai_chat("scripted"))
        assert (await adapter.complete([UserMessage("a")], [])).text == "scripted"
        assert fake_server.openai.pending == 0

        with pytest.raises(ModelError, match="script exhausted"):
            await adapter.complete([UserMessage("b")], [])

        async def echo(request: dict) -> dict:
            return openai_chat(f"you said {request['messages'][-1]['content']}")

        fake_server.openai.respond_with(echo)
        assert (await adapter.complete([UserMessage("c")], [])).text == "you said c"
        assert [b["messages"][-1]["content"] for b in fake_server.openai.bodies] == ["a", "b", "c"]
    finally:
        await adapter.aclose()


async def test_strict_mode_rejects_unsafe_tool_names_without_consuming_the_script(
    fake_server: FakeProviderServer,
) -> None:
    fake_server.openai.script(openai_chat("kept"))
    client = openai.AsyncOpenAI(base_url=fake_server.openai_base_url, api_key="sk-x", max_retries=0)
    unmapped_tool = {
        "type": "function",
        "function": {"name": "date of journey", "parameters": {"type": "object"}},
    }
    try:
        with pytest.raises(openai.BadRequestError, match="does not match pattern"):
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], tools=[unmapped_tool]
            )
    finally:
        await client.close()
    assert fake_server.openai.pending == 1
    assert len(fake_server.openai.violations) == 1


def test_openai_validation_rules() -> None:
    base = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert validate_openai_request(base) is None
    assert "only allowed when 'tools'" in (validate_openai_request({**base, "tool_choice": "auto"}) or "")
    dangling = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "user", "content": "?"},
        ],
    }
    assert "did not have response messages: c1" in (validate_openai_request(dangling) or "")
    orphan = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "x", "content": "r"},
        ],
    }
    assert "must be a response to a preceeding message" in (validate_openai_request(orphan) or "")


def test_anthropic_validation_rules() -> None:
    base = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    assert validate_anthropic_request(base) is None
    assert "max_tokens" in (validate_anthropic_request({**base, "max_tokens": None}) or "")
    empty_text = {**base, "messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]}
    assert "non-empty" in (validate_anthropic_request(empty_text) or "")
    unanswered = {
        **base,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "text", "text": "?"}]},
        ],
    }
    assert "without `tool_result` blocks" in (validate_anthropic_request(unanswered) or "")
    forced_with_thinking = {
        **base,
        "max_tokens": 5000,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any"},
    }
    assert "Thinking may not be enabled" in (validate_anthropic_request(forced_with_thinking) or "")


def test_builders() -> None:
    message = anthropic_message("hi", thinking=["a", ("b", "sig-b")], redacted_thinking="R")
    assert [b["type"] for b in message["content"]] == ["thinking", "thinking", "redacted_thinking", "text"]
    assert message["content"][1]["signature"] == "sig-b"
    with pytest.raises(ValueError, match="JSON object"):
        anthropic_message(tool_uses=[("f", "not a dict")])
    chat = openai_chat(tool_calls=[("f", {"a": 1}), ("g", "{raw")])
    calls = chat["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == ['{"a": 1}', "{raw"]
    assert chat["choices"][0]["finish_reason"] == "tool_calls"
    assert Reply().status == 200
