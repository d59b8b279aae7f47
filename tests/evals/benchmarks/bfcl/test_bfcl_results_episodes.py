"""BFCL's own multi-turn and memory result files (``evals score PATH --format bfcl --benchmark bfcl``):
crafted result lines of the shapes ``inference_multi_turn_FC`` writes (per turn, each step the
model's calls or its text; an inference error's text), for a sample of the multi-turn entries and
every memory question, get the verdicts of BFCL's own eval runner and checkers (run in .ci/bfcl-venv
by ``bfcl_official_driver.py``, each step decoded by BFCL's ``convert_to_function_call``); ``evals
export`` writes them back (and a live oracle run's episodes in the same shape, which BFCL scores
right); lines BFCL's runner cannot read are refused with FILE:LINE, exit 2; the viewer shows an
imported episode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from official_checker import run_official

from evals.benchmarks.bfcl.agentic import read_memory
from evals.benchmarks.bfcl.files import MEMORY_SERVED, MEMORY_VECTOR, MULTI_TURN, WEB_SEARCH
from evals.benchmarks.bfcl.multi_turn import MultiTurnEntry, gold_steps, read_multi_turn
from evals.benchmarks.bfcl.results import read_results
from evals.benchmarks.bfcl.web_search import read_web_search

ROOT = Path(__file__).resolve().parents[4]
PER_CATEGORY = 6  # multi-turn entries per category: every shape below lands on a few entries of each


def _evals(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT, check=False)


def _need_mpmath(bfcl_python: Path) -> None:
    if subprocess.run([str(bfcl_python), "-c", "import mpmath, tenacity"], capture_output=True, timeout=60,
                      check=False).returncode != 0:
        why = f"{bfcl_python.parent.parent} lacks mpmath and tenacity: rerun scripts/bfcl_env.sh"
        pytest.fail(why) if os.environ.get("EVALS_REQUIRE_BFCL") == "1" else pytest.skip(why)


def _multi_turn_result(entry: MultiTurnEntry, k: int) -> Any:
    """One of the shapes a multi-turn ``result`` takes (by ``k``), from the entry's ground truth."""
    gold = gold_steps(entry)
    step = [[{c["name"]: json.dumps(c["arguments"])} for c in turn] for turn in gold]
    right = [[s, "Done."] if s else ["Nothing to do."] for s in step]
    busy = next(i for i, s in enumerate(step) if s)
    shapes: list[Any] = []
    shapes.append(right)  # right, with a text reply closing each turn
    shapes.append([[[{c["name"]: c["arguments"]} for c in turn]] for turn in gold])  # arguments as objects
    shapes.append([[{k: v for d in s for k, v in d.items()}] if s else [] for s in step])  # one item, every key a call
    shapes.append([[*(([{"ls": "{not json"}], 7, None, [3], [{"cd": "[]"}]) if i == busy else ()), *r]
                   for i, r in enumerate(right)])  # undecodable steps beside the right ones: dropped
    shapes.append([r if i != busy else "I did it." for i, r in enumerate(right)])  # a turn that is a text
    shapes.append([r if i != busy else {"a": 1} for i, r in enumerate(right)])  # a turn that is an object
    shapes.append(right[:-1])  # a turn too few: force-terminated
    shapes.append("Error during inference: boom")  # an inference error
    shapes.append([s[:-1] if i == busy else s for i, s in enumerate(step)])  # the turn's last call dropped
    shapes.append([[s[0]] + [[c] for c in s[1:]] if s else [] for s in step])  # the calls one step each
    shapes.append([[*s, *s[:1]] if i == busy else s for i, s in enumerate(step)])  # a call made twice
    shapes.append([s if i != busy else [] for i, s in enumerate(step)])  # a turn left empty
    return shapes[k % len(shapes)]


def _memory_result(answer: str, k: int) -> Any:
    """One of the shapes a memory ``result`` takes (by ``k``)."""
    call = [{"core_memory_list_keys": "{}"}]
    shapes: list[Any] = [
        [[call, str({"answer": answer, "context": "x"})]],  # right
        [[f"It is {answer.upper()}."]],  # the text only
        [[call, call]],  # only calls: no last message
        [[call, [{"f": "not json"}]]],  # an undecodable call: BFCL checks it as str() of its first item
        [[call, ""]],  # an empty text: no last message
        [[call, [""]]],  # a list holding an empty text: a message BFCL checks, found empty
        "Error during inference: boom",  # an inference error
        [[answer], [answer]],  # two turns: not a memory result
        [f"the answer is {answer}"],  # the turn is a text: BFCL iterates its characters
        [[answer, call]],  # calls after the reply: the reply is still the last non-call message
        [[{"answer": 1}]],  # an object whose value is no arguments: str() of it
        [[[answer]]],  # a list holding the text
        [[call, ["I do not know", answer]]],  # a list of texts: BFCL checks its first item only
        [[call, None]],  # null: no last message
        [[call, 5]],  # a number: checked as "5"
    ]
    return shapes[k % len(shapes)]


