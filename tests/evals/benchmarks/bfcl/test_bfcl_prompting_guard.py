"""BFCL's Python prompting decoder hands an argument that is a binary operation to ``eval``: here that ``eval``
is bounded (``evals/benchmarks/bfcl/decoder_guard.py``). Literal arithmetic decodes to the value Python's
``eval`` gives; code in a reply or a result file is never run (the reply does not decode), and an expression
whose value would be huge is refused before it is computed; through the single-turn decoding (live episodes
and ``evals score --format bfcl``), the multi-turn steps' ``decode_execute``, and a live prompting run. A
multi-turn call whose argument is no JSON value (bytes) is answered with an error, not a crashed episode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ARITHMETIC = ["2*3.14", "-1+2", "[1]+[2]", "'a'*3", "2**10", "7//2", "7%3", "1<<4", "(1, 2)+(3,)", "10/4",
              "b'ab'+b'c'", "2**-1"]
BOMBS = ["9**9**9", "'a'*10**9", "1<<10**9", "'%0999999999d' % 1", "[0]*10**8", "(2**99999)*(2**99999)"]


def _code(marker: Path) -> str:
    return f"1+len(open({str(marker)!r}, 'w').write('ran'))"


def test_literal_arithmetic_decodes_as_pythons_eval_gives_it(bfcl_data):
    from evals.benchmarks.bfcl.prompting import PROMPTING
    from evals.benchmarks.bfcl.prompting_turns import decode_execute
    from evals.benchmarks.bfcl.results import decode_result

    for expression in ARITHMETIC:
        expected = eval(expression)  # noqa: S307 - the test's own literal expressions
        calls, status, _ = decode_result(f"[f(x={expression})]", PROMPTING, "simple_python")
        shown = repr(expected) if isinstance(expected, bytes) else expected  # bytes: their repr (a JSON value)
        assert status == "ok" and calls[0]["arguments"]["x"] == shown, expression
        step = decode_execute(f"[f(x={expression})]")  # the call as BFCL executes it: the value's repr
        assert step is not None and step[0]["text"] == f"f(x={expected!r})", expression


@pytest.mark.parametrize("expression", ["code", *BOMBS])
def test_code_is_never_run_and_huge_values_are_never_computed(bfcl_data, tmp_path, expression):
    from evals.benchmarks.bfcl.checker import check_calls
    from evals.benchmarks.bfcl.data import load_entries
    from evals.benchmarks.bfcl.prompting import PROMPTING
    from evals.benchmarks.bfcl.prompting_turns import decode_execute
    from evals.benchmarks.bfcl.results import decode_result

    marker = tmp_path / "ran"
    text = f"[calculate_triangle_area(base={_code(marker) if expression == 'code' else expression}, height=5)]"
    calls, status, _ = decode_result(text, PROMPTING, "simple_python")
    assert (calls, status) == ([], "failed")
    entry = load_entries(("simple_python",))[0]
    verdict = check_calls("simple_python", entry.functions, [], entry.ground_truth, decoded=status)
    assert verdict.error_type == "ast_decoder:decoder_failed"
    assert decode_execute(text) is None  # a multi-turn step that does not decode: no call, the turn ends
    assert not marker.exists()


async def test_a_live_prompting_reply_holding_code_runs_nothing(bfcl_data, tmp_path):
    from evals.benchmarks.bfcl.data import load_entries
    from evals.core.run import RunOptions, run_benchmark

    marker = tmp_path / "ran"
    entry = load_entries(("simple_python",))[0]
    replay = tmp_path / "script.jsonl"
    replay.write_text(json.dumps({"messages": [{"role": "user", "content": entry.query}, {
        "role": "assistant", "content": f"[calculate_triangle_area(base={_code(marker)}, height=5)]"}]}) + "\n")
    opts = RunOptions(benchmark="bfcl", model=f"replay:{replay}", strategy="prompting", run_dir=tmp_path / "run",
                      task_ids=[entry.id], progress=False, benchmark_options={"category": ["simple_python"]})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 1 and summary["metrics"]["simple_python"] == 0.0
    score = json.loads((tmp_path / "run" / "scores.jsonl").read_text())
    assert score["score"]["details"]["verdict"]["error_type"] == "ast_decoder:decoder_failed"
    assert not marker.exists()


async def test_a_multi_turn_reply_with_an_argument_that_is_no_json_value_is_answered_not_crashed(bfcl_code_data,
                                                                                                  tmp_path):
    from evals.benchmarks.bfcl.multi_turn import load_multi_turn
    from evals.core.run import RunOptions, run_benchmark

    entry = next(e for e in load_multi_turn(("multi_turn_base",)) if e.id == "multi_turn_base_0")
    replies = ["[cd(folder=b'document'), ls(a=True)]", "Done."] + ["Done."] * (len(entry.turns) - 1)
    replay = tmp_path / "script.jsonl"
    replay.write_text(json.dumps({"messages": [{"role": "user", "content": entry.turns[0][0]["content"]}] + [
        {"role": "assistant", "content": r} for r in replies]}) + "\n")
    opts = RunOptions(benchmark="bfcl", model=f"replay:{replay}", strategy="prompting", run_dir=tmp_path / "run",
                      task_ids=[entry.id], progress=False, benchmark_options={"category": ["multi_turn_base"]})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 1 and summary["metrics"]["failed_episodes"] == 0
    trace = json.loads((tmp_path / "run" / "traces.jsonl").read_text())
    bytes_call, ls = [e for e in trace["events"] if e["kind"] == "tool_call"]
    assert bytes_call["is_error"] and "not a JSON value" in bytes_call["result_text"]
    assert not ls["is_error"]  # the reply's other call ran
    assert trace["outcome"]["turns"][0][0][0]["text"] == "cd(folder=b'document')"  # what scoring replays, as BFCL


def test_bytes_arguments_are_scored_as_bfcl_scores_them_but_for_a_text_parameter(bfcl_data, bfcl_python, tmp_path):
    """A value BFCL's decoder gives that is no JSON value (bytes) is kept as its repr text: of the wrong type for
    a number parameter, as in BFCL; for a text parameter a wrong text here, a wrong type in BFCL (both wrong)."""
    import subprocess

    from client import eventloop
    from evals.core.formats import import_predictions
    from evals.core.run import score_run_dir

    model = "gpt-4o-2024-11-20"
    lines = {"simple_python_0": "[calculate_triangle_area(base=10, height=5, unit=b'units')]",
             "simple_python_1": "[math.factorial(number=b'5')]"}
    result = tmp_path / "result" / model / "non_live" / "BFCL_v4_simple_python_result.json"
    result.parent.mkdir(parents=True)
    result.write_text("".join(json.dumps({"id": i, "result": text}) + "\n" for i, text in lines.items()))
    run = import_predictions(result.parents[1], "bfcl-official", "bfcl", tmp_path / "run")
    eventloop.run(score_run_dir(run))
    ours = {s["task_id"]: s["score"]["details"]["verdict"]["error_type"]
            for s in map(json.loads, (run / "scores.jsonl").read_text().splitlines())}
    driver = Path(__file__).with_name("bfcl_evaluate_driver.py")
    done = subprocess.run([str(bfcl_python), str(driver), str(tmp_path / "result"), str(tmp_path / "score"), model,
                           "simple_python"], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout)["verdicts"]
    assert ours["simple_python_1"] == theirs["simple_python_1"] == "type_error:simple"
    assert (ours["simple_python_0"], theirs["simple_python_0"]) == ("value_error:string", "type_error:simple")
