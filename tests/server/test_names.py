"""Prefix completion over sorted names (server.names.NameIndex): counts, order, edits, case."""

from __future__ import annotations

import random

from server import MAX_COMPLETIONS, NameIndex


def test_prefix_matches_agree_with_a_scan_on_random_names():
    rng = random.Random(7)
    names = {"".join(rng.choice("abAB_é") for _ in range(rng.randint(1, 6))) for _ in range(3000)}
    index = NameIndex(names)
    assert len(index) == len(names)
    for prefix in ["", "a", "ab", "A_", "é", "bbb", "zz", "aBé"]:
        want = sorted(n for n in names if n.startswith(prefix))
        got = index.complete(prefix)
        if want or not prefix:
            assert got.total == len(want) and got.values == want[:MAX_COMPLETIONS]
            assert got.has_more is (len(want) > MAX_COMPLETIONS)


def test_a_miss_falls_back_to_case_insensitive_and_edits_keep_the_order():
    index = NameIndex(["Bob", "bobby", "Alice", "alex"])
    assert index.complete("Bo").values == ["Bob"]  # as typed first
    assert index.complete("ALE").values == ["alex"]  # nothing as typed: lower case
    assert index.complete("BOB").values == ["Bob", "bobby"] and index.complete("BOB").total == 2
    assert index.complete("aLI").values == ["Alice"] and index.complete("x").total == 0
    index.add("Zoe")
    index.add("Bob")  # already there
    index.discard("Alice")
    index.discard("nobody")
    assert index.page(0, 10) == ["Bob", "Zoe", "alex", "bobby"]
    assert "Zoe" in index and "Alice" not in index and 3 not in index
    assert index.complete("zo").values == ["Zoe"]
