"""BFCL's memory and web-search categories with ``--strategy prompting``, checked against BFCL's own code.

* The prompting oracle scores 100 on memory_kv and memory_rec_sum questions (their prerequisite conversations
  run first, in prompting mode too), on memory_vector (where its local embedding model is installed) and on
  web search through the loopback SerpAPI stand-in; a scripted
  web-search model (right, a wrong answer, BFCL's step limit) gets ``bfcl evaluate``'s verdicts.
* A scripted memory model with known mistakes (``replay:``: a prerequisite conversation that stores a fact, a
  question that reads it and answers, one that answers wrong, one with an empty reply, one stopped by BFCL's
  step limit) gets the hand-computed numbers. BFCL's own prompting loop (``bfcl_prompting_driver.py``: the
  prerequisite conversations, then the questions, on BFCL's memory backend and its snapshot files), given
  the same replies, sends the same requests in every prerequisite conversation and question (the function
  prompt before the memory prompt, its memory dump after the prerequisite phase, each results message) and
  records the same results; ``bfcl evaluate`` on the exported run gives every question the verdict ``evals`` gave it, as
  does ``evals score`` reading the exported folder. BFCL's answers are committed
  (``fixtures/bfcl_prompting_memory.json``), made by

    EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/test_bfcl_prompting_agentic.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from test_bfcl_prompting_multi_turn import (
    MODEL,
    _export,
    _requests,
    _traces,
    _verdicts,
    bfcl_evaluate,
    bfcl_loop,
    digest,
    write_loop_fixture,
)

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "bfcl_prompting_memory.json"
STORE = "[core_memory_add(key='daycare_drop_off', value='8 AM')]"
# question -> its replies (memory_kv, the notetaker scenario)
QUESTIONS = {
    "memory_kv_130-notetaker-0": ["[core_memory_retrieve(key='daycare_drop_off')]",
                                  "{'answer': '08:00 AM', 'context': 'daycare_drop_off in core memory'}"],  # right
    "memory_kv_131-notetaker-1": ["{'answer': 'I do not know', 'context': 'I do not know'}"],  # answer_not_found
    "memory_kv_132-notetaker-2": [""],  # an empty reply: no last message
    "memory_kv_137-notetaker-7": ["[core_memory_list_keys()]"] * 21,  # BFCL's step limit: no last message
}


def _run(run_dir: Path, ids: list[str], model: str, categories: list[str], **options: Any) -> dict[str, Any]:
    from client import eventloop
    from evals.core.run import RunOptions, run_benchmark

    opts = RunOptions(benchmark="bfcl", model=model, strategy="prompting", run_dir=run_dir, task_ids=ids,
                      progress=False, concurrency=2, benchmark_options={"category": categories, **options})
    _, summary = eventloop.run(run_benchmark(opts))
    return summary


def scripted_replies() -> dict[str, list[str]]:
    """The prerequisite conversations' replies (the daycare one stores the drop-off time), then the questions'."""
    from evals.benchmarks.bfcl.agentic import read_memory

    _, prereqs = read_memory("memory_kv")
    out: dict[str, list[str]] = {}
    for conv in prereqs["notetaker"]:
        out[conv.id] = ["Noted."] * len(conv.turns)
        if conv.turns[0].startswith("Daycare"):
            out[conv.id] = [STORE, *out[conv.id]]
    return {**out, **QUESTIONS}


def _scripted(tmp: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, str]]:
    from evals.benchmarks.bfcl.agentic import read_memory

    entries, prereqs = read_memory("memory_kv")
    firsts = {e.id: e.question for e in entries} | {c.id: c.turns[0] for c in prereqs["notetaker"]}
    (tmp / "script.jsonl").write_text("".join(json.dumps({"messages": [{"role": "user", "content": firsts[i]}] + [
        {"role": "assistant", "content": t} for t in texts]}) + "\n" for i, texts in scripted_replies().items()))
    summary = _run(tmp / "run", list(QUESTIONS), f"replay:{tmp / 'script.jsonl'}", ["memory_kv"])
    return summary, _traces(tmp / "run"), _verdicts(tmp / "run")


def _prereq_texts(traces: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The prerequisite conversations' replies as the run recorded them (in the episode that ran them)."""
    out: dict[str, list[str]] = {}
    for trace in traces.values():
        for event in trace["events"]:
            if event["kind"] == "bfcl_memory_prereq":
                out[event["id"]] = [text for turn in event["turns"] for text in turn["bfcl_result"]]
    return out


