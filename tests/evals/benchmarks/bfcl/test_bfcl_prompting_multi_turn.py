"""BFCL's multi-turn categories with ``--strategy prompting``, checked against BFCL's own code.

* BFCL's own prompting loop (``inference_multi_turn_prompting`` of its ``OpenAICompletionsHandler``, run in
  .ci/bfcl-venv by ``bfcl_prompting_driver.py``), given the same replies as our episode, sends the same
  requests (every message, the system prompt, the held-out turn's prompt and each results message included)
  and records the same result;
* the prompting oracle scores 100 on the first entries of every multi-turn category;
* a scripted model with known mistakes (``replay:``) gets the hand-computed numbers, and its exported run,
  scored by ``bfcl evaluate`` itself (``bfcl_evaluate_driver.py``, as a prompting model's folder), gives every
  entry the verdict and error type ``evals`` gave it, as does ``evals score`` reading the exported folder.

BFCL's answers on the scripted run are also committed (``fixtures/bfcl_prompting_multi_turn.json``: its verdicts,
its results and a digest of its requests per entry), made by

    EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/test_bfcl_prompting_multi_turn.py

so the comparison holds where the venv is not made.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
LOOP_DRIVER = HERE / "bfcl_prompting_driver.py"
EVALUATE_DRIVER = HERE / "bfcl_evaluate_driver.py"
FIXTURE = HERE / "fixtures" / "bfcl_prompting_multi_turn.json"
MODEL = "gpt-4o-2024-11-20"  # a prompting model of BFCL's registry: its handler decodes with decode_execute's default
CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
RIGHT = ("multi_turn_base_154", "multi_turn_miss_func_3", "multi_turn_miss_param_11", "multi_turn_miss_param_13")
# entries whose first user message no other entry has (the replay file is keyed by it) -> the mistake made
MISTAKES = {
    "multi_turn_base_197": "turn 0 answered in words: no call",
    "multi_turn_miss_func_11": "turn 2 posts the wrong content",
    "multi_turn_long_context_151": "turn 0 makes one call 21 times: BFCL's step limit",
}
TWEET = "post_tweet(content='file1.txt, file2.txt',tags=['#fileshowcase'])"


def _gold_texts(entry: Any) -> list[list[str]]:
    """Per turn, the oracle's replies: the gold calls as Python calls, then "Done." (only "Done." without gold)."""
    from evals.benchmarks.bfcl.multi_turn import gold_steps
    from evals.benchmarks.bfcl.prompting import oracle_text
    from evals.benchmarks.bfcl.prompting_turns import DONE

    return [[oracle_text(step, "python", False), DONE] if step else [DONE] for step in gold_steps(entry)]


def scripted_replies() -> dict[str, list[str]]:
    """Each scripted entry's replies, in order (RIGHT: the gold; MISTAKES: as said there)."""
    from evals.benchmarks.bfcl.multi_turn import load_multi_turn

    entries = {e.id: e for e in load_multi_turn(CATEGORIES) if e.id in RIGHT or e.id in MISTAKES}
    turns = {i: _gold_texts(e) for i, e in entries.items()}
    # a reply in a code fence, the calls spread out: BFCL's decoder strips the fence and reads them
    text = turns["multi_turn_miss_param_13"][1][0]
    turns["multi_turn_miss_param_13"][1][0] = "```\n" + text.replace(", ", ",\n  ") + "\n```"
    turns["multi_turn_base_197"][0] = ["I cannot book anything for you."]
    turns["multi_turn_miss_func_11"][2][0] = "[" + TWEET.replace("file1.txt, file2.txt", "file1.txt") + "]"
    first = turns["multi_turn_long_context_151"][0][0].split("), ")[0].removeprefix("[")
    turns["multi_turn_long_context_151"] = [[f"[{first})]"] * 21]
    return {i: [text for turn in turns[i] for text in turn] for i in [*RIGHT, *MISTAKES]}


def _replay_file(path: Path, replies: dict[str, list[str]]) -> None:
    from evals.benchmarks.bfcl.multi_turn import load_multi_turn

    firsts = {e.id: str(e.turns[0][0]["content"]) for e in load_multi_turn(CATEGORIES) if e.id in replies}
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": firsts[i]}] + [
        {"role": "assistant", "content": text} for text in texts]}) + "\n" for i, texts in replies.items()))


def _run(run_dir: Path, ids: list[str], model: str) -> dict[str, Any]:
    from client import eventloop
    from evals.core.run import RunOptions, run_benchmark

    opts = RunOptions(benchmark="bfcl", model=model, strategy="prompting", run_dir=run_dir, task_ids=ids,
                      progress=False, concurrency=2, benchmark_options={"category": list(CATEGORIES)})
    _, summary = eventloop.run(run_benchmark(opts))
    return summary


def _traces(run: Path) -> dict[str, dict[str, Any]]:
    return {t["task_id"]: t for t in map(json.loads, (run / "traces.jsonl").read_text().splitlines())}


