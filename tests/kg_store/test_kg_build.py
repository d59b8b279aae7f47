"""Building stores: idempotency, rebuilds, bulk loading, opening, engines."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from kg_store import ENGINES, KGError, KGLockedError, KGParseError, KGStore, Triple, engine_name
from kg_store.engine import load_engine


def test_build_is_idempotent_and_picks_up_changes(
    tmp_path: Path, kg_b_file: Path, triples_b: list[Triple]
) -> None:
    source = tmp_path / "kg.txt"
    shutil.copyfile(kg_b_file, source)
    db = tmp_path / "db"
    with KGStore.build(db, source) as store:
        assert store.last_build_action == "created"
        first = store.triples()
        info = store.build_info()
    assert len(first) == 154
    assert info["triples_at_build"] == "154" and info["source"] == str(source.resolve())

    with KGStore.build(db, source) as store:
        assert store.last_build_action == "unchanged"
        assert store.triples() == first
        assert store.build_info()["built_at"] == info["built_at"]

    # reordering lines and duplicating one is the same content
    lines = source.read_text(encoding="utf-8").splitlines()
    source.write_text("\n".join([*reversed(lines), lines[0]]) + "\n", encoding="utf-8")
    with KGStore.build(db, source) as store:
        assert store.last_build_action == "unchanged"

    # a changed file is picked up
    source.write_text(
        source.read_text(encoding="utf-8") + "['Bob', 'prefer_tea', 'tea_0000']\n", encoding="utf-8"
    )
    with KGStore.build(db, source) as store:
        assert store.last_build_action == "rebuilt"
        assert len(store.triples()) == 155
        assert store.follow("Bob", ["prefer_tea"]) == [[Triple("Bob", "prefer_tea", "tea_0000")]]
        assert store.stats().triples == 155


def test_edits_survive_an_unchanged_build_and_not_a_rebuild(tmp_path: Path, kg_b_file: Path) -> None:
    source = tmp_path / "kg.txt"
    shutil.copyfile(kg_b_file, source)
    db = tmp_path / "db"
    with KGStore.build(db, source) as store:
        assert store.add_fact("Bob", "prefer_tea", "tea_0001")
    with KGStore.build(db, source) as store:
        assert store.last_build_action == "unchanged"
        assert store.has_relation("prefer_tea")
        assert store.build_info()["edited"] == "true"
    source.write_text(source.read_text(encoding="utf-8") + "['Zoe', 'mother', 'Alice']\n", encoding="utf-8")
    with KGStore.build(db, source) as store:
        assert store.last_build_action == "rebuilt"
        assert not store.has_relation("prefer_tea")
        assert store.has_entity("Zoe")
        assert "edited" not in store.build_info()


def test_copy_from_bulk_load_equals_inserts(tmp_path: Path) -> None:
    """The COPY FROM path (used for big graphs) round-trips awkward names exactly like the insert path."""
    names = [
        "a,b",
        'q"uote',
        "back\\slash",
        "new\nline",
        "ünïcødé",
        "Mr. Smith",
        "it's",
        " lead",
        "tab\tx",
        '"',
    ]
    triples = [(n, f"rel {i % 3},\"'", names[(i + 1) % len(names)]) for i, n in enumerate(names)]
    triples.append((names[0], "self", names[0]))
    with KGStore.from_triples(tmp_path / "copy", triples, copy_threshold=1) as copied:
        copied_triples = copied.triples()
        copied_stats = copied.stats()
    with KGStore.from_triples(tmp_path / "insert", triples, copy_threshold=10**9) as inserted:
        assert inserted.triples() == copied_triples == sorted(Triple(*t) for t in triples)
        assert inserted.stats() == copied_stats
        assert inserted.follow(names[0], ["self", "self"]) == [[Triple(names[0], "self", names[0])] * 2]


def test_from_triples_dedupes_and_validates(tmp_path: Path) -> None:
    with KGStore.from_triples(tmp_path / "db", [("a", "r", "b"), ("a", "r", "b"), ["b", "s", "c"]]) as store:
        assert store.last_build_action == "created"
        assert store.stats().triples == 2
        assert store.build_info()["source"] == "<triples>"
    with pytest.raises(KGParseError, match="item 1: relation is empty"):
        KGStore.from_triples(tmp_path / "db2", [("a", " ", "b")])


def test_parse_error_in_build_names_the_line(tmp_path: Path) -> None:
    source = tmp_path / "kg.txt"
    source.write_text("['a', 'r', 'b']\n['a', 'r' 'b']\n", encoding="utf-8")
    with pytest.raises(KGParseError, match=r"kg.txt:2: expected 3 items"):
        KGStore.build(tmp_path / "db", source)


def test_open_errors(tmp_path: Path, kg_b_file: Path) -> None:
    with pytest.raises(KGError, match="does not exist; create it with KGStore.build"):
        KGStore.open(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(KGError, match=r"no \w+ KG database in .*empty"):
        KGStore.open(tmp_path / "empty")
    with KGStore.build(tmp_path / "db", kg_b_file):
        pass
    with KGStore.open(tmp_path / "db") as store:
        assert store.last_build_action is None
        assert store.engine == engine_name()
        assert store.path == tmp_path / "db"
        assert store.db_file.is_file()
        assert len(store.triples()) == 154
    store.close()  # idempotent
    with pytest.raises(KGError, match="is closed"):
        store.relations()


def test_read_only_store_refuses_writes(tmp_path: Path, kg_b_file: Path) -> None:
    with KGStore.build(tmp_path / "db", kg_b_file):
        pass
    with (
        KGStore.open(tmp_path / "db", read_only=True) as a,
        KGStore.open(tmp_path / "db", read_only=True) as b,
    ):
        assert a.read_only and b.read_only
        assert a.follow("Bob", ["mother"]) == b.follow("Bob", ["mother"])
        with pytest.raises(KGError, match="cannot add a fact: .* opened read-only"):
            a.add_fact("x", "y", "z")
        with pytest.raises(KGError, match="cannot remove a fact: .* opened read-only"):
            a.remove_fact("Bob", "mother", "Alice")


def test_engine_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(ENGINES) == {"kuzu", "ladybug"}
    monkeypatch.setenv("EVALS_KG_ENGINE", " LadyBug ")
    assert engine_name() == "ladybug"
    monkeypatch.setenv("EVALS_KG_ENGINE", "")
    assert engine_name() == "kuzu"
    monkeypatch.setenv("EVALS_KG_ENGINE", "neo4j")
    with pytest.raises(
        KGError, match=r"unknown KG engine 'neo4j' \(from \$EVALS_KG_ENGINE\); choose one of: kuzu, ladybug"
    ):
        load_engine()
    with pytest.raises(KGError, match="unknown KG engine 'sqlite' \\(from engine argument\\)"):
        engine_name("sqlite")


def test_ensure_built_works_beside_open_read_only_stores(tmp_path: Path, kg_b_file: Path) -> None:
    source = tmp_path / "kg.txt"
    shutil.copyfile(kg_b_file, source)
    db = tmp_path / "db"
    assert KGStore.ensure_built(db, source) == "created"
    with KGStore.open(db, read_only=True) as reader:
        # up to date: only a shared lock is needed, so an open reader is no obstacle
        assert KGStore.ensure_built(db, source) == "unchanged"
        source.write_text(
            source.read_text(encoding="utf-8") + "['Bob', 'prefer_tea', 'tea_0']\n", encoding="utf-8"
        )
        with pytest.raises(KGLockedError, match="cannot open it read-write"):
            KGStore.ensure_built(db, source, lock_timeout=0.1)
        assert not reader.has_relation("prefer_tea")
    assert KGStore.ensure_built(db, source) == "rebuilt"
    with KGStore.open(db, read_only=True) as reader:
        assert reader.has_relation("prefer_tea")


def test_connections_rerun_parameterised_multi_hop_queries_correctly(tmp_path: Path, kg_b_file: Path) -> None:
    """LadybugDB 0.22 returns wrong rows here unless each connection turns its statement cache off."""
    KGStore.build(tmp_path / "db", kg_b_file).close()
    query = (
        "MATCH (a:Entity {name: $s})-[r1:Rel]->(b:Entity)-[r2:Rel]->(c:Entity) "
        "WHERE r1.relation = $p1 AND r2.relation = $p2 RETURN c.name"
    )
    with KGStore.open(tmp_path / "db") as store:
        for start, first, expected in (
            ("Bob", "mother", "dinnertime_0002"),
            ("Bob", "father", "dinnertime_0001"),
            ("Alice", "son", "dinnertime_0000"),
            ("Bob", "mother", "dinnertime_0002"),
        ):
            rows = store._execute(query, {"s": start, "p1": first, "p2": "prefer_dinnertime"})
            assert rows == [[expected]], (start, first)


def test_ensure_built_that_lost_the_race_to_build_opens_what_the_winner_built(
    tmp_path: Path, kg_b_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two processes on a fresh cache (two workers of one run): B looks before A has built the
    # database, A builds it and keeps it open read-only for its run. B must not wait for a build
    # lock that A's reader holds for its whole run: it looks again and finds the database built.
    db = tmp_path / "db"
    assert KGStore.ensure_built(db, kg_b_file) == "created"  # A's build
    looks = []
    real = KGStore._up_to_date.__func__  # type: ignore[attr-defined]

    def up_to_date(cls: type[KGStore], *args: object, **kw: object) -> bool:
        looks.append(1)
        return False if len(looks) == 1 else real(cls, *args, **kw)  # B's first look came too early

    monkeypatch.setattr(KGStore, "_up_to_date", classmethod(up_to_date))
    with KGStore.open(db, read_only=True):  # A's reader, open for its run
        started = time.monotonic()
        assert KGStore.ensure_built(db, kg_b_file, lock_timeout=30) == "unchanged"
        assert time.monotonic() - started < 25 and len(looks) == 2  # not the lock_timeout of 30 s (loose: load)
