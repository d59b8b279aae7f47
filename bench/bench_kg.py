"""Latency of relation-path queries in kg_store, on the FamilyTool-e KG and on a synthetic graph.

Prints a table of p50/p99 latencies of ``KGStore.follow`` for 2- and 3-hop paths that exist, both
answered by the engine (``cache=False``: one Cypher query per call) and from the store's in-memory
adjacency (``cache=True``, the default), plus Greedy Search and Relation Retrieval on FamilyTool, and
the build times. The synthetic graph (default 1,000,000 edges over 100,000 entities and 20 relation
types, fixed seed) is bulk-loaded through ``COPY FROM`` a temporary CSV.

    python bench/bench_kg.py                      # FamilyTool-e and 1M synthetic edges
    python bench/bench_kg.py --skip-synthetic     # FamilyTool-e only (a few seconds)
    EVALS_KG_ENGINE=ladybug python bench/bench_kg.py

Not a test: nothing is asserted. The engine is chosen by ``$EVALS_KG_ENGINE`` (or ``--engine``).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from kg_store import KGStore, Triple, engine_name, parse_triple_file  # noqa: E402

Query = tuple[str, list[str]]


def default_data_dir() -> Path:
    """``$EVALS_DATA_DIR``, else ``../shared/data`` next to the repository."""
    env = os.environ.get("EVALS_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def sample_paths(triples: Sequence[Triple], hops: int, count: int, rng: random.Random) -> list[Query]:
    """``count`` random (start, relation path) pairs of ``hops`` hops that exist in the graph."""
    out: dict[str, list[Triple]] = {}
    for t in triples:
        out.setdefault(t.head, []).append(t)
    # entities from which a walk of the remaining length exists
    reach = [set(out)]
    for _ in range(hops - 1):
        reach.append({h for h, edges in out.items() if any(e.tail in reach[-1] for e in edges)})
    starts = sorted(reach[-1])
    if not starts:
        return []
    queries: list[Query] = []
    while len(queries) < count:
        start = node = rng.choice(starts)
        path: list[str] = []
        for remaining in range(hops - 1, -1, -1):
            edges = [e for e in out[node] if remaining == 0 or e.tail in reach[remaining - 1]]
            edge = rng.choice(edges)
            path.append(edge.relation)
            node = edge.tail
        queries.append((start, path))
    return queries


def time_calls(
    fn: Callable[[str, list[str]], object], queries: Sequence[Query], iterations: int
) -> list[float]:
    """Latency in milliseconds of ``iterations`` calls, cycling through ``queries`` (after a warm-up)."""
    for start, path in queries[: min(20, len(queries))]:
        fn(start, path)
    latencies = []
    for i in range(iterations):
        start, path = queries[i % len(queries)]
        t0 = time.perf_counter()
        fn(start, path)
        latencies.append((time.perf_counter() - t0) * 1000.0)
    return latencies


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of ``values``."""
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]
    )


def synthetic_triples(edges: int, entities: int, relations: int, seed: int) -> list[Triple]:
    """A random multigraph-free graph: ``edges`` distinct triples over the given entities and relations."""
    rng = random.Random(seed)
    names = [f"e{i:07d}" for i in range(entities)]
    rels = [f"rel_{i:02d}" for i in range(relations)]
    seen: set[Triple] = set()
    while len(seen) < edges:
        seen.add(Triple(rng.choice(names), rng.choice(rels), rng.choice(names)))
    return sorted(seen)


class Report:
    """Collects rows and prints them with rich if available, else as plain text."""

    def __init__(self, title: str, columns: list[str]) -> None:
        self.title, self.columns = title, columns
        self.rows: list[list[str]] = []

    def add(self, *cells: object) -> None:
        self.rows.append(
            [c if isinstance(c, str) else f"{c:,.3f}" if isinstance(c, float) else f"{c:,}" for c in cells]
        )

    def print(self) -> None:
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            widths = [max(len(c), *(len(r[i]) for r in self.rows)) for i, c in enumerate(self.columns)]
            print(f"\n{self.title}")
            print("  ".join(c.ljust(w) for c, w in zip(self.columns, widths, strict=True)))
            for row in self.rows:
                print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
            return
        table = Table(title=self.title)
        for i, col in enumerate(self.columns):
            table.add_column(col, justify="left" if i < 3 else "right")
        for row in self.rows:
            table.add_row(*row)
        Console(width=max(Console().width, 120)).print(table)


