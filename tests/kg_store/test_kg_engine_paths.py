"""The engine query path (``cache=False``) against brute force on a denser random graph.

Both engines drop rows of some 3-hop Cypher patterns on graphs like this one (LadybugDB 0.22.0 for
most queries, Kuzu 0.11.3 for a few), which is why the store follows paths hop by hop.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from kg_testutil import reference_walks

from kg_store import KGStore, Triple


def random_graph(edges: int, entities: int, relations: int, seed: int) -> list[Triple]:
    rng = random.Random(seed)
    triples: set[Triple] = set()
    while len(triples) < edges:
        triples.add(
            Triple(
                f"e{rng.randrange(entities):04d}",
                f"rel_{rng.randrange(relations)}",
                f"e{rng.randrange(entities):04d}",
            )
        )
    return sorted(triples)


@pytest.fixture(scope="module")
def graph() -> list[Triple]:
    return random_graph(2000, 200, 5, seed=1)


@pytest.mark.parametrize("copy_threshold", [1, 10**9], ids=["copy-from", "inserts"])
def test_engine_walks_match_brute_force(tmp_path: Path, graph: list[Triple], copy_threshold: int) -> None:
    rng = random.Random(3)
    out: dict[str, list[Triple]] = {}
    for t in graph:
        out.setdefault(t.head, []).append(t)
    relations = sorted({t.relation for t in graph})
    with KGStore.from_triples(tmp_path / "db", graph, cache=False, copy_threshold=copy_threshold) as store:
        assert store.stats().triples == len(graph)
        for _ in range(150):
            start = node = rng.choice(sorted(out))
            hops: list[tuple[str, ...] | None] = []
            for depth in range(3):
                edge = rng.choice(out.get(node) or graph)
                node = edge.tail
                if depth == 1 and rng.random() < 0.2:
                    hops.append(None)
                elif rng.random() < 0.3:
                    hops.append(tuple(sorted({edge.relation, rng.choice(relations)})))
                else:
                    hops.append((edge.relation,))
            expected = reference_walks(graph, start, [None if h is None else set(h) for h in hops])
            assert store._walk(start, hops, None) == (expected, False), (start, hops)
            if all(h is not None and len(h) == 1 for h in hops):
                assert store.follow(start, [h[0] for h in hops if h]) == expected
