"""The official prediction format, ``nestools-official``: what ``evaluation/eval.py`` reads.

The official inference script writes ``raw_response.jsonl``, one line per sample with its
``test_id`` and ``response`` (the model's raw text, or ``-1`` when the model call failed); the
official evaluation reads only these two keys (``--predict_file_path``).

* Export: one line per task of the run that has a trace, in task order (the official sums run in
  file order): ``oneshot``, the model's answer text; ``agent``, the call list made from the trace
  (JSON); a failed episode, ``-1`` (the official code leaves it out, as we do).
* Read: such a file (or a folder holding ``raw_response.jsonl``) becomes one imported trace per
  line: ``-1`` an errored one, anything else a completed one whose raw response is scored exactly
  as the official code scores it (a response that is not a string is malformed).
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
        traces: dict[str, dict[str, Any]] = {}
        for n, line in enumerate(src.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                task_id = str(int(record["test_id"]))
                response = record["response"]
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{src}:{n}: not a prediction line with test_id and response ({exc})") from None
            if response == -1:  # as eval.py tests it (so -1.0 too)
                traces[task_id] = imported_trace(task_id, None, source=str(src))
            else:
                final = response if isinstance(response, str) else None
                traces[task_id] = imported_trace(task_id, {"prediction": response, "strategy": "oneshot"},
                                                 final_answer=final, source=str(src))
        return ImportedPredictions(traces=traces, strategy="oneshot")

    return PredictionFormat(
        FORMAT_NAME,
        f"the official inference output ({FILE_NAME}: test_id and raw response per line), read by the official "
        "evaluation/eval.py --predict_file_path",
        export,
        read,
    )
