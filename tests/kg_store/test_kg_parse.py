"""Parsing triple files and iterables; canonical checksums."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kg_store import KGError, KGParseError, Triple, parse_triple_file, triples, triples_checksum
from kg_store.triples import coerce_triples, read_triple_file


def test_parses_familytool_files_like_literal_eval(kg_b_file: Path, triples_b: list[Triple]) -> None:
    parsed = parse_triple_file(kg_b_file)
    assert parsed == triples_b
    assert len(parsed) == 154
    assert parsed[0] == Triple("Bob", "mother", "Alice")
    assert all(isinstance(t, Triple) for t in parsed)


def test_skips_blank_and_comment_lines(tmp_path: Path) -> None:
    f = tmp_path / "kg.txt"
    f.write_text("\n['a', 'r', 'b']\n   \n# a comment\n('b', 's', 'c')\n\n", encoding="utf-8")
    assert parse_triple_file(f) == [Triple("a", "r", "b"), Triple("b", "s", "c")]


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ("['a', 'r'", "not a Python-style triple"),
        ("['a', 'r']", "expected 3 items"),
        ("['a', 'r', 'b', 'c']", "expected 3 items"),
        ("['a', 2, 'b']", "relation must be a string"),
        ("['a', 'r', '']", "tail is empty"),
        ("'abc'", "expected a list of 3 strings"),
        ("__import__('os')", "not a Python-style triple"),
        ("['a', ' ', 'b']", "relation is empty"),  # a blank field: not taken by the whole-file parse
        ("['a', 'r', 'b\x0cc']", "not a Python-style triple"),  # a form feed splits the line (splitlines)
    ],
)
@pytest.mark.parametrize("parse", [parse_triple_file, read_triple_file])
def test_bad_line_names_file_and_line(tmp_path: Path, bad_line: str, reason: str, parse: Any) -> None:
    f = tmp_path / "kg.txt"
    f.write_text(f"['a', 'r', 'b']\n\n{bad_line}\n['c', 'r', 'd']\n", encoding="utf-8")
    with pytest.raises(KGParseError) as info:
        parse(f)
    message = str(info.value)
    assert f"{f}:3:" in message
    assert reason in message
    assert info.value.lineno == 3
    assert info.value.source == str(f)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KGError, match="triple file not found: .*nope.txt"):
        parse_triple_file(tmp_path / "nope.txt")


def test_coerce_triples_names_the_bad_item() -> None:
    assert coerce_triples([("a", "r", "b"), ["c", "s", "d"]]) == [
        Triple("a", "r", "b"),
        Triple("c", "s", "d"),
    ]
    with pytest.raises(KGParseError, match="item 2: expected 3 items"):
        coerce_triples([("a", "r", "b"), ("c", "s")])


def test_checksum_ignores_order_and_duplicates() -> None:
    a = [("a", "r", "b"), ("c", "s", "d")]
    b = [("c", "s", "d"), ("a", "r", "b"), ("a", "r", "b")]
    assert triples_checksum(a) == triples_checksum(b)
    assert triples_checksum(a) != triples_checksum([("a", "r", "b")])


@pytest.mark.parametrize(("body", "parses"), [("['a','r','b']\r\n['c','r','d']\r\n", True),
                                             ("['a','r','b']\r['c','r','d']\r", True),
                                             ("['a','r\rx','b']\n", False),  # a line break inside a literal
                                             ("['a','r','b']\r\r\n\n\r", True)])
def test_a_triple_file_is_read_with_line_ends_as_text_mode_reads_them(tmp_path: Path, body: str, parses: bool) -> None:
    """The bounded reader reads bytes: its text must be what ``read_text`` gave (CRLF and a lone CR as LF)."""
    p = tmp_path / "kg.txt"
    p.write_bytes(body.encode())
    assert triples._read_text(p) == p.read_text(encoding="utf-8")
    if parses:
        assert len(parse_triple_file(p)) == 1 + body.count("c")
    else:
        with pytest.raises(KGParseError, match=":1: not a Python-style triple"):
            parse_triple_file(p)
