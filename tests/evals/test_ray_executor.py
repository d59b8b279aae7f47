"""``evals run --executor ray``: the workers as Ray actors on a real local Ray head (127.0.0.1, 2 CPUs,
one for the module): the oracle gives the same traces and numbers as one local worker on two
benchmarks; an actor killed mid-run stops the run, naming it, and a resume leaves every task exactly
once in the traces."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from client.runs import RunDir
from evals.core.run import RunOptions, prepare_options, run_benchmark

ray = pytest.importorskip("ray")

# one Ray head per module, and the module on one xdist worker (test.sh: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module")
def ray_head():  # noqa: ANN201
    from evals.core.ray_executor import start_local_head

    start_local_head(2)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


async def _oracle(run_traces, run: Path, benchmark: str, limit: int, **settings) -> tuple[dict, dict]:  # noqa: ANN001, ANN003
    opts = RunOptions(benchmark=benchmark, model="oracle", limit=limit, concurrency=6, run_dir=run, progress=False, event_log=True,
                      **settings)
    result, summary = await run_benchmark(opts)
    assert result.completed == limit and result.errored == 0 and result.stopped_reason == "done"
    traces = run_traces(run)
    assert len(traces) == limit
    return traces, summary["metrics"]


@pytest.mark.parametrize(("benchmark", "metric"), [("familytool-b", "tool_em"), ("nestools", "tree_accuracy")])
async def test_ray_actors_give_the_same_traces_and_numbers_as_one_local_worker(
    benchmark, metric, ray_head, data_dir, run_traces, tmp_path  # noqa: ANN001
):
    local, numbers = await _oracle(run_traces, tmp_path / "local", benchmark, 12, workers=1)
    on_ray, ray_numbers = await _oracle(run_traces, tmp_path / "ray", benchmark, 12, workers=2, executor="ray")
    assert on_ray == local and ray_numbers == numbers and numbers[metric] == 100.0
    config = json.loads((tmp_path / "ray" / "config.json").read_text())
    assert config["run"]["executor"] == "ray" and config["run"]["workers"] == 2
    assert "executor" not in config["options"]  # not a result setting: a resume may change it
    # the actors' events reached the run's event log through the parent, each episode's once
    events = [json.loads(line) for line in open(tmp_path / "ray" / "events.jsonl")]
    assert {e["task_id"] for e in events} == set(local)
    keys = [(e["episode_id"], e["seq"]) for e in events if "seq" in e]  # the episode's own events
    assert len(keys) == len(set(keys)) and {e["task_id"] for e in events if "seq" in e} == set(local)


async def test_workers_auto_on_a_cluster_is_one_actor_per_cpu_in_the_runs_plan(ray_head, data_dir, run_traces, tmp_path):  # noqa: ANN001
    """The plan is frozen: the cluster's size, known once connected, reaches the config through the
    value ``open_cluster`` returns."""
    await _oracle(run_traces, tmp_path / "auto", "familytool-b", 4, workers=None, executor="ray", ray_address=ray_head)
    config = json.loads((tmp_path / "auto" / "config.json").read_text())
    assert config["run"]["workers"] == 2  # the module's head: 2 CPUs


def _actor_pids() -> dict[str, int]:
    """The pids of the run's worker actors, by actor name."""
    out = {}
    for entry in ray.util.list_named_actors(all_namespaces=True):
        if entry["name"].startswith("evals-worker-"):
            with_ns = ray.get_actor(entry["name"], namespace=entry["namespace"])
            out[entry["name"]] = ray.get(with_ns.pid.remote(), timeout=30)
    return out


def test_an_actor_killed_mid_run_stops_the_run_and_a_resume_leaves_every_task_exactly_once(
    wait_for_traces, resume_to_the_end, ray_head, data_dir, tmp_path
):
    run = tmp_path / "run"
    traces = run / "traces.jsonl"
    # a second driver on the module's cluster, as `evals run` on a machine of a cluster would be (it
    # inherits the head's single-machine setting from this process's environment: start_local_head)
    args = [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle:0.1", "--limit", "40",
            "--concurrency", "4", "--workers", "2", "--executor", "ray", "--ray-address", ray_head,
            "--run-dir", str(run), "--no-progress", "--json"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_traces(traces, 6, proc)
        pids = _actor_pids()
        assert len(pids) == 2, pids
        victim = pids[min(pids)]  # worker 0 (names end in the worker's index)
        os.kill(victim, signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert f"worker 0 (Ray actor on 127.0.0.1, pid {victim}) exited with" in err, err[-3000:]
    now = traces.read_bytes().count(b"\n")
    assert 6 <= now < 40
    ids = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False)]
    assert len(ids) == len(set(ids)) == now  # no task twice, no torn line
    assert not _actor_pids()  # the stopped run's actors are gone

    resume_to_the_end(args, run, 40)


@pytest.mark.parametrize(("settings", "message"), [
    ({"ray_address": "auto"}, "--ray-address goes with --executor ray"),
    ({"executor": "dask"}, "unknown --executor 'dask'; choose local or ray"),
    ({"executor": "ray", "server_url": "http://127.0.0.1:1"}, "each Ray actor serves the benchmark's tools itself"),
])
def test_ray_settings_are_checked_before_anything_starts(settings, message, data_dir):  # noqa: ANN001
    with pytest.raises(ValueError, match=re.escape(message)):
        prepare_options(RunOptions(benchmark="familytool-b", model="oracle", **settings))


def test_without_ray_installed_the_error_says_what_to_install(data_dir, monkeypatch):  # noqa: ANN001
    import evals.core.ray_executor as ray_executor

    monkeypatch.setattr(ray_executor, "ray_installed", lambda: False)
    with pytest.raises(ValueError, match=re.escape("pip install 'mcp-multihop-evals[ray]'")):
        prepare_options(RunOptions(benchmark="familytool-b", model="oracle", executor="ray"))


def test_a_ray_address_that_nothing_answers_at_fails_at_once():
    import socket

    from evals.core.ray_executor import _check_reachable
    from evals.core.workers import WorkerError

    with socket.socket() as sock:  # a port nobody listens on: bound, not listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
            with pytest.raises(WorkerError, match=f"--ray-address {re.escape(address)}: nothing answers at 127.0.0.1:{port}"):
                _check_reachable(address)
    _check_reachable("auto")  # left to Ray
