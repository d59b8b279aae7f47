"""The family KG of a FamilyTool dataset in Kuzu (or LadybugDB): built once, cached, or a private copy."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from kg_store import KGStore
from kg_store.engine import engine_name

from ...core.data import cache_dir
from .data import kg_file


def kg_db_dir(dataset: str) -> Path:
    """Where the persistent database of a FamilyTool KG is cached (one per engine)."""
    return cache_dir() / "kg" / f"{dataset.replace('familytool', 'familykg')}-{engine_name()}"


def open_family_kg(
    dataset: str, *, writable: bool, stack: contextlib.ExitStack | contextlib.AsyncExitStack, source: str | None = None
) -> KGStore:
    """Open the dataset's KG, building it on first use.

    Read-only servers share one cached database (several read-only processes may open it);
    a server that allows writes gets a private copy in a temporary directory, so the cached
    base KG never changes under anybody. ``source`` loads another dataset's KG instead (the
    inductive setting serves FamilyTool-e over FamilyTool-b's KG, extended at run time).
    """
    dataset = source or dataset
    triples = kg_file(dataset)
    if writable:
        tmp = Path(tempfile.mkdtemp(prefix=f"{dataset}-kg-"))
        stack.callback(shutil.rmtree, tmp, ignore_errors=True)
        store = KGStore.build(tmp / "db", triples)
    else:
        db = kg_db_dir(dataset)
        db.parent.mkdir(parents=True, exist_ok=True)
        KGStore.ensure_built(db, triples)
        store = KGStore.open(db, read_only=True)
    stack.callback(store.close)
    return store
