"""BFCL's memory categories: our agentic checker beside BFCL's own (every verdict equal), a backend
instance per MCP session, the oracle at 100 through the real server, and the refused categories."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from official_checker import run_official

from evals.benchmarks.bfcl.agentic import check_answer, read_memory
from evals.benchmarks.bfcl.files import MEMORY_SERVED
from evals.benchmarks.bfcl.kinds import BfclCatalog
from evals.benchmarks.bfcl.memory import LOAD_TOOL, SNAPSHOT_TOOL
from evals.benchmarks.bfcl.memory_run import MemoryKind, oracle_answer
from evals.core.run import RunOptions, run_benchmark

ROOT = Path(__file__).resolve().parents[4]
CALL = [["core_memory_list_keys", "{}"]]


def _variants(answer: str) -> list[tuple[str, Any]]:
    """(variant, steps): the model's responses of the question's turn (calls, then a text) or an error text."""
    return [
        ("right", [CALL, str({"answer": answer, "context": "x"})]),
        ("restyled", [CALL, f"It is {answer.upper().replace(' ', '-')}."]),
        ("answer_only", [answer]),
        ("inside_a_word", [f"x{answer}y"]),
        ("wrong", [CALL, "{'answer': 'I do not know', 'context': 'I do not know'}"]),
        ("only_calls", [CALL, CALL]),
        ("empty_text", [CALL, ""]),
        ("errored", "Error during inference: boom"),
    ]


def _ours(steps: Any, answers: tuple[str, ...]) -> tuple[bool, str]:
    if not isinstance(steps, list):
        v = check_answer(None, answers, errored=True)
    else:  # our agent stops at its first text reply: the last step is the final message, or none was given
        v = check_answer(steps[-1] or None if isinstance(steps[-1], str) else None, answers)  # "": no message
    return v.valid, v.error_type


def test_every_memory_verdict_is_bfcls(bfcl_data, bfcl_python, tmp_path):
    entries, _ = read_memory("memory_kv")
    cases, ours = [], {}
    for entry in entries:
        for n, answer in enumerate(entry.answers):
            for variant, steps in _variants(answer):
                case_id = f"{entry.id}#{n}#{variant}"
                cases.append({"id": case_id, "category": entry.category, "possible_answer": list(entry.answers),
                              "steps": steps})
                ours[case_id] = _ours(steps, entry.answers)
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(tmp_path / "bfcl-root")}
    theirs = run_official(bfcl_python, {"cases": cases}, tmp_path, env)
    assert len(cases) > 1500 and set(theirs["verdicts"]) == set(ours)
    differ = {k: (ours[k], (v["valid"], v["error_type"])) for k, v in theirs["verdicts"].items()
              if ours[k] != (v["valid"], v["error_type"])}
    assert not differ, f"{len(differ)} verdicts differ, e.g. {list(differ.items())[:8]}"
    mine = [ok for ok, _ in ours.values()]
    assert sum(mine) / len(mine) == theirs["accuracy"]["memory_kv"]
    kinds = {ours[c["id"]][1] for c in cases}  # every rule is exercised, both verdicts occur
    assert kinds == {"", "agentic:answer_not_found", "agentic:no_last_message", "agentic:inference_error"}


async def test_each_session_gets_its_own_backend_and_a_snapshot_carries_memory(bfcl_data):
    from evals.core.transport import MemorySessions
    from server import BenchmarkMount, ToolServer

    entries, prereqs = read_memory("memory_kv")
    catalog = BfclCatalog([MemoryKind(("memory_kv",))])
    sessions = MemorySessions(ToolServer([BenchmarkMount(catalog=catalog)]))
    async with sessions.session("bfcl", prereqs["student"][0].id) as one:
        added = await one.call_tool("core_memory_add", {"key": "first_name", "value": "Michael"})
        assert added.structured_content is None and json.loads(added.content[0].text) == {"status": "Key-value pair added."}
        bad = await one.call_tool("core_memory_add", {"key": "Not Snake", "value": "x"})
        assert "snake_case" in bad.content[0].text
        snap = (await one.call_tool(SNAPSHOT_TOOL, {})).structured_content["snapshot"]
    assert snap == {"core_memory": {"first_name": "Michael"}, "archival_memory": {}}
    async with sessions.session("bfcl", entries[0].id) as two:  # a new session: an empty backend
        assert json.loads((await two.call_tool("core_memory_list_keys", {})).content[0].text) == {"keys": []}
        loaded = await two.call_tool(LOAD_TOOL, {"snapshot": snap})
        assert json.loads(loaded.structured_content["context"]) == {"first_name": "Michael"}
        got = await two.call_tool("core_memory_retrieve", {"key": "first_name"})
        assert json.loads(got.content[0].text) == {"value": "Michael"}
        wrong = await two.call_tool("core_memory_retrieve", {"nokey": 1})
        assert wrong.is_error and wrong.content[0].text.startswith("Error during execution: ")


@pytest.mark.parametrize("category", MEMORY_SERVED)
async def test_the_oracle_scores_100_in_the_memory_categories(bfcl_data, category, tmp_path):
    entries, _ = read_memory(category)
    chosen = [e.id for e in entries if e.scenario == "finance"][:6]
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=tmp_path / "run", transport="http", task_ids=chosen,
                      concurrency=3, progress=False, benchmark_options={"category": [category]})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 6 and summary["metrics"][category] == 100.0, summary.get("first_error")
    traces = [json.loads(x) for x in (tmp_path / "run" / "traces.jsonl").read_text().splitlines()]
    ran = [t for t in traces if t["outcome"]["memory"]["ran_prerequisites"]]
    assert len(ran) == 1  # the scenario's 7 conversations ran once, in one episode's trace
    assert len([e for e in ran[0]["events"] if e["kind"] == "bfcl_memory_prereq"]) == 7
    assert check_answer(oracle_answer(entries[0]), entries[0].answers).valid
