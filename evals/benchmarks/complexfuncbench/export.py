"""The official result format (``complexfuncbench-official``): what ``evaluation.py`` writes and
``print_results.py`` reads, one JSON line per sample::

    {"id", "gen_convs", "message", "count_dict": {"success_turn_num", "total_turn_num",
     "correct_call_num", "total_call_num", "real_turn_num"}, "resp_eval"}

``evals export RUN --format complexfuncbench-official`` writes ``result.jsonl`` from a scored run
(official API names, never the served aliases); a sample without a result is left out, as the
official harness leaves out a sample whose model failed. ``evals score FILE --format
complexfuncbench-official --benchmark complexfuncbench`` reads such a file (a published run) into
traces: the official message, counts and judgements are taken as they are, so the run is
re-scored by our metrics without deciding or judging anything again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.data import data_dir
from ...core.formats import ImportedPredictions, PredictionFormat, imported_trace
from ...core.scoring import read_scores
from .files import FULL
from .results import file_warnings, read_result_file

if TYPE_CHECKING:
    from client.runs import RunDir

__all__ = ["FORMAT", "official_format", "official_records", "read_official"]

FORMAT = "complexfuncbench-official"


def official_records(run_dir: RunDir) -> list[dict[str, Any]]:
    """One official result record per sample that has a result, in the run's order."""
    traces = run_dir.latest_traces()
    scores = {r["task_id"]: r for r in read_scores(run_dir)}
    out = []
    for task_id, trace in traces.items():
        official = (trace.get("outcome") or {}).get("official") if trace.get("status") == "completed" else None
        if official is None:
            continue
        details = ((scores.get(task_id) or {}).get("score") or {}).get("details") or {}
        resp_eval = (details.get("official") or {}).get("resp_eval", official.get("resp_eval"))
        out.append({
            "id": task_id,
            "gen_convs": official.get("conversation") or [],
            "message": (official.get("result") or {}).get("message"),
            "count_dict": official.get("count_dict"),
            "resp_eval": resp_eval,
        })
    return out


def _export(run_dir: RunDir, out: Path) -> list[Path]:
    target = out / "result.jsonl" if out.suffix != ".jsonl" else out
    target.parent.mkdir(parents=True, exist_ok=True)
    records = official_records(run_dir)
    target.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return [target]


def read_official(path: Path) -> ImportedPredictions:
    """An official result file (or a folder holding ``*.jsonl`` result files) as traces. The run covers
    every sample (one without a record counts as failed, as ``print_results.py`` divides by the full
    set's sizes). Without the dataset in the data directory it is scored from the file alone
    (``results_file``, :mod:`.results`), every line a task as ``print_results.py`` counts every line;
    with it, the tasks are the dataset's samples and the last line of an id is kept. Either way the
    warnings say what ``print_results.py`` does differently with the file or stops on."""
    alone = not data_dir().joinpath(*FULL).is_file()
    records = read_result_file(path)
    traces: dict[str, dict[str, Any]] = {}
    for r in records:
        rec = r.record
        convs = rec.get("gen_convs") or []
        last = convs[-1] if isinstance(convs, list) and convs else {}
        final = last.get("content") if isinstance(last, dict) and last.get("role") == "assistant" and "content" in last else None
        resp_eval = rec.get("resp_eval")
        outcome = {"official": {"result": {"message": rec.get("message")}, "count_dict": rec["count_dict"],
                                "conversation": convs, "final_answer": final if isinstance(final, str) else None,
                                "resp_eval": resp_eval if isinstance(resp_eval, dict) else None}}
        key = r.key if alone else r.id
        traces[key] = imported_trace(key, outcome, final_answer=final if isinstance(final, str) else None,
                                     source=str(r.file))
    options = {"results_file": str(path.resolve())} if alone else {}
    return ImportedPredictions(traces, strategy="agent", options=options, covers_all=True,
                               warnings=tuple(file_warnings(path, records, every_line=alone)))


def official_format() -> PredictionFormat:
    return PredictionFormat(
        FORMAT,
        "the official evaluation.py result file (result.jsonl: id, gen_convs, message, count_dict, resp_eval), "
        "read by print_results.py",
        _export,
        read_official,
    )
