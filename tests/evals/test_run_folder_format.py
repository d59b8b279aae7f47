"""A run folder of the format before tools.jsonl (trace schema 1: each trace holds its tool lists)
still opens, scores and views as the same run in today's format does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from client.runs import RunDir
from evals.core.run import RunOptions, run_benchmark, score_run_dir
from evals.view.index import RunIndex
from evals.view.runs import RunView
from evals.view.transcript import episode


def _old_format(new: Path, old: Path) -> None:
    """``new`` as the code before tools.jsonl wrote it: each trace's lists put back into its requests."""
    shutil.copytree(new, old)
    (old / "tools.jsonl").unlink()
    (old / "scores.jsonl").unlink()
    lines = []
    for record in RunDir.open(new).iter_traces(dedupe=False):
        events = [dict(e) for e in record["events"]]  # read through RunDir: the lists are back in the events
        head = {k: v for k, v in record.items() if k != "events"} | {"schema_version": 1}
        lines.append(json.dumps(head, ensure_ascii=False)[:-1] + ',"events":['
                     + ",".join(json.dumps(e, ensure_ascii=False) for e in events) + "]}\n")
    (old / "traces.jsonl").write_text("".join(lines), encoding="utf-8")


def _summary(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "run_dir"}


async def test_an_old_format_run_folder_opens_scores_and_views_as_today(data_dir, tmp_path):
    new, old = tmp_path / "new", tmp_path / "old"
    opts = RunOptions(benchmark="familytool-b", model="oracle", limit=6, concurrency=3, run_dir=new, progress=False)
    result, _ = await run_benchmark(opts)
    assert result.completed == 6
    assert (new / "tools.jsonl").is_file() and '"tools": [' not in (new / "traces.jsonl").read_text()
    _old_format(new, old)
    assert '"tools": [' in (old / "traces.jsonl").read_text()  # the old format holds the lists
    scored_new, scored_old = await score_run_dir(new), await score_run_dir(old)
    assert _summary(scored_new) == _summary(scored_old)
    assert scored_old["completed"] == 6 and scored_old["metrics"]["tool_em"] == 100.0
    assert (new / "scores.jsonl").read_text() == (old / "scores.jsonl").read_text()
    # the viewer shows the same transcripts, tool lists included
    views = [RunView(p.name, RunIndex.open(p)) for p in (new, old)]
    for task_id in RunIndex.open(new).traces:
        pages = [episode(v, task_id) for v in views]
        assert pages[0] is not None and pages[1] is not None
        assert pages[0]["items"] == pages[1]["items"] and pages[0]["query"] == pages[1]["query"]
        traces = [v.index.trace(task_id) for v in views]
        tools = [[e.get("tools") for e in t["events"] if e["kind"] == "model_request"] for t in traces if t]
        assert tools[0] == tools[1] and tools[0][0]  # the first request's list, from tools.jsonl and from the trace