@pytest.fixture
def imported(bfcl_code_data: Path, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """result/<model>/... multi-turn and memory result files (a prerequisite conversations' file too) and BFCL's cases."""
    model = tmp_path / "result" / "gpt-4o-2024-11-20-FC"
    cases: list[dict[str, Any]] = []
    n = 0
    for category in MULTI_TURN:
        lines = []
        for entry in read_multi_turn(category)[:PER_CATEGORY]:
            result = _multi_turn_result(entry, n)
            n += 1
            lines.append(json.dumps({"id": entry.id, "result": result, "latency": [[1.0]]}))
            cases.append({"id": entry.id, "category": category, "multi_turn": True, "raw": True, "result": result,
                          "entry": {"id": entry.id, "initial_config": entry.initial_config,
                                    "involved_classes": list(entry.involved_classes)},
                          "ground_truth": [list(t) for t in entry.ground_truth]})
        path = model / "multi_turn" / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    for category in (*MEMORY_SERVED, MEMORY_VECTOR):
        backend = category.removeprefix("memory_")
        lines = []
        for entry in read_memory(category)[0]:
            result = _memory_result(entry.answers[0], n)
            n += 1
            lines.append(json.dumps({"id": entry.id, "result": result}))
            cases.append({"id": entry.id, "category": category, "raw": True, "result": result,
                          "possible_answer": list(entry.answers)})
        path = model / "agentic" / "memory" / backend / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        (path.parent / f"BFCL_v4_{category}_prereq_result.json").write_text(
            json.dumps({"id": f"{category}_prereq_0-customer-0", "result": [["Noted."]]}) + "\n")
    for category in WEB_SEARCH:  # the same shapes, read as memory's: BFCL's agentic runner checks both alike
        lines = []
        for web in read_web_search(category)[:20]:
            result = _memory_result(web.answers[0], n)
            n += 1
            lines.append(json.dumps({"id": web.id, "result": result}))
            cases.append({"id": web.id, "category": category, "raw": True, "result": result,
                          "possible_answer": list(web.answers)})
        (model / "agentic" / f"BFCL_v4_{category}_result.json").write_text("\n".join(lines) + "\n")
    return model, cases


def _verdicts(run: Path) -> dict[str, dict[str, Any]]:
    scores = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    return {s["task_id"]: {"valid": s["score"]["details"]["verdict"]["valid"],
                           "error_type": s["score"]["details"]["verdict"]["error_type"]} for s in scores}


def test_imported_multi_turn_and_memory_results_get_bfcls_verdicts(imported, bfcl_python, tmp_path):
    _need_mpmath(bfcl_python)
    model, cases = imported
    theirs = run_official(bfcl_python, {"cases": cases}, tmp_path, {**os.environ,
                                                                     "BFCL_PROJECT_ROOT": str(tmp_path / "bfcl-root")})
    run = tmp_path / "run"
    done = _evals("score", str(model), "--format", "bfcl", "--benchmark", "bfcl", "--out", str(run), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    ours = _verdicts(run)
    want = {k: {"valid": v["valid"], "error_type": v["error_type"]} for k, v in theirs["verdicts"].items()}
    differ = {k: (ours.get(k), v) for k, v in want.items() if ours.get(k) != v}
    assert not differ, f"{len(differ)} of {len(want)} verdicts differ, e.g. {list(differ.items())[:6]}"
    assert set(ours) == set(want)  # the prerequisite conversations' file is skipped, as bfcl evaluate skips it
    for category, accuracy in theirs["accuracy"].items():
        assert summary["metrics"][category] == round(100 * accuracy, 2), category
    kinds = {v["error_type"] for v in want.values()}
    assert kinds >= {"", "multi_turn:instance_state_mismatch", "multi_turn:empty_turn_model_response",
                     "multi_turn:force_terminated", "multi_turn:inference_error", "agentic:answer_not_found",
                     "agentic:no_last_message", "agentic:inference_error"}, kinds
    config = json.loads((run / "config.json").read_text())
    assert config["model"] == "gpt-4o-2024-11-20-FC" and config["imported"]["format"] == "bfcl"

    # evals export writes the same lines back; scored again, the same numbers
    out = tmp_path / "export"
    done = _evals("export", str(run), "--format", "bfcl-official", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "gpt-4o-2024-11-20-FC" / "agentic" / "memory" / "kv" / "BFCL_v4_memory_kv_result.json").is_file()
    assert (out / "gpt-4o-2024-11-20-FC" / "agentic" / "memory" / "vector" / "BFCL_v4_memory_vector_result.json").is_file()
    assert (out / "gpt-4o-2024-11-20-FC" / "agentic" / "BFCL_v4_web_search_no_snippet_result.json").is_file()
    again = read_results(out)
    assert {k: t["outcome"]["bfcl_result"] for k, t in again.traces.items()} == {c["id"]: c["result"] for c in cases}
    rerun = tmp_path / "run2"
    done = _evals("score", str(out), "--format", "bfcl-official", "--benchmark", "bfcl", "--out", str(rerun), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert _verdicts(rerun) == ours


async def test_a_live_run_exports_multi_turn_and_memory_results_bfcl_scores_right(bfcl_code_data, bfcl_python,
                                                                                     tmp_path):
    from evals.core.formats import export_run
    from evals.core.run import RunOptions, run_benchmark

    _need_mpmath(bfcl_python)
    ids = ["multi_turn_miss_func_0", "multi_turn_miss_func_1", "memory_rec_sum_0-customer-0"]
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=tmp_path / "run", task_ids=ids, transport="http",
                      progress=False, benchmark_options={"category": ["multi_turn_miss_func", "memory_rec_sum"]})
    await run_benchmark(opts)
    written = export_run(tmp_path / "run", "bfcl-official", tmp_path / "export")
    assert sorted(p.parent.name for p in written) == ["multi_turn", "rec_sum"]
    lines = {}
    for path in written:
        lines.update((row["id"], row["result"]) for row in map(json.loads, path.read_text().splitlines()))
    entries = {e.id: e for e in read_multi_turn("multi_turn_miss_func")}
    answers = {e.id: e.answers for e in read_memory("memory_rec_sum")[0]}
    cases = []
    for entry_id, result in lines.items():
        if entry_id in entries:
            e = entries[entry_id]
            cases.append({"id": entry_id, "category": e.category, "multi_turn": True, "raw": True, "result": result,
                          "entry": {"id": e.id, "initial_config": e.initial_config,
                                    "involved_classes": list(e.involved_classes)},
                          "ground_truth": [list(t) for t in e.ground_truth]})
        else:
            cases.append({"id": entry_id, "category": "memory_rec_sum", "raw": True, "result": result,
                          "possible_answer": list(answers[entry_id])})
    assert sorted(c["id"] for c in cases) == sorted(ids)
    theirs = run_official(bfcl_python, {"cases": cases}, tmp_path)
    assert all(v["valid"] for v in theirs["verdicts"].values()), theirs["verdicts"]


@pytest.mark.parametrize(("name", "line", "expected"), [
    ("multi_turn_base", '{"id": "multi_turn_base_1", "result": [[], 5]}', "turn 1 is 5, not a list"),
    ("multi_turn_base", '{"id": "multi_turn_base_1", "result": [null]}', "turn 0 is null, not a list"),
    ("multi_turn_base", '{"id": "multi_turn_miss_func_1", "result": []}', "is not an entry of BFCL v4's multi_turn_base"),
    ("memory_kv", '{"id": "memory_kv_1-customer-1", "result": [7]}', "the question's turn is 7, not a list"),
    ("memory_kv", '{"id": "memory_rec_sum_0-customer-0", "result": [[]]}', "is not an entry of BFCL v4's memory_kv"),
])
def test_a_bad_multi_turn_or_memory_line_is_refused_with_file_and_line(bfcl_data, tmp_path, name, line, expected):
    first = "multi_turn_base_0" if name == "multi_turn_base" else "memory_kv_0-customer-0"
    path = tmp_path / f"BFCL_v4_{name}_result.json"
    path.write_text(json.dumps({"id": first, "result": [[]]}) + "\n" + line + "\n")
    done = _evals("score", str(path), "--format", "bfcl", "--benchmark", "bfcl", "--out", str(tmp_path / "run"),
                  "--bfcl-model", "gpt-4o-2024-11-20-FC", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"{path}:2: " in done.stderr and expected in done.stderr
    assert not (tmp_path / "run" / "traces.jsonl").exists()


def test_the_viewer_shows_imported_multi_turn_and_memory_episodes(bfcl_code_data, tmp_path):
    from evals.view.site import Site

    model = tmp_path / "result" / "gpt-4o-2024-11-20-FC"
    entry = read_multi_turn("multi_turn_base")[0]
    gold = gold_steps(entry)
    wrong = [[[{c["name"]: json.dumps(c["arguments"])} for c in turn]] for turn in gold]
    wrong[-1] = [["I could not do it."]]  # the last turn: no call
    (model / "multi_turn").mkdir(parents=True)
    (model / "multi_turn" / "BFCL_v4_multi_turn_base_result.json").write_text(
        json.dumps({"id": entry.id, "result": wrong}) + "\n")
    question = read_memory("memory_kv")[0][0]
    (model / "agentic" / "memory" / "kv").mkdir(parents=True)
    (model / "agentic" / "memory" / "kv" / "BFCL_v4_memory_kv_result.json").write_text(
        json.dumps({"id": question.id, "result": [[f"It is {question.answers[0]}."]]}) + "\n")
    done = _evals("score", str(model), "--format", "bfcl", "--benchmark", "bfcl", "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr[-2000:]
    site = Site([tmp_path / "run"])
    rid = next(iter(site.views))
    turns, *rest = site.episode(rid, entry.id)["sections"]
    assert [row[0] for row in turns["rows"]] == list(range(len(gold)))
    assert turns["rows"][0][2] != "(none)" and turns["rows"][-1][2] == "(none)"  # the model's calls, turn by turn
    assert any("empty_turn_model_response" in str(s.get("text")) for s in rest)
    memory = site.episode(rid, question.id)["sections"]
    assert memory[0]["rows"][1][2] == "right" and any("as imported" in str(s.get("title")) for s in memory)
