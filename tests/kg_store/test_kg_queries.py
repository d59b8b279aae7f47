"""Queries on the real FamilyTool KGs: relations, entities, neighbours, exact relation paths."""

from __future__ import annotations

import random

import pytest
from kg_testutil import reference_walks

from kg_store import KGError, KGStore, Triple


def test_bob_mothers_dinnertime_by_exact_path(store_b: KGStore) -> None:
    paths = store_b.follow("Bob", ["mother", "prefer_dinnertime"])
    assert paths == [
        [Triple("Bob", "mother", "Alice"), Triple("Alice", "prefer_dinnertime", "dinnertime_0002")],
    ]
    result = store_b.search("Bob", ["mother", "prefer_dinnertime"])
    assert result.mode == "exact"
    assert result.end_entities() == ["dinnertime_0002"]
    assert result.missing_relations == []


def test_relations_entities_triples_match_the_file(store_b: KGStore, triples_b: list[Triple]) -> None:
    assert store_b.relations() == sorted({t.relation for t in triples_b})
    assert store_b.entities() == sorted({t.head for t in triples_b} | {t.tail for t in triples_b})
    assert store_b.triples() == sorted(set(triples_b))
    assert store_b.has_entity("Bob") and not store_b.has_entity("Bobby")
    assert store_b.has_relation("mother") and not store_b.has_relation("mom")


def test_neighbors_in_and_out(store_b: KGStore, triples_b: list[Triple]) -> None:
    n = store_b.neighbors("Alice")
    assert n["out"] == sorted(t for t in triples_b if t.head == "Alice")
    assert n["in"] == sorted(t for t in triples_b if t.tail == "Alice")
    assert Triple("Bob", "mother", "Alice") in n["in"]
    assert Triple("Alice", "prefer_dinnertime", "dinnertime_0002") in n["out"]
    leaf = store_b.neighbors("dinnertime_0002")
    assert leaf == {"out": [], "in": [Triple("Alice", "prefer_dinnertime", "dinnertime_0002")]}


def test_unknown_entity_error_names_it_and_suggests(store_b: KGStore) -> None:
    with pytest.raises(KGError, match=r"unknown entity 'Alise'.*did you mean 'Alice'"):
        store_b.neighbors("Alise")
    with pytest.raises(KGError, match=r"unknown entity 'Nobody-at-all'") as info:
        store_b.follow("Nobody-at-all", ["mother"])
    assert "did you mean" not in str(info.value)


def test_follow_edge_cases(store_b: KGStore) -> None:
    assert store_b.follow("Bob", ["mom", "prefer_dinnertime"]) == []
    assert store_b.follow("dinnertime_0002", ["mother"]) == []
    # walks may come back to an entity already visited
    assert [p[-1].tail for p in store_b.follow("Bob", ["mother", "son"])] == ["Bob"]
    with pytest.raises(KGError, match="at least one relation"):
        store_b.follow("Bob", [])
    with pytest.raises(KGError, match="path must be a list of relation names, got str"):
        store_b.follow("Bob", "mother")  # type: ignore[arg-type]
    with pytest.raises(KGError, match="relation #2 of the path must be a string"):
        store_b.follow("Bob", ["mother", 3])  # type: ignore[list-item]


