"""Result files of every handler shape BFCL reads, scored by BFCL's own evaluator beside ``evals score``.

For each model below (BFCL's registry picks its handler from the model folder's name), a crafted result
folder (``crafted_folder``: every line one of the shapes that handler's results take, right and wrong,
from each entry's gold calls) is scored twice: by ``bfcl evaluate`` itself (``eval_runner.main`` in
.ci/bfcl-venv, ``bfcl_evaluate_driver.py``) and by ``evals score --format bfcl-official``; every entry's
verdict and error type must be equal. BFCL's answers are also committed
(``fixtures/bfcl_handler_verdicts.json``), made by

    EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/test_bfcl_handlers.py OUT_DIR

so the comparison holds where the venv is not made.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from handler_folders import equal_to_bfcl, equal_to_committed, write_fixture

from evals.benchmarks.bfcl.data import BfclEntry, load_entries
from evals.benchmarks.bfcl.format_sensitivity import load_format_sensitivity
from evals.benchmarks.bfcl.prompting import oracle_text
from evals.benchmarks.bfcl.single_turn import gold_calls

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "bfcl_handler_verdicts.json"

# model (BFCL registry name) -> the decoding its handler gives (what the crafted lines are written for)
MODELS = {
    "gpt-4o-2024-11-20-FC": "fc-json-text",  # OpenAIResponsesHandler, FC
    "nova-pro-v1.0": "fc-object",  # NovaHandler
    "gemini-2.5-flash-FC": "fc-object",  # GeminiHandler, FC: a lone object becomes a list of one
    "gpt-4o-2024-11-20": "prompting",  # OpenAIResponsesHandler, prompting
    "Qwen/Qwen3-8B": "prompting",  # QwenHandler (OSSHandler's decoder)
    "gemini-2.5-flash": "prompting",  # GeminiHandler, prompting: its ```tool_code fence dropped
    "nvidia/llama-3.1-nemotron-ultra-253b-v1": "prompting",  # NemotronHandler: calls inside <TOOLCALL>
    "microsoft/phi-4": "prompting",  # PhiHandler: its own decoder (a ```json / ```python opening dropped), run
}
CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance", "live_simple", "live_parallel_multiple",
              "live_relevance")
PER_CATEGORY = 24
FORMAT_SENSITIVITY_LINES = 26 * 6  # six entries under every configuration
DEEP = 1000  # arguments nested this deep: BFCL cannot decode them (no RecursionError traceback here)


def _gold(entry: BfclEntry, served: bool) -> list[dict[str, Any]]:
    gold = gold_calls(entry, served=served)
    if gold:
        return gold
    doc = entry.functions[0]
    name = doc["name"].replace(".", "_") if served else doc["name"]
    return [{"name": name, "arguments": dict.fromkeys(doc["parameters"].get("required") or [], 1)}]


def _fc_lines(entry: BfclEntry, k: int, as_text: bool) -> Any:
    gold, dotted = _gold(entry, True), _gold(entry, False)

    def args(a: dict[str, Any]) -> Any:
        return json.dumps(a) if as_text else a

    calls = [{c["name"]: args(c["arguments"])} for c in gold]
    deep_text = '{"x": ' + "[" * DEEP + "1" + "]" * DEEP + "}"  # JSON text: only the decoding reads it
    shallower: Any = 1
    for _ in range(100):  # an object as deep as a result line can hold (BFCL's own reader stops near 1,000)
        shallower = [shallower]
    shapes: list[Any] = [
        calls, calls[::-1], "I cannot help with that.", [], [{**calls[0], "extra": args({})}],
        [{c["name"]: args(c["arguments"])} for c in dotted],  # the model's own dotted names: not renamed
        [{gold[0]["name"]: (c["arguments"] if as_text else json.dumps(c["arguments"]))} for c in gold[:1]],  # other shape
        "", None, calls[0], [{gold[0]["name"]: deep_text}], "Error during inference: boom",
        [{gold[0]["name"]: args({"x": shallower})}],
    ]
    return shapes[k % len(shapes)]


def _prompting_lines(entry: BfclEntry, k: int, model: str) -> Any:
    dotted, served = _gold(entry, False), _gold(entry, True)
    text = oracle_text(dotted, "python", False)
    wrap = {"gemini-2.5-flash": lambda t: f"```tool_code\n{t}\n```",
            "nvidia/llama-3.1-nemotron-ultra-253b-v1": lambda t: f"<TOOLCALL>{t}</TOOLCALL>"}.get(model, lambda t: t)
    shapes: list[Any] = [
        wrap(text), wrap(text[1:-1]), wrap(oracle_text(served, "python", False)),  # underscore names: kept as written
        "I cannot help with that.", "", wrap(oracle_text(dotted, "json", False)), wrap("[" + "[" * DEEP + "]" * DEEP + "]"),
        wrap(f"[{dotted[0]['name']}(x=" + "[" * DEEP + "1" + "]" * DEEP + ")]"), text, f"```\n{text}\n```",
        [{dotted[0]["name"]: json.dumps(dotted[0]["arguments"])}], wrap("[1, 2]"), wrap(f"[{dotted[0]['name']}]"),
        None, wrap(""),  # null: not a text, BFCL's decoding raises
    ]
    return shapes[k % len(shapes)]


def _format_sensitivity_line(entry: BfclEntry, k: int) -> str:
    config = entry.id.split(":")[1]
    fmt = config.split("&")[0].removeprefix("ret_fmt=")
    tag = "tool_call_tag=True" in config
    gold = _gold(entry, False)
    shapes = [oracle_text(gold, fmt, tag), oracle_text(gold, fmt, not tag), oracle_text(gold, "python", False),
              oracle_text(gold, "json", tag), "No call.", oracle_text(gold[::-1], fmt, tag)]
    return shapes[(k // 26 + k) % len(shapes)]


def crafted_folder(root: Path, model: str) -> list[str]:
    """result/<model>/... for ``model`` (see the module docstring); returns the ids written."""
    kind = MODELS[model]
    folder = root / model.replace("/", "_")
    ids = []
    by_category: dict[str, list[str]] = {}
    for n, entry in enumerate(e for c in CATEGORIES for e in load_entries((c,))[:PER_CATEGORY]):
        result = _prompting_lines(entry, n, model) if kind == "prompting" else _fc_lines(entry, n, kind == "fc-json-text")
        by_category.setdefault(entry.category, []).append(json.dumps({"id": entry.id, "result": result}))
    if kind == "prompting":
        for n, entry in enumerate(load_format_sensitivity()[:FORMAT_SENSITIVITY_LINES]):
            by_category.setdefault("format_sensitivity", []).append(
                json.dumps({"id": entry.id, "result": _format_sensitivity_line(entry, n)}))
    for category, lines in by_category.items():
        group = "format_sensitivity" if category == "format_sensitivity" else \
            "live" if category.startswith("live_") else "non_live"
        path = folder / group / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        ids += [json.loads(line)["id"] for line in lines]
    return ids


def _categories(model: str) -> list[str]:
    return list(CATEGORIES) + (["format_sensitivity"] if MODELS[model] == "prompting" else [])


@pytest.mark.parametrize("model", list(MODELS))
def test_every_handler_shape_gets_bfcls_own_verdicts_and_error_types(bfcl_data, bfcl_python, model, tmp_path):
    ours, _ = equal_to_bfcl(bfcl_python, tmp_path, model, crafted_folder, _categories(model), FIXTURE)
    assert len(set(ours.values())) >= 4  # right, and several kinds of wrong


@pytest.mark.parametrize("model", list(MODELS))
def test_the_committed_bfcl_verdicts_hold_without_bfcls_venv(bfcl_data, model, tmp_path):
    equal_to_committed(tmp_path, model, crafted_folder, FIXTURE)


def main() -> None:
    """Writes the fixture: BFCL's verdicts on every model's crafted folder (the module docstring)."""
    write_fixture(FIXTURE, Path(sys.argv[1]), MODELS, crafted_folder, _categories)


if __name__ == "__main__":
    main()
