"""A response cache for model calls: sqlite3 on disk, keyed by the exact request.

The key is the sha256 of the canonical JSON (sorted keys, no spaces) of the request — whatever the
caller puts in it, normally ``{"model": ..., "messages": [...], "tools": [...], "options": {...}}``.
Objects with ``to_dict()`` (messages, tool definitions) are converted first, so the same request
built from dataclasses or from dicts hits the same entry, whatever the dict key order. Keys are
exact: ``1`` and ``1.0`` differ, as do messages that differ by one character.

Only successful responses should be stored (a cached failure would make reruns fail forever). With
a cache, a rerun of a run costs nothing and returns exactly what the first run got.

Concurrency: one sqlite connection per cache object, used from a worker thread under a lock, so any
number of asyncio tasks can share one cache; other processes may use the same file (WAL mode, busy
timeout).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from client.runs import canonical_json, to_jsonable

__all__ = ["ResponseCache", "request_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at TEXT NOT NULL
)
"""


def request_key(request: Any) -> str:
    """sha256 (hex) of the canonical JSON of ``request``."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


class ResponseCache:
    """Key-value store ``request -> response dict`` in a sqlite file.

    Args:
        path: the database file (created with its parent directories).
        timeout_s: how long to wait for another process's write lock.

    ``get``/``put`` are coroutines (sqlite runs in a worker thread); ``get_sync``/``put_sync`` do the
    same work in the calling thread. ``hits``/``misses`` count lookups through this object.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self.path, timeout=timeout_s, check_same_thread=False, isolation_level=None
        )
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)

    key = staticmethod(request_key)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"response cache {str(self.path)!r} is closed")
        return self._conn

    # ---- synchronous -------------------------------------------------------------------------

    def get_sync(self, request: Any) -> dict[str, Any] | None:
        """The cached response for exactly this request, or ``None``."""
        key = request_key(request)
        with self._lock:
            row = (
                self._connection().execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
            )
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        response: dict[str, Any] = json.loads(row[0])  # put_sync stores JSON objects only
        return response

    def put_sync(self, request: Any, response: Any) -> None:
        """Store ``response`` (a dict or an object with ``to_dict()``) for ``request`` (replacing any)."""
        request_json = canonical_json(request)
        key = hashlib.sha256(request_json.encode("utf-8")).hexdigest()
        body = to_jsonable(response)
        if not isinstance(body, dict):
            raise TypeError(f"a cached response must be a JSON object, got {type(body).__name__}")
        model = request.get("model") if isinstance(request, dict) else None
        row = (
            key,
            None if model is None else str(model),
            request_json,
            json.dumps(body, ensure_ascii=False),
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
        with self._lock:
            self._connection().execute(
                "INSERT OR REPLACE INTO responses (key, model, request, response, created_at) VALUES (?, ?, ?, ?, ?)",
                row,
            )

    # ---- asynchronous ------------------------------------------------------------------------

    async def get(self, request: Any) -> dict[str, Any] | None:
        """The cached response for exactly this request, or ``None`` (sqlite in a worker thread)."""
        return await asyncio.to_thread(self.get_sync, request)

    async def put(self, request: Any, response: Any) -> None:
        """Store ``response`` for ``request`` (sqlite in a worker thread)."""
        await asyncio.to_thread(self.put_sync, request, response)

    # ---- housekeeping ------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            return int(self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def __contains__(self, request: Any) -> bool:
        key = request_key(request)
        with self._lock:
            return (
                self._connection().execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone()
                is not None
            )

    def close(self) -> None:
        """Close the database (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r}, hits={self.hits}, misses={self.misses})"
