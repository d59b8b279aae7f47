"""The fast paths of a big KG: whole-file parsing into canonical rows, the saved adjacency, the file digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_store import KGStore, Triple, parse_triple_file
from kg_store.triples import canonical_triples, read_triple_file

PLAIN = "['Bob', 'mother', 'Alice']\n['Alice', 'prefer_dinnertime', 'dinnertime_0002']\n['Bob', 'mother', 'Alice']\n"
MIXED = (
    "# comment\n"
    "\r\n"
    "  ['Bob', 'mother', 'Alice']  \r\n"
    "[\"O'Neil\", 'friend', 'Bob']\n"
    "('a', 'r', 'b')\n"
    "['tab\\there', 'quote\"d', 'new\\nline']\n"
    "['Zoë', 'likes', '東京']\n"
    "[ 'x' , 'y' , 'z' ]"  # no final line feed
)


def _both_ways(path: Path) -> tuple[list[str], list[str]]:
    """The rows of the whole-file parse, and of the line-by-line parse."""
    return read_triple_file(path).rows, canonical_triples(parse_triple_file(path)).rows


@pytest.mark.parametrize("content", [PLAIN, MIXED, PLAIN + MIXED, MIXED + "\n" + PLAIN, "", "\n# only a comment\n"])
def test_whole_file_parse_equals_line_by_line(tmp_path: Path, content: str) -> None:
    f = tmp_path / "kg.txt"
    f.write_text(content, encoding="utf-8")
    fast, slow = _both_ways(f)
    assert fast == slow
    assert read_triple_file(f).checksum == canonical_triples(parse_triple_file(f)).checksum
    assert sorted(read_triple_file(f).triples()) == sorted(set(parse_triple_file(f)))


@pytest.mark.parametrize("slice_chars", [1, 10, 30, 10_000])
def test_whole_file_parse_in_slices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slice_chars: int) -> None:
    """A big file is matched a slice of lines at a time: any slice size gives the same rows and the
    entities (heads and tails) the bulk load reads."""
    import kg_store.triples as triples_module

    monkeypatch.setattr(triples_module, "_SLICE_CHARS", slice_chars)
    f = tmp_path / "kg.txt"
    lines = [f"['p{i % 7}', 'r{i % 3}', 'p{(i * 5) % 11}']" for i in range(40)]
    for content in ("\n".join(lines), "\n".join(lines) + "\n", "\r\n".join(lines), "\n".join(lines) + "\n# end\n"):
        f.write_text(content, encoding="utf-8", newline="")
        fast = read_triple_file(f)
        assert fast.rows == canonical_triples(parse_triple_file(f)).rows
        facts = parse_triple_file(f)
        assert sorted(fast.entities) == sorted({t.head for t in facts} | {t.tail for t in facts})


def test_canonical_rows_are_csv_the_engine_reads_back(tmp_path: Path) -> None:
    f = tmp_path / "kg.txt"
    f.write_text(MIXED, encoding="utf-8")
    rows = read_triple_file(f)
    assert rows.multiline  # a field with a line feed: the engine reads the CSV serially
    assert '"Bob","Alice","mother"' in rows.rows
    assert '"tab\there","new\nline","quote""d"' in rows.rows
    with KGStore.build(tmp_path / "db", f, copy_threshold=1) as store:  # bulk load even for 7 triples
        assert sorted(store.triples()) == sorted(set(parse_triple_file(f)))
        assert store.follow("tab\there", ['quote"d']) == [[Triple("tab\there", 'quote"d', "new\nline")]]


def test_saved_adjacency_is_used_and_dropped_on_writes(tmp_path: Path) -> None:
    f = tmp_path / "kg.txt"
    f.write_text(PLAIN, encoding="utf-8")
    db = tmp_path / "db"
    KGStore.ensure_built(db, f)
    with KGStore.open(db, read_only=True) as store:
        first = store.follow("Bob", ["mother", "prefer_dinnertime"])
        saved = store._adjacency_path
        assert saved == db / f"{store.db_file.name}.adjacency"
    assert saved.is_file()  # a read-only store that loaded the adjacency saved it
    with KGStore.open(db, read_only=True) as store:
        assert store._read_adjacency_file() is not None
        assert store.follow("Bob", ["mother", "prefer_dinnertime"]) == first
    with KGStore.open(db) as store:
        assert store.add_fact("Carol", "mother", "Alice")
    assert not saved.exists()  # a write removes it first
    with KGStore.open(db, read_only=True) as store:
        assert [p[0].head for p in store.follow("Carol", ["mother", "prefer_dinnertime"])] == ["Carol"]
    saved.write_bytes(b"not marshal data")  # a damaged file is ignored
    with KGStore.open(db, read_only=True) as store:
        assert store.follow("Carol", ["mother"]) == [[Triple("Carol", "mother", "Alice")]]


def test_saved_adjacency_carries_the_relation_counts(tmp_path: Path) -> None:
    f = tmp_path / "kg.txt"
    f.write_text(PLAIN, encoding="utf-8")
    db = tmp_path / "db"
    KGStore.ensure_built(db, f)
    with KGStore.open(db, read_only=True, cache=False) as store:
        engine_counts = store._rel_counts()  # counted by the engine: no adjacency in memory
        relations = store.relations()
    assert sum(engine_counts.values()) == len(set(parse_triple_file(f)))
    with KGStore.open(db, read_only=True) as store:
        store.follow("Bob", ["mother"])  # loads the adjacency from the engine and saves it
    with KGStore.open(db, read_only=True) as store:
        saved = store._read_adjacency_file()
        assert saved is not None and saved[1] == dict(engine_counts)
        store._adjacency()  # a warm open: the counts come from the file, not from walking the edges
        assert store._relation_counts == engine_counts
        assert store.relations() == relations


def test_ensure_built_skips_parsing_the_same_file_and_checks_content_of_another(tmp_path: Path) -> None:
    f = tmp_path / "kg.txt"
    f.write_text(PLAIN, encoding="utf-8")
    db = tmp_path / "db"
    assert KGStore.ensure_built(db, f) == "created"
    assert KGStore.ensure_built(db, f) == "unchanged"
    f.write_text("".join(reversed(PLAIN.splitlines(keepends=True))), encoding="utf-8")  # same triples
    assert KGStore.ensure_built(db, f) == "unchanged"
    f.write_text(PLAIN + "['Carol', 'mother', 'Alice']\n", encoding="utf-8")
    assert KGStore.ensure_built(db, f) == "rebuilt"
