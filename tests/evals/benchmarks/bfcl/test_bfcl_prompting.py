"""BFCL's prompting mode over MCP (``--strategy prompting``): the system prompt is BFCL's own (checked
against BFCL's loader and prompt code in .ci/bfcl-venv), the prompting oracle scores 100 but where BFCL's
own decoder cannot read the gold, a scripted model with known mistakes gets the hand-computed numbers,
format_sensitivity runs, and its export is scored by ``bfcl evaluate`` as ``evals`` scores the run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from handler_folders import DRIVER

from evals.benchmarks.bfcl.data import load_entries
from evals.benchmarks.bfcl.format_sensitivity import load_format_sensitivity
from evals.core.run import RunOptions, run_benchmark

PYTHON_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance", "live_simple",
                     "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance", "live_relevance")


def _traces(run: Path) -> dict[str, dict[str, Any]]:
    return {t["task_id"]: t for t in map(json.loads, (run / "traces.jsonl").read_text().splitlines())}


def _scores(run: Path) -> dict[str, dict[str, Any]]:
    return {s["task_id"]: s["score"]["details"]["verdict"]
            for s in map(json.loads, (run / "scores.jsonl").read_text().splitlines())}


async def test_the_prompting_oracle_scores_100_in_every_python_category(bfcl_data, tmp_path):
    entries = [e.id for c in PYTHON_CATEGORIES for e in load_entries((c,))[:8]]
    opts = RunOptions(benchmark="bfcl", model="oracle", strategy="prompting", run_dir=tmp_path / "run",
                      task_ids=entries, progress=False, concurrency=4,
                      benchmark_options={"category": list(PYTHON_CATEGORIES)})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == len(entries) and summary["metrics"]["accuracy"] == 100.0
    trace = _traces(tmp_path / "run")["simple_python_0"]
    request = next(e for e in trace["events"] if e["kind"] == "model_request")
    assert request["messages"][0]["role"] == "system" and "calculate_triangle_area" in request["messages"][0]["text"]
    assert trace["outcome"]["bfcl_sent_tools"] == 0  # the functions are in the prompt; the model is sent none
    assert [c["name"] for c in trace["outcome"]["calls"]] == ["calculate_triangle_area"]  # run over MCP
    assert trace["outcome"]["bfcl_result"] == "[calculate_triangle_area(base=10, height=5, unit='units')]"
    # the viewer pairs a prompting model's dotted names with BFCL's (no underscore_to_dot)
    from evals.view.site import Site

    site = Site([tmp_path / "run"])
    dotted = next(e.id for e in load_entries(("simple_python",)) if "." in e.functions[0]["name"] and e.id in entries)
    pair = site.episode(next(iter(site.views)), dotted)["sections"][0]["pairs"][0]
    assert pair["match"] and pair["gold"]["name"] == pair["predicted"]["name"] and "." in pair["gold"]["name"]


# BFCL's JSON decoder (parse_json_function_call) cuts a reply at the first "}" followed by "]": the gold of
# simple_python_96, whose argument is a list of objects, cannot be read back in any JSON configuration.
JSON_UNREADABLE = "simple_python_96"


async def test_format_sensitivity_runs_every_configuration_and_equals_bfcls_evaluator(bfcl_data, bfcl_python, tmp_path):
    entries = load_format_sensitivity()[:26 * 4]  # four entries under each of BFCL's 26 configurations
    assert len({e.id.split(":")[1] for e in entries}) == 26
    opts = RunOptions(benchmark="bfcl", model="oracle", strategy="prompting", run_dir=tmp_path / "run",
                      task_ids=[e.id for e in entries], progress=False, concurrency=4,
                      benchmark_options={"category": ["format_sensitivity"]})
    _, summary = await run_benchmark(opts)
    wrong = {i for i, v in _scores(tmp_path / "run").items() if not v["valid"]}
    assert wrong == {e.id for e in entries if e.id.endswith(":" + JSON_UNREADABLE) and "ret_fmt=json" in e.id}
    assert summary["metrics"]["format_sensitivity"] == round(100 * (len(entries) - len(wrong)) / len(entries), 2)

    # the run exported as BFCL's result files, under a prompting model's name, scored by bfcl evaluate itself
    from evals.core.formats import export_run

    model = "gpt-4o-2024-11-20"
    export_run(tmp_path / "run", "bfcl-official", tmp_path / "export")
    (tmp_path / "export" / "oracle").rename(tmp_path / "export" / model)
    done = subprocess.run([str(bfcl_python), str(DRIVER), str(tmp_path / "export"), str(tmp_path / "score"), model,
                           "format_sensitivity"], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout)
    assert {i for i, kind in theirs["verdicts"].items() if kind} == wrong
    assert round(100 * theirs["scores"]["format_sensitivity"]["accuracy"], 2) == summary["metrics"]["format_sensitivity"]


def _reply(query: str, text: str) -> str:
    return json.dumps({"messages": [{"role": "user", "content": query}, {"role": "assistant", "content": text}]}) + "\n"


async def test_a_scripted_prompting_model_with_known_mistakes_gets_the_hand_computed_numbers(bfcl_data, tmp_path):
    e = {x.id: x for x in load_entries(("simple_python", "irrelevance"))}
    fs = {x.id.split(":")[1].split("&")[0] + ":" + x.id.split(":")[2]: x for x in load_format_sensitivity()
          if "tool_call_tag=True&func_doc_fmt=python&prompt_fmt=plaintext" in x.id}
    as_json = fs["ret_fmt=json:parallel_multiple_1"] if "ret_fmt=json:parallel_multiple_1" in fs else \
        next(v for k, v in fs.items() if k.startswith("ret_fmt=json:simple_python"))
    as_xml = next(v for k, v in fs.items() if k.startswith("ret_fmt=concise_xml:") and v is not as_json
                  and k.split(":")[1] != as_json.id.split(":")[2] and "simple_python" in k)
    from evals.benchmarks.bfcl.prompting import oracle_text
    from evals.benchmarks.bfcl.single_turn import gold_calls

    script = {
        "simple_python_0": "[calculate_triangle_area(base=10, height=5)]",  # right
        "simple_python_1": "[math.factorial(number='5')]",  # a text for an integer: type_error:simple
        "simple_python_2": "[math_hypot(x=4, y=5)]",  # the served name: BFCL keeps a prompting model's names
        "simple_python_3": "I cannot solve that.",  # no call: ast_decoder:decoder_failed
        "irrelevance_0": "None of these functions fits.",  # no call: right
        "irrelevance_1": f"[{e['irrelevance_1'].functions[0]['name']}(x=1)]",  # a call: wrong
        as_json.id: oracle_text(gold_calls(as_json, served=False), "json", True),  # right
        as_xml.id: oracle_text(gold_calls(as_xml, served=False), "concise_xml", False),  # its tags left out: wrong
    }
    queries = {**{k: v.query for k, v in e.items()}, as_json.id: as_json.query, as_xml.id: as_xml.query}
    replay = tmp_path / "script.jsonl"
    replay.write_text("".join(_reply(queries[t], text) for t, text in script.items()))
    opts = RunOptions(benchmark="bfcl", model=f"replay:{replay}", strategy="prompting", run_dir=tmp_path / "run",
                      task_ids=list(script), progress=False,
                      benchmark_options={"category": ["simple_python", "irrelevance", "format_sensitivity"]})
    _, summary = await run_benchmark(opts)
    m = summary["metrics"]
    assert summary["completed"] == 8 and m["failed_episodes"] == 0
    assert (m["simple_python"], m["irrelevance"], m["format_sensitivity"], m["accuracy"]) == (25.0, 50.0, 50.0, 37.5)
    kinds = {k: v["error_type"] for k, v in _scores(tmp_path / "run").items()}
    assert (kinds["simple_python_1"], kinds["simple_python_2"], kinds["simple_python_3"], kinds[as_xml.id]) == (
        "type_error:simple", "simple_function_checker:wrong_func_name", "ast_decoder:decoder_failed",
        "ast_decoder:decoder_failed")


_BFCL_PROMPT = """
import json, sys
from bfcl_eval.utils import load_dataset_entry
from bfcl_eval.model_handler.utils import system_prompt_pre_processing_chat_model
wanted = json.loads(sys.argv[1])
out = {}
for category, ids in wanted.items():
    for entry in load_dataset_entry(category):
        if entry["id"] in ids:
            out[entry["id"]] = system_prompt_pre_processing_chat_model(entry["question"][0], entry["function"], entry["id"])
