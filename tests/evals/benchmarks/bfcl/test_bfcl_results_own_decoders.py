"""Result files of the handlers with a decoder of their own (Hammer, Llama-3.1-FC, Granite, xLAM, ...), decoded by
BFCL's own ``decode_ast`` / ``decode_execute`` (guarded: :mod:`evals.benchmarks.bfcl.decoder_guard`) because the
folder's name says so, scored by ``bfcl evaluate`` itself beside ``evals score``: every entry's verdict and error
type equal.

Each model's crafted folder (``crafted_folder``) holds single-turn, multi-turn and memory lines, each one of many
shapes written from the entry's gold calls (the JSON, Python, tagged and object shapes these handlers read,
right and wrong, and shapes none reads), so each handler decodes some and fails on others as BFCL does. BFCL's
answers are committed (``fixtures/bfcl_own_decoders.json``), made by

    EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/test_bfcl_results_own_decoders.py OUT_DIR

The handlers whose decoders are left out say why, in one line; the tagged decoders' regex runs in linear time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from handler_folders import equal_to_bfcl, equal_to_committed, write_fixture, write_rows

from evals.benchmarks.bfcl.agentic import read_memory
from evals.benchmarks.bfcl.data import BfclEntry, load_entries
from evals.benchmarks.bfcl.multi_turn import gold_steps, read_multi_turn
from evals.benchmarks.bfcl.prompting import oracle_text
from evals.benchmarks.bfcl.single_turn import gold_calls

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "bfcl_own_decoders.json"

MODELS = (  # one registry model per handler class run here
    "MadeAgents/Hammer2.1-3b", "meta-llama/Llama-3.1-8B-Instruct-FC", "ibm-granite/granite-20b-functioncalling",
    "Salesforce/xLAM-2-3b-fc-r", "Salesforce/Llama-xLAM-2-8b-fc-r", "microsoft/phi-4", "BitAgent/BitAgent-Bounty-8B",
    "THUDM/glm-4-9b-chat", "ibm-granite/granite-3.2-8b-instruct", "ThinkAgents/ThinkAgent-1B",
    "gorilla-openfunctions-v2", "tiiuae/Falcon3-7B-Instruct-FC", "DM-Cito-8B-v3", "katanemo/Arch-Agent-3B",
    "microsoft/Phi-4-mini-instruct-FC", "Qwen/Qwen3-8B-FC", "ibm-granite/granite-4.0-350m",
    "Nanbeige/Nanbeige4-3B-Thinking-2511", "X-Humanoid/Pelican1.0-VL-30B-A3B-FC",
)
GRANITE = "ibm-granite/granite-20b-functioncalling"  # its multi-turn files are skipped, saying why
SINGLE = ("simple_python", "multiple", "parallel", "irrelevance", "live_simple", "live_relevance")
PER_CATEGORY = 16
MULTI = ("multi_turn_base", "multi_turn_miss_param")
PER_MULTI = 3
PER_MEMORY = 10


def _shapes(calls: list[dict[str, Any]]) -> list[Any]:
    """The calls in every shape these handlers read (and some none reads)."""
    named = [{"name": c["name"], "arguments": c["arguments"]} for c in calls]
    params = [{"name": c["name"], "parameters": c["arguments"]} for c in calls]
    listed = json.dumps(named)
    first = calls[0] if calls else {"name": "f", "arguments": {}}
    return [
        listed, f"```\n{listed}\n```", json.dumps(named[0]) if named else "{}",  # Hammer, BitAgent, xLAM
        "<|python_tag|>" + "; ".join(json.dumps(p) for p in params), repr(params),  # Llama-3.1: JSON, or Python (eval)
        "".join(f"<function_call> {json.dumps(n)}" for n in named),  # Granite
        f"<tool_call>{listed}</tool_call>", f"<tool_call>```json\n{listed}\n```</tool_call>",  # Falcon
        f"{first['name']}\n{json.dumps(first['arguments'])}",  # GLM
        oracle_text(calls, "python", False)[1:-1], oracle_text(calls, "python", False),  # Gorilla, Phi
        f"```json\n{listed}", f"```python\n{oracle_text(calls, 'python', False)}",  # Phi
        [{c["name"]: c["arguments"]} for c in calls], named,  # objects (Granite-3, Arch, Phi-FC); Mining's list
        f"<think>hm</think>{listed}", "I cannot help with that.", "", None, 5,
        "[{'name': 'f', 'parameters': {'x': 2 * 3}}]",  # Llama-3.1's eval of operators: the value Python gives
        "<function_call> no json", '{"name": "no_function", "arguments": {}}',
        "\n".join(f"<tool_call>\n{json.dumps(n)}\n</tool_call>" for n in named),  # Qwen-FC, Granite-4, ...
        f"<tool_call>\n{listed}\n</tool_call>", "<tool_call>\n" * 50 + f"{listed}\n</tool_call>",
    ]


def _gold(entry: BfclEntry) -> list[dict[str, Any]]:
    gold = gold_calls(entry, served=False)
    if gold:
        return gold
    doc = entry.functions[0]
    return [{"name": doc["name"], "arguments": dict.fromkeys(doc["parameters"].get("required") or [], 1)}]


def crafted_folder(root: Path, model: str) -> list[str]:
    folder = root / model.replace("/", "_")
    ids: list[str] = []
    n = sum(map(ord, model))  # each model starts the shapes at another place

    def write(path: Path, rows: list[tuple[str, Any]]) -> None:
        write_rows(path, rows, ids)

    for category in SINGLE:
        rows = []
        for entry in load_entries((category,))[:PER_CATEGORY]:
            shapes = _shapes(_gold(entry))
            rows.append((entry.id, shapes[n % len(shapes)]))
            n += 1
        group = "live" if category.startswith("live_") else "non_live"
        write(folder / group / f"BFCL_v4_{category}_result.json", rows)
    for category in MULTI if model != GRANITE else ():  # Granite's are skipped (test below)
        rows = []
        for multi in read_multi_turn(category)[:PER_MULTI]:
            turns = []
            for calls in gold_steps(multi):
                shapes = _shapes(calls) if calls else ["Done."]
                turns.append([shapes[n % len(shapes)], shapes[(n + 1) % len(shapes)], "Done."])
                n += 1
            rows.append((multi.id, turns))
        write(folder / "multi_turn" / f"BFCL_v4_{category}_result.json", rows)
    rows = []
    for memory in read_memory("memory_kv")[0][:PER_MEMORY]:
        shapes = _shapes([{"name": "core_memory_list_keys", "arguments": {}}])
        rows.append((memory.id, [[shapes[n % len(shapes)], f"It is {memory.answers[0]}." if n % 3 else shapes[0]]]))
        n += 1
    write(folder / "agentic" / "memory" / "kv" / "BFCL_v4_memory_kv_result.json", rows)
    return ids


def _categories(model: str) -> list[str]:
    return [*SINGLE, *MULTI, "memory_kv"]


@pytest.mark.parametrize("model", MODELS)
def test_own_decoders_give_bfcls_own_verdicts_and_error_types(bfcl_code_data, bfcl_python, model, tmp_path):
    equal_to_bfcl(bfcl_python, tmp_path, model, crafted_folder, _categories(model), FIXTURE)


@pytest.mark.parametrize("model", MODELS)
def test_the_committed_own_decoder_verdicts_hold_without_bfcls_venv(bfcl_code_data, model, tmp_path):
    committed = equal_to_committed(tmp_path, model, crafted_folder, FIXTURE)
    assert "" in committed.values() and len(set(committed.values())) >= 3  # right, and kinds of wrong


def test_the_decoders_left_out_are_refused_saying_why(bfcl_data):
    from evals.benchmarks.bfcl.handlers import decoding_for

    for folder, why in (("google_functiongemma-270m-it-FC", "without a bound"), ("command-a-03-2025-FC", "cohere SDK"),
                        ("openbmb_MiniCPM3-4B-FC", "datamodel_code_generator")):
        with pytest.raises(ValueError, match=why):
            decoding_for(folder)


def test_granites_multi_turn_files_are_skipped_saying_why(bfcl_data, tmp_path):
    from evals.benchmarks.bfcl.results import read_results

    folder = tmp_path / GRANITE.replace("/", "_")
    entry = read_multi_turn("multi_turn_base")[0]
    (folder / "multi_turn").mkdir(parents=True)
    (folder / "multi_turn" / "BFCL_v4_multi_turn_base_result.json").write_text(
        json.dumps({"id": entry.id, "result": [["[ls(a=True)]"]]}) + "\n")
    (folder / "non_live").mkdir()
    (folder / "non_live" / "BFCL_v4_simple_python_result.json").write_text(
        json.dumps({"id": "simple_python_0", "result": "no call"}) + "\n")
    imported = read_results(folder)
    assert list(imported.traces) == ["simple_python_0"]
    assert any("'multi_turn_base' is not served here" in w and "eval" in w for w in imported.warnings), imported.warnings


def test_the_tagged_decoders_findall_gives_the_regexs_matches_in_linear_time():
    import random
    import re

    from evals.benchmarks.bfcl.decoder_guard import _LinearRe

    pattern = r"<tool_call>\n(.*?)\n</tool_call>"
    rng = random.Random(11)
    pieces = ["<tool_call>\n", "\n</tool_call>", "<tool_call>", "</tool_call>", "\n", "x", '{"a": 1}', "<tool_"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(9)))
        assert _LinearRe().findall(pattern, text, re.DOTALL) == re.findall(pattern, text, re.DOTALL), text
    assert _LinearRe().findall(pattern, "<tool_call>\n" * 20000, re.DOTALL) == []  # the regex: quadratic
    assert _LinearRe().DOTALL == re.DOTALL
    with pytest.raises(ValueError, match="does not run"):
        _LinearRe().findall(r"(a+)+b", "aaa", re.DOTALL)


def test_an_own_decoders_eval_runs_no_code(bfcl_data):
    """Llama-3.1-FC's decoder hands the whole text to ``eval``: here it is bounded (literals and operators)."""
    from evals.benchmarks.bfcl.handlers import decode, decoding_for

    decoding = decoding_for("meta-llama_Llama-3.1-8B-Instruct-FC")
    assert decode(decoding, "[{'name': 'f', 'parameters': {'x': 2 * 3}}]") == [{"f": {"x": 6}}]
    for code in ("[{'name': 'f', 'parameters': {'x': __import__('os').getcwd()}}]", "9**9**9**9"):
        with pytest.raises(ValueError, match="not evaluated|a power"):
            decode(decoding, code)


def main() -> None:
    """Writes the fixture: BFCL's verdicts on every model's crafted folder (the module docstring)."""
    write_fixture(FIXTURE, Path(sys.argv[1]), MODELS, crafted_folder, _categories)


if __name__ == "__main__":
    main()


def test_an_own_decoders_multi_turn_step_shows_its_calls_arguments(bfcl_data):
    from evals.benchmarks.bfcl.decoder_guard import own_step
    from evals.benchmarks.bfcl.handlers import decoding_for, own_handler

    hammer = own_handler(decoding_for("MadeAgents_Hammer2.1-3b"))
    step = own_step(hammer, json.dumps([{"name": "cd", "arguments": {"folder": "a b"}}, {"name": "ls", "arguments": {}}]))
    assert step == [{"name": "cd", "arguments": {"folder": "a b"}, "text": "cd(folder='a b')"},
                    {"name": "ls", "arguments": {}, "text": "ls()"}]
    assert own_step(hammer, "not json") == []  # Hammer reads it as no call (BFCL's is_empty_execute_response)
    assert own_step(hammer, 5) is None  # its decoder raises: the step is dropped, as BFCL's runner drops it