def test_the_prompting_oracle_scores_100_on_memory(bfcl_code_data, tmp_path):
    from evals.benchmarks.bfcl.agentic import read_memory

    ids = [e.id for c in ("memory_kv", "memory_rec_sum") for e in read_memory(c)[0][:2]]
    summary = _run(tmp_path / "run", ids, "oracle", ["memory_kv", "memory_rec_sum"])
    assert summary["completed"] == 4 and summary["metrics"]["accuracy"] == 100.0
    trace = _traces(tmp_path / "run")[ids[0]]
    system = _requests(trace)[0][0]
    assert system[0] == "system" and system[1].startswith("You are an expert in composing functions.")
    assert "core_memory_retrieve" in system[1] and trace["outcome"]["calls"][0]["name"] == "archival_memory_list_keys"
    assert trace["outcome"]["bfcl_result"][0][-1].startswith("{'answer': ")


def test_the_prompting_oracle_scores_100_on_memory_vector(bfcl_data, tmp_path):
    from test_bfcl_memory_vector import _model

    from evals.benchmarks.bfcl.agentic import read_memory

    model = _model()  # skips, saying what is missing, without the model or the bfcl-vector extra
    ids = [e.id for e in read_memory("memory_vector")[0] if e.scenario == "notetaker"][:2]
    summary = _run(tmp_path / "run", ids, "oracle", ["memory_vector"], bfcl_embedding_model=model)
    assert summary["completed"] == 2 and summary["metrics"]["memory_vector"] == 100.0, summary.get("first_error")
    trace = _traces(tmp_path / "run")[ids[0]]
    assert trace["outcome"]["calls"][0]["name"] == "archival_memory_retrieve_all"  # decoded from the oracle's text


def test_the_prompting_oracle_scores_100_on_web_search(bfcl_data, monkeypatch, tmp_path):
    import pytest

    pytest.importorskip("serpapi", reason="the bfcl-web extra (google-search-results) is not installed")
    from loopback_http import serve_http
    from test_bfcl_web_search import KEY, _StandIn

    from evals.benchmarks.bfcl.web_search import read_web_search

    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    _StandIn.seen = []
    ids = [e.id for c in ("web_search_base", "web_search_no_snippet") for e in read_web_search(c)[:1]]
    with serve_http(_StandIn) as url:
        summary = _run(tmp_path / "run", ids, "oracle", ["web_search"], bfcl_search_endpoint=url)
    assert summary["completed"] == 2 and summary["metrics"]["accuracy"] == 100.0
    assert len(_StandIn.seen) == 2  # one search per episode, decoded from the oracle's text
    trace = _traces(tmp_path / "run")[ids[0]]
    system = _requests(trace)[0][0][1]
    assert system.startswith("You are an expert in composing functions.") and "For your final answer" in system


def test_a_scripted_web_search_model_gets_bfcls_verdicts(bfcl_data, bfcl_python, monkeypatch, tmp_path):
    import pytest

    pytest.importorskip("serpapi", reason="the bfcl-web extra (google-search-results) is not installed")
    from loopback_http import serve_http
    from test_bfcl_web_search import KEY, _StandIn

    from evals.benchmarks.bfcl.web_search import oracle_answer, read_web_search

    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    right, wrong, silent = read_web_search("web_search_base")[:3]
    search = "[search_engine_query(keywords='{}')]"
    script = {right: [search.format("tea"), oracle_answer(right)],  # searches, then answers right
              wrong: [search.format("tea"), "{'answer': 'I do not know', 'context': 'I do not know'}"],
              silent: [search.format("tea")] * 21}  # searches until BFCL's step limit: no last message
    (tmp_path / "script.jsonl").write_text("".join(json.dumps({"messages": [{"role": "user", "content": e.question}] + [
        {"role": "assistant", "content": t} for t in texts]}) + "\n" for e, texts in script.items()))
    with serve_http(_StandIn) as url:
        summary = _run(tmp_path / "run", [e.id for e in script], f"replay:{tmp_path / 'script.jsonl'}",
                       ["web_search_base"], bfcl_search_endpoint=url)
    ours = _verdicts(tmp_path / "run")
    assert summary["metrics"]["web_search_base"] == round(100 / 3, 2)
    assert ours == {right.id: "", wrong.id: "agentic:answer_not_found", silent.id: "agentic:no_last_message"}
    scored = bfcl_evaluate(bfcl_python, _export(tmp_path / "run", tmp_path / "result"), tmp_path, ["web_search_base"])
    assert scored["verdicts"] == ours


