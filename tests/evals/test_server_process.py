"""The benchmark's server in a child process (``serve_in_subprocess``: what ``bench_harness.py``'s SDK floor
measures against; ``evals run --server-process`` is gone), and the run options it is sent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from client.runs import RunDir
from evals.core.run import RunOptions, run_benchmark
from evals.core.server_process import ServerProcessError, serve_in_subprocess


def _server_children(parent: int) -> list[int]:
    """Living ``evals.core.server_process`` processes whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[1]) == parent and b"evals.core.server_process" in cmdline and stat[0] != "Z":
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return stat[0] != "Z"


def test_options_travel_to_the_child_unchanged(tmp_path):
    opts = RunOptions(benchmark="familytool-e", model="oracle:0.1", strategy="kgetool", run_dir=tmp_path / "r",
                      cache=tmp_path / "c.sqlite", adapter_options={"seed": 3},
                      benchmark_options={"inductive": True, "top_k": 5})
    assert RunOptions.decode(opts.encode()) == opts
    with pytest.raises(ValueError, match="unknown run options"):
        RunOptions.decode(json.dumps({"benchmark": "x", "model": "y", "no_such_option": 1}))


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
async def test_oracle_scores_100_against_the_server_in_a_child_process(data_dir, tmp_path):
    async with serve_in_subprocess(RunOptions(benchmark="familytool-b", model="oracle", strategy="agent")) as base:
        opts = RunOptions(benchmark="familytool-b", model="oracle", limit=40, concurrency=8,
                          run_dir=tmp_path / "run", progress=False, server_url=base)
        _, summary = await run_benchmark(opts)
    assert summary["completed"] == 40 and summary["errored"] == 0
    assert summary["metrics"]["tool_em"] == summary["metrics"]["value_acc"] == 100.0
    for trace in RunDir.open(tmp_path / "run").iter_traces():  # the calls went through the child's server
        calls = [e for e in trace["events"] if e["kind"] == "tool_call"]
        assert len(calls) >= 2 and not any(c["is_error"] for c in calls)
    assert _server_children(os.getpid()) == []  # stopped and reaped


async def test_a_server_that_cannot_start_says_why(data_dir, tmp_path, monkeypatch):
    # the child cannot build its KG database: the cache directory is a file; the parent says why
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("EVALS_CACHE_DIR", str(blocker))
    with pytest.raises(ServerProcessError, match="failed to start: (NotADirectoryError|FileExistsError)"):
        async with serve_in_subprocess(RunOptions(benchmark="familytool-b", model="oracle", strategy="agent")):
            pass
    assert _server_children(os.getpid()) == []


def test_the_server_process_flag_is_gone(capsys):
    """Issue 45 item 1: `--workers 2` already separates tools from episodes; one topology flag fewer."""
    from evals.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["run", "familytool-b", "--model", "oracle", "--server-process"])
    assert exited.value.code == 2 and "--server-process" in capsys.readouterr().err
