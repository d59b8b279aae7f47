"""BFCL's memory categories with a scripted model (``replay:``) that makes known mistakes: the
per-category numbers computed by hand, the subset marked not comparable, and the episode view
(accepted answers beside the final answer, the verdict, the prerequisite conversations collapsed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from view_runs import serve_view

from client import eventloop
from evals.benchmarks.bfcl.agentic import MemoryEntry, Prereq, read_memory
from evals.benchmarks.bfcl.memory_view import memory_episode_sections
from evals.cli_parts.summary import summary_notes
from evals.core.data import DATA_ENV
from evals.core.run import RunOptions, run_benchmark
from evals.report.tables import not_comparable
from evals.view.site import Site

MAX_TURNS = 4
NOTED = {"role": "assistant", "content": "Noted."}
CONTEXT = "from my memory"


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "function_call": [{"name": n, "arguments": a} for n, a in calls]}


def _text(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


# What the model stores in the first turn of a scenario's first prerequisite conversation (it replies
# "Noted." to every other turn); finance gets nothing stored, so its question cannot be answered from memory.
STORED: dict[str, dict[str, Any] | None] = {
    "notetaker": _calls(("core_memory_add", {"key": "daycare_payment_day", "value": "Friday"}),
                        ("core_memory_add", {"key": "proposal_review_team", "value": "Legal"})),
    "finance": None,
    "healthcare": _calls(("memory_append", {"text": "Eats his eggs with avocado. Fasting glucose 135 mg/dL."})),
}
KV_READ = _calls(("core_memory_retrieve_all", {}))
REC_READ = _calls(("memory_retrieve", {}))
# each question's assistant turns; the verdict BFCL's agentic_checker gives it
SCRIPT: dict[str, tuple[list[dict[str, Any]], str]] = {
    # memory_kv, notetaker (the answers are in memory)
    "memory_kv_131-notetaker-1": ([KV_READ, _text(str({"answer": "Friday", "context": CONTEXT}))], ""),  # right
    "memory_kv_138-notetaker-8": ([KV_READ, _text("Send it to the <b>**LEGAL**</b> team!")], ""),  # restyled: still right
    "memory_kv_140-notetaker-10": ([KV_READ, _text(str({"answer": "Accounting", "context": CONTEXT}))],
                                   "agentic:answer_not_found"),  # gold 'Finance': a wrong answer
    "memory_kv_145-notetaker-15": ([_text("You wanted to check for updates.")],
                                   "agentic:answer_not_found"),  # gold 'Update' only inside the word 'updates'
    "memory_kv_150-notetaker-20": ([KV_READ] * MAX_TURNS, "agentic:no_last_message"),  # only calls, to --max-turns
    "memory_kv_151-notetaker-21": ([KV_READ, _text("")], "agentic:no_last_message"),  # an empty text
    # memory_kv, finance (nothing was stored: the memory it reads is empty)
    "memory_kv_61-finance-6": ([KV_READ, _text("I have nothing about your MBA in my memory.")],
                               "agentic:answer_not_found"),
    # memory_rec_sum, healthcare
    "memory_rec_sum_39-healthcare-9": ([REC_READ, _text(str({"answer": "avocado", "context": CONTEXT}))], ""),
    "memory_rec_sum_45-healthcare-15": ([REC_READ, _text("ONE HUNDRED THIRTY FIVE mg/dL")], ""),  # 2nd accepted answer
    "memory_rec_sum_50-healthcare-20": ([REC_READ, _text("Twenty-two ng/mL")],
                                        "agentic:answer_not_found"),  # '-' is removed: 'twentytwo', not 'twenty two'
}
# Hand-computed (right entries / entries, per category, as BFCL reports it):
#   memory_kv:      131 right, 138 right; 140, 145, 150, 151, 61 wrong -> 2/7  = 28.571... -> 28.57
#   memory_rec_sum: 39 right, 45 right; 50 wrong                       -> 2/3  = 66.666... -> 66.67
#   accuracy (over the run's entries):                                    4/10 = 40.00
#   failed_episodes: none errored (the replay has a turn for every request)  -> 0
EXPECTED = {"memory_kv": 28.57, "memory_rec_sum": 66.67, "accuracy": 40.0, "failed_episodes": 0}


def _conversation(turns: list[str], replies: list[dict[str, Any]]) -> dict[str, Any]:
    """A replay record: the user turns, each followed by the model's replies to it (the adapter plays
    the n-th assistant turn for the n-th model request of the conversation)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": turns[0]}, *replies]
    messages += [m for t in turns[1:] for m in ({"role": "user", "content": t}, NOTED)]
    return {"messages": messages}


