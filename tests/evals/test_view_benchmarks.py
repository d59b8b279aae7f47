"""Each benchmark's own sections of an episode in `evals view` (its ``episode_view``), over real oracle runs."""

from __future__ import annotations

from pathlib import Path

from client import eventloop
from evals.core.run import RunOptions, run_benchmark
from evals.view.site import Site


def _oracle_run(root: Path, benchmark: str, strategy: str | None = None, limit: int = 2) -> Site:
    opts = RunOptions(benchmark=benchmark, model="oracle", limit=limit, run_dir=root / benchmark, progress=False,
                      strategy=strategy)
    eventloop.run(run_benchmark(opts))
    return Site([root / benchmark])


def _sections(site: Site) -> list[dict]:
    rid = next(iter(site.views))
    task = site.tasks(rid)["tasks"][0]["id"]
    ep = site.episode(rid, task)
    assert ep["sections_note"] is None
    return ep["sections"]


def test_nestools_shows_the_call_lists_and_their_placeholder_handles(data_dir, tmp_path):
    sections = _sections(_oracle_run(tmp_path, "nestools", "agent"))
    calls, handles = sections
    assert calls["kind"] == "calls" and len(calls["pairs"]) >= 2
    assert all(p["match"] and all(d["same"] for d in p["diff"]) for p in calls["pairs"])
    assert handles["title"] == "Placeholder handles"
    gold_rows = [r for r in handles["rows"] if r[0] == "gold"]
    assert "API_call_0" in gold_rows[0][3] and any("API_call_0" in r[4] for r in gold_rows[1:])


def test_complexfuncbench_shows_each_turns_replay_decisions(data_dir, tmp_path):
    sections = _sections(_oracle_run(tmp_path, "complexfuncbench", limit=1))
    turns = [s for s in sections if s["kind"] == "calls"]
    assert turns and turns[0]["title"] == "Turn 1: replay decisions"
    assert all(p["match"] and "matcher" in p["matcher"] for t in turns for p in t["pairs"])
    ended = next(s for s in sections if s["title"] == "How the episode ended")
    assert ["message", "Success."] in ended["rows"]


def test_toolhop_shows_each_hops_gold_call_beside_the_predicted_one_and_the_answers(data_dir, tmp_path):
    site = _oracle_run(tmp_path, "toolhop", limit=2)
    rid = next(iter(site.views))
    for entry in site.view(rid).index.traces.values():
        ep = site.episode(rid, entry.task_id)
        assert ep["sections_note"] is None
        calls, answer = ep["sections"]
        assert calls["kind"] == "calls" and answer["title"] == "Gold answer and final answer"
        if (entry.head.get("outcome") or {}).get("gold_chain") is None:  # the oracle had no chain: said so
            assert calls["pairs"] == [] and "no explicit gold chain" in calls["note"]
            assert answer["rows"][1][2] == "(see the scores)"
        else:  # the oracle played the gold chain: every hop's call equals its gold call, the answer is right
            assert calls["pairs"] and all(p["match"] and p["gold"] == p["predicted"] for p in calls["pairs"])
            assert answer["rows"][1][2] == "right"


def test_ultratool_shows_the_gold_steps_beside_the_predicted_ones(data_dir, tmp_path):
    sections = _sections(_oracle_run(tmp_path, "ultratool"))
    assert [s["title"] for s in sections] == ["Gold steps and predicted steps"]
    pairs = sections[0]["pairs"]
    assert pairs and all(p["match"] and p["gold"]["name"] for p in pairs)
