"""AnthropicAdapter with the real anthropic SDK against the fake Messages API server."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from fake_providers import (
    Delay,
    Drop,
    FakeProviderServer,
    anthropic_error,
    anthropic_message,
    tool_call,
)

from client.adapters.anthropic_adapter import AnthropicAdapter
from client.adapters.base import GenerateParams
from client.adapters.errors import ModelError
from client.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolDef,
    ToolResultMessage,
    UserMessage,
)
from client.retry import RetryPolicy, call_with_retries

LONG = ("find the restaurant that my mother prefers and book a table " * 2)[:100]
TOOLS = [
    ToolDef(
        "date of journey",
        "When does the journey start?",
        {"type": "object", "properties": {"city": {"type": "string"}}},
    ),
    ToolDef("a.b", "Dotted name", {"type": "object", "properties": {}}),
    ToolDef(LONG, "A 100-character name", {"type": "object", "properties": {"x": {"type": "integer"}}}),
]
SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
FAST = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05)


@pytest.fixture
async def adapter(fake_server: FakeProviderServer) -> AsyncIterator[AnthropicAdapter]:
    a = AnthropicAdapter("claude-test", base_url=fake_server.anthropic_base_url, timeout=60.0, max_tokens=1000)
    yield a
    await a.aclose()


@pytest.fixture
async def thinking_adapter(fake_server: FakeProviderServer) -> AsyncIterator[AnthropicAdapter]:
    a = AnthropicAdapter(
        "claude-test",
        base_url=fake_server.anthropic_base_url,
        thinking_budget=2048,
        max_tokens=8000,
        timeout=60.0,
    )
    yield a
    await a.aclose()


def use_every_tool(request: dict) -> dict:
    """A scripted model that uses every offered tool in one turn, by the names it was given."""
    return anthropic_message(
        "Let me look these up.", [tool_call(t["name"], {"i": i}) for i, t in enumerate(request["tools"])]
    )


async def test_parallel_tool_use_and_grouped_results(
    fake_server: FakeProviderServer, adapter: AnthropicAdapter
) -> None:
    fake_server.anthropic.script(use_every_tool)
    conversation = [SystemMessage("You book trips."), SystemMessage("Be brief."), UserMessage("plan my trip")]
    response = await adapter.complete(conversation, TOOLS)

    sent = fake_server.anthropic.last_body
    assert sent["system"] == "You book trips.\n\nBe brief."
    assert sent["max_tokens"] == 1000
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "plan my trip"}]}]
    names = [t["name"] for t in sent["tools"]]
    assert all(SAFE.match(n) for n in names) and names[:2] == ["date_of_journey", "a_b"]
    assert sent["tools"][0]["input_schema"] == TOOLS[0].input_schema
    assert sent["tool_choice"] == {"type": "auto"}

    assert response.text == "Let me look these up."
    assert [c.name for c in response.tool_calls] == [t.name for t in TOOLS]
    assert [c.arguments for c in response.tool_calls] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert response.stop_reason == "tool_calls"
    assert response.provider_blocks is None  # nothing that needs verbatim replay

    history = [
        *conversation,
        response.to_assistant_message(),
        *[
            ToolResultMessage(c.id, c.name, f"result {i}" if i != 1 else "no such city", is_error=(i == 1))
            for i, c in enumerate(response.tool_calls)
        ],
        UserMessage("and the hotel?"),
    ]
    fake_server.anthropic.script(anthropic_message("Booked."))
    final = await adapter.complete(history, TOOLS)
    assert final.text == "Booked." and final.stop_reason == "end_turn"

    messages = fake_server.anthropic.last_body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assistant = messages[1]["content"]
    assert assistant[0] == {"type": "text", "text": "Let me look these up."}
    assert [b["name"] for b in assistant[1:]] == names
    results = messages[2]["content"]
    assert [b["type"] for b in results] == ["tool_result"] * 3 + ["text"]  # one user turn, results first
    assert [b.get("is_error", False) for b in results[:3]] == [False, True, False]
    assert results[1]["content"] == "no such city"
    assert fake_server.anthropic.violations == []


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ({"name": "a.b"}, {"type": "tool", "name": "a_b"}),
    ],
)
async def test_tool_choice_mapping(
    fake_server: FakeProviderServer, adapter: AnthropicAdapter, choice: object, expected: dict
) -> None:
    fake_server.anthropic.script(anthropic_message("ok"))
    await adapter.complete([UserMessage("hi")], TOOLS, choice)  # type: ignore[arg-type]
    assert fake_server.anthropic.last_body["tool_choice"] == expected


async def test_disable_parallel_tool_use(fake_server: FakeProviderServer) -> None:
    adapter = AnthropicAdapter(
        "claude-test", base_url=fake_server.anthropic_base_url, parallel_tool_calls=False
    )
    try:
        fake_server.anthropic.script(anthropic_message("ok"))
        await adapter.complete([UserMessage("hi")], TOOLS, "required")
        assert fake_server.anthropic.last_body["tool_choice"] == {
            "type": "any",
            "disable_parallel_tool_use": True,
        }
    finally:
        await adapter.aclose()


async def test_thinking_blocks_round_trip_verbatim(
    fake_server: FakeProviderServer, thinking_adapter: AnthropicAdapter
) -> None:
    fake_server.anthropic.script(
        anthropic_message(
            None,
            [tool_call("date_of_journey", {"city": "Paris"})],
            thinking=[("The user wants Paris.", "sig-abc-123")],
            redacted_thinking="ENCRYPTED-OPAQUE",
            usage={
                "input_tokens": 50,
                "output_tokens": 300,
                "output_tokens_details": {"thinking_tokens": 250},
            },
        )
    )
    first = await thinking_adapter.complete([UserMessage("when do I leave?")], TOOLS)
    sent = fake_server.anthropic.last_body
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "temperature" not in sent
    assert first.reasoning == "The user wants Paris."
    assert first.usage.reasoning_tokens == 250 and first.usage.output_tokens == 300
    assert first.provider_blocks is not None
    assert [b["type"] for b in first.provider_blocks] == ["thinking", "redacted_thinking", "tool_use"]
    call = first.tool_calls[0]
    assert call.name == "date of journey" and call.arguments == {"city": "Paris"}

    fake_server.anthropic.script(anthropic_message("You leave on Monday.", thinking="Tool said Monday."))
    history = [
        UserMessage("when do I leave?"),
        first.to_assistant_message(),
        ToolResultMessage(call.id, call.name, "Monday", False),
    ]
    final = await thinking_adapter.complete(history, TOOLS)
    assert final.text == "You leave on Monday." and final.reasoning == "Tool said Monday."
    assistant = fake_server.anthropic.last_body["messages"][1]["content"]
    assert assistant[0] == {
        "type": "thinking",
        "thinking": "The user wants Paris.",
        "signature": "sig-abc-123",
    }
    assert assistant[1] == {"type": "redacted_thinking", "data": "ENCRYPTED-OPAQUE"}
    assert assistant[2]["type"] == "tool_use" and assistant[2]["name"] == "date_of_journey"
    assert fake_server.anthropic.violations == []


async def test_dropping_thinking_blocks_is_rejected_like_the_real_api(
    fake_server: FakeProviderServer, thinking_adapter: AnthropicAdapter
) -> None:
    """Why provider_blocks exist: without them the API refuses the next turn."""
    fake_server.anthropic.script(anthropic_message(None, [tool_call("a_b", {})], thinking="hmm"))
    first = await thinking_adapter.complete([UserMessage("go")], TOOLS)
    stripped = AssistantMessage(first.text, first.tool_calls, first.reasoning, provider_blocks=None)
    call = first.tool_calls[0]
    with pytest.raises(ModelError) as info:
        await thinking_adapter.complete(
            [UserMessage("go"), stripped, ToolResultMessage(call.id, call.name, "ok", False)], TOOLS
        )
    assert info.value.kind == "bad_request" and "thinking" in info.value.provider_message

    tampered = first.to_assistant_message()
    assert tampered.provider_blocks is not None
    tampered.provider_blocks[0]["thinking"] = "edited"
    with pytest.raises(ModelError, match="signature"):
        await thinking_adapter.complete(
            [UserMessage("go"), tampered, ToolResultMessage(call.id, call.name, "ok", False)], TOOLS
        )


async def test_thinking_rejects_forced_tool_choice_and_temperature(
    fake_server: FakeProviderServer, thinking_adapter: AnthropicAdapter
) -> None:
    with pytest.raises(ModelError, match="extended thinking") as info:
        await thinking_adapter.complete([UserMessage("hi")], TOOLS, "required")
    assert info.value.kind == "bad_request" and not info.value.retryable
    with pytest.raises(ModelError, match="temperature"):
        await thinking_adapter.complete([UserMessage("hi")], TOOLS, "auto", GenerateParams(temperature=0.0))
    with pytest.raises(ModelError, match="must be smaller than max_tokens"):
        await thinking_adapter.complete([UserMessage("hi")], TOOLS, "auto", GenerateParams(max_tokens=1500))
    assert fake_server.anthropic.requests == []
    with pytest.raises(ValueError, match="at least 1024"):
        AnthropicAdapter("claude-test", base_url="http://127.0.0.1:9", thinking_budget=100)


async def test_usage_with_cache_and_stop_reasons(
    fake_server: FakeProviderServer, adapter: AnthropicAdapter
) -> None:
    fake_server.anthropic.script(
        anthropic_message(
            "cut off",
            usage={
                "input_tokens": 20,
                "output_tokens": 1000,
                "cache_read_input_tokens": 300,
                "cache_creation_input_tokens": 50,
            },
            stop_reason="max_tokens",
        )
    )
    response = await adapter.complete([UserMessage("hi")], TOOLS, "auto", GenerateParams(max_tokens=1000, temperature=0.2))
    assert fake_server.anthropic.last_body["temperature"] == 0.2
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (370, 1000)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (300, 50)
    assert response.stop_reason == "max_tokens" and response.model == "fake-claude"


async def test_retries_429_529_timeout_and_drop(fake_server: FakeProviderServer) -> None:
    adapter = AnthropicAdapter("claude-test", base_url=fake_server.anthropic_base_url, timeout=0.3)
    try:
        fake_server.anthropic.script(
            anthropic_error(
                429, "Number of requests has exceeded your rate limit", headers={"retry-after": "0.2"}
            ),
            anthropic_error(529, "Overloaded"),
            Delay(2.0, anthropic_message("too late")),
            Drop(),
            anthropic_message("finally"),
        )
        attempts: list[tuple[str, int | None, float | None]] = []
        response = await call_with_retries(
            lambda: adapter.complete([UserMessage("hi")], TOOLS),
            RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.05),
            on_attempt=lambda n, e, d: attempts.append((e.kind, e.status, d)),
        )
        assert response.text == "finally"
        assert [(k, s) for k, s, _ in attempts] == [
            ("rate_limit", 429),
            ("server_error", 529),
            ("timeout", None),
            ("connection", None),
        ]
        assert attempts[0][2] is not None and attempts[0][2] >= 0.2
        times = [r.time for r in fake_server.anthropic.requests]
        assert len(times) == 5 and times[1] - times[0] >= 0.19
    finally:
        await adapter.aclose()


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (anthropic_error(400, "prompt is too long: 210000 tokens > 200000 maximum"), "context_length"),
        (anthropic_error(413, "Request exceeds the maximum allowed number of bytes."), "context_length"),
        (anthropic_error(401, "invalid x-api-key"), "auth"),
        (anthropic_error(403, "Your API key does not have permission"), "auth"),
        (anthropic_error(400, "tools.0.custom.input_schema: JSON schema is invalid"), "bad_request"),
        (anthropic_error(404, "model: claude-nope"), "bad_request"),
    ],
)
async def test_deterministic_errors_are_not_retried(
    fake_server: FakeProviderServer, adapter: AnthropicAdapter, error, kind: str
) -> None:
    fake_server.anthropic.script(error, anthropic_message("never"))
    with pytest.raises(ModelError) as info:
        await call_with_retries(lambda: adapter.complete([UserMessage("hi")], TOOLS), FAST)
    assert info.value.kind == kind and not info.value.retryable
    assert info.value.provider == "anthropic" and info.value.model == "claude-test"
    assert len(fake_server.anthropic.requests) == 1


async def test_history_from_other_sources_is_made_valid(
    fake_server: FakeProviderServer, adapter: AnthropicAdapter
) -> None:
    """Hand-built history (oracle, other providers): odd ids, malformed arguments, empty content."""
    calls = [
        ToolCall(
            id="call 1", name="date of journey", arguments={"city": "Rome"}, raw_arguments='{"city":"Rome"}'
        ),
        ToolCall.from_raw("call.2", "a.b", "{broken"),
    ]
    fake_server.anthropic.script(anthropic_message("ok"))
    await adapter.complete(
        [
            UserMessage("hi"),
            AssistantMessage("", calls),
            ToolResultMessage("call 1", "date of journey", "Monday", False),
            ToolResultMessage("call.2", "a.b", "", True),
        ],
        TOOLS,
    )
    messages = fake_server.anthropic.last_body["messages"]
    uses = messages[1]["content"]
    assert [u["id"] for u in uses] == ["call_1", "call_2"]
    assert [u["input"] for u in uses] == [{"city": "Rome"}, {}]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "Monday"},
        {"type": "tool_result", "tool_use_id": "call_2", "is_error": True},
    ]
    assert fake_server.anthropic.violations == []


async def test_api_key_header_and_missing_key(
    fake_server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicAdapter("claude-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    adapter = AnthropicAdapter("claude-test", base_url=fake_server.anthropic_base_url)
    try:
        fake_server.anthropic.script(anthropic_message("hi"))
        await adapter.complete([UserMessage("hi")], [])
        request = fake_server.anthropic.requests[-1]
        # older SDKs send x-api-key, this one sends Authorization: Bearer
        sent_keys = {
            request.headers.get("x-api-key"),
            request.headers.get("authorization", "").removeprefix("Bearer "),
        }
        assert "sk-ant-test" in sent_keys
        assert "tools" not in request.body and "tool_choice" not in request.body
    finally:
        await adapter.aclose()