def _replay_file(path: Path) -> tuple[dict[str, MemoryEntry], dict[str, list[Prereq]]]:
    entries: dict[str, MemoryEntry] = {}
    prereqs: dict[str, list[Prereq]] = {}
    for category in ("memory_kv", "memory_rec_sum"):
        es, ps = read_memory(category)
        entries |= {e.id: e for e in es}
        prereqs |= {s: ps[s] for s in STORED if (s == "healthcare") == (category == "memory_rec_sum")}
    lines = []
    for scenario, convs in prereqs.items():
        for n, conv in enumerate(convs):
            stored = STORED[scenario]
            first = [stored, NOTED] if n == 0 and stored else [NOTED]
            lines.append(_conversation(list(conv.turns), first))
    lines += [{"messages": [{"role": "user", "content": entries[t].question}, *steps]} for t, (steps, _) in SCRIPT.items()]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return entries, prereqs


@pytest.fixture(scope="module")
def scripted(_bfcl_data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, dict[str, list[Prereq]]]:
    """The scripted run, once for the module's tests."""
    root = tmp_path_factory.mktemp("bfcl-memory-scripted")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(DATA_ENV, str(_bfcl_data_root))
        _, prereqs = _replay_file(root / "script.jsonl")
        opts = RunOptions(benchmark="bfcl", model=f"replay:{root / 'script.jsonl'}", run_dir=root / "run",
                          transport="http", task_ids=list(SCRIPT), concurrency=3, progress=False, max_turns=MAX_TURNS,
                          benchmark_options={"category": ["memory_kv", "memory_rec_sum"]})
        _, summary = eventloop.run(run_benchmark(opts))
    return summary, root / "run", prereqs


