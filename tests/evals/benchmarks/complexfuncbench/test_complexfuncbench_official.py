"""The official decisions and metrics on hand-made predictions, through the real pipeline.

A scripted model (an OpenAI-compatible stand-in, through the real openai SDK) plays the turns of
``fixtures/predictions.json`` over the real replay server; the call judge and the answer judge are
the same stand-in. What the official harness decided and printed for the same turns is in
``fixtures/expected.json`` (how it was made: ``fixtures/README.md``).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest
from fake_providers import FakeProviderServer, openai_chat

from client.runs import RunDir
from evals.core.formats import export_run, import_predictions
from evals.core.run import RunOptions, run_benchmark, score_run_dir

FIX = Path(__file__).resolve().parent / "fixtures"
EXPECTED = json.loads((FIX / "expected.json").read_text())
PREDICTIONS = json.loads((FIX / "predictions.json").read_text())
SAMPLES = [json.loads(line) for line in (FIX / "samples.jsonl").read_text().splitlines() if line.strip()]
BY_QUERY = {s["conversations"][0]["content"]: s["id"] for s in SAMPLES}


def _printed(prefix: str):
    line = next(x for x in EXPECTED["printed"] if x.startswith(prefix))
    return ast.literal_eval(line.split(": ", 1)[1])


def _kind(message):
    if message == "Success.":
        return message
    if isinstance(message, dict):
        return message.get("error_type")
    return [m.get("error_type") if isinstance(m, dict) else m for m in message]


def _block(prompt: str, label: str):
    m = re.search(label + r":\n```JSON\n(.*?)\n```", prompt, re.S)
    assert m, prompt
    return json.loads(m.group(1))


def stand_in(body: dict):
    msgs = body["messages"]
    if body.get("tools"):  # the model under test
        user = next(m["content"] for m in msgs if m["role"] == "user")
        done = sum(1 for m in msgs if m["role"] == "assistant" and m.get("tool_calls"))
        turn = PREDICTIONS[BY_QUERY[user]][done]
        if "text" in turn:
            return openai_chat(turn["text"])
        return openai_chat(tool_calls=[(c["name"], c["arguments"]) for c in turn["calls"]])
    system, prompt = msgs[0]["content"], msgs[-1]["content"]
    if "Function call 1" in prompt:  # the call judge: equal when the calls differ only in case
        a, b = _block(prompt, "Function call 1"), _block(prompt, "Function call 2")
        eq = json.dumps(a, sort_keys=True).lower() == json.dumps(b, sort_keys=True).lower()
        return openai_chat('```JSON\n{"is_equal": ' + ("true" if eq else "false") + ', "reason": "stand-in"}\n```')
    tag = "c" if system.startswith("COMPLETENESS") else "k"
    score = re.search(r"\[" + tag + r"=(\d)\]", prompt.rsplit("response: ", 1)[1]).group(1)
    return openai_chat('```JSON\n{"score": ' + score + ', "reason": "stand-in"}\n```')


@pytest.fixture
def cfb_data(tmp_path, monkeypatch, data_dir):
    src = data_dir / "complexfuncbench"
    if not (src / "exact_match_values.json").is_file():
        pytest.skip("ComplexFuncBench data is not in the data directory")
    root = tmp_path / "data"
    (root / "complexfuncbench" / "prompts").mkdir(parents=True)
    for name in ("exact_match_values.json", "sample_Car-Rental-9.json", "tool_info.json"):
        shutil.copy(src / name, root / "complexfuncbench" / name)
    for name in ("compare.py", "response.py"):
        shutil.copy(FIX / "prompts" / name, root / "complexfuncbench" / "prompts" / name)
    monkeypatch.setenv("EVALS_DATA_DIR", str(root))
    return root


async def test_scripted_turns_get_the_official_decisions_and_metrics(cfb_data, tmp_path):
    with FakeProviderServer() as fake:
        fake.openai.respond_with(stand_in)
        opts = RunOptions(
            benchmark="complexfuncbench", model="openai:scripted", run_dir=tmp_path / "run", base_url=fake.openai_base_url,
            progress=False, retry_base_delay=0.05, judge_model="openai:judge", max_turns=8,
            benchmark_options={"samples_file": str(FIX / "samples.jsonl"), "call_judge": "openai:call-judge",
                               "call_judge_base_url": fake.openai_base_url},
        )
        _result, summary = await run_benchmark(opts)
    traces = {t["task_id"]: t for t in RunDir.open(tmp_path / "run").iter_traces()}
    for sid, want in EXPECTED["samples"].items():
        official = traces[sid]["outcome"]["official"]
        assert _kind(official["result"]["message"]) == want["message"], sid
        assert official["count_dict"] == want["count_dict"], sid
    scores = {json.loads(line)["task_id"]: json.loads(line)["score"]
              for line in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()}
    for sid, want in EXPECTED["samples"].items():
        got = scores[sid]["details"]["official"]["resp_eval"]
        assert (None if got is None else {k: v["score"] for k, v in got.items()}) == want["resp_eval"], sid

    m = summary["metrics"]
    assert m["call_accuracy"] == round(_printed("Overall Call Accuracy"), 2)
    for domain, value in _printed("Domain Call Accuracy").items():
        assert m[f"call_accuracy_{domain.lower().replace('-', '_')}"] == round(value, 2), domain
    successes = {d: round(v * (400 if d == "Cross" else 150) / 100) for d, v in _printed("Domain Success Rate").items()}
    assert m["success_rate"] == round(100 * sum(successes.values()) / len(SAMPLES), 2)
    assert m["completeness"] == round(_printed("Complete Score"), 2)
    assert m["correctness"] == round(_printed("Correct Score"), 2)
    assert summary["full_set"] is False and "not comparable" in summary["dataset_note"]
    rescored = await score_run_dir(tmp_path / "run")  # no judge: its stored decisions are reused
    assert rescored["metrics"] == m and rescored["totals"]["judge"]["missing"] == 0

    # what the model read, and the decisions stored in the trace
    cross = traces["Cross-1"]
    decided = [d for t in cross["outcome"]["official"]["turns"] for d in t["decisions"]]
    assert decided[0]["matcher"] == "llm" and decided[0]["llm"]["is_equal"] is True
    assert {d["matcher"] for d in decided[1:]} == {"rule"}
    called = [e["name"] for e in cross["events"] if e["kind"] == "tool_call"]
    assert "Get_Hotel_Reviews-Tips-" in called  # served under its alias ...
    conv = json.dumps(cross["outcome"]["official"]["conversation"])
    assert "Get_Hotel_Reviews(Tips)" in conv and "Get_Hotel_Reviews-Tips-" not in conv  # ... recorded by its name
    attraction = [e for e in traces["Attraction-1"]["events"] if e["kind"] == "tool_call"]
    assert json.loads(attraction[2]["result_text"]) == {
        "error": "Function Get_Attraction_Details requires parameters ['slug'], but [] do not provide {'slug'}"}
    assert json.loads(attraction[1]["result_text"])["content"].startswith("There is a problem with your api call")
    flights = traces["Flights-2"]
    assert flights["outcome"]["stop"] == "on_turn" and flights["final_answer"] is None

    # the official result format: written from the run, and read back (a published run re-scored)
    [written] = export_run(tmp_path / "run", "complexfuncbench-official", tmp_path / "export")
    ours = {r["id"]: r for r in map(json.loads, written.read_text().splitlines())}
    theirs = {r["id"]: r for r in map(json.loads, (FIX / "official_result.jsonl").read_text().splitlines())}
    assert set(ours) == set(theirs)
    for sid, rec in theirs.items():
        assert ours[sid]["count_dict"] == rec["count_dict"] and _kind(ours[sid]["message"]) == _kind(rec["message"])
        assert [t["role"] for t in ours[sid]["gen_convs"]] == [t["role"] for t in rec["gen_convs"]], sid
    imported = import_predictions(FIX / "official_result.jsonl", "complexfuncbench-official", "complexfuncbench",
                                  tmp_path / "imported", options={"samples_file": str(FIX / "samples.jsonl")})
    again = await score_run_dir(imported)
    assert {k: again["metrics"][k] for k in m} == m  # no judge asked: the file's judgements are used


async def test_replaying_the_official_logs_through_our_server_gives_the_official_outcomes(cfb_data, tmp_path):
    """``--model replay:FILE`` plays the assistant turns the official harness logged (its result
    file's ``gen_convs``) through our replay server: the same decisions, sample by sample. A turn
    the official harness did not log (a call after the last gold call, an undecodable call) cannot
    be replayed: that episode fails and says so."""
    with FakeProviderServer() as fake:
        fake.openai.respond_with(stand_in)  # the call judge only
        opts = RunOptions(
            benchmark="complexfuncbench", model=f"replay:{FIX / 'official_result.jsonl'}", run_dir=tmp_path / "run",
            progress=False, max_turns=8, max_consecutive_errors=0,
            benchmark_options={"samples_file": str(FIX / "samples.jsonl"), "call_judge": "openai:call-judge",
                               "call_judge_base_url": fake.openai_base_url},
        )
        _result, summary = await run_benchmark(opts)
    traces = {t["task_id"]: t for t in RunDir.open(tmp_path / "run").iter_traces()}
    unlogged = {"Hotels-2", "Flights-2"}
    for sid, want in EXPECTED["samples"].items():
        if sid in unlogged:
            assert traces[sid]["status"] == "errored" and "assistant turn" in json.dumps(traces[sid]["error"])
            continue
        official = traces[sid]["outcome"]["official"]
        assert _kind(official["result"]["message"]) == want["message"], sid
        assert official["count_dict"] == want["count_dict"], sid
    assert summary["errored"] == 2


async def test_an_official_result_file_is_scored_from_the_file_alone_as_print_results_scores_it(tmp_path, monkeypatch):
    """No dataset at all (an empty data directory): ``evals score FILE --format
    complexfuncbench-official`` scores ``official_result.jsonl`` as ``print_results.py`` does (its
    printout, ``expected.json``: success rates over 150 / 400 / 1,000, call accuracy over the file's
    records, the file's judgements); the summary says what needs the dataset."""
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path / "empty"))
    run = import_predictions(FIX / "official_result.jsonl", "complexfuncbench-official", "complexfuncbench",
                             tmp_path / "run")
    summary = await score_run_dir(run)
    m = summary["metrics"]
    assert summary["tasks"] == 1000 and summary["completed"] == 8 and summary["full_set"] is True
    assert m["success_rate"] == round(_printed("Overall Success Rate"), 2) == 0.3
    domain_success = _printed("Domain Success Rate")  # only the domains with a success are printed
    for domain in ("Hotels", "Flights", "Car-Rental", "Attraction", "Cross"):
        key = domain.lower().replace("-", "_")
        assert m[f"success_rate_{key}"] == round(domain_success.get(domain, 0.0), 2), domain
    assert m["call_accuracy"] == round(_printed("Overall Call Accuracy"), 2) == 68.18
    for domain, value in _printed("Domain Call Accuracy").items():
        assert m[f"call_accuracy_{domain.lower().replace('-', '_')}"] == round(value, 2), domain
    assert m["completeness"] == round(_printed("Complete Score"), 2)
    assert m["correctness"] == round(_printed("Correct Score"), 2)
    assert summary["options"]["results_file"] == str((FIX / "official_result.jsonl").resolve())
    assert summary["scored_from"] == "results_file" and "Needs the dataset: judging answers" in summary["dataset_note"]
    with pytest.raises(ValueError, match="without the dataset"):
        await run_benchmark(RunOptions(benchmark="complexfuncbench", model="oracle", run_dir=tmp_path / "x",
                                       progress=False, benchmark_options={"results_file": str(FIX / "official_result.jsonl")}))
