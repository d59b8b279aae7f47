"""``Model``: the one way a model is called, by the agent loop and the judge alike.

It wraps a :class:`~client.adapters.base.ModelAdapter` (which only talks to its provider) and owns
what every call needs around it, in this order for each attempt:

1. the response cache (``cache``): a request asked before is answered from it, with no rate-limit
   slot, no provider call and nothing billed;
2. the rate limit (``limiter``): a slot is reserved for the request's estimated tokens and settled
   with the reply's real ones;
3. the provider call, then the cache store (a failure is never stored; a store that fails is logged
   and the paid-for answer returned);
4. retries (``retry``): every failed attempt is recorded (``on_attempt``), each attempt looks in the
   cache again;
5. cost: :meth:`Model.cost_usd` prices a reply with the model's price (``0.0`` for a cache hit).

The cache key is the exact request: provider, model, base URL, the full conversation, the tools, the
tool choice, the :class:`~client.adapters.base.GenerateParams` (plus ``key_extra``, for adapter
options that change answers). A hit is a :class:`CachedModelResponse` (``cached`` is true,
``latency_s`` is the lookup time; the trace's response carries ``"cached": true`` and the key).

    model = Model(make_adapter("openai:gpt-4o-mini"), ResponseCache("runs/cache.sqlite"), limiter=limiter)
    response = await model.generate(messages, tools, "auto", GenerateParams(max_tokens=512))

A ``Model`` is itself a ``ModelAdapter``: its :meth:`~Model.complete` answers from the cache or the
provider (no rate limit, no retries), so it can be handed where an adapter is expected.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from client.adapters.base import DEFAULT_PARAMS, GenerateParams, ModelAdapter
from client.adapters.pricing import price_for
from client.cache import ResponseCache, request_key
from client.messages import Message, ModelResponse, ToolChoice, ToolDef
from client.ratelimit import RateLimiter, estimate_request_tokens
from client.retry import AttemptCallback, RetryPolicy, call_with_retries

__all__ = ["CACHE_FORMAT", "CachedModelResponse", "Model", "is_cached"]

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
"""Part of every key: bump it when the stored form or the key's layout changes."""


@dataclass(slots=True)
class CachedModelResponse(ModelResponse):
    """A response served from the cache (``latency_s`` is the lookup's, not the original call's)."""

    cached: bool = True
    cache_key: str = ""
    cached_latency_s: float | None = None  # how long the original call took

    def to_dict(self) -> dict[str, Any]:
        data = ModelResponse.to_dict(self)
        data.update(cached=True, cache_key=self.cache_key, cached_latency_s=self.cached_latency_s)
        return data


def is_cached(response: Any) -> bool:
    """Whether ``response`` came from a response cache (no provider call, nothing billed)."""
    return bool(getattr(response, "cached", False))


class Model:
    """``adapter`` with the response cache, the rate limit, retries and cost (see the module docstring).

    Args:
        adapter: the provider's adapter (called on a cache miss).
        cache: where responses are kept (shared by any number of models and tasks); ``None``: no cache.
        key_extra: more JSON-able request settings that change the answer (e.g. adapter options such
            as a reasoning effort); they become part of every key.
        limiter: the rate limiter a provider call takes a slot from; ``None``: no limit.
        retry: how failed attempts are retried (``None``: the default :class:`RetryPolicy`).
    """

    def __init__(
        self,
        adapter: ModelAdapter,
        cache: ResponseCache | None = None,
        *,
        key_extra: Mapping[str, Any] | None = None,
        limiter: RateLimiter | None = None,
        retry: RetryPolicy | None = None,
    ):
        self.inner = adapter
        self.cache = cache
        self.key_extra = dict(key_extra or {})
        self.limiter = limiter
        self.retry = retry
        self.name = adapter.name
        self.provider = adapter.provider
        self.model = adapter.model

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r}, {self.cache!r})"

    # ------------------------------------------------------------------ the cache

    def request(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> dict[str, Any]:
        """The cache key's request: everything that is sent to the provider, in JSON form."""
        request: dict[str, Any] = {
            "cache_format": CACHE_FORMAT,
            "provider": self.provider,
            "model": self.model,
            "base_url": getattr(self.inner, "base_url", None),
            "messages": [m.to_dict() for m in messages],
            "tools": [t.to_dict() for t in tools],
            "tool_choice": tool_choice,
            **params.cache_fields(),
        }
        if self.key_extra:
            request["extra"] = self.key_extra
        return request

    async def lookup(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> CachedModelResponse | None:
        """The cached response for this exact request, or ``None`` (never calls the provider)."""
        if self.cache is None:
            return None
        t0 = time.perf_counter()
        request = self.request(messages, tools, tool_choice, params)
        stored = await self.cache.get(request)
        if stored is None:
            return None
        response = ModelResponse.from_dict(stored)
        fields = {name: getattr(response, name) for name in ModelResponse.__dataclass_fields__}
        fields["latency_s"] = time.perf_counter() - t0
        return CachedModelResponse(**fields, cache_key=request_key(request), cached_latency_s=response.latency_s)

    async def fetch(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> ModelResponse:
        """Call the provider (no lookup) and store its response; a failure raises and stores nothing."""
        response = await self.inner.complete(messages, tools, tool_choice, params)
        if self.cache is None:
            return response
        try:
            await self.cache.put(self.request(messages, tools, tool_choice, params), response.to_dict())
        except Exception as exc:  # the answer is paid for: return it even if it cannot be kept
            log.warning(
                "response cache %s: could not store a response: %s: %s", self.cache.path, type(exc).__name__, exc
            )
        return response

    # ------------------------------------------------------------------ calls

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> ModelResponse:
        """One attempt: the cached response for this request, else the provider's (which is then
        stored); a provider call takes a rate-limit slot when there is a limiter."""
        hit = await self.lookup(messages, tools, tool_choice, params)
        if hit is not None:  # answered without the provider: no rate-limit slot for a hit
            return hit
        if self.limiter is None:
            return await self.fetch(messages, tools, tool_choice, params)
        async with self.limiter.reserve(estimate_request_tokens(messages, tools, params.max_tokens)) as slot:
            response = await self.fetch(messages, tools, tool_choice, params)
            slot.record(response.usage.input_tokens + response.usage.output_tokens)
            return response

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
        *,
        on_attempt: AttemptCallback | None = None,
    ) -> ModelResponse:
        """The model's next turn, with retries (each failed attempt goes to ``on_attempt``); a failure
        that survives them is raised with every attempt. No lone surrogate is left in the reply."""

        async def attempt() -> ModelResponse:
            return await self.complete(messages, tools, tool_choice, params)

        response = await call_with_retries(attempt, self.retry, on_attempt=on_attempt)
        return response.valid_unicode()

    def cost_usd(self, response: ModelResponse) -> float | None:
        """What ``response`` cost: ``0.0`` for a cache hit (nothing was billed), else its usage at the
        model's price (``None`` when the price is not known)."""
        if is_cached(response):
            return 0.0
        return response.usage.cost_usd(price_for(self.model))

    async def aclose(self) -> None:
        """Close the wrapped adapter (the cache belongs to whoever opened it)."""
        await self.inner.aclose()
