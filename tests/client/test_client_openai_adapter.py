"""OpenAIAdapter with the real openai SDK against the fake Chat Completions server."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from fake_providers import (
    Delay,
    Drop,
    FakeProviderServer,
    openai_chat,
    openai_error,
    tool_call,
)

from client.adapters.base import LOCAL_PLACEHOLDER_API_KEY, GenerateParams
from client.adapters.errors import ModelError
from client.adapters.openai_adapter import OpenAIAdapter
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
    ToolDef("BookRestaurant", "Already safe", {"type": "object", "properties": {}}),
]
SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
FAST = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05)


@pytest.fixture
async def adapter(fake_server: FakeProviderServer) -> AsyncIterator[OpenAIAdapter]:
    a = OpenAIAdapter("gpt-test", base_url=fake_server.openai_base_url, timeout=60.0)
    yield a
    await a.aclose()


def call_every_tool(request: dict) -> dict:
    """A scripted model that calls every offered tool in parallel, by the names it was given."""
    return openai_chat(
        tool_calls=[tool_call(t["function"]["name"], {"i": i}) for i, t in enumerate(request["tools"])]
    )


async def test_parallel_tool_calls_with_name_mapping_round_trip(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter
) -> None:
    fake_server.openai.script(call_every_tool)
    response = await adapter.complete([SystemMessage("sys"), UserMessage("plan my trip")], TOOLS)

    sent = fake_server.openai.last_body
    sent_names = [t["function"]["name"] for t in sent["tools"]]
    assert all(SAFE.match(n) for n in sent_names)
    assert sent_names[0] == "date_of_journey" and sent_names[1] == "a_b" and sent_names[3] == "BookRestaurant"
    assert len(sent_names[2]) <= 64
    assert sent["tools"][0]["function"]["parameters"] == TOOLS[0].input_schema
    assert sent["tool_choice"] == "auto"
    assert sent["messages"][0] == {"role": "system", "content": "sys"}

    assert [c.name for c in response.tool_calls] == [t.name for t in TOOLS]
    assert [c.arguments for c in response.tool_calls] == [{"i": i} for i in range(len(TOOLS))]
    assert response.stop_reason == "tool_calls"
    assert response.text is None
    assert response.latency_s > 0

    # Second turn: history goes back with safe names; tool results (one an error) follow.
    history = [
        SystemMessage("sys"),
        UserMessage("plan my trip"),
        response.to_assistant_message(),
        *[
            ToolResultMessage(c.id, c.name, "boom" if i == 1 else f"result {i}", is_error=(i == 1))
            for i, c in enumerate(response.tool_calls)
        ],
    ]
    fake_server.openai.script(openai_chat("All booked."))
    final = await adapter.complete(history, TOOLS)
    assert final.text == "All booked." and final.tool_calls == [] and final.stop_reason == "end_turn"
    messages = fake_server.openai.last_body["messages"]
    assistant = messages[2]
    assert [tc["function"]["name"] for tc in assistant["tool_calls"]] == sent_names
    tool_messages = messages[3:]
    assert [m["role"] for m in tool_messages] == ["tool"] * 4
    assert [m["tool_call_id"] for m in tool_messages] == [c.id for c in response.tool_calls]
    assert tool_messages[1]["content"] == "Error: boom"
    assert tool_messages[0]["content"] == "result 0"
    assert fake_server.openai.violations == []


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ({"name": "date of journey"}, {"type": "function", "function": {"name": "date_of_journey"}}),
    ],
)
async def test_tool_choice_mapping(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter, choice: object, expected: object
) -> None:
    fake_server.openai.script(openai_chat("ok"))
    await adapter.complete([UserMessage("hi")], TOOLS, choice)  # type: ignore[arg-type]
    assert fake_server.openai.last_body["tool_choice"] == expected


async def test_no_tools_sends_no_tool_fields(fake_server: FakeProviderServer, adapter: OpenAIAdapter) -> None:
    fake_server.openai.script(openai_chat("plain"))
    response = await adapter.complete([UserMessage("hi")], [], "auto", GenerateParams(max_tokens=32, temperature=0.0))
    body = fake_server.openai.last_body
    assert "tools" not in body and "tool_choice" not in body
    assert body["max_tokens"] == 32 and body["temperature"] == 0.0
    assert response.text == "plain"


async def test_bad_tool_choice_fails_before_sending(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter
) -> None:
    with pytest.raises(ModelError) as info:
        await adapter.complete([UserMessage("hi")], TOOLS, {"name": "no such tool"})
    assert info.value.kind == "bad_request" and "no such tool" in str(info.value)
    with pytest.raises(ModelError, match="no tools"):
        await adapter.complete([UserMessage("hi")], [], "required")
    assert fake_server.openai.requests == []


async def test_malformed_arguments_are_recorded_not_raised(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter
) -> None:
    fake_server.openai.script(
        openai_chat(tool_calls=[tool_call("date_of_journey", '{"city": "Par'), tool_call("a_b", "[1, 2]")])
    )
    response = await adapter.complete([UserMessage("hi")], TOOLS)
    bad, not_object = response.tool_calls
    assert bad.name == "date of journey" and bad.arguments is None
    assert bad.raw_arguments == '{"city": "Par' and "not valid JSON" in (bad.parse_error or "")
    assert not_object.arguments is None and "must be a JSON object" in (not_object.parse_error or "")

    # The malformed call goes back verbatim by default ...
    history = [
        UserMessage("hi"),
        response.to_assistant_message(),
        ToolResultMessage(bad.id, bad.name, bad.parse_error or "", True),
        ToolResultMessage(not_object.id, not_object.name, not_object.parse_error or "", True),
    ]
    fake_server.openai.script(openai_chat("sorry"))
    await adapter.complete(history, TOOLS)
    sent = fake_server.openai.last_body["messages"][1]["tool_calls"]
    assert sent[0]["function"]["arguments"] == '{"city": "Par'

    # ... or as "{}" for servers that parse history arguments.
    strict_server_adapter = OpenAIAdapter(
        "gpt-test", base_url=adapter.base_url, history_malformed_arguments="empty"
    )
    try:
        fake_server.openai.script(openai_chat("sorry"))
        await strict_server_adapter.complete(history, TOOLS)
        sent = fake_server.openai.last_body["messages"][1]["tool_calls"]
        assert [s["function"]["arguments"] for s in sent] == ["{}", "{}"]
    finally:
        await strict_server_adapter.aclose()


async def test_usage_reasoning_and_stop_reason(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter
) -> None:
    fake_server.openai.script(
        openai_chat(
            "partial answer",
            reasoning_content="Let me think about the family graph.",
            usage=None,
            reasoning_tokens=40,
            cached_tokens=64,
            finish_reason="length",
        ),
        openai_chat("x", message_extra={"reasoning": "OpenRouter-style reasoning"}, usage=(1000, 200)),
    )
    first = await adapter.complete([UserMessage("hi")], TOOLS)
    assert first.reasoning == "Let me think about the family graph."
    assert (first.usage.input_tokens, first.usage.output_tokens) == (11, 7)
    assert first.usage.reasoning_tokens == 40 and first.usage.cache_read_tokens == 64
    assert first.stop_reason == "max_tokens"
    assert first.model == "fake-openai-model"

    second = await adapter.complete([UserMessage("hi")], TOOLS)
    assert second.reasoning == "OpenRouter-style reasoning"
    assert second.usage.input_tokens == 1000 and second.usage.output_tokens == 200

    # reasoning is not sent back unless asked for
    fake_server.openai.script(openai_chat("y"))
    await adapter.complete([UserMessage("hi"), first.to_assistant_message(), UserMessage("go on")], TOOLS)
    assert "reasoning_content" not in fake_server.openai.last_body["messages"][1]


async def test_retry_after_429_is_honoured(fake_server: FakeProviderServer, adapter: OpenAIAdapter) -> None:
    fake_server.openai.script(
        openai_error(
            429, "Rate limit reached for requests", code="rate_limit_exceeded", headers={"retry-after": "0.2"}
        ),
        openai_chat("after the wait"),
    )
    attempts: list[tuple[int, str, float | None]] = []
    response = await call_with_retries(
        lambda: adapter.complete([UserMessage("hi")], TOOLS),
        FAST,
        on_attempt=lambda n, e, d: attempts.append((n, e.kind, d)),
    )
    assert response.text == "after the wait"
    assert attempts[0][:2] == (1, "rate_limit") and attempts[0][2] is not None and attempts[0][2] >= 0.2
    first, second = fake_server.openai.requests
    assert second.time - first.time >= 0.19


async def test_retry_after_ms_header(fake_server: FakeProviderServer, adapter: OpenAIAdapter) -> None:
    fake_server.openai.script(openai_error(429, "slow", headers={"retry-after-ms": "150"}))
    with pytest.raises(ModelError) as info:
        await adapter.complete([UserMessage("hi")], TOOLS)
    assert info.value.retry_after == pytest.approx(0.15)
    assert info.value.status == 429 and info.value.retryable


async def test_server_errors_timeouts_and_drops_are_retried(fake_server: FakeProviderServer) -> None:
    adapter = OpenAIAdapter("gpt-test", base_url=fake_server.openai_base_url, timeout=0.3)
    try:
        fake_server.openai.script(
            openai_error(500, "The server had an error while processing your request."),
            Delay(2.0, openai_chat("too late")),
            Drop(),
            openai_chat("finally"),
        )
        kinds: list[str] = []
        response = await call_with_retries(
            lambda: adapter.complete([UserMessage("hi")], TOOLS),
            FAST,
            on_attempt=lambda n, e, d: kinds.append(e.kind),
        )
        assert response.text == "finally"
        assert kinds == ["server_error", "timeout", "connection"]
        assert len(fake_server.openai.requests) == 4
    finally:
        await adapter.aclose()


async def test_final_failure_carries_attempt_history(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter
) -> None:
    fake_server.openai.script(*[openai_error(503, "unavailable")] * 4)
    with pytest.raises(ModelError) as info:
        await call_with_retries(lambda: adapter.complete([UserMessage("hi")], TOOLS), FAST)
    assert info.value.kind == "server_error" and info.value.status == 503
    assert [a.attempt for a in info.value.attempts] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    "error",
    [
        openai_error(
            400,
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
            code="context_length_exceeded",
        ),
        # vLLM-style: no code, only the message
        openai_error(
            400, "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."
        ),
        # llama.cpp server
        openai_error(400, "the request exceeds the available context size", type="exceed_context_size_error"),
    ],
)
async def test_context_length_is_not_retried(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter, error
) -> None:
    fake_server.openai.script(error, openai_chat("never"))
    with pytest.raises(ModelError) as info:
        await call_with_retries(lambda: adapter.complete([UserMessage("hi")], TOOLS), FAST)
    assert info.value.kind == "context_length" and not info.value.retryable
    assert len(fake_server.openai.requests) == 1


async def test_auth_and_bad_request_are_not_retried(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter
) -> None:
    fake_server.openai.script(
        openai_error(401, "Incorrect API key provided: sk-xxx.", code="invalid_api_key"),
        openai_error(400, "Invalid schema for function 'x'", code="invalid_function_parameters"),
        openai_error(429, "You exceeded your current quota", code="insufficient_quota"),
    )
    for kind in ("auth", "bad_request", "rate_limit"):
        with pytest.raises(ModelError) as info:
            await call_with_retries(lambda: adapter.complete([UserMessage("hi")], TOOLS), FAST)
        assert info.value.kind == kind and not info.value.retryable
        assert len(info.value.attempts) == 1
    assert len(fake_server.openai.requests) == 3


async def test_error_in_200_body(fake_server: FakeProviderServer, adapter: OpenAIAdapter) -> None:
    fake_server.openai.script({"error": {"message": "Provider returned error", "code": 502}})
    with pytest.raises(ModelError) as info:
        await adapter.complete([UserMessage("hi")], TOOLS)
    assert info.value.kind == "server_error" and info.value.retryable and info.value.status == 502


async def test_api_key_resolution(fake_server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIAdapter("gpt-4o-mini")
    with pytest.raises(ValueError, match="MY_KEY"):
        OpenAIAdapter("gpt-4o-mini", api_key_env="MY_KEY")

    local = OpenAIAdapter("local-model", base_url=fake_server.openai_base_url)
    monkeypatch.setenv("MY_KEY", "sk-from-env")
    keyed = OpenAIAdapter("m", base_url=fake_server.openai_base_url, api_key_env="MY_KEY", name_prefix="vllm")
    try:
        assert keyed.name == "vllm:m" and keyed.provider == "vllm"
        fake_server.openai.script(openai_chat("a"), openai_chat("b"))
        await local.complete([UserMessage("hi")], [])
        await keyed.complete([UserMessage("hi")], [])
        auth = [r.headers["authorization"] for r in fake_server.openai.requests]
        assert auth == [f"Bearer {LOCAL_PLACEHOLDER_API_KEY}", "Bearer sk-from-env"]
    finally:
        await local.aclose()
        await keyed.aclose()


async def test_request_options(fake_server: FakeProviderServer) -> None:
    adapter = OpenAIAdapter(
        "gpt-test",
        base_url=fake_server.openai_base_url,
        api_key="sk-test",
        extra_body={"top_k": 5, "chat_template_kwargs": {"enable_thinking": False}},
        max_tokens_param="max_completion_tokens",
        parallel_tool_calls=False,
        send_reasoning=True,
        default_headers={"X-Trace": "t1"},
    )
    try:
        fake_server.openai.script(openai_chat("ok"))
        history = [UserMessage("q"), AssistantMessage("a", [], reasoning="why"), UserMessage("q2")]
        await adapter.complete(history, TOOLS, "auto", GenerateParams(max_tokens=77))
        request = fake_server.openai.requests[-1]
        body = request.body
        assert body["top_k"] == 5 and body["chat_template_kwargs"] == {"enable_thinking": False}
        assert body["max_completion_tokens"] == 77 and "max_tokens" not in body
        assert body["parallel_tool_calls"] is False
        assert body["messages"][1] == {"role": "assistant", "content": "a", "reasoning_content": "why"}
        assert request.headers["x-trace"] == "t1"
    finally:
        await adapter.aclose()


async def test_tool_call_history_from_other_sources(
    fake_server: FakeProviderServer, adapter: OpenAIAdapter
) -> None:
    """History built by hand (e.g. the oracle) with original names and empty raw arguments."""
    call = ToolCall(id="c1", name="date of journey", arguments={"city": "Rome"}, raw_arguments="")
    fake_server.openai.script(openai_chat("done"))
    await adapter.complete(
        [
            UserMessage("hi"),
            AssistantMessage(None, [call]),
            ToolResultMessage("c1", "date of journey", "Monday", False),
        ],
        TOOLS,
    )
    sent = fake_server.openai.last_body["messages"][1]
    assert sent["content"] is None
    assert sent["tool_calls"][0]["function"] == {"name": "date_of_journey", "arguments": '{"city": "Rome"}'}