def bench_graph(
    label: str,
    db_dir: Path,
    triples: list[Triple] | None,
    source: Path | None,
    args: argparse.Namespace,
    latency: Report,
    builds: Report,
    *,
    searches: bool,
) -> None:
    """Build a store for one graph, then time follow (engine and cache) and optionally the searches."""
    t0 = time.perf_counter()
    if source is not None:
        store = KGStore.build(db_dir, source, cache=False)
        triples = store.triples()
    else:
        assert triples is not None
        store = KGStore.from_triples(db_dir, triples, cache=False)
    build_s = time.perf_counter() - t0
    stats = store.stats()
    store.close()
    rng = random.Random(args.seed)
    queries = {hops: sample_paths(triples, hops, min(args.iterations, 1000), rng) for hops in (2, 3)}
    cache_s = 0.0
    for cache in (False, True):
        where = "in-memory cache" if cache else "engine query"
        with KGStore.open(db_dir, cache=cache) as store:
            if cache:
                t0 = time.perf_counter()
                store.relations()  # loads the adjacency
                cache_s = time.perf_counter() - t0
            for hops, qs in queries.items():
                if qs:
                    lat = time_calls(store.follow, qs, args.iterations)
                    n_paths = statistics.mean(len(store.follow(s, p)) for s, p in qs[:200])
                    latency.add(label, f"follow {hops}-hop", where, pct(lat, 50), pct(lat, 99), n_paths)
            if searches and queries[2]:
                fake = [(s, ["made_up_relation", p[1]]) for s, p in queries[2]]
                near = [
                    (s, [p[0] + "s", p[1]]) for s, p in queries[2]
                ]  # a near-miss spelling of a real relation
                for name, qs, fn in (
                    ("greedy 2-hop, 1 fake", fake, store.greedy_search),
                    ("retrieval 2-hop, 1 fake", near, store.retrieval_search),
                ):
                    lat = time_calls(fn, qs, min(args.iterations, 500))
                    n_paths = statistics.mean(len(fn(s, p).paths) for s, p in qs[:200])
                    latency.add(label, name, where, pct(lat, 50), pct(lat, 99), n_paths)
    builds.add(label, stats.triples, stats.entities, stats.relation_types, build_s, cache_s)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the benchmarks, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir", type=Path, default=default_data_dir(), help="data dir holding familytool/"
    )
    parser.add_argument("--iterations", type=int, default=2000, help="timed calls per row (default 2000)")
    parser.add_argument("--skip-synthetic", action="store_true", help="only the FamilyTool-e KG")
    parser.add_argument(
        "--edges", type=int, default=1_000_000, help="synthetic graph edges (default 1,000,000)"
    )
    parser.add_argument("--entities", type=int, default=None, help="synthetic entities (default edges/10)")
    parser.add_argument("--relations", type=int, default=20, help="synthetic relation types (default 20)")
    parser.add_argument("--seed", type=int, default=20250526)
    parser.add_argument(
        "--engine", choices=["kuzu", "ladybug"], default=None, help="default $EVALS_KG_ENGINE"
    )
    args = parser.parse_args(argv)
    if args.engine:
        os.environ["EVALS_KG_ENGINE"] = args.engine

    kg_file = args.data_dir / "familytool" / "familykg-e.txt"
    if not kg_file.is_file():
        parser.error(f"{kg_file} not found; pass --data-dir or set EVALS_DATA_DIR")
    parse_triple_file(kg_file)  # fail early on a bad file

    latency = Report(
        f"kg_store path query latency (ms), engine={engine_name()}, {args.iterations} calls per row, "
        f"Python {platform.python_version()} on {platform.machine()} ({os.cpu_count()} CPUs)",
        ["graph", "query", "answered by", "p50 ms", "p99 ms", "mean paths"],
    )
    builds = Report("build", ["graph", "triples", "entities", "relation types", "build s", "cache load s"])
    with tempfile.TemporaryDirectory(prefix="bench_kg_") as tmp:
        bench_graph(
            "FamilyTool-e", Path(tmp, "familytool-e"), None, kg_file, args, latency, builds, searches=True
        )
        if not args.skip_synthetic:
            entities = args.entities or max(10, args.edges // 10)
            t0 = time.perf_counter()
            triples = synthetic_triples(args.edges, entities, args.relations, args.seed)
            gen_s = time.perf_counter() - t0
            label = f"synthetic {args.edges:,}"
            bench_graph(label, Path(tmp, "synthetic"), triples, None, args, latency, builds, searches=False)
            builds.rows[-1][0] += f" (generated in {gen_s:.1f} s)"
    latency.print()
    builds.print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
