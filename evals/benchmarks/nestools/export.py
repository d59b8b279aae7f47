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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.formats import ImportedPredictions, PredictionFormat, imported_trace

if TYPE_CHECKING:
    from client.runs import RunDir

__all__ = ["FILE_NAME", "FORMAT_NAME", "official_format"]

FORMAT_NAME = "nestools-official"
FILE_NAME = "raw_response.jsonl"


def _target(out: Path) -> Path:
    return out if out.suffix == ".jsonl" else out / FILE_NAME


def _source(path: Path) -> Path:
    return path / FILE_NAME if path.is_dir() else path


def official_format(task_ids: list[str], prediction: Callable[[str, Mapping[str, Any]], Any]) -> PredictionFormat:
    """The format for a loaded benchmark: its task order and its ``prediction(task_id, trace)``."""

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
        lines: dict[str, list[Any]] = {}  # test id -> its responses, in file order
        for n, line in enumerate(src.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                task_id = str(int(record["test_id"]))
                response = record["response"]
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{src}:{n}: not a prediction line with test_id and response ({exc})") from None
            lines.setdefault(task_id, []).append(response)
        traces: dict[str, dict[str, Any]] = {}
        for task_id, responses in lines.items():
            scored = [r for r in responses if not r == -1]  # as eval.py tests it (so -1.0 too)
            if not scored:
                traces[task_id] = imported_trace(task_id, None, source=str(src))
                continue
            outcome: dict[str, Any] = {"prediction": scored[0], "strategy": "oneshot"}
            if len(scored) > 1:
                outcome["repeats"] = scored[1:]
            first = scored[0]
            traces[task_id] = imported_trace(task_id, outcome, final_answer=first if isinstance(first, str) else None,
                                             source=str(src))
        return ImportedPredictions(traces=traces, strategy="oneshot", warnings=_repeat_warnings(src, lines))

    return PredictionFormat(
        FORMAT_NAME,
        f"the official inference output ({FILE_NAME}: test_id and raw response per line), read by the official "
        "evaluation/eval.py --predict_file_path",
        export,
        read,
    )


def _repeat_warnings(src: Path, lines: Mapping[str, list[Any]]) -> tuple[str, ...]:
    repeated = {t: len(r) for t, r in lines.items() if len(r) > 1}
    if not repeated:
        return ()
    extra = sum(n - 1 for n in repeated.values())
    first = next(iter(repeated))
    return (f"{src.name}: {len(repeated)} test_id(s) appear on more than one line ({extra} extra line(s); e.g. "
            f"test_id {first} on {repeated[first]} lines): every line is scored, as eval.py scores it (the official "
            "inference appends to its output file, so a rerun repeats ids)",)
