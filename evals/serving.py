"""Wire benchmarks, the family KG and user tool specs into a :class:`server.ToolServer`."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from kg_store import KGStore
from server import BenchmarkMount, EndpointRef, KGConfig, ToolServer
from tool_specs import StaticCatalog, load_spec_dir

from .benchmarks import get_benchmark
from .benchmarks.familytool import kg_file
from .data import cache_dir

CUSTOM = "custom"


def kg_db_dir(dataset: str) -> Path:
    """Where the persistent Kuzu database of a FamilyTool KG is cached."""
    engine = os.environ.get("EVALS_KG_ENGINE", "kuzu")
    return cache_dir() / "kg" / f"{dataset.replace('familytool', 'familykg')}-{engine}"


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


def build_tool_server(
    benchmarks: list[str],
    *,
    stack: contextlib.ExitStack | contextlib.AsyncExitStack,
    tools_dirs: list[Path] = (),  # type: ignore[assignment]
    kg_search: str = "greedy",
    top_k: int = 3,
    allow_writes: bool = False,
    default: EndpointRef | None = None,
    page_size: int | None = None,
    kg_sources: dict[str, str] | None = None,
) -> ToolServer:
    """A server with the given benchmarks mounted, plus a ``custom`` endpoint for spec-dir tools.

    ``kg_sources`` maps a benchmark to the dataset whose KG it serves instead of its own.
    """
    mounts: list[BenchmarkMount] = []
    for name in benchmarks:
        info = get_benchmark(name)
        kg = None
        if info.has_kg:
            store = open_family_kg(name, writable=allow_writes, stack=stack, source=(kg_sources or {}).get(name))
            kg = KGConfig(store=store, search_mode=kg_search, top_k=top_k, allow_writes=allow_writes)
        mounts.append(BenchmarkMount(catalog=info.load_catalog(), kg=kg))
    custom = [spec for d in tools_dirs for spec in load_spec_dir(d)]
    if tools_dirs:
        mounts.append(BenchmarkMount(catalog=StaticCatalog(CUSTOM, {}, extra_playground=custom)))
    kw = {} if page_size is None else {"page_size": page_size}
    return ToolServer(mounts, default=default, **kw)