def test_a_scripted_prompting_memory_model_gets_the_hand_computed_numbers(bfcl_code_data, tmp_path):
    summary, traces, ours = _scripted(tmp_path)
    assert summary["completed"] == 4 and summary["metrics"]["failed_episodes"] == 0
    assert summary["metrics"]["memory_kv"] == 25.0  # one right of four
    assert ours == {"memory_kv_130-notetaker-0": "", "memory_kv_131-notetaker-1": "agentic:answer_not_found",
                    "memory_kv_132-notetaker-2": "agentic:no_last_message",
                    "memory_kv_137-notetaker-7": "agentic:no_last_message"}
    assert traces["memory_kv_137-notetaker-7"]["outcome"]["stop"] == "max_turns"
    # the stored fact reached the question's system prompt (BFCL's memory dump after the prerequisite phase)
    assert "daycare_drop_off" in _requests(traces["memory_kv_131-notetaker-1"])[0][0][1]
    committed = json.loads(FIXTURE.read_text())
    for task_id, trace in traces.items():
        assert digest(_requests(trace)) == committed["loop"][task_id]["requests_sha256"], task_id
        assert trace["outcome"]["bfcl_result"] == committed["loop"][task_id]["result"], task_id
    for conv_id, texts in _prereq_texts(traces).items():
        assert texts == [t for turn in committed["loop"][conv_id]["result"] for t in turn], conv_id
    assert ours == committed["verdicts"]
    from client import eventloop
    from evals.core.formats import import_predictions
    from evals.core.run import score_run_dir

    result = _export(tmp_path / "run", tmp_path / "result")
    imported = import_predictions(result / MODEL, "bfcl-official", "bfcl", tmp_path / "imported")
    eventloop.run(score_run_dir(imported))
    assert _verdicts(imported) == ours


def test_bfcls_own_loop_and_evaluator_agree_with_the_scripted_memory_run(bfcl_code_data, bfcl_python, tmp_path,
                                                                       monkeypatch):
    from evals.benchmarks.bfcl import memory_run

    # the prerequisite conversations' requests, as their recorder is given them (the trace keeps their results)
    seen: dict[str, list[Any]] = {}
    record = memory_run._Conversation.model_request

    def noted(self: Any, *, messages: Any, **kw: Any) -> None:
        seen.setdefault(self.task_id, []).append([[m.to_dict()["role"], m.to_dict()["text"]] for m in messages])
        record(self, messages=messages, **kw)

    monkeypatch.setattr(memory_run._Conversation, "model_request", noted)
    summary, traces, ours = _scripted(tmp_path)
    theirs = bfcl_loop(bfcl_python, scripted_replies(), tmp_path)
    for task_id, trace in traces.items():
        assert _requests(trace) == theirs[task_id]["requests"], task_id
        assert trace["outcome"]["bfcl_result"] == theirs[task_id]["result"], task_id
    assert len(seen) == 5
    for conv_id, texts in _prereq_texts(traces).items():
        assert texts == [t for turn in theirs[conv_id]["result"] for t in turn], conv_id
        assert seen[conv_id] == theirs[conv_id]["requests"], conv_id
    scored = bfcl_evaluate(bfcl_python, _export(tmp_path / "run", tmp_path / "result"), tmp_path, ["memory_kv"])
    assert scored["verdicts"] == ours
    assert round(100 * scored["scores"]["memory_kv"]["accuracy"], 2) == summary["metrics"]["memory_kv"]


def main() -> None:
    write_loop_fixture(FIXTURE, Path(__file__).name, _scripted, scripted_replies(), ["memory_kv"])


if __name__ == "__main__":
    sys.exit(main())
