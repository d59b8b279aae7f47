"""The viewer's multi-turn state differences: the differing paths of two states (evals/benchmarks/bfcl/state_paths.py)."""

from __future__ import annotations

from evals.benchmarks.bfcl.state_paths import ABSENT, MAX_PATHS, differing_paths


def test_only_the_differing_paths_with_both_values():
    model = {"root": {"name": "w", "contents": {"a.txt": {"content": "x"}, "list": [1, 2, 3], "kind": "dir"}}}
    gold = {"root": {"name": "w", "contents": {"a.txt": {"content": "y"}, "list": [1, 2], "kind": {"v": 1}, "new": {}}}}
    assert differing_paths(model, gold, "fs") == [
        ('fs.root.contents["a.txt"].content', "x", "y"),
        ("fs.root.contents.list[2]", "3", ABSENT),
        ("fs.root.contents.kind", "dir", '{"v": 1}'),  # values of different types: one difference
        ("fs.root.contents.new", ABSENT, "{}"),
    ]
    assert differing_paths(model, model, "fs") == []
    assert differing_paths(1, 2) == [("(the value)", "1", "2")]


def test_a_state_from_a_model_is_walked_within_bounds():
    many = differing_paths({str(i): i for i in range(MAX_PATHS + 50)}, {})
    assert len(many) == MAX_PATHS + 1 and many[-1][0] == "... and 50 more paths"
    deep: list = []
    inner = deep
    for _ in range(5000):  # deeper than Python compares or encodes
        inner.append([])
        inner = inner[0]
    rows = differing_paths(deep, [], "deep")
    assert rows == [("deep[0]", "(nested too deep to show)", ABSENT)]
    long = differing_paths({"t": "x" * 5000}, {"t": ""})
    assert long[0][1].endswith("... (cut)") and len(long[0][1]) < 400