print(json.dumps(out))
"""


async def test_the_system_prompt_is_the_one_bfcls_prompting_handlers_send(bfcl_data, bfcl_python, tmp_path):
    import os

    fs = load_format_sensitivity()
    picked = {"simple_python": ["simple_python_5"], "live_simple": ["live_simple_0-0-0"],
              "simple_java": ["simple_java_3"], "simple_javascript": ["simple_javascript_1"],
              "format_sensitivity": [fs[0].id, fs[11].id, fs[24].id, fs[25].id]}
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(tmp_path / "bfcl-project")}
    done = subprocess.run([str(bfcl_python), "-c", _BFCL_PROMPT, json.dumps(picked)], capture_output=True, text=True,
                          timeout=600, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    ids = [i for ids in picked.values() for i in ids]
    opts = RunOptions(benchmark="bfcl", model="oracle", strategy="prompting", run_dir=tmp_path / "run", task_ids=ids,
                      progress=False, benchmark_options={"category": list(picked)})
    await run_benchmark(opts)
    for task_id, trace in _traces(tmp_path / "run").items():
        request = next(e for e in trace["events"] if e["kind"] == "model_request")
        assert [(m["role"], m["text"]) for m in request["messages"]] == \
            [(m["role"], m["content"]) for m in theirs[task_id]], task_id
