"""BFCL v4: random result folders in BFCL's layout against BFCL's own ``bfcl evaluate``.

Each case is one model folder, ``result/<model>/<group>/BFCL_v4_<category>_result.json`` (as
``bfcl generate`` writes it), the model drawn from BFCL's registry across its handlers' shapes (FC with
arguments as JSON text, with ``underscore_to_dot`` and without; FC with arguments as objects, Nova's,
Mistral-FC's and Gemini-FC's; prompting with Python call text, Gemini's ````tool_code`` fence and
Nemotron's ``<TOOLCALL>`` tags; handlers with a decoder of their own, run as BFCL's own methods: Hammer,
Llama-3.1-FC, xLAM, Phi, Qwen-FC), over a random subset of categories and of each category's entries (the
grouped scores and Overall Acc are then BFCL's roundings over the counts the files hold). Each line is the
entry's gold calls (bench/bench_bfcl_score.py's ``_write`` builds a folder the same way) or a mutation of
them: a value changed, an argument dropped or added, int as float, a string as a list, strings with line
breaks, quotes and Unicode, empty lists, calls dropped, reversed or repeated, the calls in the other
handler's shape, a text reply, text that does not decode, arguments nested deep, a result that is not a
list; a line given twice; multi-turn entries (every handler's step shape) with turns dropped,
added, emptied or changed; memory_kv and memory_rec_sum answers (the reply with or without the answer,
calls before or after it, no reply); format_sensitivity for the prompting models.

The official side: ``bfcl evaluate`` (BFCL's ``eval_runner.main`` with ``partial_eval``, its registry and
handlers) in .ci/bfcl-venv, through tests/evals/benchmarks/bfcl/bfcl_evaluate_driver.py; its numbers are
the cells it writes in its CSVs (each category's column and the grouped scores, the Format Sensitivity Max
Delta and Standard Deviation and each configuration's accuracy, "N/A" included) and, per
category, every entry's verdict (its error type, "" when right) as one text. Ours: ``evals score FOLDER
--format bfcl-official --benchmark bfcl --json`` (its summary's metrics as ``{:.2f}%``, the two Format
Sensitivity numbers as ``str()`` as BFCL writes them, absent as "N/A"; the verdicts from its ``scores.jsonl``).
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from evals.benchmarks.bfcl.agentic import read_memory
from evals.benchmarks.bfcl.data import BfclEntry, load_entries
from evals.benchmarks.bfcl.files import MULTI_TURN, SINGLE_TURN
from evals.benchmarks.bfcl.format_sensitivity import load_format_sensitivity
from evals.benchmarks.bfcl.metrics import COLUMN_OF, FORMAT_CONFIGS, config_metric
from evals.benchmarks.bfcl.multi_turn import gold_steps, read_multi_turn
from evals.benchmarks.bfcl.prompting import entry_format, oracle_text
from evals.benchmarks.bfcl.single_turn import gold_calls

from . import weird
from .ours import evals_score
from .outcome import Outcome

NAME = "bfcl"
ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".ci" / "bfcl-venv" / "bin" / "python"
DRIVER = ROOT / "tests" / "evals" / "benchmarks" / "bfcl" / "bfcl_evaluate_driver.py"

# BFCL registry name -> the shape its handler's results take
MODELS: dict[str, str] = {
    "gpt-4o-2024-11-20-FC": "fc-json-text",  # OpenAIResponsesHandler: underscore_to_dot
    "claude-sonnet-4-5-20250929-FC": "fc-json-text",  # ClaudeHandler
    "qwen3-235b-a22b-instruct-2507-FC": "fc-json-text",  # QwenAPIHandler: no underscore_to_dot
    "nova-pro-v1.0": "fc-object",  # NovaHandler
    "mistralai/Ministral-8B-Instruct-2410": "fc-object",  # MistralFCHandler: no underscore_to_dot
    "gemini-2.5-flash-FC": "fc-object",  # GeminiHandler FC: a lone object is a list of one
    "Qwen/Qwen3-8B": "prompting",  # QwenHandler (OSSHandler's decoder)
    "gpt-4o-2024-11-20": "prompting",  # OpenAIResponsesHandler, prompting
    "meta-llama/Llama-3.1-8B-Instruct": "prompting",  # LlamaHandler
    "gemini-2.5-flash": "prompting",  # GeminiHandler prompting: its ```tool_code fence dropped
    "nvidia/llama-3.1-nemotron-ultra-253b-v1": "prompting",  # NemotronHandler: calls inside <TOOLCALL>
    # handlers with a decoder of their own, run as BFCL's own methods (evals.benchmarks.bfcl.decoder_guard)
    "MadeAgents/Hammer2.1-3b": "own",  # a JSON list of {"name", "arguments"}, maybe in a fence
    "meta-llama/Llama-3.1-8B-Instruct-FC": "own",  # <|python_tag|>{"name", "parameters"}; ..., or a Python list (eval)
    "Salesforce/xLAM-2-3b-fc-r": "own",  # a JSON list, or objects joined by ";"
    "microsoft/phi-4": "own-prompting",  # Python call text, maybe after a ```python opening
    "Qwen/Qwen3-8B-FC": "own",  # <tool_call>\n{"name", "arguments"}\n</tool_call> per call
}
WRAP = {"gemini-2.5-flash": "```tool_code\n{}\n```", "nvidia/llama-3.1-nemotron-ultra-253b-v1": "<TOOLCALL>{}</TOOLCALL>"}
# the models whose multi-turn and memory files are drawn often (every model's are read; these cover each
# handler's decode_execute: FC on JSON text, FC on objects (Nova's, Mistral-FC's, Gemini-FC's), the generic
# prompting one, Gemini's tool_code fence and Nemotron's <TOOLCALL> tags)
MULTI_TURN_MODELS = ("gpt-4o-2024-11-20-FC", "claude-sonnet-4-5-20250929-FC", "Qwen/Qwen3-8B", "gpt-4o-2024-11-20",
                     "nova-pro-v1.0", "mistralai/Ministral-8B-Instruct-2410", "gemini-2.5-flash-FC", "gemini-2.5-flash",
                     "nvidia/llama-3.1-nemotron-ultra-253b-v1", "MadeAgents/Hammer2.1-3b",
                     "meta-llama/Llama-3.1-8B-Instruct-FC", "Salesforce/xLAM-2-3b-fc-r", "microsoft/phi-4",
                     "Qwen/Qwen3-8B-FC")

# BFCL's CSV (file, column) -> our metric (the cells whose "N/A" ours has as no value; data_live's "AST Summary"
# and data_non_live's "Non-Live Overall Acc" are left out: BFCL prints one and not the other of the same score)
CELLS: dict[tuple[str, str], str] = {
    ("data_overall", "Overall Acc"): "overall_acc", ("data_overall", "Non-Live AST Acc"): "non_live_ast",
    ("data_overall", "Non-Live Simple AST"): "simple_ast", ("data_overall", "Live Acc"): "live_ast",
    ("data_overall", "Multi Turn Acc"): "multi_turn_acc",
    ("data_overall", "Irrelevance Detection"): "irrelevance_detection",
    **{("data_overall", COLUMN_OF[c]): c for c in (
        "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple", "live_parallel",
        "live_parallel_multiple", "live_relevance", *MULTI_TURN)},
    ("data_non_live", "AST Summary"): "non_live_ast", ("data_non_live", "Simple AST"): "simple_ast",
    ("data_non_live", "Python Simple AST"): "simple_python", ("data_non_live", "Java Simple AST"): "simple_java",
    ("data_non_live", "JavaScript Simple AST"): "simple_javascript",
    ("data_non_live", "Multiple AST"): "multiple", ("data_non_live", "Parallel AST"): "parallel",
    ("data_non_live", "Parallel Multiple AST"): "parallel_multiple",
    ("data_non_live", "Irrelevance Detection"): "irrelevance",
    ("data_live", "Live Overall Acc"): "live_ast", ("data_live", "Python Simple AST"): "live_simple",
    ("data_live", "Python Multiple AST"): "live_multiple", ("data_live", "Python Parallel AST"): "live_parallel",
    ("data_live", "Python Parallel Multiple AST"): "live_parallel_multiple",
    ("data_live", "Irrelevance Detection"): "live_irrelevance", ("data_live", "Relevance Detection"): "live_relevance",
    ("data_multi_turn", "Multi Turn Overall Acc"): "multi_turn_acc", ("data_multi_turn", "Base"): "multi_turn_base",
    ("data_multi_turn", "Miss Func"): "multi_turn_miss_func", ("data_multi_turn", "Miss Param"): "multi_turn_miss_param",
    ("data_multi_turn", "Long Context"): "multi_turn_long_context",
    ("data_overall", "Memory Acc"): "memory_summary", ("data_overall", "Memory KV"): "memory_kv",
    ("data_overall", "Memory Recursive Summarization"): "memory_rec_sum",
    ("data_agentic", "Agentic Overall Acc"): "agentic_acc", ("data_agentic", "Memory Summary"): "memory_summary",
    ("data_agentic", "Memory KV"): "memory_kv", ("data_agentic", "Memory Recursive Summarization"): "memory_rec_sum",
    **{("data_format_sensitivity", f"Config {c}"): config_metric(c) for c in FORMAT_CONFIGS},
}
# the cells BFCL writes as str() of its rounded number, not as a percent ("N/A" when format_sensitivity was not run)
RAW_CELLS: dict[tuple[str, str], str] = {
    (csv_file, f"Format Sensitivity {column}"): name
    for csv_file in ("data_overall", "data_format_sensitivity")
    for column, name in (("Max Delta", "format_sensitivity_max_delta"),
                         ("Standard Deviation", "format_sensitivity_std"))
}
MEMORY = ("memory_kv", "memory_rec_sum")


def prepare(work: Path) -> None:
    if not VENV.is_file():
        raise SystemExit(f"{VENV} is missing: run scripts/bfcl_env.sh")


# ---- the lines ----

def _few_surrogates(rng: random.Random, s: str) -> str:
    """``s``, its lone surrogates mostly dropped (BFCL stops on a wrong entry holding one: a file with one says
    little else)."""
    return s if rng.random() < 0.15 else "".join(ch for ch in s if not "\ud800" <= ch <= "\udfff")


def _odd_string(rng: random.Random, s: str) -> str:
    return _few_surrogates(rng, weird.text(rng, s)) if rng.random() < 0.5 else s + rng.choice(
        ["\n", "\r\n", "\u2028", "'", '"', "\\", "é", "\u4e2d", "\t", " ", "\x00", "\\n"])


def _str(v: Any) -> str:
    try:
        return str(v)
    except (ValueError, RecursionError):  # too deep, or an int of too many digits
        return "x"


def _mutate_value(rng: random.Random, v: Any) -> Any:
    try:
        return _changed(rng, v)
    except (OverflowError, ValueError):  # int() of inf or nan, float() of a huge int
        return None


def _changed(rng: random.Random, v: Any) -> Any:
    r = rng.randrange(9)
    if r == 0:
        return weird.value(rng)
    if isinstance(v, bool):
        return rng.choice([not v, int(v), _str(v).lower()])
    if isinstance(v, int):
        return rng.choice([float(v), v + 1, _str(v), -v, [v]])
    if isinstance(v, float):
        return rng.choice([int(v), v + 0.5, _str(v), round(v, 1) + 1e-9])
    if isinstance(v, str):
        return rng.choice([_odd_string(rng, v), [v], v.upper(), v + " ", "", v.replace(" ", "_")])
    if isinstance(v, list):
        return rng.choice([[], v[::-1], v + v[:1], tuple(v) and v[:-1], _str(v)])
    if isinstance(v, dict):
        return rng.choice([{}, {**v, "extra": 1}, dict(list(v.items())[1:])])
    return rng.choice([None, "", 0])


def _mutate_calls(rng: random.Random, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls = copy.deepcopy(calls)
    for _ in range(rng.choice([1, 1, 1, 2])):
        r = rng.randrange(8)
        if not calls:
            return calls
        c = rng.choice(calls)
        args = c["arguments"]
        if r == 0 and args:  # a value changed
            k = rng.choice(list(args))
            args[k] = _mutate_value(rng, args[k])
        elif r == 1 and args:  # an argument dropped
            args.pop(rng.choice(list(args)))
        elif r == 2:  # an argument added
            args[rng.choice(["extra", "unit", "x\ny", "é"])] = weird.value(rng) if rng.random() < 0.3 else 1
        elif r == 3:  # calls dropped, reversed, repeated
            calls = rng.choice([calls[:-1], calls[::-1], calls + calls[:1], []])
        elif r == 4:  # the name changed
            c["name"] = rng.choice([c["name"].replace("_", "."), c["name"].replace(".", "_"), c["name"] + "x",
                                    c["name"].upper(), ""])
        elif r == 5 and args:  # a string odd
            for k, v in args.items():
                if isinstance(v, str):
                    args[k] = _odd_string(rng, v)
                    break
        elif r == 6 and args:  # a list emptied, a number's type changed
            for k, v in args.items():
                if isinstance(v, list):
                    args[k] = []
                    break
                if isinstance(v, int | float) and not isinstance(v, bool):
                    try:
                        args[k] = float(v) if isinstance(v, int) else int(v)
                    except (OverflowError, ValueError):  # a huge int, inf, nan
                        args[k] = None
                    break
        elif r == 7:  # deep nesting
            deep: Any = 1
            for _ in range(rng.choice([5, 60, 300, 1100])):
                deep = [deep]
            args[rng.choice(list(args) or ["x"])] = deep
    return calls


def _text_reply(rng: random.Random) -> Any:
    return rng.choice(["I cannot help with that.", "", "Error during inference: boom", None, 0, {}, "[]", "[1, 2]",
                       "```\n[]\n```", _few_surrogates(rng, weird.text(rng)), "[f(x=1)]", "<TOOLCALL></TOOLCALL>"])


def _json_text(rng: random.Random, args: Any) -> Any:
    try:
        text = json.dumps(args, ensure_ascii=rng.random() < 0.5)
    except (ValueError, RecursionError):
        return "{" + '"x": ' + "[" * 1100 + "]" * 1100 + "}"
    if rng.random() < 0.04:
        text = rng.choice([text[:-1], text + "x", text.replace('"', "'"), "null", "[]", '"text"'])
    return text


def _fc(rng: random.Random, calls: list[dict[str, Any]], as_text: bool) -> Any:
    items = [{c["name"]: (_json_text(rng, c["arguments"]) if as_text else c["arguments"])} for c in calls]
    if rng.random() < 0.05:  # the other handler's shape
        items = [{c["name"]: (c["arguments"] if as_text else _json_text(rng, c["arguments"]))} for c in calls]
    if rng.random() < 0.03 and items:
        return items[0]  # a lone object
    if rng.random() < 0.03 and len(items) > 1:
        return [{k: v for item in items for k, v in item.items()}]  # every call in one object
    return items


def _text(calls: list[dict[str, Any]], fmt: str, tag: bool) -> str:
    try:
        return oracle_text(calls, fmt, tag)
    except (ValueError, TypeError, RecursionError):  # too deep to write
        return "[" * 1100 + "]" * 1100


def _prompting(rng: random.Random, calls: list[dict[str, Any]], fmt: str, tag: bool, model: str) -> Any:
    text = _text(calls, fmt, tag)
    r = rng.random()
    if r < 0.05:
        text = text[: rng.randrange(len(text) + 1)]
    elif r < 0.08:
        text = _text(calls, rng.choice(["python", "json"]), not tag) if rng.random() < 0.5 else f"```\n{text}\n```"
    elif r < 0.1:
        text = text[1:-1]
    return _wrapped(rng, text, model)


def _wrapped(rng: random.Random, text: str, model: str) -> str:
    """A prompting model's text in its handler's wrapping (Gemini's fence, Nemotron's tags), now and then not."""
    return WRAP.get(model, "{}").format(text) if rng.random() < 0.95 else text


def _own(rng: random.Random, calls: list[dict[str, Any]], model: str) -> Any:
    """``calls`` as the handler with a decoder of its own reads them (or, now and then, another one's shape)."""
    if rng.random() < 0.1:
        model = rng.choice([m for m, k in MODELS.items() if k.startswith("own")])
    try:
        named = json.dumps([{"name": c["name"], "arguments": c["arguments"]} for c in calls])
        if model == "MadeAgents/Hammer2.1-3b":
            return named if rng.random() < 0.7 else f"```\n{named}\n```"
        if model == "Salesforce/xLAM-2-3b-fc-r":
            return named if rng.random() < 0.7 else "; ".join(json.dumps({"name": c["name"], "arguments": c["arguments"]})
                                                              for c in calls)
        if model == "Qwen/Qwen3-8B-FC":
            return "\n".join(f"<tool_call>\n{json.dumps({'name': c['name'], 'arguments': c['arguments']})}\n</tool_call>"
                             for c in calls)
        if model == "meta-llama/Llama-3.1-8B-Instruct-FC":
            params = [{"name": c["name"], "parameters": c["arguments"]} for c in calls]
            if rng.random() < 0.5:
                return "<|python_tag|>" + "; ".join(json.dumps(p) for p in params)
            return repr(params)  # read by its eval (bounded here)
        text = _text(calls, "python", False)
        return text if rng.random() < 0.6 else f"```python\n{text}"  # Phi
    except (ValueError, RecursionError):  # too deep or too long to write
        return "[" * 1100 + "]" * 1100


def _gold(entry: BfclEntry, served: bool) -> list[dict[str, Any]]:
    gold = gold_calls(entry, served=served)
    if gold or not entry.functions:
        return gold
    doc = entry.functions[0]
    name = doc["name"].replace(".", "_") if served else doc["name"]
    return [{"name": name, "arguments": dict.fromkeys((doc.get("parameters") or {}).get("required") or [], 1)}]


def _single(rng: random.Random, entry: BfclEntry, model: str, p_wrong: float) -> Any:
    kind = MODELS[model]
    if rng.random() < 0.08:
        return _text_reply(rng)
    calls = _gold(entry, served=kind != "prompting" and rng.random() < 0.9)
    if rng.random() < p_wrong:
        calls = _mutate_calls(rng, calls)
    if kind.startswith("own"):
        return _own(rng, calls, model)
    if kind == "prompting":
        fmt, tag = entry_format(entry)
        return _prompting(rng, calls, fmt, tag, model)
    return _fc(rng, calls, kind == "fc-json-text")


def _multi(rng: random.Random, steps: list[list[dict[str, Any]]], model: str, p_wrong: float) -> Any:
    if rng.random() < 0.03:
        return _text_reply(rng)
    turns: list[Any] = []
    for calls in steps:
        if rng.random() < p_wrong:
            calls = _mutate_calls(rng, calls)
        kind = MODELS[model]
        if not calls:
            step: Any = "Done."
        elif kind.startswith("own"):
            step = _own(rng, calls, model)
        elif kind == "prompting":
            step = _wrapped(rng, _text(calls, "python", False), model)
        else:
            step = _fc(rng, calls, kind == "fc-json-text")
        turn: Any = [step]
        if rng.random() < 0.1:
            turn.append(rng.choice(["Done.", [], "", {}]))
        if rng.random() < 0.05:
            turn = rng.choice([[], "text", {}, [[]]])
        turns.append(turn)
    r = rng.random()
    if r < 0.15:
        turns = turns[: rng.randrange(len(turns))]  # a turn short
    elif r < 0.22:
        turns.append([["Done."]] if rng.random() < 0.5 else [])  # a turn long
    return turns


def _memory(rng: random.Random, answer: str, model: str) -> Any:
    """A memory ``result``: one turn of steps, the last a reply with (or without) the answer."""
    if rng.random() < 0.05:
        return _text_reply(rng)
    kind = MODELS[model]
    calls = [{"name": "core_memory_list_keys", "arguments": {}}]
    call: Any = _wrapped(rng, "[core_memory_list_keys()]", model) if kind == "prompting" else \
        _own(rng, calls, model) if kind.startswith("own") else _fc(rng, calls, kind == "fc-json-text")
    reply = rng.choice([f"It is {answer}.", answer.upper(), WRAP.get(model, "{}").format(answer), f"The answer: {_odd_string(rng, answer)}", "I do not know.",
                        "", str({"answer": answer}), f"{answer[:-1]}", f"'{answer}'", f"({answer})"])
    steps: list[Any] = [call] * rng.choice([0, 1, 2]) + [reply]
    r = rng.random()
    if r < 0.1:
        steps = steps[:-1]  # calls only: no last message
    elif r < 0.15:
        steps.append(call)  # a call after the reply
    elif r < 0.2:
        steps[-1] = rng.choice([[reply], None, 5, [reply, "x"]])
    return [steps] if rng.random() > 0.05 else [steps, steps]


def _group(category: str) -> str:
    if category in MEMORY:
        return f"agentic/memory/{category.removeprefix('memory_')}"
    if category == "format_sensitivity":
        return category
    if category in MULTI_TURN:
        return "multi_turn"
    return "live" if category.startswith("live_") else "non_live"


def _pick(rng: random.Random, items: list[Any]) -> list[Any]:
    r = rng.random()
    if r < 0.1:
        return items  # the whole category
    n = rng.choice([1, 2, 3, 5, 8, 16, 24, 40, 160, 320])  # 160, 320: BFCL's divide-first rounding ties
    if r < 0.5:
        return items[:n]
    return rng.sample(items, min(n, len(items)))


def generate(rng: random.Random, case_dir: Path) -> Path:
    model = rng.choice(list(MODELS))
    kind = MODELS[model]
    categories = [c for c in SINGLE_TURN if not (kind in ("prompting", "own-prompting") and c in ("simple_java", "simple_javascript"))]
    # multi-turn and memory: mostly for the models whose handlers' decode_execute differ (MULTI_TURN_MODELS)
    categories += [c for c in MULTI_TURN if rng.random() < (0.3 if model in MULTI_TURN_MODELS else 0.05)]
    categories += [c for c in MEMORY if rng.random() < (0.3 if model in MULTI_TURN_MODELS else 0.05)]
    if kind == "prompting" and rng.random() < 0.2:
        categories.append("format_sensitivity")
    chosen = rng.sample(categories, rng.randint(1, min(6, len(categories))))
    p_wrong = rng.choice([0.0, 0.1, 0.3, 0.6, 1.0])
    folder = case_dir / "result" / model.replace("/", "_")
    for category in chosen:
        lines: list[str] = []
        if category in MEMORY:
            for memory in _pick(rng, read_memory(category)[0]):
                lines.append(weird.dumps(rng, {"id": memory.id, "result": _memory(rng, memory.answers[0], model)}))
        elif category in MULTI_TURN:
            entries = _pick(rng, read_multi_turn(category))[:6]  # each replays BFCL's backends: a few
            for multi in entries:
                lines.append(weird.dumps(rng, {"id": multi.id, "result": _multi(rng, gold_steps(multi), model, p_wrong)}))
        else:
            pool = load_format_sensitivity() if category == "format_sensitivity" else load_entries((category,))
            for entry in _pick(rng, list(pool)):
                lines.append(weird.dumps(rng, {"id": entry.id, "result": _single(rng, entry, model, p_wrong)}))
        if lines and rng.random() < 0.03:
            lines.append(rng.choice(lines))  # an id twice
        if rng.random() < 0.3:
            rng.shuffle(lines)
        path = folder / _group(category) / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        weird.write_lines(rng, path, lines, odd=0.05)
    (case_dir / "model.txt").write_text(model, encoding="utf-8")
    return folder


# ---- the two sides ----

def _categories(folder: Path) -> list[str]:
    return sorted(p.name.removeprefix("BFCL_v4_").removesuffix("_result.json")
                  for p in folder.rglob("BFCL_v4_*_result.json"))


def _by_category(verdicts: dict[str, str]) -> dict[str, str]:
    grouped: dict[str, dict[str, str]] = {}
    for entry_id, error in verdicts.items():
        category = entry_id.split(":")[0].rsplit("_", 1)[0] if ":" not in entry_id else "format_sensitivity"
        grouped.setdefault(category, {})[entry_id] = error
    return {f"verdicts {c}": json.dumps(dict(sorted(v.items())), ensure_ascii=False) for c, v in grouped.items()}


def run_official(work: Path, case: Path) -> Outcome:
    model = (case.parents[1] / "model.txt").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        env = {**os.environ, "BFCL_PROJECT_ROOT": tmp, "PYTHONPATH": str(ROOT)}
        try:
            done = subprocess.run([str(VENV), str(DRIVER), str(case.parent), str(Path(tmp) / "score"), model,
                                   *_categories(case)], capture_output=True, text=True, timeout=900, env=env, check=False)
        except subprocess.TimeoutExpired:
            return Outcome(stopped=True, note="timed out")
    if done.returncode != 0:
        return Outcome(stopped=True, note=done.stderr.strip()[-300:])
    theirs = json.loads(done.stdout)
    numbers: dict[str, str] = {}
    for csv_file, row in theirs["csv"].items():
        for column, cell in (row or {}).items():
            if (csv_file, column) in CELLS or (csv_file, column) in RAW_CELLS:
                numbers[f"{csv_file}:{column}"] = cell
    if "format_sensitivity" in theirs["scores"]:  # in no CSV column: its score file's accuracy, printed as the CSVs print
        numbers["format_sensitivity"] = f"{theirs['scores']['format_sensitivity']['accuracy'] * 100:.2f}"
    numbers.update(_by_category(theirs["verdicts"]))
    return Outcome(numbers=numbers)


def run_ours(case: Path) -> Outcome:
    out = case.parents[1] / "ours"
    got = evals_score(["score", str(case), "--format", "bfcl-official", "--benchmark", NAME, "--json",
                       "--out", str(out)])
    metrics = (got.summary or {}).get("metrics") or {}
    numbers = {}
    for (csv_file, column), name in CELLS.items():
        value = metrics.get(name)
        numbers[f"{csv_file}:{column}"] = f"{value:.2f}%" if isinstance(value, int | float) else "N/A"
    for (csv_file, column), name in RAW_CELLS.items():
        value = metrics.get(name)
        numbers[f"{csv_file}:{column}"] = str(value) if isinstance(value, int | float) else "N/A"
    if isinstance(metrics.get("format_sensitivity"), int | float):
        numbers["format_sensitivity"] = f"{metrics['format_sensitivity']:.2f}"
    verdicts: dict[str, str] = {}
    if (out / "scores.jsonl").is_file():
        for line in (out / "scores.jsonl").read_text(encoding="utf-8").split("\n"):  # not splitlines: U+2028
            if not line:
                continue
            s = json.loads(line)
            verdict = ((s.get("score") or {}).get("details") or {}).get("verdict") or {}
            verdicts[s["task_id"]] = verdict.get("error_type") or ""
    numbers.update(_by_category(verdicts))
    outcome = got.outcome(numbers)
    # a warning counts where it says BFCL stops on the file or a file is not scored here: the others (results that do not decode, texts, a
    # subset) say how a number was counted, as BFCL counts it, and must not hide a difference
    stops = [w for w in (got.summary or {}).get("warnings") or [] if "bfcl evaluate stops" in w or "skipped:" in w]
    outcome.warned = bool(stops)
    outcome.note = outcome.note if outcome.stopped or outcome.crashed else "; ".join(stops)[:300]
    return outcome
