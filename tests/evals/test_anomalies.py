"""The summary's ``anomalies`` (evals/core/anomalies.py): for every run and import, what was unusual
and how it was counted, in ``evals score --json``, under ``evals report``'s tables and beside a
paper's row. (The viewer's run page: test_view_anomalies_browser.py; an import's own entries: the
benchmarks' tests, e.g. complexfuncbench's edge files.)"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema

from evals.core.anomalies import WHERE_CAP, anomaly_entry, gather_anomalies
from evals.core.scoring import SUMMARY_SCHEMA
from evals.report import load_paper_numbers, render_html, render_markdown

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "tests" / "evals" / "regression" / "runs" / "familytool-b_agent"  # 15 tasks, KGMTUbench_5 errored
SCHEMA = json.loads(SUMMARY_SCHEMA.read_text())
DROPPED = "KGMTUbench_13"


def _evals(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, EVALS_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def _partial_run(tmp_path: Path) -> Path:
    """The recorded run with one errored episode, one task's episode taken away (a run stopped part-way)."""
    work = tmp_path / "partial"
    work.mkdir()
    shutil.copy(RUN / "config.json", work / "config.json")
    lines = gzip.decompress((RUN / "traces.jsonl.gz").read_bytes()).decode().splitlines()
    kept = [x for x in lines if json.loads(x)["task_id"] != DROPPED]
    assert len(kept) < len(lines)
    (work / "traces.jsonl").write_text("".join(x + "\n" for x in kept))
    return work


def _by_kind(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["kind"]: a for a in summary["anomalies"]}


def test_a_run_with_an_errored_episode_and_a_task_not_run_lists_both_and_the_report_shows_them(tmp_path):
    run = _partial_run(tmp_path)
    proc = _evals(tmp_path, "score", str(run), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    jsonschema.Draft202012Validator(SCHEMA).validate(summary)
    assert summary["partial"] is True and summary["errored"] == 1
    found = _by_kind(summary)
    errored = found["errored_episodes"]
    assert errored["source"] == "run" and errored["count"] == 1 and errored["where"] == ["KGMTUbench_5"]
    assert "1 of 15 episodes errored" in errored["message"] and "failed" in errored["counted_as"]
    not_run = found["not_run"]
    assert not_run["count"] == 1 and not_run["where"] == [DROPPED]
    assert "over the 14 tasks that ran" in not_run["counted_as"] and "not comparable" in not_run["official"]
    assert all(isinstance(w, str) for w in summary["warnings"])  # the old list is kept, strings
    # evals report: a Caveats section under the run's tables, in Markdown and HTML
    out = tmp_path / "report"
    proc = _evals(tmp_path, "report", str(run), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (out / "report.md").read_text()
    caveats = md.split("### Caveats\n", 1)[1].split("\n#", 1)[0]
    assert "errored_episodes (run, 1 affected): 1 of 15 episodes errored" in caveats
    assert "not_run (run, 1 affected): partial run: 1 of 15 selected tasks did not run" in caveats
    assert f"at: {DROPPED}" in caveats
    assert md.index("**Metrics**") < md.index("### Caveats")
    assert "<h3>Caveats</h3>" in (out / "report.html").read_text()


def _gpt_run(anomalies: list[dict[str, Any]]) -> dict[str, Any]:
    return {"run_dir": "runs/g", "benchmark": "familytool-b", "model": "openai:gpt-4o", "strategy": "kgetool",
            "tasks": 1, "completed": 1, "errored": 0, "metrics": {"tool_em": 20.5}, "options": {},
            "anomalies": anomalies}


def test_a_run_beside_a_papers_row_carries_its_caveats():
    quirk = anomaly_entry({"kind": "repeated_id", "message": "<b>res.jsonl</b>: 2 ids on more than one line",
                           "count": 2, "where": ["res.jsonl:4", "res.jsonl:9"], "counted_as": "the last line of each",
                           "official": "every line"}, "import")
    md = render_markdown([_gpt_run([quirk])], load_paper_numbers())
    published = md.split("### Published numbers: familytool-b · kgetool", 1)[1].split("\n### ", 1)[0]
    assert "this run: openai:gpt-4o · kgetool [caveats: repeated_id]" in published
    assert ("Caveat of `openai:gpt-4o · kgetool`: repeated_id (import, 2 affected): <b>res.jsonl</b>: 2 ids on more "
            "than one line; counted as: the last line of each; official code: every line; at: res.jsonl:4, res.jsonl:9"
            in published)
    page = render_html([_gpt_run([quirk])], load_paper_numbers())
    assert "<b>res.jsonl</b>" not in page and "&lt;b&gt;res.jsonl&lt;/b&gt;" in page  # text, never markup
    assert "[caveats:" not in render_markdown([_gpt_run([])], load_paper_numbers())


def test_entries_read_back_from_a_config_are_checked_and_bounded():
    config = {"imported": {"format": "f", "source": "s",
                           "anomalies": [{"kind": "x", "message": "m\nn", "count": -3, "where": [f"f:{i}" for i in range(50)],
                                          "counted_as": 7, "official": None, "extra": "dropped"}, "plain line", 5]}}
    got = gather_anomalies({"tasks": 1, "errored": 0}, config)
    assert got[0] == {"kind": "x", "source": "import", "message": "m n", "count": None,
                      "where": [f"f:{i}" for i in range(WHERE_CAP)], "counted_as": "7", "official": None}
    assert got[1]["kind"] == "warning" and got[1]["message"] == "plain line" and got[2]["message"] == "5"
    # an import made before the field: its plain warnings, each an entry of kind "warning"
    old = gather_anomalies({"tasks": 1, "errored": 0}, {"imported": {"warnings": ["a repeated id"]}})
    assert [(a["kind"], a["source"], a["message"]) for a in old] == [("warning", "import", "a repeated id")]
    for entry in [*got, *old]:
        jsonschema.Draft202012Validator(SCHEMA["properties"]["anomalies"]["items"]).validate(entry)
