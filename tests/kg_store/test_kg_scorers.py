"""Relation scorers: the offline lexical default and the embedding scorer."""

from __future__ import annotations

import math
import sys
from collections import Counter

import pytest

from kg_store import EmbeddingScorer, KGError, KGStore, LexicalScorer, RelationScorer, Triple, top_k_relations


@pytest.fixture(scope="module")
def relations_e(triples_e: list[Triple]) -> list[str]:
    return sorted({t.relation for t in triples_e})


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("mom", "mother"),
        ("dad", "father"),
        ("preferred_dinner_time", "prefer_dinnertime"),
        ("dinner_time", "prefer_dinnertime"),
        ("favorite_restaurant", "favourite_restaurant"),
        ("hair_stylist", "prefer_hairstylist"),
        ("PreferredCuisine", "prefer_cuisine"),
        ("birth_date", "birthday"),
        ("phone", "phone_number"),
        ("residence_city", "city_of_residence"),
        ("child", "son"),
    ],
)
def test_lexical_scorer_ranks_the_right_relation_first(
    relations_e: list[str], query: str, expected: str
) -> None:
    assert top_k_relations(LexicalScorer(), query, relations_e, 1) == [expected]


def test_lexical_scorer_scores_are_bounded_and_exact_match_wins(relations_e: list[str]) -> None:
    scores = LexicalScorer().score("prefer_dinnertime", relations_e)
    assert len(scores) == len(relations_e)
    assert all(0.0 <= s <= 1.0 + 1e-9 for s in scores)
    assert relations_e[scores.index(max(scores))] == "prefer_dinnertime"
    assert LexicalScorer().score("x", []) == []


def test_lexical_scorer_aliases_can_be_turned_off(relations_e: list[str]) -> None:
    no_alias = LexicalScorer(aliases={})
    assert top_k_relations(no_alias, "dad", relations_e, 1) != ["father"]
    custom = LexicalScorer(aliases={"boss": ["teacher"]})
    assert top_k_relations(custom, "boss", relations_e, 1) == ["teacher"]


def trigram_embed(texts: list[str]) -> list[list[float]]:
    """A small deterministic embedding: hashed character-trigram counts in 64 buckets."""
    vectors = []
    for text in texts:
        padded = f"  {text.lower()} "
        counts = Counter(padded[i : i + 3] for i in range(len(padded) - 2))
        vec = [0.0] * 64
        for gram, c in counts.items():
            vec[sum(ord(ch) * 31**i for i, ch in enumerate(gram)) % 64] += c
        vectors.append(vec)
    return vectors


def test_embedding_scorer_with_a_callable(relations_e: list[str]) -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return trigram_embed(texts)

    scorer = EmbeddingScorer(embed)
    assert isinstance(scorer, RelationScorer)
    scores = scorer.score("prefer dinner time", relations_e)
    assert len(scores) == len(relations_e)
    assert top_k_relations(scorer, "prefer_dinner_time", relations_e, 1) == ["prefer_dinnertime"]
    # relations are embedded once (cached), underscores humanised
    assert sum(len(c) for c in calls) == len(relations_e) + 2
    assert "prefer dinnertime" in calls[0]
    # cosine of identical vectors is 1
    assert math.isclose(scorer.score("mother", ["mother"])[0], 1.0)


def test_embedding_scorer_in_retrieval_search(tmp_path, kg_b_file) -> None:
    with KGStore.build(tmp_path / "kg", kg_b_file) as store:
        result = store.retrieval_search(
            "Bob", ["mother", "preferred_dinnertime"], top_k=1, scorer=EmbeddingScorer(trigram_embed)
        )
    assert result.substitutions == {"preferred_dinnertime": ["prefer_dinnertime"]}
    assert result.end_entities() == ["dinnertime_0002"]


def test_embedding_scorer_errors() -> None:
    with pytest.raises(KGError, match="returned 1 vectors for 2 texts"):
        EmbeddingScorer(lambda texts: [[1.0]]).score("a", ["b"])
    with pytest.raises(KGError, match="embedding sizes differ"):
        EmbeddingScorer(lambda texts: [[1.0] * len(t) for t in texts]).score("a", ["bb"])
    assert EmbeddingScorer(lambda texts: [[0.0, 0.0] for _ in texts]).score("a", ["b"]) == [0.0]
    with pytest.raises(KGError, match="needs a model name or a callable"):
        EmbeddingScorer(42)  # type: ignore[arg-type]


def test_embedding_scorer_model_name_without_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if not installed (an import fails)
    scorer = EmbeddingScorer("jinaai/jina-embeddings-v3")  # loading is lazy: no error yet
    with pytest.raises(KGError, match="needs sentence-transformers"):
        scorer.score("mom", ["mother"])
