"""Issue 41 items 1-3: one value for the sampling settings, one base for SDK providers, one wrapper
(``client.model.Model``) for every model call, with cache keys and the judge's numbers unchanged."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from fake_providers import openai_error

from client.adapters import make_adapter, register_adapter
from client.adapters.base import DEFAULT_PARAMS, GenerateParams, SDKAdapter
from client.adapters.errors import ErrorDetails, ModelError
from client.adapters.names import ToolNameMap
from client.cache import ResponseCache, request_key
from client.messages import Message, ModelResponse, SystemMessage, ToolChoice, ToolDef, Usage, UserMessage
from client.model import Model
from client.ratelimit import RateLimiter
from client.retry import RetryPolicy

ROOT = Path(__file__).resolve().parents[2]


class _Stub:
    name, provider, model, base_url = "openai:gpt-test", "openai", "gpt-test", "http://127.0.0.1:9/v1"

    def __init__(self) -> None:
        self.params: list[GenerateParams] = []

    async def complete(self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
                       params: GenerateParams = DEFAULT_PARAMS) -> ModelResponse:
        self.params.append(params)
        return ModelResponse("hi", [], None, Usage(10, 2), "end_turn", 0.0, self.model, {})

    async def aclose(self) -> None:
        return None


MESSAGES: list[Message] = [SystemMessage("sys"), UserMessage("where?")]
TOOLS = [ToolDef("get_city", "the city", {"type": "object", "properties": {"q": {"type": "string"}}})]


def test_cache_keys_are_the_ones_main_computed() -> None:
    """The keys computed on main (CachingAdapter.request with max_tokens/temperature keywords)."""
    keyed = Model(_Stub(), key_extra={"reasoning_effort": "low"})  # type: ignore[arg-type]
    plain = Model(_Stub())  # type: ignore[arg-type]
    params = GenerateParams(max_tokens=64, temperature=0.0)
    assert request_key(keyed.request(MESSAGES, TOOLS, "required", params)) == (
        "8bbf3345b84a1a94f0a26a7c674104489acf55da39767692e09ae5a9cf3740ee")
    assert request_key(plain.request(MESSAGES, [], "auto")) == (
        "2f7b29d7c10875179af75d8c7a697498617e1e3a713458a7d093c56384f06f27")


async def test_one_wrapper_caches_limits_and_prices(tmp_path: Path) -> None:
    """Item 3: a hit costs nothing and takes no rate-limit slot; the settings reach the adapter as one value."""
    stub = _Stub()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        limiter = RateLimiter(600, name="t")
        model = Model(stub, cache, limiter=limiter, retry=RetryPolicy(max_attempts=1))  # type: ignore[arg-type]
        params = GenerateParams(max_tokens=7, temperature=0.5)
        first = await model.generate(MESSAGES, [], "auto", params)
        second = await model.generate(MESSAGES, [], "auto", params)
    assert stub.params == [params]  # one provider call, with the settings as given
    assert model.cost_usd(second) == 0.0 and getattr(second, "cached", False) and not getattr(first, "cached", False)


def test_the_agent_and_the_judge_have_no_model_call_logic_of_their_own() -> None:
    """Item 3: the agent loop and the judge call Model.generate; neither looks for the caching adapter
    nor builds retries or rate-limit slots itself."""
    for path in ("client/agent.py", "evals/core/judge.py"):
        source = (ROOT / path).read_text(encoding="utf-8")
        names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}
        assert "generate" in names, path
        assert not names & {"CachingAdapter", "call_with_retries", "reserve", "price_for"}, path


# ---- item 2: a provider that speaks its own SDK is one small file (here httpx2 stands for the SDK)


class EchoAPIAdapter(SDKAdapter):
    """The worked example of docs/architecture.md ("Adding a provider")."""

    api_key_env = "ECHO_API_KEY"

    def __init__(self, model: str, **options: Any) -> None:
        if not model:
            raise ValueError("EchoAPIAdapter needs a model name")
        super().__init__(model, name_prefix="echo", **options)

    def make_client(self, options: dict[str, Any]) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=options["base_url"], timeout=options["timeout"],
                                 headers={"authorization": f"Bearer {options['api_key']}"})

    def request_body(self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice,
                     forced: str | None, names: ToolNameMap, params: GenerateParams) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": [{"role": m.role, "content": getattr(m, "text", "")} for m in messages]}
        if params.max_tokens is not None:
            body["max_tokens"] = params.max_tokens
        return body

    async def send(self, body: dict[str, Any]) -> Any:
        reply = await self._client.post("/chat/completions", json=body)
        reply.raise_for_status()
        return reply.json()

    def parse_response(self, reply: Any, names: ToolNameMap, latency_s: float = 0.0) -> ModelResponse:
        text = reply["choices"][0]["message"]["content"]
        return ModelResponse(text, [], None, Usage(), "end_turn", latency_s, self.model, reply)

    def error_details(self, exc: BaseException) -> ErrorDetails | None:
        if isinstance(exc, httpx.TimeoutException):
            return ErrorDetails("timeout", "request timed out")
        if isinstance(exc, httpx.HTTPStatusError):
            return ErrorDetails("status", exc.response.text, status=exc.response.status_code,
                                headers=dict(exc.response.headers))
        return None


async def test_a_new_sdk_provider_is_one_file_and_one_registry_line(fake_server: Any) -> None:
    register_adapter("echo", lambda model, **options: EchoAPIAdapter(model, **options), replace=True)
    adapter = make_adapter("echo:m1", base_url=fake_server.openai_base_url)
    fake_server.openai.script({"choices": [{"message": {"role": "assistant", "content": "\ud800 hello"}}]})
    try:
        response = await adapter.complete([UserMessage("hi")], [], "auto", GenerateParams(max_tokens=5))
        assert response.text == "\ufffd hello"  # the base repairs lone surrogates
        assert fake_server.openai.bodies[-1]["max_tokens"] == 5
        fake_server.openai.script(openai_error(429, "slow down", headers={"retry-after": "3"}))
        with pytest.raises(ModelError) as info:
            await adapter.complete([UserMessage("hi")], [], {"name": "nope"})
        assert info.value.kind == "bad_request" and info.value.provider == "echo"  # tool choice, stamped
        with pytest.raises(ModelError) as info:
            await adapter.complete([UserMessage("hi")], [])
        assert (info.value.kind, info.value.retry_after, info.value.model) == ("rate_limit", 3.0, "m1")
    finally:
        await adapter.aclose()
