"""CachingAdapter: the real openai SDK against the fake provider, behind a sqlite response cache."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fake_providers import FakeProviderServer, openai_chat, openai_error, tool_call

from client.adapters.base import GenerateParams
from client.adapters.caching import CachedModelResponse, CachingAdapter, is_cached
from client.adapters.errors import ModelError
from client.adapters.openai_adapter import OpenAIAdapter
from client.agent import AgentConfig, run_agent
from client.cache import ResponseCache
from client.messages import SystemMessage, ToolDef, UserMessage
from client.model import Model
from client.ratelimit import RateLimiter
from client.retry import RetryPolicy
from client.runs import EpisodeRecorder

TOOLS = [ToolDef("lookup", "Look a city up", {"type": "object", "properties": {"city": {"type": "string"}}})]
CONVERSATION = [SystemMessage("be brief"), UserMessage("where is the journey going?")]


def answer(request: dict) -> dict:
    """A model that calls the tool first, then answers with what the tool said."""
    if request["messages"][-1]["role"] == "tool":
        return openai_chat(f"It goes to {request['messages'][-1]['content']}.", usage=(30, 6))
    return openai_chat(tool_calls=[tool_call("lookup", {"city": "Paris"})], usage=(20, 5))


@pytest.fixture
async def cache(tmp_path: Path) -> AsyncIterator[ResponseCache]:
    with ResponseCache(tmp_path / "cache.sqlite") as c:
        yield c


@pytest.fixture
async def adapter(fake_server: FakeProviderServer, cache: ResponseCache) -> AsyncIterator[CachingAdapter]:
    inner = OpenAIAdapter("gpt-test", base_url=fake_server.openai_base_url, timeout=60.0)
    a = CachingAdapter(inner, cache)
    yield a
    await a.aclose()


async def test_second_identical_request_is_served_from_the_cache(
    fake_server: FakeProviderServer, adapter: CachingAdapter, cache: ResponseCache
) -> None:
    fake_server.openai.respond_with(answer)
    first = await adapter.complete(CONVERSATION, TOOLS, "required", GenerateParams(max_tokens=64, temperature=0.0))
    assert len(fake_server.openai.requests) == 1 and not is_cached(first)

    second = await adapter.complete(CONVERSATION, TOOLS, "required", GenerateParams(max_tokens=64, temperature=0.0))
    assert len(fake_server.openai.requests) == 1  # no provider request
    assert isinstance(second, CachedModelResponse) and is_cached(second) and second.cached_latency_s == first.latency_s
    assert (second.text, second.tool_calls, second.usage, second.stop_reason, second.raw, second.model) == (
        first.text, first.tool_calls, first.usage, first.stop_reason, first.raw, first.model,
    )
    body = second.to_dict()
    assert body["cached"] is True and body["cache_key"] == cache.key(adapter.request(
        CONVERSATION, TOOLS, "required", GenerateParams(max_tokens=64, temperature=0.0)
    ))
    assert (cache.hits, len(cache)) == (1, 1)


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [*CONVERSATION[:1], UserMessage("where is the journey going??")]},
        {"tools": [ToolDef("lookup", "Look a city up!", TOOLS[0].input_schema)]},
        {"tool_choice": "auto"},
        {"max_tokens": 65},
        {"temperature": 0.5},
    ],
    ids=["messages", "tools", "tool_choice", "max_tokens", "temperature"],
)
async def test_any_change_to_the_request_misses(
    fake_server: FakeProviderServer, adapter: CachingAdapter, change: dict
) -> None:
    fake_server.openai.respond_with(answer)
    request = {"messages": CONVERSATION, "tools": TOOLS, "tool_choice": "required", "max_tokens": 64, "temperature": 0.0}
    await adapter.complete(request["messages"], request["tools"], request["tool_choice"],
                           GenerateParams(max_tokens=request["max_tokens"], temperature=request["temperature"]))
    changed = {**request, **change}
    response = await adapter.complete(changed["messages"], changed["tools"], changed["tool_choice"],
                                      GenerateParams(max_tokens=changed["max_tokens"], temperature=changed["temperature"]))
    assert len(fake_server.openai.requests) == 2 and not is_cached(response)


async def test_another_model_or_base_url_misses(fake_server: FakeProviderServer, cache: ResponseCache) -> None:
    fake_server.openai.respond_with(answer)
    a = CachingAdapter(OpenAIAdapter("gpt-test", base_url=fake_server.openai_base_url, timeout=60.0), cache)
    b = CachingAdapter(OpenAIAdapter("gpt-other", base_url=fake_server.openai_base_url, timeout=60.0), cache)
    c = CachingAdapter(OpenAIAdapter("gpt-test", base_url=fake_server.openai_base_url + "/", timeout=60.0), cache)
    try:
        for adapter in (a, b, c, a):
            await adapter.complete(CONVERSATION, TOOLS)
    finally:
        for adapter in (a, b, c):
            await adapter.aclose()
    assert len(fake_server.openai.requests) == 3 and len(cache) == 3


async def test_errors_are_never_cached(fake_server: FakeProviderServer, adapter: CachingAdapter, cache: ResponseCache) -> None:
    fake_server.openai.script(openai_error(400, "bad request"), openai_chat("fine now"))
    with pytest.raises(ModelError):
        await adapter.complete(CONVERSATION, TOOLS)
    assert len(cache) == 0
    response = await adapter.complete(CONVERSATION, TOOLS)  # asks the provider again
    assert response.text == "fine now" and not is_cached(response)
    assert len(fake_server.openai.requests) == 2 and len(cache) == 1


class FakeSession:
    """Just enough of an MCP client session for run_agent: one tool that answers with a city."""

    async def list_tools(self, cursor: str | None = None):  # noqa: ANN201
        from mcp import types

        return types.ListToolsResult(tools=[types.Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in TOOLS])

    async def call_tool(self, name: str, arguments: dict):  # noqa: ANN201
        from mcp import types

        return types.CallToolResult(content=[types.TextContent(type="text", text=arguments["city"])])


@pytest.mark.parametrize("limited", [False, True], ids=["no-limiter", "rate-limited"])
async def test_rerun_of_an_episode_is_free_and_identical(
    fake_server: FakeProviderServer, adapter: CachingAdapter, limited: bool
) -> None:
    fake_server.openai.respond_with(answer)
    cfg = AgentConfig(max_turns=4, retry=RetryPolicy(max_attempts=1))
    runs = []
    for _ in range(2):
        recorder = EpisodeRecorder("t1")
        limiter = RateLimiter(6000, name="test") if limited else None
        model = Model(adapter.inner, adapter.cache, limiter=limiter, retry=cfg.retry)  # the role, as EpisodeEnv builds it
        outcome = await run_agent(model, FakeSession(), "where?", recorder, cfg)  # type: ignore[arg-type]
        runs.append((outcome, recorder))
    assert len(fake_server.openai.requests) == 2  # two turns, first run only

    (first, rec1), (second, rec2) = runs
    assert first.final_answer == second.final_answer == "It goes to Paris."
    assert first.data == second.data
    responses1 = [e for e in rec1.events if e["kind"] == "model_response"]
    responses2 = [e for e in rec2.events if e["kind"] == "model_response"]
    assert [e.get("cached") for e in responses2] == [True, True] and not any(e.get("cached") for e in responses1)
    assert [e["response"]["tool_calls"] for e in responses1] == [e["response"]["tool_calls"] for e in responses2]
    assert [e["response"]["text"] for e in responses1] == [e["response"]["text"] for e in responses2]
    assert rec1.totals.input_tokens == 50 and rec2.totals.input_tokens == 0 and rec2.totals.cost_usd == 0.0
    assert rec2.totals.turns == 2
