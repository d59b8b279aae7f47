"""The official prediction format, ``nestools-official``: what ``evaluation/eval.py`` reads.

The official inference script writes ``raw_response.jsonl``, one line per sample with its
``test_id`` and ``response`` (the model's raw text, or ``-1`` when the model call failed); the
official evaluation reads only these two keys (``--predict_file_path``).

* Export: one line per task of the run that has a trace, in task order (the official sums run in
  file order): ``oneshot``, the model's answer text; ``agent``, the call list made from the trace
  (JSON); a failed episode, ``-1`` (the official code leaves it out, as we do).
* Read: such a file (or a folder holding ``raw_response.jsonl``) becomes one imported trace per
  test id: ``-1`` an errored one, anything else a completed one whose raw response is scored exactly
  as the official code scores it (a response that is not a string is malformed).

  ``eval.py`` scores *every line*: the official inference appends to its output file, so a rerun
  repeats test ids, and each repeated line counts again (``all_num`` counts lines). We do the
  same: a test id's trace keeps its first response and, under ``outcome.repeats``, the responses of
  its later lines (in file order); each is scored, and the task's samples are their sums. Lines of
  ``-1`` are left out as ``eval.py`` leaves them out (an id whose every line is ``-1`` is an errored
  trace). A file that repeats ids gets a warning (kept in the run's config, shown in the summary and
  on stderr) naming how many ids and lines.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.formats import (
    ImportedPredictions,
    PredictionFormat,
    blank_lines_warning,
    imported_trace,
    official_jsonl,
    surrogate_free,
)
from .metrics import DEPTHS
from .official import SampleCounts, parse_prediction

if TYPE_CHECKING:
    from client.runs import RunDir

__all__ = ["FILE_NAME", "FORMAT_NAME", "official_format"]

FORMAT_NAME = "nestools-official"
FILE_NAME = "raw_response.jsonl"


def _target(out: Path) -> Path:
    return out if out.suffix == ".jsonl" else out / FILE_NAME


def _source(path: Path) -> Path:
    return path / FILE_NAME if path.is_dir() else path


def official_format(task_ids: list[str], prediction: Callable[[str, Mapping[str, Any]], Any],
                    counts_of: Callable[[str, Any], SampleCounts]) -> PredictionFormat:
    """The format for a loaded benchmark: its task order, its ``prediction(task_id, trace)`` and
    ``counts_of(task_id, response)`` (a raw response's official counts)."""

    def export(run_dir: RunDir, out: Path) -> list[Path]:
        traces = run_dir.latest_traces()
        target = _target(Path(out))
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for task_id in task_ids:
            trace = traces.get(task_id)
            if trace is None:
                continue
            response: Any = -1
            if trace.get("status") == "completed":
                pred = prediction(task_id, trace)
                response = pred if isinstance(pred, str) else json.dumps(pred, ensure_ascii=False)
            lines.append(json.dumps({"test_id": int(task_id), "response": response}, ensure_ascii=False))
        target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return [target]

    def read(path: Path) -> ImportedPredictions:
        src = _source(Path(path))
        if not src.is_file():
            raise FileNotFoundError(f"no {FILE_NAME} at {str(path)!r}")
        got = official_jsonl(src)  # eval.py's reading: a line per \n, json.loads of each
        known = set(task_ids)
        lines: dict[str, list[Any]] = {}  # test id -> its responses, in file order
        scored: list[tuple[int, str, Any]] = []  # (line, test id, response) of the lines eval.py scores
        for n, record in got.rows:
            if not isinstance(record, dict) or "response" not in record:
                raise ValueError(f"{src}:{n}: not a prediction line with a response (eval.py stops there: "
                                 "data['response'])")
            response = record["response"]
            task_id = _official_id(record.get("test_id"))
            if _failed(response):  # left out by eval.py, which then never reads the test_id
                if task_id in known:
                    lines.setdefault(task_id, []).append(response)
                continue
            if task_id is None or task_id not in known:
                raise ValueError(f"{src}:{n}: test_id {record.get('test_id')!r} names no NesTools sample (eval.py "
                                 "stops there with a KeyError: its samples are keyed by the numbers 1-1000)")
            lines.setdefault(task_id, []).append(response)
            scored.append((n, task_id, response))
        traces: dict[str, dict[str, Any]] = {}
        surrogates: list[int] = []
        for task_id, responses in lines.items():
            kept = [_stored(r) for r in responses if not _failed(r)]
            if not kept:
                traces[task_id] = imported_trace(task_id, None, source=str(src))
                continue
            outcome: dict[str, Any] = {"prediction": kept[0], "strategy": "oneshot"}
            if len(kept) > 1:
                outcome["repeats"] = kept[1:]
            first = kept[0]
            traces[task_id] = imported_trace(task_id, outcome, final_answer=first if isinstance(first, str) else None,
                                             source=str(src))
        surrogates = [n for n, _, r in scored if isinstance(r, str) and not surrogate_free(r)]
        warnings = [*([blank_lines_warning(src, got.blank)] if got.blank else []), *_repeat_warnings(src, lines),
                    *_official_stops(src, scored, counts_of)]
        if surrogates:
            warnings.append(f"{src}: {_lines(surrogates)}: the response holds a lone surrogate (\\ud800-\\udfff, not "
                            "encodable as UTF-8): eval.py's ast.literal_eval of it fails and json.loads reads it; read "
                            "the same here (the run's trace shows the text with U+FFFD)")
        return ImportedPredictions(traces=traces, strategy="oneshot", warnings=tuple(warnings))

    return PredictionFormat(
        FORMAT_NAME,
        f"the official inference output ({FILE_NAME}: test_id and raw response per line), read by the official "
        "evaluation/eval.py --predict_file_path",
        export,
        read,
    )


def _failed(response: Any) -> bool:
    """eval.py's ``data["response"] != -1`` test, false: a failed model call (-1, also -1.0)."""
    return type(response) in (int, float) and response == -1


def _official_id(test_id: Any) -> str | None:
    """The sample eval.py's ``d[data["test_id"]]`` finds for this value (its keys are the ints 1-1000:
    ``5.0`` and ``True`` find 5 and 1, a string or ``5.5`` none), as our task id; None when it finds none."""
    if isinstance(test_id, bool):
        return "1" if test_id else None
    if isinstance(test_id, int):
        return str(test_id)
    if isinstance(test_id, float) and math.isfinite(test_id) and test_id.is_integer():
        return str(int(test_id))
    return None


def _stored(response: Any) -> Any:
    """A response as the trace keeps it: the text, or what eval.py reads from a text holding a lone
    surrogate (``{"official_parse": value}``: the trace file cannot hold the surrogate, and the text
    with U+FFFD would read differently), or None for a response that is not text (eval.py: malformed)."""
    if not isinstance(response, str):
        return None
    if surrogate_free(response):
        return response
    parsed = parse_prediction(response)
    return {"official_parse": -1 if isinstance(parsed, str) else _escaped(parsed)}  # a text: eval.py's loop fails on it


def _escaped(value: Any) -> Any:
    """``value`` with each lone surrogate written as the six characters ``\\udXXX`` (distinct surrogates
    stay distinct, and equal to no gold text)."""
    if isinstance(value, str):
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
    if isinstance(value, list | tuple):
        return [_escaped(v) for v in value]
    if isinstance(value, dict):
        return {(_escaped(k) if isinstance(k, str) else k): _escaped(v) for k, v in value.items()}
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _lines(numbers: Sequence[int]) -> str:
    shown = ", ".join(map(str, numbers[:10])) + (f", ... ({len(numbers)} in all)" if len(numbers) > 10 else "")
    return f"line{'s' if len(numbers) > 1 else ''} {shown}"


def _official_stops(src: Path, scored: Sequence[tuple[int, str, Any]],
                    counts_of: Callable[[str, Any], SampleCounts]) -> list[str]:
    """Warnings for what makes eval.py stop on (or score differently) the lines it scores."""
    out: list[str] = []
    stops: list[tuple[int, str]] = []
    long: list[int] = []
    totals = dict.fromkeys(("all", "api", "order", "param", "nest"), 0)
    for n, task_id, response in scored:
        counts = counts_of(task_id, response if isinstance(response, str) else -1)
        if counts.official_stop:
            stops.append((n, counts.official_stop))
        if counts.long_arguments:
            long.append(n)
        if counts.depth in DEPTHS:
            totals["all"] += 1
            for dim in ("api", "order", "param", "nest"):
                totals[dim] += getattr(counts, f"gold_{dim}")
    if stops:
        out.append(f"{src}: {_lines([n for n, _ in stops])}: eval.py stops there with an error and prints no number "
                   f"for the file (line {stops[0][0]}: {stops[0][1]}); scored here (the api_id matches nothing)")
    zero = [what for what, key in (("no line is scored (every response -1): format accuracy is 0/0", "all"),
                                   ("its lines have no gold call pair: the order recall is 0/0", "order"),
                                   ("its lines have no gold parameter: the parameter recall is 0/0", "param"),
                                   ("its lines have no gold nested parameter: the nested recall is 0/0", "nest"))
            if not totals[key] and (key == "all" or totals["all"])]
    if zero:
        out.append(f"{src}: eval.py stops with a ZeroDivisionError and prints no number for the file: {zero[0]}; "
                   "here such a number is left out (or 0)")
    if long:
        out.append(f"{src}: {_lines(long)}: a string argument long enough (about 1,000 words with the gold value) "
                   "that the rouge package eval.py uses fails on it (RecursionError) and eval.py scores it 0; scored "
                   "here with the true ROUGE-L (a documented deviation), so the parameter numbers can be higher")
    return out


def _repeat_warnings(src: Path, lines: Mapping[str, list[Any]]) -> tuple[str, ...]:
    repeated = {t: len(r) for t, r in lines.items() if len(r) > 1}
    if not repeated:
        return ()
    extra = sum(n - 1 for n in repeated.values())
    first = next(iter(repeated))
    return (f"{src.name}: {len(repeated)} test_id(s) appear on more than one line ({extra} extra line(s); e.g. "
            f"test_id {first} on {repeated[first]} lines): every line is scored, as eval.py scores it (the official "
            "inference appends to its output file, so a rerun repeats ids)",)
