"""The ``familytool-official`` prediction format: a run's predictions as the official FamilyTool
scripts read them, and back.

``evals export RUN_DIR --format familytool-official -o OUT`` writes the folder ``OUT``:

``golden.jsonl``
    the dataset lines of the run's tasks, verbatim and in the dataset's order (the official scripts
    zip the predictions with this file, so it must hold exactly the run's tasks);
``kg_extraction.json`` (strategies ``kgetool`` and ``agent``)
    the step-1 output, as ``pipeline/KG_extraction.py`` saves it: a JSON list, one
    ``{"id", "query", "response"}`` per line of ``golden.jsonl``; ``response`` is the model's text
    (``agent``: its ``kg_search_path`` calls written as ``KG.search`` lines). Input of
    ``metric_KG_extraction(read_json(...), read_jsonl("golden.jsonl"), "exact", KG_FILE)``;
``tool_use_results.json``
    the step-2 output as ``benchmark/evaluate_model.py`` saves it (``save_result`` and
    ``save_golden_answer``): one ``{"data_id", "golden_answer", "result": {"think", "content",
    "tool_call"}}`` per task, ``tool_call`` being the calls of the model's answer as
    ``{"name", "parameters"}``. ``metrics_for_single_round_tool_call(golden_answer, result["tool_call"],
    is_strict)`` per entry, averaged (times 100) over the entries, gives the tool-use numbers;
``manifest.json``
    benchmark, strategy, options, model and the KG file the official scripts need.

``evals score OUT --format familytool-official --benchmark familytool-b`` reads such a folder (or a
``tool_use_results.json`` alone) back into traces; predictions made by other harnesses, written in
these two files' shape, are scored the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from tool_specs.bounded_read import bounded_text

from ...core.data import data_file
from ...core.formats import ImportedPredictions, PredictionFormat, imported_trace
from . import data as ft
from .metrics import EXTRACTING, official_calls, step1_text

if TYPE_CHECKING:
    from client.runs import RunDir

    from ...core.plugin import Benchmark, BenchmarkInfo


class FamilyToolBenchmark(Protocol):
    """What the format needs of the loaded benchmark (``plugin.FamilyToolBenchmark``)."""

    name: str
    info: BenchmarkInfo
    catalog: ft.FamilyToolCatalog

NAME = "familytool-official"
TOOL_FILE, KG_FILE, GOLD_FILE, MANIFEST = "tool_use_results.json", "kg_extraction.json", "golden.jsonl", "manifest.json"


def official_format(bench: FamilyToolBenchmark) -> PredictionFormat:
    return PredictionFormat(
        name=NAME,
        description="the official FamilyTool scripts' files: golden.jsonl, kg_extraction.json (step 1), "
                    "tool_use_results.json (step 2), manifest.json",
        export=lambda run_dir, out: export_run(bench, run_dir, out),
        read=lambda path: read_predictions(bench, path),
    )


def export_run(bench: FamilyToolBenchmark, run_dir: RunDir, out: Path) -> list[Path]:
    from ...core.run import run_task_ids

    config = run_dir.config or {}
    traces = run_dir.latest_traces()
    ids = run_task_ids(cast("Benchmark", bench), config, traces)
    strategy = config.get("strategy") or bench.info.default_strategy
    lines = {}
    with open(data_file("familytool", f"{bench.name}.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                lines[str(json.loads(line)[0]["content"])] = line.rstrip("\n")
    tool_rows, kg_rows = [], []
    for tid in ids:
        task = bench.catalog.task(tid)
        trace = traces.get(tid) or {}
        outcome = (trace.get("outcome") or {}) if trace.get("status") == "completed" else {}
        tool_rows.append({
            "data_id": tid,
            "golden_answer": task.official_gold,
            "result": {"think": "", "content": trace.get("final_answer") or "",
                       "tool_call": official_calls(outcome.get("calls") or [])},
        })
        kg_rows.append({"id": tid, "query": task.official_query, "response": step1_text(outcome.get("kg"), strategy)})
    out.mkdir(parents=True, exist_ok=True)
    written = [out / GOLD_FILE, out / TOOL_FILE, out / MANIFEST]
    written[0].write_text("".join(lines[t] + "\n" for t in ids), encoding="utf-8")
    written[1].write_text(json.dumps(tool_rows, ensure_ascii=False, indent=1), encoding="utf-8")
    manifest = {"format": NAME, "benchmark": bench.name, "strategy": strategy, "model": config.get("model"),
                "options": dict(config.get("options") or {}), "kg_file": ft.kg_file(bench.name).name,
                "tasks": len(ids)}
    written[2].write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
    if strategy in EXTRACTING:
        (out / KG_FILE).write_text(json.dumps(kg_rows, ensure_ascii=False, indent=1), encoding="utf-8")
        written.append(out / KG_FILE)
    return written


def _load_json(path: Path) -> Any:
    try:
        return json.loads(bounded_text(path))  # untrusted: read in chunks, no more than MAX_LINE_BYTES
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from exc


def read_predictions(bench: FamilyToolBenchmark, path: Path) -> ImportedPredictions:
    """A folder written by :func:`export_run` (or in its shape), or a ``tool_use_results.json`` alone."""
    folder = path if path.is_dir() else path.parent
    tool_path = path if path.is_file() else folder / TOOL_FILE
    if not tool_path.is_file():
        raise FileNotFoundError(f"{str(path)!r}: no {TOOL_FILE} (the official tool-use results) in it")
    rows = _load_json(tool_path)
    if not isinstance(rows, list):
        raise ValueError(f"{tool_path}: expected a JSON list of tool-use results")
    manifest = _load_json(folder / MANIFEST) if path.is_dir() and (folder / MANIFEST).is_file() else {}
    kg_rows = _load_json(folder / KG_FILE) if path.is_dir() and (folder / KG_FILE).is_file() else None
    gold_ids: list[str] = []
    if path.is_dir() and (folder / GOLD_FILE).is_file():
        gold_ids = [str(json.loads(line)[0]["content"]) for line in bounded_text(folder / GOLD_FILE).splitlines() if line.strip()]
    outcomes: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    stops: list[str] = []  # entries the official code stops on (KeyError / TypeError)
    order: list[str] = []  # the tool rows' tasks in file order: what the official loop pairs by position
    for n, row in enumerate(rows):
        if not isinstance(row, dict) or "data_id" not in row:
            raise ValueError(f"{tool_path}: entry {n} has no data_id")
        result = row.get("result") or {}
        tool_calls = result.get("tool_call") if isinstance(result, dict) else None
        if not isinstance(tool_calls, list):
            raise ValueError(f"{tool_path}: entry {n} ({row['data_id']}): result.tool_call is not a list")
        # convert_to_dict skips an entry without name and parameters, but calls .strip() on any name, and
        # compare_params calls .get on the parameters paired with a gold call's
        named = [(k, c) for k, c in enumerate(tool_calls) if isinstance(c, dict) and "name" in c and "parameters" in c]
        if bad := [k for k, c in named if not isinstance(c["name"], str)]:
            stops.append(f"entry {n} call(s) {bad[:3]}: a name that is not a string (AttributeError)")
        if bad := [k for k, c in named if not isinstance(c["parameters"], dict)]:
            stops.append(f"entry {n} call(s) {bad[:3]}: parameters that are not an object (AttributeError when "
                         f"the name is a gold tool's)")
        calls = [{"name": c.get("name"), "arguments": c.get("parameters"), "turn": 0}
                 for c in tool_calls if isinstance(c, dict) and "name" in c and "parameters" in c]
        tid = str(row["data_id"])
        order.append(tid)
        outcomes[tid] = {
            "calls": calls,
            "prediction": {"name": calls[-1]["name"], "arguments": calls[-1]["arguments"]} if calls else None,
            "final_answer": result.get("content") if isinstance(result, dict) else None,
        }
    repeated = sorted({t for t in order if order.count(t) > 1})
    if repeated:
        rows_of = {t: [n for n, x in enumerate(order) if x == t] for t in repeated[:3]}
        warnings.append(f"{tool_path}: {len(repeated)} data_id(s) on more than one entry (e.g. {rows_of}): the official "
                        f"evaluation scores every entry (each counted in the averages); here the last entry of each id "
                        f"is kept, so the tool-use numbers may differ from the official ones")
    if stops:
        warnings.append(f"{tool_path}: the official evaluation stops on {len(stops)} entr(ies) ({'; '.join(stops[:3])}): "
                        f"it reads every call named with its parameters; here such a name is read as text and such parameters "
                        f"as {{}}")
    if kg_rows is not None:
        if not isinstance(kg_rows, list):
            raise ValueError(f"{folder / KG_FILE}: expected a JSON list of step-1 outputs")
        # metric_KG_extraction zips the step-1 rows with golden.jsonl by position, whatever their ids
        tasks = gold_ids or order
        mismatched = [n for n, row in enumerate(kg_rows[:len(tasks)])
                      if isinstance(row, dict) and row.get("id") is not None and str(row.get("id")) != tasks[n]]
        if mismatched:
            warnings.append(f"{folder / KG_FILE}: {len(mismatched)} entr(ies) whose id is not the task at their position "
                            f"(entries {mismatched[:5]}): the official metric pairs step-1 outputs with {GOLD_FILE} by "
                            f"position, ids ignored; so do these numbers")
        if len(kg_rows) != len(tasks):
            official = (f"it scores the first {min(len(kg_rows), len(tasks))} (zip stops at the shorter list)")
            ours = ("the tasks without an output count as format errors here" if len(kg_rows) < len(tasks)
                    else "the further entries are ignored here too")
            warnings.append(f"{folder / KG_FILE}: {len(kg_rows)} step-1 outputs for {len(tasks)} tasks: the official "
                            f"metric pairs them by position and {official}; {ours}")
        kg_stops = [n for n, row in enumerate(kg_rows[:len(tasks)])
                    if not isinstance(row, dict) or not isinstance(row.get("response"), str)]
        if kg_stops:
            warnings.append(f"{folder / KG_FILE}: the official metric stops on {len(kg_stops)} entr(ies) without a string "
                            f"'response' (entries {kg_stops[:5]}); here such an output is read as empty (a format error)")
        if not tasks and kg_rows:
            raise ValueError(f"{folder / KG_FILE}: entries but no task to pair them with ({GOLD_FILE} and {TOOL_FILE} name none)")
        for n, row in enumerate(kg_rows[:len(tasks)]):
            response = row.get("response") if isinstance(row, dict) else None
            outcomes.setdefault(tasks[n], {"calls": [], "prediction": None})["kg"] = {
                "generation": response if isinstance(response, str) else ""}
    traces = {tid: imported_trace(tid, o, final_answer=o.pop("final_answer", None), source=str(path))
              for tid, o in outcomes.items()}
    known = {o.name for o in bench.info.options}
    options = {k: v for k, v in (manifest.get("options") or {}).items() if k in known}
    return ImportedPredictions(traces=traces, strategy=manifest.get("strategy"), options=options,
                               model=manifest.get("model"), warnings=tuple(warnings))
