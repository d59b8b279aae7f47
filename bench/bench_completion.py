"""Latency of argument completion (``completion/complete``) over a million entity names.

Two tables:

1. ``NameIndex.complete`` alone (what the server runs per request) on ``--names`` synthetic entity
   names shaped like the family KG's (``Bob_00042``, ``dinnertime_012345``), for prefixes that match
   many names, a few, one, none (the case-insensitive fallback), plus the time to build the index;
2. the whole request through the MCP SDK's real client and server (in-process, the low-level server
   of :class:`server.ToolServer`), on a KG built with ``--kg-entities`` entities (default: as many as
   ``--names``; building a million-entity Kuzu KG takes a minute or more).

    python bench/bench_completion.py                     # 1,000,000 names, both tables
    python bench/bench_completion.py --kg-entities 0     # the index alone

Not a test: nothing is asserted, and timings depend on the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from mcp import types  # noqa: E402

from client.mcp_session import connect  # noqa: E402
from kg_store import KGStore  # noqa: E402
from server import BenchmarkMount, EndpointRef, KGConfig, NameIndex, ToolServer  # noqa: E402
from tool_specs import StaticCatalog  # noqa: E402

KINDS = ["Bob", "Alice", "dinnertime", "restaurant", "city", "song", "hotel", "doctor", "movie", "airline"]
PREFIXES = [
    ("a kind", "Bob_"),
    ("kind + 2 digits", "dinnertime_01"),
    ("kind + 5 digits", "song_00012"),
    ("a whole name", None),  # filled with an existing name
    ("a miss as typed, found in other case", "BOB_0000"),
    ("no match", "zzz"),
]


def synthetic_names(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    names = {f"{rng.choice(KINDS)}_{i:06d}" for i in range(n)}
    return sorted(names)


def percentiles(samples: list[float]) -> tuple[float, float]:
    s = sorted(samples)
    return statistics.median(s), s[min(len(s) - 1, int(0.99 * len(s)))]


def time_calls(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def bench_index(names: list[str], repeats: int) -> None:
    t0 = time.perf_counter()
    index = NameIndex(names, presorted=True)
    build = time.perf_counter() - t0
    print(f"\n{len(names):,} names: index from sorted names {build * 1e3:.1f} ms")
    print(f"{'prefix':<38} {'matches':>9} {'p50 us':>9} {'p99 us':>9}")
    for label, prefix in PREFIXES:
        p = prefix if prefix is not None else names[len(names) // 2]
        total = index.complete(p).total

        def complete(p: str = p) -> object:  # a lambda's cost, typed
            return index.complete(p)

        p50, p99 = percentiles(time_calls(complete, repeats))
        print(f"{label + ' ' + repr(p):<38.38} {total:>9,} {p50:>9.1f} {p99:>9.1f}")


async def bench_mcp(names: list[str], repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        # every name is the head of one fact (relation kind_of) whose tail is its kind: n + 10 entities
        triples = [(name, "kind_of", name.split("_")[0]) for name in names]
        store = KGStore.from_triples(Path(tmp) / "kg", triples)
        built = time.perf_counter() - t0
        try:
            ts = ToolServer([BenchmarkMount(StaticCatalog("bench", {}), kg=KGConfig(store=store))])
            t0 = time.perf_counter()
            store.relations()  # the store's first query loads its in-memory adjacency (kg_store; any KG tool pays it)
            loaded = time.perf_counter() - t0
            t0 = time.perf_counter()
            ts.surface.resources["bench"].entities.complete("")  # the name index of the served KG
            indexed = time.perf_counter() - t0
            print(f"\nMCP completion/complete, in-process SDK client and server, KG of {len(names):,} entities "
                  f"(built in {built:.0f} s; the store's first query {loaded:.1f} s; name index read in "
                  f"{indexed:.2f} s)")
            ref = types.ResourceTemplateReference(type="ref/resource", uri="kg://bench/entity/{name}")
            print(f"{'prefix':<38} {'matches':>9} {'p50 ms':>9} {'p99 ms':>9}")
            async with connect(ts.mcp_server(EndpointRef("bench"))) as client:
                for label, prefix in PREFIXES:
                    p = prefix if prefix is not None else names[len(names) // 2]
                    samples = []
                    total = 0
                    for _ in range(repeats):
                        t0 = time.perf_counter()
                        done = await client.complete(ref, {"name": "name", "value": p})
                        samples.append((time.perf_counter() - t0) * 1e3)
                        total = done.completion.total or 0
                    p50, p99 = percentiles(samples)
                    print(f"{label + ' ' + repr(p):<38.38} {total:>9,} {p50:>9.2f} {p99:>9.2f}")
        finally:
            store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--names", type=int, default=1_000_000, help="synthetic entity names (default 1,000,000)")
    ap.add_argument("--kg-entities", type=int, default=None,
                    help="entities of the KG for the MCP table (default: --names; 0 skips the table)")
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.processor() or 'cpu n/a'}")
    names = synthetic_names(args.names)
    bench_index(names, args.repeats)
    kg_n = args.names if args.kg_entities is None else args.kg_entities
    if kg_n:
        asyncio.run(bench_mcp(names[:kg_n] if kg_n <= len(names) else synthetic_names(kg_n), args.repeats))


if __name__ == "__main__":
    main()