def test_random_paths_match_brute_force(store_e: KGStore, triples_e: list[Triple]) -> None:
    """Many different parameterised 1-4 hop queries in a row, compared with brute force.

    Without ``enable_cached_prepared_statement='NONE'`` LadybugDB 0.22 fails this on a reopened store
    (when paths are sent as one multi-hop query).
    """
    rng = random.Random(7)
    out: dict[str, list[Triple]] = {}
    for t in triples_e:
        out.setdefault(t.head, []).append(t)
    heads = sorted(out)
    people = sorted(h for h in heads if any(t.tail in out for t in out[h]))
    multi_hop = 0
    for _ in range(80):
        start, length = rng.choice(people if rng.random() < 0.8 else heads), rng.randint(1, 4)
        walk, node = [], start
        for hop in range(length):
            # keep walking through entities that have out-links, so most walks are multi-hop
            edges = [t for t in out.get(node, []) if hop == length - 1 or t.tail in out] or out.get(node, [])
            if not edges:
                break
            t = rng.choice(edges)
            walk.append(t.relation)
            node = t.tail
        if rng.random() < 0.2:  # a relation path that usually leads nowhere from this start
            walk = rng.sample(sorted({t.relation for t in triples_e}), k=len(walk))
        expected = reference_walks(triples_e, start, [{r} for r in walk])
        assert store_e.follow(start, walk) == expected, (start, walk)
        multi_hop += len(walk) > 1 and bool(expected)
    assert multi_hop > 30


def test_random_hop_filters_match_brute_force(store_e: KGStore, triples_e: list[Triple]) -> None:
    """Walks whose hops allow any relation, one relation or several (as greedy and retrieval search use).

    Kuzu 0.11.3 loses rows when one multi-hop query filters one hop with ``=`` and another with
    ``IN``; this caught it when the store still sent one query per path.
    """
    rng = random.Random(11)
    out: dict[str, list[Triple]] = {}
    for t in triples_e:
        out.setdefault(t.head, []).append(t)
    relations = sorted({t.relation for t in triples_e})
    people = sorted(h for h in out if any(t.tail in out for t in out[h]))
    for _ in range(150):
        start = node = rng.choice(people)
        hops: list[tuple[str, ...] | None] = []
        for _hop in range(rng.randint(1, 3)):
            edge = rng.choice(out.get(node) or triples_e)
            node = edge.tail
            x = rng.random()
            if x < 0.15 and not hops.count(None):
                hops.append(None)
            elif x < 0.5:
                hops.append((edge.relation,))
            else:
                hops.append(tuple(sorted({edge.relation, *rng.sample(relations, rng.randint(1, 3))})))
        expected = reference_walks(triples_e, start, [None if h is None else set(h) for h in hops])
        assert store_e._walk(start, hops, None) == (expected, False), (start, hops)


def test_max_paths_truncates_in_sorted_order(store_e: KGStore, triples_e: list[Triple]) -> None:
    full = store_e.greedy_search("Bob", ["mother", "no_such_relation"], max_paths=None)
    assert full.truncated is False and len(full.paths) > 5
    assert full.paths == reference_walks(triples_e, "Bob", [{"mother"}, None])
    cut = store_e.greedy_search("Bob", ["mother", "no_such_relation"], max_paths=5)
    assert cut.truncated is True
    assert cut.paths == full.paths[:5]
    with pytest.raises(KGError, match="max_paths must be at least 1"):
        store_e.greedy_search("Bob", ["mother", "x"], max_paths=0)


def test_stats_equal_counts_from_the_file(
    tmp_path, kg_b_file, kg_e_file, triples_b: list[Triple], triples_e: list[Triple]
) -> None:
    for name, path, triples, expected_count in (
        ("b", kg_b_file, triples_b, 154),
        ("e", kg_e_file, triples_e, 491),
    ):
        distinct = set(triples)
        entities = {t.head for t in distinct} | {t.tail for t in distinct}
        out_deg = {e: 0 for e in entities}
        for t in distinct:
            out_deg[t.head] += 1
        histogram: dict[int, int] = {}
        for d in out_deg.values():
            histogram[d] = histogram.get(d, 0) + 1
        with KGStore.build(tmp_path / name, path) as store:
            stats = store.stats()
        assert stats.triples == len(distinct) == expected_count
        assert stats.entities == len(entities)
        assert stats.relation_types == len({t.relation for t in distinct})
        assert stats.out_degree == histogram
        assert sum(stats.out_degree.values()) == stats.entities
        assert stats.to_dict()["triples"] == expected_count
