"""A user's own KG file served as the KG tools (``evals serve --kg-file FILE``).

The file is built once into a database under the project's cache (one per file path and engine;
rebuilt when its content changes, not even parsed again while its bytes are the same) and opened
read-only, so any number of servers can share it.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

from kg_store import KGError, KGStore
from kg_store.engine import engine_name

from .data import cache_dir

__all__ = ["open_user_kg", "user_kg_db_dir"]


def user_kg_db_dir(triples: Path) -> Path:
    """Where the database of the triple file ``triples`` is cached."""
    key = hashlib.sha256(str(triples.resolve()).encode("utf-8")).hexdigest()[:16]
    return cache_dir() / "kg" / f"file-{triples.stem[:40]}-{key}-{engine_name()}"


def open_user_kg(triples: Path, stack: contextlib.ExitStack | contextlib.AsyncExitStack) -> KGStore:
    """Open (building it on first use) the KG of ``triples``, read-only; closed with ``stack``.

    Raises:
        KGError: the file is missing, unreadable or has a bad line (the message names file:line).
    """
    if not triples.is_file():
        raise KGError(f"--kg-file {triples}: no such file")
    db = user_kg_db_dir(triples)
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KGError(f"cannot create the KG cache directory {db.parent}: {exc}") from exc
    KGStore.ensure_built(db, triples)
    store = KGStore.open(db, read_only=True, lock_timeout=30.0)
    stack.callback(store.close)
    return store
