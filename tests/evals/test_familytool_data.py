"""FamilyTool loading, `evals data stats`, and `evals data fetch` against a local HTTP server."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from collections import Counter

import pytest
from loopback_http import serve_directory

from evals.benchmarks.familytool.data import FamilyToolCatalog, load_tasks, parse_query
from evals.core.fetch import FetchError, fetch, sources


def test_parse_query_handles_every_speaker_and_triple_form():
    s, q, g = parse_query("<speak>Person: Alice.</speak> Hi there.  The extra information for the query is ([Bob, mother, Alice]).")
    assert (s, q, [tuple(t) for t in g]) == ("Alice", "Hi there.", [("Bob", "mother", "Alice")])
    s, q, g = parse_query("No tag. The extra information for the query is (['Bob', 'wife', 'Alice'], ['Alice', 'x', 'y_0001']).")
    assert s is None and q == "No tag." and [tuple(t) for t in g] == [("Bob", "wife", "Alice"), ("Alice", "x", "y_0001")]


@pytest.mark.parametrize("dataset,count", [("b", 483), ("e", 455)])
def test_all_tasks_load_and_gold_subkg_is_in_the_kg(data_dir, dataset, count):
    tasks = load_tasks(dataset)
    assert len(tasks) == count == len({t.id for t in tasks})
    kg = {tuple(ast.literal_eval(line)) for line in open(data_dir / "familytool" / f"familykg-{dataset}.txt") if line.strip()}
    for t in tasks:
        assert t.gold_kg and all(tuple(x) in kg for x in t.gold_kg), t.id
        assert len(t.gold_calls) == 1 and t.gold_calls[0].name in {c["name"] for c in t.candidate_tools}
        assert "extra information" not in t.query and "<speak>" not in t.query
    catalog = FamilyToolCatalog(dataset, tasks)
    for t in tasks:
        assert [s.name for s in catalog.task_tools(t.id)] == list(dict.fromkeys(c["name"] for c in t.candidate_tools))


def _run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("dataset", ["familytool-b", "familytool-e"])
def test_data_stats_json_matches_an_independent_count(data_dir, dataset):
    proc = _run_cli("data", "stats", dataset, "--json")
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    short = dataset[-1]
    rows = [json.loads(line) for line in open(data_dir / "familytool" / f"familytool-{short}.jsonl")]
    triples = [ast.literal_eval(line) for line in open(data_dir / "familytool" / f"familykg-{short}.txt") if line.strip()]
    hops = Counter(row[2]["content"].split("The extra information for the query is")[1].count("[") for row in rows)
    assert stats["tasks"] == len(rows)
    assert stats["gold_tools"] == len({c["name"] for row in rows for c in row[3]["content"]})
    assert stats["candidate_tools"] == len({t["name"] for row in rows for t in row[1]["content"]})
    assert stats["kg_triples"] == len({tuple(t) for t in triples})
    assert stats["kg_entities"] == len({e for h, _, t in triples for e in (h, t)})
    assert stats["kg_relation_types"] == len({r for _, r, _ in triples})
    assert stats["hops"] == {str(k): v for k, v in sorted(hops.items())}
    assert sum(stats["hops"].values()) == len(rows)


def test_data_stats_without_data_says_how_to_fix_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path))
    proc = _run_cli("data", "stats", "familytool-b")
    assert proc.returncode == 2
    assert "EVALS_DATA_DIR" in proc.stderr and "familytool-b.jsonl" in proc.stderr


def test_fetch_downloads_verifies_and_refuses_a_corrupt_file(data_dir, tmp_path):
    mirror = tmp_path / "mirror"
    for f in sources()["familytool"]:  # lay the real files out as in the upstream repository
        rel = f.url.split("/", 6)[6]
        (mirror / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(data_dir / f.dest, mirror / rel)
    out = tmp_path / "data"
    with serve_directory(mirror) as url:
        paths = fetch("familytool", out, url_prefix=url)
        assert [p.read_bytes() for p in paths] == [(data_dir / f.dest).read_bytes() for f in sources()["familytool"]]
        msgs: list[str] = []
        fetch("familytool", out, url_prefix=url, report=msgs.append)
        assert all("already present" in m for m in msgs)
        # corrupt the mirror's copy: the download is refused and nothing replaces the good file
        (out / "familytool/familykg-b.txt").unlink()
        (mirror / "KG/familykg-b.txt").write_text("['a', 'b', 'c']\n")
        with pytest.raises(FetchError, match="sha256"):
            fetch("familytool", out, url_prefix=url)
        assert not (out / "familytool/familykg-b.txt").exists()
        assert not list((out / "familytool").glob(".familykg-b.txt.*"))  # no partial file left
        with pytest.raises(FetchError, match="404"):
            fetch("familytool", tmp_path / "other", url_prefix=url + "/nowhere")