def _verdicts(run: Path) -> dict[str, str]:
    return {s["task_id"]: s["score"]["details"]["verdict"]["error_type"] or ""
            for s in map(json.loads, (run / "scores.jsonl").read_text().splitlines())}


def _requests(trace: dict[str, Any]) -> list[list[list[str]]]:
    from client.runs import request_history

    return [[[m["role"], m["text"]] for m in r["messages"]] for r in request_history(trace)]


def digest(requests: Any) -> str:
    return hashlib.sha256(json.dumps(requests).encode()).hexdigest()


def bfcl_loop(bfcl_python: Path, replies: dict[str, list[str]], tmp: Path) -> dict[str, Any]:
    """BFCL's own prompting loop given ``replies`` (``bfcl_prompting_driver.py``)."""
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    done = subprocess.run([str(bfcl_python), str(LOOP_DRIVER), str(script)], capture_output=True, text=True,
                          timeout=600, check=False, env={**os.environ, "BFCL_PROJECT_ROOT": str(tmp / "bfcl-project")})
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def bfcl_evaluate(bfcl_python: Path, result: Path, tmp: Path, categories: Any = CATEGORIES) -> dict[str, Any]:
    """``bfcl evaluate`` on an exported folder, as the prompting model ``MODEL`` (``bfcl_evaluate_driver.py``)."""
    done = subprocess.run([str(bfcl_python), str(EVALUATE_DRIVER), str(result), str(tmp / "score"), MODEL,
                           *categories], capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "BFCL_PROJECT_ROOT": str(tmp / "bfcl-evaluate")})
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _export(run: Path, out: Path) -> Path:
    from evals.core.formats import export_run

    export_run(run, "bfcl-official", out, model_name=MODEL)
    return out


def test_the_prompting_oracle_scores_100_and_runs_bfcls_own_loop(bfcl_code_data, bfcl_python, tmp_path):
    from evals.benchmarks.bfcl.multi_turn import load_multi_turn

    ids = [e.id for c in CATEGORIES for e in load_multi_turn((c,))[:2]]
    summary = _run(tmp_path / "run", ids, "oracle")
    assert summary["completed"] == len(ids) and summary["metrics"]["accuracy"] == 100.0
    assert all(summary["metrics"][c] == 100.0 for c in CATEGORIES) and summary["metrics"]["multi_turn_acc"] == 100.0
    traces = _traces(tmp_path / "run")
    first = _requests(traces["multi_turn_miss_func_0"])
    assert first[0][0][0] == "system" and "Note that the provided function is in Python 3 syntax." in first[0][0][1]
    assert traces["multi_turn_miss_func_0"]["outcome"]["calls"][0]["name"] == "cd"  # run over MCP
    # BFCL's own loop, given the oracle's replies, sends the same requests and records the same result
    replies = {i: [text for turn in t["outcome"]["bfcl_result"] for text in turn] for i, t in traces.items()}
    theirs = bfcl_loop(bfcl_python, replies, tmp_path)
    for task_id, trace in traces.items():
        assert _requests(trace) == theirs[task_id]["requests"], task_id
        assert trace["outcome"]["bfcl_result"] == theirs[task_id]["result"], task_id


def _scripted(tmp_path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, str]]:
    replies = scripted_replies()
    _replay_file(tmp_path / "script.jsonl", replies)
    summary = _run(tmp_path / "run", list(replies), f"replay:{tmp_path / 'script.jsonl'}")
    return summary, _traces(tmp_path / "run"), _verdicts(tmp_path / "run")


def test_a_scripted_prompting_model_gets_the_hand_computed_numbers_and_bfcls_verdicts(bfcl_code_data, tmp_path):
    summary, traces, ours = _scripted(tmp_path)
    m = summary["metrics"]
    assert summary["completed"] == 7 and m["failed_episodes"] == 0
    # right: base 1 of 2, miss_func 1 of 2, miss_param 2 of 2, long_context 0 of 1
    assert (m["multi_turn_base"], m["multi_turn_miss_func"], m["multi_turn_miss_param"],
            m["multi_turn_long_context"]) == (50.0, 50.0, 100.0, 0.0)
    assert m["multi_turn_acc"] == 50.0 and m["accuracy"] == round(100 * 4 / 7, 2)
    assert {i: v for i, v in ours.items() if v} == {
        "multi_turn_base_197": "multi_turn:empty_turn_model_response",
        "multi_turn_miss_func_11": "multi_turn:instance_state_mismatch",
        "multi_turn_long_context_151": "multi_turn:force_terminated"}
    long = traces["multi_turn_long_context_151"]["outcome"]
    assert long["force_quit"] and len(long["bfcl_result"]) == 1 and len(long["bfcl_result"][0]) == 21
    # BFCL's own loop and evaluator, as committed (made by this file's main: the module docstring)
    committed = json.loads(FIXTURE.read_text())
    for task_id, trace in traces.items():
        assert digest(_requests(trace)) == committed["loop"][task_id]["requests_sha256"], task_id
        assert trace["outcome"]["bfcl_result"] == committed["loop"][task_id]["result"], task_id
    assert ours == committed["verdicts"]
    # the exported run read back by `evals score --format bfcl-official`: the same verdicts
    from client import eventloop
    from evals.core.formats import import_predictions
    from evals.core.run import score_run_dir

    result = _export(tmp_path / "run", tmp_path / "result")
    imported = import_predictions(result / MODEL, "bfcl-official", "bfcl", tmp_path / "imported")
    again = eventloop.run(score_run_dir(imported))
    assert _verdicts(imported) == ours and again["metrics"]["multi_turn_acc"] == 50.0


