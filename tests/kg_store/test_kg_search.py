"""KGETool path extraction: exact, Greedy Search and Relation Retrieval (paper section 5.1.2)."""

from __future__ import annotations

import itertools
import json

import pytest
from kg_testutil import reference_walks

from kg_store import KGError, KGStore, PathSearchResult, Triple

BOB_MOTHER_DINNER = [
    Triple("Bob", "mother", "Alice"),
    Triple("Alice", "prefer_dinnertime", "dinnertime_0002"),
]


def test_exact_with_made_up_relation_finds_nothing(store_b: KGStore) -> None:
    result = store_b.search("Bob", ["mom", "prefer_dinnertime"], mode="exact")
    assert result.paths == []
    assert result.mode == "exact"
    assert result.missing_relations == ["mom"]
    assert result.start_found is True
    assert result.hallucinated


def test_greedy_takes_all_out_links_for_a_made_up_relation(store_b: KGStore, triples_b: list[Triple]) -> None:
    result = store_b.greedy_search("Bob", ["mom", "prefer_dinnertime"])
    assert result.mode == "greedy"
    assert result.missing_relations == ["mom"]
    assert BOB_MOTHER_DINNER in result.paths
    assert "dinnertime_0002" in result.end_entities()
    # every out-link of Bob whose tail has a prefer_dinnertime link, and only those
    assert result.paths == reference_walks(triples_b, "Bob", [None, {"prefer_dinnertime"}])
    assert all(p[1].relation == "prefer_dinnertime" for p in result.paths)
    assert result == store_b.search("Bob", ["mom", "prefer_dinnertime"], mode="greedy")


def test_greedy_with_made_up_last_relation_extracts_the_neighbourhood(store_b: KGStore, triples_b) -> None:
    """The paper's Figure 5 case: the fake relation is the last hop."""
    result = store_b.greedy_search("Bob", ["mother", "prefer_alcohol_store"])
    alice_out = sorted(t for t in triples_b if t.head == "Alice")
    assert [p[1] for p in result.paths] == alice_out
    assert {p[0] for p in result.paths} == {Triple("Bob", "mother", "Alice")}


def test_greedy_with_only_real_relations_is_exact(store_b: KGStore) -> None:
    result = store_b.greedy_search("Bob", ["mother", "prefer_dinnertime"])
    assert result.mode == "exact"
    assert result.paths == [BOB_MOTHER_DINNER]
    assert result.missing_relations == []


def test_retrieval_substitutes_mother_for_mom(store_b: KGStore) -> None:
    result = store_b.retrieval_search("Bob", ["mom", "prefer_dinnertime"], top_k=1)
    assert result.mode == "retrieval"
    assert result.substitutions == {"mom": ["mother"]}
    assert result.paths == [BOB_MOTHER_DINNER]
    wider = store_b.retrieval_search("Bob", ["mom", "prefer_dinnertime"])  # top_k=3
    assert wider.substitutions["mom"][0] == "mother"
    assert len(wider.substitutions["mom"]) == 3
    assert BOB_MOTHER_DINNER in wider.paths


def test_retrieval_cartesian_product_with_two_missing_relations(store_b: KGStore, triples_b) -> None:
    path = ["mom", "preferred_dinner_time"]
    result = store_b.search("Bob", path, mode="retrieval", top_k=2)
    assert result.missing_relations == path
    assert result.substitutions["mom"][0] == "mother"
    assert result.substitutions["preferred_dinner_time"][0] == "prefer_dinnertime"
    assert all(len(c) == 2 for c in result.substitutions.values())
    # the union over every combination of candidates, each followed exactly
    expected: set[tuple[Triple, ...]] = set()
    for combo in itertools.product(*(result.substitutions[r] for r in path)):
        expected.update(tuple(p) for p in store_b.follow("Bob", list(combo)))
    assert sorted(expected) == sorted(tuple(p) for p in result.paths)
    assert BOB_MOTHER_DINNER in result.paths
    assert result.paths == reference_walks(triples_b, "Bob", [set(result.substitutions[r]) for r in path])


def test_retrieval_keeps_real_relations_fixed(store_b: KGStore) -> None:
    result = store_b.retrieval_search("Bob", ["mother", "dinner_time"], top_k=1)
    assert result.substitutions == {"dinner_time": ["prefer_dinnertime"]}
    assert result.paths == [BOB_MOTHER_DINNER]


def test_retrieval_with_a_custom_scorer(store_b: KGStore) -> None:
    class Picky:
        def score(self, query: str, candidates: list[str]) -> list[float]:
            return [1.0 if c == "father" else 0.0 for c in candidates]

    result = store_b.retrieval_search("Bob", ["parent", "prefer_dinnertime"], top_k=1, scorer=Picky())
    assert result.substitutions == {"parent": ["father"]}
    assert result.end_entities() == ["dinnertime_0001"]

    class Broken:
        def score(self, query: str, candidates: list[str]) -> list[float]:
            return [1.0]

    with pytest.raises(KGError, match="returned 1 scores for"):
        store_b.retrieval_search("Bob", ["parent"], scorer=Broken())
    with pytest.raises(KGError, match="top_k must be at least 1"):
        store_b.retrieval_search("Bob", ["parent"], top_k=0)


def test_unknown_start_is_an_empty_result_not_an_error(store_b: KGStore) -> None:
    for mode in ("exact", "greedy", "retrieval"):
        result = store_b.search("Bobby", ["mom", "prefer_dinnertime"], mode=mode)
        assert result.start_found is False
        assert result.paths == []
        assert result.missing_relations == ["mom"]


def test_bad_mode_is_a_clear_error(store_b: KGStore) -> None:
    with pytest.raises(KGError, match="unknown search mode 'fuzzy'; choose one of: exact, greedy, retrieval"):
        store_b.search("Bob", ["mother"], mode="fuzzy")


def test_result_triples_and_to_dict(store_b: KGStore) -> None:
    result = store_b.greedy_search("Bob", ["mother", "bogus", "bogus2"], max_paths=None)
    triples = result.triples()
    assert len(triples) == len(set(triples))
    assert triples[0] == Triple("Bob", "mother", "Alice")  # shared first hop, kept once, first
    assert set(triples) == {t for p in result.paths for t in p}
    data = json.loads(json.dumps(result.to_dict()))
    assert data["mode"] == "greedy"
    assert data["missing_relations"] == ["bogus", "bogus2"]
    assert data["paths"][0][0] == ["Bob", "mother", "Alice"]
    assert len(data["triples"]) == len(triples)
    assert isinstance(result, PathSearchResult)
