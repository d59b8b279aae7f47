"""ToolNameMap: provider-safe tool names that map back to the originals."""

from __future__ import annotations

import re

import pytest

from client.adapters.names import ToolNameMap, is_safe_name

SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
LONG = ("find the restaurant that my mother prefers and book a table " * 2)[:100]


def test_long_name_fixture_is_100_chars() -> None:
    assert len(LONG) == 100


def test_safe_names_are_kept() -> None:
    names = ToolNameMap(["BookRestaurant", "get-weather", "x_1"])
    assert names.renamed() == {}
    assert names.to_safe("BookRestaurant") == "BookRestaurant"


@pytest.mark.parametrize(
    "original", ["date of journey", "a.b", LONG, "中文工具", "", "Search.Flights (v2)", "a" * 64]
)
def test_every_name_becomes_safe_and_maps_back(original: str) -> None:
    names = ToolNameMap([original, "other"])
    safe = names.to_safe(original)
    assert SAFE.match(safe), safe
    assert names.to_original(safe) == original


def test_readable_sanitisation_without_hash_when_unambiguous() -> None:
    names = ToolNameMap(["date of journey", "a.b"])
    assert names.to_safe("date of journey") == "date_of_journey"
    assert names.to_safe("a.b") == "a_b"


def test_collisions_get_distinct_hashed_names() -> None:
    originals = ["a.b", "a b", "a_b", "a/b"]
    names = ToolNameMap(originals)
    safes = [names.to_safe(o) for o in originals]
    assert len(set(safes)) == len(originals)
    assert names.to_safe("a_b") == "a_b"  # an already-safe name keeps itself
    assert all(names.to_original(s) == o for s, o in zip(safes, originals, strict=True))


def test_long_names_that_share_a_prefix_stay_distinct() -> None:
    a, b = LONG + "_one", LONG + "_two"
    names = ToolNameMap([a, b])
    assert names.to_safe(a) != names.to_safe(b)
    assert len(names.to_safe(a)) <= 64


def test_mapping_is_stable_and_order_independent() -> None:
    originals = ["a.b", "a b", LONG, "date of journey", "ok"]
    first = ToolNameMap(originals)
    second = ToolNameMap(list(reversed(originals)))
    assert first.items() and dict(first.items()) == dict(second.items())


def test_adding_names_never_changes_earlier_assignments() -> None:
    names = ToolNameMap(["a.b"])
    before = names.to_safe("a.b")
    names.add("a_b")  # would have claimed "a_b" had it been there first
    assert names.to_safe("a.b") == before
    assert names.to_safe("a_b") != before
    assert names.to_original(names.to_safe("a_b")) == "a_b"


def test_unknown_safe_name_is_returned_unchanged() -> None:
    assert ToolNameMap(["x"]).to_original("made_up_tool") == "made_up_tool"


def test_is_safe_name_and_max_len() -> None:
    assert is_safe_name("abc")
    assert not is_safe_name("a b")
    assert not is_safe_name("a" * 65)
    names = ToolNameMap(["a" * 40], max_len=32)
    assert len(names.to_safe("a" * 40)) <= 32
    with pytest.raises(ValueError, match="max_len"):
        ToolNameMap([], max_len=4)
