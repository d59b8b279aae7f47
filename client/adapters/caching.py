"""``CachingAdapter``: any model adapter behind a :class:`client.cache.ResponseCache`.

The cache key is the exact request: provider, model, base URL, the full conversation, the tools, the
tool choice, ``max_tokens`` and ``temperature`` (plus ``key_extra``, for adapter options that change
answers). A hit returns the stored response without calling the provider, as a
:class:`CachedModelResponse` (``cached`` is true, ``latency_s`` is the lookup time and the trace's
response carries ``"cached": true`` and the key); the agent records a hit with zero cost and zero
billed tokens. A miss calls the wrapped adapter and stores its response. Failures are never stored:
the exception propagates and the next identical request calls the provider again.

    cache = ResponseCache("runs/cache.sqlite")
    adapter = CachingAdapter(make_adapter("openai:gpt-4o-mini"), cache)

With the cache, a rerun of a run costs nothing and returns exactly what the first run got (as long as
the requests are the same, which they are when the responses are: the conversation is built from them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from client.adapters.base import ModelAdapter
from client.cache import ResponseCache, request_key
from client.messages import Message, ModelResponse, ToolChoice, ToolDef

__all__ = ["CACHE_FORMAT", "CachedModelResponse", "CachingAdapter", "cached_response", "is_cached"]

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


class CachingAdapter:
    """A :class:`~client.adapters.base.ModelAdapter` that answers repeated requests from ``cache``.

    Args:
        inner: the adapter that calls the provider on a miss.
        cache: where responses are kept (shared by any number of adapters and tasks).
        key_extra: more JSON-able request settings that change the answer (e.g. adapter options such
            as a reasoning effort); they become part of every key.
    """

    def __init__(self, inner: ModelAdapter, cache: ResponseCache, *, key_extra: Mapping[str, Any] | None = None):
        self.inner = inner
        self.cache = cache
        self.key_extra = dict(key_extra or {})
        self.name = inner.name
        self.provider = inner.provider
        self.model = inner.model

    def __repr__(self) -> str:
        return f"CachingAdapter({self.inner!r}, {self.cache!r})"

    def request(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
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
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if self.key_extra:
            request["extra"] = self.key_extra
        return request

    async def lookup(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> CachedModelResponse | None:
        """The cached response for this exact request, or ``None`` (never calls the provider)."""
        t0 = time.perf_counter()
        request = self.request(messages, tools, tool_choice, max_tokens=max_tokens, temperature=temperature)
        stored = await self.cache.get(request)
        if stored is None:
            return None
        response = ModelResponse.from_dict(stored)
        fields = {name: getattr(response, name) for name in ModelResponse.__dataclass_fields__}
        fields["latency_s"] = time.perf_counter() - t0
        return CachedModelResponse(
            **fields, cache_key=request_key(request), cached_latency_s=response.latency_s
        )

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ModelResponse:
        """The cached response for this request, else the provider's (which is then stored)."""
        hit = await self.lookup(messages, tools, tool_choice, max_tokens=max_tokens, temperature=temperature)
        if hit is not None:
            return hit
        return await self.fetch(messages, tools, tool_choice, max_tokens=max_tokens, temperature=temperature)

    async def fetch(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ModelResponse:
        """Call the provider (no lookup) and store its response; a failure raises and stores nothing."""
        request = self.request(messages, tools, tool_choice, max_tokens=max_tokens, temperature=temperature)
        response = await self.inner.complete(
            messages, tools, tool_choice, max_tokens=max_tokens, temperature=temperature
        )
        try:
            await self.cache.put(request, response.to_dict())
        except Exception as exc:  # the answer is paid for: return it even if it cannot be kept
            log.warning(
                "response cache %s: could not store a response: %s: %s", self.cache.path, type(exc).__name__, exc
            )
        return response

    async def aclose(self) -> None:
        """Close the wrapped adapter (the cache belongs to whoever opened it)."""
        await self.inner.aclose()


async def cached_response(
    adapter: Any,
    messages: list[Message],
    tools: list[ToolDef],
    tool_choice: ToolChoice = "auto",
    *,
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> ModelResponse | None:
    """``adapter``'s cached response for this request when it is a :class:`CachingAdapter`, else ``None``.

    Lets a caller skip rate limiting for requests that will not reach the provider (then, on a miss,
    call :meth:`CachingAdapter.fetch` rather than ``complete``, which would look up again).
    """
    if not isinstance(adapter, CachingAdapter):
        return None
    return await adapter.lookup(messages, tools, tool_choice, max_tokens=max_tokens, temperature=temperature)
