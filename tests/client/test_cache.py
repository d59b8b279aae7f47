"""The sqlite response cache, on a real database file in tmp_path."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from client.cache import ResponseCache, request_key
from client.messages import ModelResponse, ToolDef, Usage, UserMessage


def request(**options: object) -> dict[str, object]:
    return {
        "model": "openai:gpt-4o-mini",
        "messages": [{"role": "user", "text": "hi"}],
        "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object", "properties": {}}}],
        "options": {"temperature": 0, **options},
    }


async def test_miss_then_hit_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "responses.sqlite"
    with ResponseCache(path) as cache:
        assert await cache.get(request()) is None
        await cache.put(request(), {"text": "hello", "usage": {"input_tokens": 3}})
        assert await cache.get(request()) == {"text": "hello", "usage": {"input_tokens": 3}}
        assert await cache.get(request(max_tokens=10)) is None  # any difference is another request
        assert (cache.hits, cache.misses, len(cache)) == (1, 2, 1)
        assert request() in cache and request(max_tokens=10) not in cache
    with ResponseCache(path) as reopened:  # on disk, across objects
        assert reopened.get_sync(request()) == {"text": "hello", "usage": {"input_tokens": 3}}
    with pytest.raises(RuntimeError, match="closed"):
        reopened.get_sync(request())


def test_key_is_stable_across_dict_key_order_and_objects(tmp_path: Path) -> None:
    a = request()
    b = {"options": {"temperature": 0}, "tools": a["tools"], "messages": a["messages"], "model": a["model"]}
    b["tools"] = [{"input_schema": {"properties": {}, "type": "object"}, "description": "d", "name": "t"}]
    assert request_key(a) == request_key(b) == ResponseCache.key(a)
    assert len(request_key(a)) == 64
    # The same request built from the message/tool dataclasses hits the same entry.
    c = {
        "model": "openai:gpt-4o-mini",
        "messages": [UserMessage("hi")],
        "tools": [ToolDef("t", "d", {"type": "object", "properties": {}})],
        "options": {"temperature": 0},
    }
    assert request_key(c) == request_key(a)
    assert request_key(request(temperature=0.0)) != request_key(a)  # exact: 0 and 0.0 differ
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        response = ModelResponse("ok", [], None, Usage(1, 2), "end_turn", 0.1, "gpt-4o-mini", {})
        cache.put_sync(c, response)
        cached = cache.get_sync(b)
        assert cached is not None and ModelResponse.from_dict(cached) == response
        with pytest.raises(TypeError, match="JSON object"):
            cache.put_sync(a, ["not", "a", "dict"])


async def test_concurrent_asyncio_use(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:

        async def one(i: int) -> None:
            await cache.put(request(seed=i), {"i": i})
            assert await cache.get(request(seed=i)) == {"i": i}

        await asyncio.gather(*(one(i) for i in range(50)))
        assert len(cache) == 50 and cache.hits == 50