def _records(path: Path) -> dict[str, dict[str, Any]]:
    return {r["task_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def test_a_scripted_model_with_known_memory_mistakes_gets_the_hand_computed_numbers(scripted):
    summary, run, prereqs = scripted
    m = summary["metrics"]
    assert summary["completed"] == 10, summary.get("first_error")
    assert {k: m[k] for k in EXPECTED} == EXPECTED
    scores = _records(run / "scores.jsonl")
    assert {t: s["score"]["details"]["verdict"]["error_type"] for t, s in scores.items()} == \
        {t: why for t, (_, why) in SCRIPT.items()}
    traces = _records(run / "traces.jsonl")
    # each scenario's prerequisite conversations ran once, in one of its questions' traces
    for scenario, convs in prereqs.items():
        ran = [t for t in traces.values() if t["task_id"].split("-")[1] == scenario
               and t["outcome"]["memory"]["ran_prerequisites"]]
        assert len(ran) == 1
        events = [e for e in ran[0]["events"] if e["kind"] == "bfcl_memory_prereq"]
        assert [e["id"] for e in events] == [c.id for c in convs]
        assert [len(e["turns"]) for e in events] == [len(c.turns) for c in convs]
    # what the model stored reached the questions; the finance question started from an empty memory
    memory = {t: tr["outcome"]["memory"]["snapshot"] for t, tr in traces.items()}
    assert memory["memory_kv_131-notetaker-1"]["core_memory"] == {"daycare_payment_day": "Friday",
                                                                  "proposal_review_team": "Legal"}
    assert memory["memory_kv_61-finance-6"] == {"core_memory": {}, "archival_memory": {}}
    assert "avocado" in memory["memory_rec_sum_39-healthcare-9"]["memory"]
    read = [e for e in traces["memory_kv_61-finance-6"]["events"] if e["kind"] == "tool_call"]
    assert [json.loads(e["result_text"]) for e in read] == [{}]
    assert traces["memory_kv_150-notetaker-20"]["outcome"]["stop"] == "max_turns"
    # a subset of the categories' 310 entries: not comparable with BFCL's published numbers, and said so
    assert summary["benchmark_tasks"] == 310 and summary["tasks"] == 10
    assert summary["subset_note"].startswith("10 of 310 tasks: not comparable")
    assert not_comparable(summary) == "10 of 310 tasks: not comparable"
    assert any(n.startswith("not comparable with the papers' numbers") for n in summary_notes(summary))
    subset = [a for a in summary["anomalies"] if a["kind"] == "subset"]  # the run page's and evals report's caveat
    assert len(subset) == 1 and subset[0]["message"] == summary["subset_note"]


def test_the_episode_view_shows_the_accepted_answers_the_verdict_and_the_prerequisite_conversations(
        scripted, bfcl_data):
    _, run, prereqs = scripted
    site = Site([run])
    rid = next(iter(site.views))
    eps = {t: site.episode(rid, t) for t in SCRIPT}
    assert all(ep["sections_note"] is None for ep in eps.values())

    def shown(task: str) -> tuple[list[list[Any]], list[Any]]:
        answer, verdict = eps[task]["sections"][:2]
        assert answer["title"] == "Gold answer and final answer" and verdict["title"] == "BFCL's verdict"
        return answer["rows"], verdict["rows"][0]

    rows, verdict = shown("memory_kv_145-notetaker-15")  # the accepted answers beside the final message
    assert rows[0][1] == '["Update"]' and rows[1][1:] == ["You wanted to check for updates.", "wrong"]
    assert verdict[:2] == ["wrong", "agentic:answer_not_found"]
    rows, verdict = shown("memory_rec_sum_45-healthcare-15")
    assert rows[0][1] == '["135", "One hundred thirty five", "One hundred and thirty five"]'
    assert rows[1][2] == "right" and verdict[:2] == ["right", "(none)"]
    assert shown("memory_kv_150-notetaker-20")[0][1][1] == "(none: every step made calls)"
    assert shown("memory_kv_151-notetaker-21")[0][1][1] == "(an empty text)"
    assert {shown(t)[1][1] for t in SCRIPT} == {why or "(none)" for _, why in SCRIPT.values()}

    for scenario, convs in prereqs.items():
        in_scenario = [t for t in SCRIPT if t.split("-")[1] == scenario]
        ran = [t for t in in_scenario if any(s["title"].startswith("Prerequisite conversation 1 of") for s in eps[t]["sections"])]
        assert len(ran) == 1  # the episode that ran them shows each, collapsed; the others say where they ran
        shown_convs = [s for s in eps[ran[0]]["sections"] if s["title"].startswith("Prerequisite conversation ")]
        assert [s["title"] for s in shown_convs] == [f"Prerequisite conversation {i} of {len(convs)}: {c.id}"
                                                     for i, c in enumerate(convs, 1)]
        assert all(s["kind"] == "text" and s["collapsed"] for s in shown_convs)
        first = shown_convs[0]["text"]
        assert first.startswith(f"user 1: {convs[0].turns[0]}\n") and f"user {len(convs[0].turns)}: " in first
        for t in in_scenario:
            if t != ran[0]:
                assert eps[t]["sections"][-1]["title"] == "Prerequisite conversations"
                assert "ran once in this run" in eps[t]["sections"][-1]["text"]
    notetaker = next(s["text"] for ep in eps.values() for s in ep["sections"]
                     if s["title"].endswith(prereqs["notetaker"][0].id))
    assert '-> core_memory_add {"key": "daycare_payment_day", "value": "Friday"}' in notetaker
    assert notetaker.endswith('"daycare_payment_day": "Friday",\n  "proposal_review_team": "Legal"\n },\n "archival_memory": {}\n}')
    start = next(s for s in eps["memory_kv_61-finance-6"]["sections"] if s["title"] == "Memory the question started from")
    assert start["collapsed"] and json.loads(start["text"]) == {"core_memory": {}, "archival_memory": {}}


@pytest.fixture
def server(scripted: tuple[dict[str, Any], Path, dict[str, list[Prereq]]], bfcl_data: Path) -> Iterator[str]:
    with serve_view(scripted[1]) as url:
        yield url


def test_a_memory_episode_in_the_browser_shows_markup_as_text_and_the_conversations_collapsed(scripted, server, page):
    rid = next(iter(Site([scripted[1]]).views))
    traces = _records(scripted[1] / "traces.jsonl")
    task = next(t for t, tr in traces.items() if "notetaker" in t and tr["outcome"]["memory"]["ran_prerequisites"])
    page.goto(server + f"#/run/{rid}/task/memory_kv_138-notetaker-8")
    answer = page.locator("section.card", has_text="Gold answer and final answer")
    cell = answer.locator("td", has_text="Send it to")
    assert cell.inner_text() == "Send it to the <b>**LEGAL**</b> team!" and answer.locator("b").count() == 0
    assert page.locator("section.card", has_text="BFCL's verdict").locator("td").first.inner_text() == "right"
    page.goto(server + f"#/run/{rid}/task/{task}")
    first = scripted[2]["notetaker"][0]
    conv = page.locator("details.collapsed-section", has_text=f"Prerequisite conversation 1 of 5: {first.id}")
    body = conv.locator("pre")
    assert not body.is_visible()  # collapsed until its title is clicked
    conv.locator("summary").click()
    body.wait_for(state="visible")
    assert body.inner_text().startswith(f"user 1: {first.turns[0]}")


def test_a_memory_question_that_never_ran_shows_its_accepted_answers_and_no_verdict():
    entry = MemoryEntry("memory_kv_1-customer-1", "memory_kv", "customer", "How old am I?", ("35", "thirty five"))
    (answer,) = memory_episode_sections(entry, {}, None, None)
    assert answer["rows"][0][1] == '["35", "thirty five"]' and answer["rows"][1][1:] == ["(none)", "(see the scores)"]
