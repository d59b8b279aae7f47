"""Issue 46 item 9: with ``--workers 2`` BFCL memory's prerequisite conversations ran once per
worker process; they run once per run (the phase's snapshot kept in the run directory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.benchmarks.bfcl.agentic import read_memory
from evals.core.run import RunOptions, run_benchmark


async def test_the_prerequisite_phase_runs_once_per_run_with_two_workers(bfcl_data: Any, tmp_path: Path) -> None:
    entries, _ = read_memory("memory_kv")
    chosen = [e.id for e in entries if e.scenario == "finance"][:4]
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=tmp_path / "run", task_ids=chosen, concurrency=4,
                      workers=2, progress=False, benchmark_options={"category": ["memory_kv"]})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 4 and summary["metrics"]["memory_kv"] == 100.0, summary.get("first_error")
    traces = [json.loads(x) for x in (tmp_path / "run" / "traces.jsonl").read_text().splitlines()]
    ran = [t["task_id"] for t in traces if t["outcome"]["memory"]["ran_prerequisites"]]
    assert len(ran) == 1, ran  # one phase for the run, whichever worker took the scenario's first question
    kept = json.loads((tmp_path / "run" / "bfcl_memory" / "memory_kv-finance.json").read_text())
    assert all(t["outcome"]["memory"]["snapshot"] == kept["snapshot"] for t in traces)
