"""BFCL's own result files (``evals score PATH --format bfcl-official --benchmark bfcl``): a crafted result
folder of every served category, each line one of the shapes an FC model's ``result`` takes, gets the
verdicts and accuracies of BFCL's own checker (run in .ci/bfcl-venv by ``bfcl_official_driver.py``);
``evals export`` writes the same files back; malformed files are refused with FILE:LINE and exit 2; and
the viewer shows the possible answers beside the predicted calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from official_checker import run_official

from evals.benchmarks.bfcl.data import BfclEntry, load_entries
from evals.benchmarks.bfcl.files import served_name
from evals.benchmarks.bfcl.results import read_results
from evals.benchmarks.bfcl.single_turn import gold_calls

ROOT = Path(__file__).resolve().parents[4]


def _evals(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT, check=False)


def _result(entry: BfclEntry, k: int) -> Any:
    """One of the shapes an FC model's ``result`` takes (by ``k``), from the entry's gold calls."""
    gold = gold_calls(entry) or [{"name": served_name(entry.functions[0]["name"]),
                                  "arguments": dict.fromkeys(entry.functions[0]["parameters"].get("required") or [], 1)}]
    calls = [{c["name"]: json.dumps(c["arguments"])} for c in gold]
    shapes: list[Any] = [
        calls,  # right (a call, for irrelevance)
        calls[::-1],  # any order (right in parallel)
        "I cannot help with that.",  # a text reply
        [{gold[0]["name"]: "{not json"}],  # arguments that are not JSON: nothing decodes
        [],  # no tool call
        [{**calls[0], "extra_key": "{}"}, *calls[1:]],  # BFCL reads an item's first key only
        [{gold[0]["name"]: gold[0]["arguments"]}],  # arguments as an object, not text: nothing decodes
        "",  # an empty text decodes to no call
        None,  # nothing
        [{gold[0]["name"]: "null"}],  # arguments JSON but not an object
        "Error during inference: boom",  # BFCL's record of an inference error
        [{k: v for k, v in calls[0].items()}, {"not a call": 1}] if len(calls) == 1 else calls[:-1],
        {"a": "{}"},  # an object, not a list
    ]
    return shapes[k % len(shapes)]


# whole categories of every kind (Python, Java, JavaScript, live, relevance), kept small: the big live ones
# add time, not kinds
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance", "simple_java",
              "simple_javascript", "live_parallel", "live_relevance")


@pytest.fixture
def result_dir(bfcl_data: Path, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """result/<model>/<group>/BFCL_v4_<category>_result.json for :data:`CATEGORIES`, every entry."""
    model = tmp_path / "result" / "gpt-4o-2024-11-20-FC"  # an OpenAI FC model of BFCL's registry: JSON-text arguments
    cases = []
    by_category: dict[str, list[str]] = {}
    for n, entry in enumerate(load_entries(CATEGORIES)):
        result = _result(entry, n)
        cases.append({"id": entry.id, "category": entry.category, "functions": list(entry.functions),
                      "possible_answer": list(entry.ground_truth or ()), "result": result})
        by_category.setdefault(entry.category, []).append(json.dumps({"id": entry.id, "result": result, "latency": 1.0}))
    for category, lines in by_category.items():
        path = model / ("live" if category.startswith("live_") else "non_live") / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    return model, cases


def test_an_imported_result_folder_gets_bfcls_verdicts_and_accuracies(result_dir, bfcl_python, tmp_path):
    model, cases = result_dir
    theirs = run_official(bfcl_python, {"cases": cases}, tmp_path)
    run = tmp_path / "run"
    done = _evals("score", str(model), "--format", "bfcl-official", "--benchmark", "bfcl", "--out", str(run), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    for category in CATEGORIES:
        assert summary["metrics"][category] == round(100 * theirs["accuracy"][category], 2), category
    assert {True, False} <= {v["valid"] for v in theirs["verdicts"].values()}
    scores = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    ours = {s["task_id"]: s["score"]["details"]["verdict"]["valid"] for s in scores}
    assert ours == {k: v["valid"] for k, v in theirs["verdicts"].items()}
    kinds = {s["task_id"]: s["score"]["details"]["verdict"]["error_type"] for s in scores}
    assert kinds == {k: v["error_type"] for k, v in theirs["verdicts"].items()}
    config = json.loads((run / "config.json").read_text())
    assert config["model"] == "gpt-4o-2024-11-20-FC" and config["imported"]["format"] == "bfcl-official"
    assert summary["tasks"] == len(cases) and not summary.get("subset_note")
    assert any("results are a text" in w for w in summary["warnings"])

    # evals export writes BFCL's files back: read again, every verdict is the same
    out = tmp_path / "export"
    done = _evals("export", str(run), "--format", "bfcl-official", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    again = read_results(out)
    rerun = tmp_path / "run2"
    done = _evals("score", str(out), "--format", "bfcl-official", "--benchmark", "bfcl", "--out", str(rerun), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["metrics"] == summary["metrics"]
    assert set(again.traces) == set(ours)


def test_part_of_a_category_is_a_subset_run(result_dir, tmp_path):
    model, _ = result_dir
    path = model / "non_live" / "BFCL_v4_parallel_result.json"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:50]))
    for other in model.glob("*/*.json"):
        if other != path:
            other.unlink()
    done = _evals("score", str(path), "--format", "bfcl-official", "--benchmark", "bfcl", "--out",
                  str(tmp_path / "run"), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["tasks"] == 50 and "not comparable" in summary["subset_note"]


@pytest.mark.parametrize(("line", "expected"), [
    ("{not json", "not a JSON line for the official reader"),
    ('{"result": []}', "not a BFCL result line"),
    ('{"id": "simple_python_0"}', "has no 'result'"),
    ('{"id": "parallel_0", "result": []}', "is not an entry of BFCL v4's simple_python"),
    ('{"id": "simple_python_99999", "result": []}', "is not an entry of BFCL v4's simple_python"),
    ('{"id": "simple_python_1", "result": []}', "is given twice (first at"),
])
def test_a_bad_result_file_is_refused_with_file_and_line(bfcl_data, tmp_path, line, expected):
    path = tmp_path / "BFCL_v4_simple_python_result.json"
    path.write_text('{"id": "simple_python_1", "result": []}\n\n' + line + "\n")
    done = _evals("score", str(path), "--format", "bfcl-official", "--benchmark", "bfcl", "--out",
                  str(tmp_path / "run"), "--bfcl-model", "fc-json-text", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{path}:3: " in done.stderr and expected in done.stderr
    assert not (tmp_path / "run" / "traces.jsonl").exists()


def test_a_refused_category_and_a_folder_without_results_are_refused(bfcl_data, tmp_path):
    path = tmp_path / "BFCL_v4_format_sensitivity_result.json"  # web search and memory_vector files are read now
    path.write_text('{"id": "format_sensitivity_0:python:plaintext:decorator:simple_python_0", "result": "[]"}\n')
    done = _evals("score", str(path), "--format", "bfcl-official", "--benchmark", "bfcl", "--bfcl-model",
                  "gpt-4o-2024-11-20-FC", timeout=120)
    assert done.returncode == 2 and "'format_sensitivity' is not served here: BFCL scores it only for prompting" \
        in done.stderr
    done = _evals("score", str(tmp_path / "nothing"), "--format", "bfcl-official", "--benchmark", "bfcl", timeout=120)
    assert done.returncode == 2 and "does not exist" in done.stderr
    (tmp_path / "empty").mkdir()
    done = _evals("score", str(tmp_path / "empty"), "--format", "bfcl-official", "--benchmark", "bfcl", timeout=120)
    assert done.returncode == 2 and "no BFCL result file" in done.stderr and "Traceback" not in done.stderr


def test_the_episode_view_shows_the_possible_answers_beside_the_predicted_calls(bfcl_data, tmp_path):
    from evals.core.registry import load_benchmark

    bench = load_benchmark("bfcl", {"category": ["parallel", "irrelevance"]})
    entry = bench.entries["parallel_0"]
    gold = gold_calls(entry)
    calls = [{"name": c["name"], "arguments": c["arguments"], "turn": 1} for c in gold[::-1]]
    calls[0] = {**calls[0], "arguments": {**calls[0]["arguments"], "duration": 999}}  # the second answer's call: wrong
    trace = {"task_id": "parallel_0", "status": "completed", "outcome": {"calls": calls}, "final_answer": None}
    sections = bench.episode_view("parallel_0", trace, None)
    pairs = sections[0]["pairs"]
    assert sections[0]["kind"] == "calls" and len(pairs) == 2
    first_answer = next(iter(entry.ground_truth[0].values()))
    assert pairs[0]["gold"]["arguments"] == first_answer  # the possible values, as BFCL lists them
    assert pairs[0]["predicted"]["arguments"] == gold[0]["arguments"] and pairs[0]["match"] is True  # any order
    assert pairs[1]["match"] is False and pairs[1]["predicted"]["arguments"]["duration"] == 999
    # each argument by the checker's parameter rule (gold lists the allowed values: equality says nothing)
    assert all(d["same"] for d in pairs[0]["diff"]) and {d["key"]: d["same"] for d in pairs[1]["diff"]}["duration"] is False
    assert [d["key"] for d in pairs[1]["diff"] if not d["same"]] == ["duration"]
    assert "the entry is wrong" in sections[0]["note"]
    none = bench.episode_view("irrelevance_0", {"task_id": "irrelevance_0", "status": "completed",
                                                "outcome": {"calls": []}, "final_answer": "No function fits."}, None)
    assert none[0]["rows"][0][2] == "right" and none[1]["text"] == "No function fits."


async def test_evals_view_carries_the_possible_answers_and_the_predicted_calls_of_a_run(bfcl_data, tmp_path):
    from evals.core.run import RunOptions, run_benchmark
    from evals.view.site import Site

    opts = RunOptions(benchmark="bfcl", model="oracle", limit=2, run_dir=tmp_path / "run", progress=False,
                      transport="http", benchmark_options={"category": ["parallel"]})
    await run_benchmark(opts)
    site = Site([tmp_path / "run"])
    rid = next(iter(site.views))
    ep = site.episode(rid, "parallel_0")
    assert ep["sections_note"] is None
    (calls,) = ep["sections"]
    entry = next(e for e in load_entries(("parallel",)) if e.id == "parallel_0")
    assert [p["gold"]["arguments"] for p in calls["pairs"]] == [next(iter(a.values())) for a in entry.ground_truth]
    assert [p["predicted"] for p in calls["pairs"]] == [{"name": c["name"], "arguments": c["arguments"]}
                                                          for c in gold_calls(entry)]
    assert all(p["match"] is True for p in calls["pairs"]) and "the entry is right" in calls["note"]
    assert all(d["same"] for p in calls["pairs"] for d in p["diff"])  # what the page marks = or ≠


def _line(entry_id: str, result: Any) -> str:
    return json.dumps({"id": entry_id, "result": result}) + "\n"


def test_how_a_folder_is_decoded_is_bfcls_choice_or_the_users(bfcl_data, tmp_path):
    entry = load_entries(("simple_python",))[2]  # math.hypot: BFCL's doc name has a dot
    args = json.dumps({"x": 4, "y": 5})
    unknown = tmp_path / "result" / "my-model" / "non_live" / "BFCL_v4_simple_python_result.json"
    unknown.parent.mkdir(parents=True)
    unknown.write_text(_line(entry.id, [{"math.hypot": args}]))
    done = _evals("score", str(unknown.parents[1]), "--format", "bfcl-official", "--benchmark", "bfcl", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "'my-model' is not a model of BFCL's registry" in done.stderr and "fc-json-text, fc-object, prompting" in done.stderr
    # the model's own dotted name is not renamed: an FC model with underscore_to_dot fails it, as in BFCL
    # Qwen's FC handler decodes with its own decoder (a text inside <tool_call> tags: this list is not one);
    # FunctionGemma's own decoder is not run: refused, saying why
    wrong_name = (False, "simple_function_checker:wrong_func_name")
    for chosen, expected in (("gpt-4o-2024-11-20-FC", wrong_name), ("fc-json-text", wrong_name),
                             ("Qwen/Qwen3-8B-FC", (False, "ast_decoder:decoder_failed")),
                             ("google/functiongemma-270m-it-FC", None)):
        run = tmp_path / f"run-{chosen.replace('/', '_')}"
        done = _evals("score", str(unknown.parents[1]), "--format", "bfcl-official", "--benchmark", "bfcl",
                      "--bfcl-model", chosen, "--out", str(run), "--json", timeout=120)
        if expected is None:
            assert done.returncode == 2 and "FunctionGemmaHandler" in done.stderr and "--bfcl-model" in done.stderr
            continue
        assert done.returncode == 0, done.stderr[-2000:]
        verdict = json.loads((run / "scores.jsonl").read_text().splitlines()[0])["score"]["details"]["verdict"]
        assert (verdict["valid"], verdict["error_type"]) == expected
        assert json.loads((run / "config.json").read_text())["options"]["bfcl_model"] == chosen


def test_unserved_categories_are_listed_and_skipped_and_two_models_are_refused(bfcl_data, tmp_path):
    folder = tmp_path / "result" / "gpt-4o-2024-11-20-FC"
    (folder / "non_live").mkdir(parents=True)
    (folder / "agentic").mkdir()
    entries = load_entries(("simple_python",))[:4]
    # most results do not decode as an FC model's JSON-text arguments (they are objects): said loudly
    (folder / "non_live" / "BFCL_v4_simple_python_result.json").write_text(
        "".join(_line(e.id, [{c["name"]: c["arguments"]} for c in gold_calls(e)]) for e in entries))
    (folder / "format_sensitivity").mkdir()  # an FC model's: BFCL skips it; BFCL v3's sql: no v4 category
    (folder / "format_sensitivity" / "BFCL_v4_format_sensitivity_result.json").write_text(_line("x", "[]"))
    (folder / "agentic" / "BFCL_v4_sql_result.json").write_text(_line("sql_0", [[]]))
    done = _evals("score", str(folder), "--format", "bfcl-official", "--benchmark", "bfcl", "--out",
                  str(tmp_path / "run"), "--json", timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["tasks"] == 4 and summary["metrics"]["simple_python"] == 0.0
    warnings = " ".join(summary["warnings"])
    assert "2 result files skipped" in warnings and "'format_sensitivity' is not served here" in warnings
    assert "'sql' is not served here: no BFCL v4 category of that name" in warnings
    assert "BFCL_v4_simple_python_result.json: 4 of 4 results do not decode" in warnings
    assert "{function name: arguments as JSON text}" in warnings

    other = tmp_path / "result" / "nova-pro-v1.0" / "non_live" / "BFCL_v4_simple_python_result.json"
    other.parent.mkdir(parents=True)
    other.write_text(_line(entries[0].id, []))
    done = _evals("score", str(tmp_path / "result"), "--format", "bfcl-official", "--benchmark", "bfcl", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "2 models (gpt-4o-2024-11-20-FC, nova-pro-v1.0)" in done.stderr


def test_arguments_nested_a_thousand_deep_do_not_decode_and_raise_nothing(bfcl_data, tmp_path):
    deep = "[" * 1000 + "1" + "]" * 1000
    folder = tmp_path / "result"
    for model, result in (("gpt-4o-2024-11-20-FC", [{"math_hypot": '{"x": ' + deep + "}"}]),
                          ("gpt-4o-2024-11-20", f"[math.hypot(x={deep})]")):
        path = folder / model / "non_live" / "BFCL_v4_simple_python_result.json"
        path.parent.mkdir(parents=True)
        path.write_text(_line("simple_python_2", result))
        run = tmp_path / f"run-{model}"
        done = _evals("score", str(path.parents[1]), "--format", "bfcl-official", "--benchmark", "bfcl", "--out",
                      str(run), timeout=120)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        verdict = json.loads((run / "scores.jsonl").read_text().splitlines()[0])["score"]["details"]["verdict"]
        assert verdict["error_type"] == "ast_decoder:decoder_failed"
    # an object a thousand deep in the line itself: BFCL's own reader stops there too; refused with FILE:LINE
    path = folder / "nova-pro-v1.0" / "non_live" / "BFCL_v4_simple_python_result.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"id": "simple_python_2", "result": [{"math_hypot": {"x": ' + deep + "}}]}\n")
    done = _evals("score", str(path), "--format", "bfcl-official", "--benchmark", "bfcl", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and f"{path}:1: not a JSON line" in done.stderr \
        and "maximum recursion depth" in done.stderr


def test_an_imported_folder_is_scored_as_the_run_folder_it_wrote_is_scored_again(bfcl_data, tmp_path):
    """The imported traces go to scoring as written, not read back (``ImportedPredictions.json_exact``); those that
    do not read back as they are (a tuple, a key that is not a text, a set, a lone surrogate, NaN) are parsed from
    their lines: scoring the written run folder again gives the same scores and summary."""
    results = ["[calculate_triangle_area(base=(10, 5), height={1: 2}, unit='units')]", "[math.factorial(number={1, 2})]",
               "[f(a='\\ud800')]", "[f(a=1e400)]", "[f(a=[(1, 2), {'k': (3,)}], b={None: 1, True: 2})]",
               "text with NaN \ud83d", "[calculate_triangle_area(base=10, height=5)]", "I cannot help with that."]
    folder = tmp_path / "result" / "Qwen_Qwen3-8B" / "non_live"  # a prompting model: Python call syntax
    folder.mkdir(parents=True)
    (folder / "BFCL_v4_simple_python_result.json").write_text(
        "".join(_line(f"simple_python_{n}", r) for n, r in enumerate(results)))
    got = read_results(folder.parent)
    assert 0 < len(got.json_exact) < len(got.traces)  # both ways are taken
    run = tmp_path / "run"
    first = _evals("score", str(folder.parent), "--format", "bfcl-official", "--benchmark", "bfcl", "--out", str(run),
                   "--json", timeout=120)
    assert first.returncode == 0, first.stderr[-2000:]
    scores = (run / "scores.jsonl").read_bytes()
    again = _evals("score", str(run), "--json", timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert (run / "scores.jsonl").read_bytes() == scores
    assert json.loads(again.stdout.splitlines()[-1]) == json.loads(first.stdout.splitlines()[-1])