def test_bfcls_own_loop_and_evaluator_agree_with_the_scripted_run(bfcl_code_data, bfcl_python, tmp_path):
    summary, traces, ours = _scripted(tmp_path)
    theirs = bfcl_loop(bfcl_python, scripted_replies(), tmp_path)
    for task_id, trace in traces.items():
        assert _requests(trace) == theirs[task_id]["requests"], task_id
        assert trace["outcome"]["bfcl_result"] == theirs[task_id]["result"], task_id
    scored = bfcl_evaluate(bfcl_python, _export(tmp_path / "run", tmp_path / "result"), tmp_path)
    assert scored["verdicts"] == ours
    for category, header in scored["scores"].items():
        assert summary["metrics"][category] == round(100 * header["accuracy"], 2), category


def write_loop_fixture(fixture: Path, test_file: str, scripted: Callable[[Path], Any], replies: dict[str, list[str]],
                       categories: Any) -> None:
    """Writes a fixture of BFCL's own loop and evaluator on a scripted run: per entry a digest of its requests and
    its result; the verdicts of ``bfcl evaluate`` on the exported run."""
    import tempfile

    from evals.benchmarks.bfcl.files import WHEEL
    from evals.core.data import data_dir

    assert data_dir().joinpath(*WHEEL).is_file(), "EVALS_DATA_DIR must hold bfcl/<the pinned wheel>"
    venv = HERE.parents[3] / ".ci" / "bfcl-venv" / "bin" / "python"
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        scripted(tmp)
        loop = bfcl_loop(venv, replies, tmp)
        scored = bfcl_evaluate(venv, _export(tmp / "run", tmp / "result"), tmp, categories)
    fixture.write_text(json.dumps({
        "made_by": f"EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/{test_file}",
        "loop": {i: {"requests_sha256": digest(v["requests"]), "result": v["result"]} for i, v in loop.items()},
        "verdicts": scored["verdicts"]}, indent=1, sort_keys=True) + "\n")


def main() -> None:
    """Writes the fixture: BFCL's own loop and evaluator on the scripted run (the module docstring)."""
    write_loop_fixture(FIXTURE, Path(__file__).name, _scripted, scripted_replies(), CATEGORIES)


if __name__ == "__main__":
    sys.exit(main())


def test_a_model_behind_the_openai_sdk_is_sent_no_tools_and_reads_results_as_a_user_message(bfcl_code_data,
                                                                                          tmp_path):
    from fake_providers import FakeProviderServer, openai_chat

    from evals.benchmarks.bfcl.multi_turn import load_multi_turn

    entry = next(e for e in load_multi_turn(("multi_turn_base",)) if e.id == "multi_turn_base_0")
    replies = [text for turn in _gold_texts(entry) for text in turn]

    def model(body: dict[str, Any]) -> dict[str, Any]:
        assert "tools" not in body and "tool_choice" not in body  # the functions are in the system prompt
        assert {m["role"] for m in body["messages"]} <= {"system", "user", "assistant"}
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return openai_chat(replies[done], usage=(1000 + done, 20 + done))

    with FakeProviderServer() as fake:
        fake.openai.respond_with(model)
        from client import eventloop
        from evals.core.run import RunOptions, run_benchmark

        opts = RunOptions(benchmark="bfcl", model="openai:m", base_url=fake.openai_base_url, api_key_env="PATH",
                          strategy="prompting", run_dir=tmp_path / "run", task_ids=[entry.id], progress=False,
                          benchmark_options={"category": ["multi_turn_base"]})
        _, summary = eventloop.run(run_benchmark(opts))
        bodies = fake.openai.bodies
    assert summary["completed"] == 1 and summary["metrics"]["multi_turn_base"] == 100.0
    assert len(bodies) == len(replies)
    results = bodies[1]["messages"][-1]  # after the first reply's calls: their results, as BFCL writes them
    assert results["role"] == "user" and results["content"].startswith("[{'role': 'tool', 'name': \"cd(folder=")
    line = json.loads(next((_export(tmp_path / "run", tmp_path / "result") / MODEL).rglob("*.json")).read_text())
    assert line["input_token_count"] == [[1000, 1001], [1002, 1003], [1004, 1005], [1006, 1007]]
    assert line["result"][0] == replies[:2]
