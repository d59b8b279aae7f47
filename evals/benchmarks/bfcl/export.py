"""``evals export RUN --format bfcl-official [--model-name NAME]``: a run as BFCL's own result folder, which
``bfcl evaluate`` takes as it is.

* **The model folder.** ``bfcl evaluate`` looks each folder of ``result/`` up in its model registry
  (``MODEL_CONFIG_MAPPING``; the folder is the model's name with ``/`` written ``_``) and stops on one it
  does not know ("Invalid model name"). The folder is named after ``--model-name``, checked against the
  pinned wheel's own list of those names (``bfcl_eval/constants/supported_models.py``, read out of the
  wheel, never copied); an unknown name is refused, naming a few close ones. Without ``--model-name`` the
  run's model names the folder; when that is no BFCL model (``oracle``, ``openai:gpt-4o``) a warning says
  that ``bfcl evaluate`` will refuse it and how to name one.
* **Token counts and latency.** Each line carries ``input_token_count``, ``output_token_count`` and
  ``latency`` as BFCL's handlers record them, from the trace's model responses: a single-turn entry's
  numbers (summed over its responses: one, as BFCL queries once); a multi-turn or memory entry's, per user
  turn, one per model response. BFCL's cost column sums the tokens at the model's price (API models) or
  the latencies at its GPU price (local models); its latency columns take every non-zero latency.
* **The calls.** A function-calling run's lines are :mod:`.results`' (calls as ``{name: arguments as JSON
  text}``, the reply's text without one). A prompting run (a strategy other than ``fc``) keeps the model's
  text as the result, as BFCL's prompting handlers record it and decode it at evaluation: a single-turn
  entry's scored response's text, a multi-turn or memory entry's text per response.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import FORMAT_SENSITIVITY, MULTI_TURN, SINGLE_TURN, WEB_SEARCH
from .results import FORMAT, READ, CallsOf, _known, episode_result, read_results, result_lines

if TYPE_CHECKING:
    from client.runs import RunDir

    from ...core.formats import PredictionFormat
    from .results_split import VerdictOf

__all__ = ["FORMAT", "bfcl_models", "export_run", "model_folder", "official_format", "usage_fields"]

FC_STRATEGY = "fc"


def bfcl_models() -> tuple[str, ...]:
    """BFCL's model names, as the pinned wheel lists them (``SUPPORTED_MODELS``: its registry's keys)."""
    from .wheel_code import import_module

    return tuple(import_module("bfcl_eval.constants.supported_models").SUPPORTED_MODELS)


def model_folder(name: str) -> str:
    """The folder ``bfcl evaluate`` reads model ``name`` from (``/`` as ``_``); ``ValueError`` for a name BFCL
    does not know, with the closest ones."""
    known = bfcl_models()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
        hint = f"; the closest: {', '.join(close)}" if close else f"; e.g. {', '.join(known[:3])}"
        raise ValueError(f"--model-name {name!r} is not a BFCL model ({len(known)} in bfcl_eval/constants/"
                         f"supported_models.py of the pinned wheel){hint}")
    return name.replace("/", "_")


def _responses(trace: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """``(user turn, model_response event)`` of the episode, in order (turns start at 0; a ``note`` event with
    ``user_turn`` starts one)."""
    turn = 0
    out = []
    for event in trace.get("events") or ():
        if not isinstance(event, Mapping):
            continue
        if isinstance(event.get("user_turn"), int):
            turn = int(event["user_turn"])
        elif event.get("kind") == "model_response":
            out.append((turn, event))
    return out


def _numbers(event: Mapping[str, Any]) -> tuple[float, float, float]:
    usage = event.get("usage") or {}
    return (float(usage.get("input_tokens") or 0), float(usage.get("output_tokens") or 0),
            float(event.get("latency_s") or 0.0))


def usage_fields(trace: Mapping[str, Any], category: str) -> dict[str, Any]:
    """``input_token_count``, ``output_token_count`` and ``latency`` as BFCL's handlers record them (module
    docstring); none for an imported trace that has no model responses."""
    found = _responses(trace)
    if not found:
        return {}
    names = ("input_token_count", "output_token_count", "latency")
    if category in SINGLE_TURN:
        sums = [sum(_numbers(e)[i] for _, e in found) for i in range(3)]
        return {n: int(v) if n != "latency" else v for n, v in zip(names, sums, strict=True)}
    turns = max(t for t, _ in found) + 1 if category in MULTI_TURN else 1
    out: dict[str, Any] = {n: [[] for _ in range(turns)] for n in names}
    for turn, event in found:
        values = _numbers(event)
        for i, n in enumerate(names):
            out[n][min(turn, turns - 1)].append(int(values[i]) if n != "latency" else values[i])
    return out


def _text(event: Mapping[str, Any]) -> str:
    return str((event.get("response") or {}).get("text") or "")


def _text_result(trace: Mapping[str, Any], category: str) -> Any:
    """A prompting model's result: its text, as BFCL's prompting handlers record it (module docstring)."""
    if trace.get("status") != "completed":
        return f"Error during inference: {(trace.get('error') or {}).get('message') or 'the episode failed'}"
    found = _responses(trace)
    if category in SINGLE_TURN:
        return _text(found[0][1]) if found else str(trace.get("final_answer") or "")
    turns = max((t for t, _ in found), default=0) + 1 if category in MULTI_TURN else 1
    out: list[list[str]] = [[] for _ in range(turns)]
    for turn, event in found:
        out[min(turn, turns - 1)].append(_text(event))
    return out


def _group(category: str) -> str:
    if category.startswith("memory_"):
        return f"agentic/memory/{category.removeprefix('memory_')}"
    if category.startswith("web_search"):
        return "agentic"
    if category in MULTI_TURN:
        return "multi_turn"
    if category == FORMAT_SENSITIVITY:
        return FORMAT_SENSITIVITY
    return "live" if category.startswith("live_") else "non_live"


def _folder(config: Mapping[str, Any], model_name: str | None) -> str:
    if model_name is not None:
        return model_folder(model_name)
    model = str(config.get("model") or "model")
    if model not in bfcl_models():
        print(f"warning: the run's model {model!r} is no BFCL model: `bfcl evaluate` refuses its folder (\"Invalid "
              "model name\"); `evals export --model-name NAME` names the BFCL model to score it as", file=sys.stderr)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model.replace("/", "_")).strip("_") or "model"


def export_run(run_dir: RunDir, out: Path, calls_of: CallsOf, model_name: str | None = None) -> list[Path]:
    """Write the run's entries as BFCL's result files under ``out/<model folder>/`` (module docstring)."""
    config = run_dir.config or {}
    folder = _folder(config, model_name)
    prompting = str(config.get("strategy") or FC_STRATEGY) != FC_STRATEGY
    traces = run_dir.latest_traces()
    chosen = set((config.get("options") or {}).get("category") or READ)
    if "web_search" in chosen:  # BFCL's name for both web-search categories
        chosen |= set(WEB_SEARCH)
    by_category: dict[str, list[str]] = {}
    for entry_id, category in _known([c for c in (*READ, FORMAT_SENSITIVITY)
                                      if c in chosen or ("all" in chosen and c in READ)]).items():
        if entry_id in traces:
            by_category.setdefault(category, []).append(entry_id)
    written = []
    for category, ids in by_category.items():
        lines = _lines(traces, ids, category, calls_of, prompting)
        target = out / folder / _group(category) / f"BFCL_v4_{category}_result.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        written.append(target)
    return written


def _lines(traces: Mapping[str, Mapping[str, Any]], ids: Sequence[str], category: str, calls_of: CallsOf,
           prompting: bool) -> list[dict[str, Any]]:
    if prompting and not any("bfcl_result" in (traces[i].get("outcome") or {}) for i in ids):
        lines = [{"id": i, "result": _text_result(traces[i], category)} for i in ids]
    elif category in SINGLE_TURN or category == FORMAT_SENSITIVITY:
        lines = result_lines(traces, ids, calls_of)
    else:
        lines = [{"id": i, "result": episode_result(traces[i], category)} for i in ids]
    return [{**line, **usage_fields(traces[line["id"]], category)} for line in lines]


def official_format(calls_of: CallsOf, options: Mapping[str, Any] | None = None,
                    verdict_of: VerdictOf | None = None) -> PredictionFormat:
    """The format: read by :func:`.results.read_results`, written here; ``calls_of`` reads the calls a trace is
    scored by (:func:`.single_turn.calls_from_trace`); ``options``: the benchmark's (``bfcl_model``: how to decode
    the files read); ``verdict_of``: a single-turn trace's verdict (:func:`.single_turn.entry_verdict`), made while
    a large folder is read."""
    from ...core.formats import PredictionFormat

    return PredictionFormat(
        FORMAT,
        "BFCL's own result files (result/<model>/<group>/BFCL_v4_<category>_result.json: {id, result} per line, "
        "an FC model's tool calls; multi-turn and memory: per turn, each response's calls or text), read by "
        "`bfcl evaluate`",
        lambda run_dir, out: export_run(run_dir, out, calls_of),
        lambda path: read_results(path, options, verdict_of),
        export_as=lambda run_dir, out, model: export_run(run_dir, out, calls_of, model),
    )
