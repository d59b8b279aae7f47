"""``CachingAdapter``: any model adapter behind a :class:`client.cache.ResponseCache`.

The response cache is part of the one wrapper of every model call, :class:`client.model.Model` (which
documents the key and what a hit is); ``CachingAdapter(inner, cache, key_extra=...)`` is that wrapper
with a cache and no rate limit, under the name it had before.

    cache = ResponseCache("runs/cache.sqlite")
    adapter = CachingAdapter(make_adapter("openai:gpt-4o-mini"), cache)
"""

from __future__ import annotations

from client.model import CACHE_FORMAT, CachedModelResponse, is_cached
from client.model import Model as CachingAdapter

__all__ = ["CACHE_FORMAT", "CachedModelResponse", "CachingAdapter", "is_cached"]
