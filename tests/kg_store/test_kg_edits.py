"""Adding and removing facts (the inductive setting), persisted across close and reopen."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_store import KGError, KGStore, Triple


def test_add_fact_with_new_entity_and_relation_persists(tmp_path: Path, kg_b_file: Path, cache: bool) -> None:
    db = tmp_path / "db"
    with KGStore.build(db, kg_b_file, cache=cache) as store:
        before = store.stats()
        assert store.add_fact("Bob", "prefer_boardgame", "boardgame_0000") is True
        assert store.add_fact("Bob", "prefer_boardgame", "boardgame_0000") is False
        assert store.add_fact("Alice", "sister", "Eve") is True
        assert store.has_relation("prefer_boardgame") and store.has_entity("Eve")
        assert store.follow("Bob", ["mother", "sister"]) == [
            [Triple("Bob", "mother", "Alice"), Triple("Alice", "sister", "Eve")]
        ]
    with KGStore.open(db, cache=cache) as store:
        assert store.follow("Bob", ["prefer_boardgame"]) == [
            [Triple("Bob", "prefer_boardgame", "boardgame_0000")]
        ]
        assert "sister" in store.relations()
        assert store.neighbors("Eve") == {"out": [], "in": [Triple("Alice", "sister", "Eve")]}
        after = store.stats()
        assert after.triples == before.triples + 2
        assert after.entities == before.entities + 2
        assert after.relation_types == before.relation_types + 2
        # a new relation is "real" now: no longer missing for greedy search
        assert store.greedy_search("Bob", ["mother", "sister"]).mode == "exact"


def test_remove_fact_persists_and_drops_orphans(tmp_path: Path, kg_b_file: Path, cache: bool) -> None:
    db = tmp_path / "db"
    with KGStore.build(db, kg_b_file, cache=cache) as store:
        before = store.stats()
        assert store.remove_fact("Alice", "prefer_dinnertime", "dinnertime_0002") is True
        assert store.remove_fact("Alice", "prefer_dinnertime", "dinnertime_0002") is False
        assert store.remove_fact("Nobody", "mother", "Alice") is False
        assert not store.has_entity("dinnertime_0002")  # it had no other fact
        assert store.has_entity("Alice")
        assert store.follow("Bob", ["mother", "prefer_dinnertime"]) == []
    with KGStore.open(db, cache=cache) as store:
        assert not store.has_entity("dinnertime_0002")
        assert store.follow("Bob", ["mother", "prefer_dinnertime"]) == []
        after = store.stats()
        assert after.triples == before.triples - 1
        assert after.entities == before.entities - 1
        with pytest.raises(KGError, match="unknown entity 'dinnertime_0002'"):
            store.neighbors("dinnertime_0002")


def test_add_then_remove_in_one_session(tmp_path: Path, kg_b_file: Path, cache: bool) -> None:
    with KGStore.build(tmp_path / "db", kg_b_file, cache=cache) as store:
        entities, relations = store.entities(), store.relations()
        assert store.add_fact("Zed", "self", "Zed")
        assert store.add_fact("Zed", "friend", "Bob")
        assert store.remove_fact("Zed", "self", "Zed")
        assert store.has_entity("Zed") and not store.has_relation("self")
        assert store.remove_fact("Zed", "friend", "Bob")
        assert store.entities() == entities
        assert store.relations() == relations
        assert store.stats().entities == len(entities)


def test_add_fact_validates(store_b: KGStore) -> None:
    with pytest.raises(KGError, match="relation must not be empty"):
        store_b.add_fact("Bob", "  ", "x")
    with pytest.raises(KGError, match="tail must be a string, got int"):
        store_b.add_fact("Bob", "r", 3)  # type: ignore[arg-type]
