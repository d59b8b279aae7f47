"""A garbage line in the middle of traces.jsonl is reported with its line number on resume and by
``evals score``, and never taken as a task's record; an episode that failed on a proxy's HTML page
(status 200) is re-run on resume (issue 26, item 6). Real ``evals run`` through the OpenAI SDK against
the local stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fake_providers import FakeProviderServer, Reply, openai_chat

from client.runs import RunDir

PAGE = "<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"


def _evals(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))


def _run(url: str, run: Path, *extra: str) -> subprocess.CompletedProcess:
    return _evals("run", "familytool-b", "--model", "openai:m", "--base-url", url, "--strategy", "golden-kg",
                  "--limit", "3", "--concurrency", "1", "--run-dir", str(run), "--no-progress", *extra)


def test_a_proxy_page_is_transient_and_its_episodes_run_again_on_resume(data_dir, tmp_path):
    run = tmp_path / "run"
    with FakeProviderServer() as fake:
        fake.openai.respond_with(lambda body: Reply(200, PAGE, {"content-type": "application/json"}))
        first = _run(fake.openai_base_url, run, "--max-attempts", "2")
        assert first.returncode in (1, 3), first.stderr[-3000:]
        traces = list(RunDir.open(run).iter_traces())
        assert traces and all(t["status"] == "errored" for t in traces)
        for t in traces:
            assert t["error"]["retryable"] is True, t["error"]
            assert "not JSON" in t["error"]["message"] and "Bad Gateway" in t["error"]["message"]
            assert len(t["error"]["attempts"]) == 2  # retried
        fake.openai.respond_with(lambda body: openai_chat(text="an answer", usage=(10, 2)))
        again = _run(fake.openai_base_url, run)  # no --retry-errored: transient errors run again anyway
    assert again.returncode == 0, again.stderr[-3000:]
    latest = RunDir.open(run).latest_traces()
    assert len(latest) == 3 and all(t["status"] == "completed" for t in latest.values())


def test_garbage_lines_are_reported_with_their_line_numbers_and_never_taken_as_records(data_dir, tmp_path):
    run = tmp_path / "run"
    with FakeProviderServer() as fake:
        fake.openai.respond_with(lambda body: openai_chat(text="an answer", usage=(10, 2)))
        assert _run(fake.openai_base_url, run).returncode == 0
        traces = run / "traces.jsonl"
        lines = traces.read_text().splitlines(keepends=True)
        first_task = json.loads(lines[0])["task_id"]
        # line 2: not JSON; line 3: JSON with the first task's id but no trace in it (a half-overwritten line)
        lines[1:1] = ["<<<garbage>>> {not json\n", json.dumps({"task_id": first_task, "junk": True}) + "\n"]
        traces.write_text("".join(lines))

        score = _evals("score", str(run), "--json")
        assert score.returncode == 0, score.stderr[-3000:]
        err = " ".join(score.stderr.split())
        assert "traces.jsonl:2: skipped a line that is not a trace record (not JSON)" in err, err[-3000:]
        assert "traces.jsonl:3: skipped a line that is not a trace record (status null" in err, err[-3000:]
        assert err.count("traces.jsonl:2:") == 1  # once, however often the file is read
        summary = json.loads(score.stdout.strip().splitlines()[-1])
        assert summary["completed"] == 3  # the junk line did not replace the first task's record

        resumed = _run(fake.openai_base_url, run)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    err = " ".join(resumed.stderr.split())
    assert "traces.jsonl:2: skipped" in err and "traces.jsonl:3: skipped" in err, err[-3000:]
    assert "0 completed, 0 errored, 3 skipped" in err  # nothing ran again: every task has its record
