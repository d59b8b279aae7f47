"""``evals run --executor ray`` across two Ray nodes, simulated on this machine with
``ray.cluster_utils.Cluster`` (a head and a second node, each its own raylet with 1 CPU, both on
127.0.0.1): one actor lands on each node; the second node starts with an empty data directory and an
empty cache, so its actor downloads the pinned data (from a local mirror of the real files, sha256
checked) and builds the KG itself, as a node of a real cluster would; without a reachable mirror it
refuses with a clear message. That node killed mid-run stops the run, naming the worker; a resume on
a fresh node leaves every task exactly once, with the same traces and numbers as one local process.

Deterministic on a loaded machine: nothing waits on time. Each run starts once the cluster's live
nodes are exactly the head and the node the test added (a removed node marked dead by Ray), so the
run's two actors (1 CPU each, on 2 CPUs) can only land one on each node; ``evals run`` hands out no
episode before every actor is placed and ready (or stops at the first that refuses), so a run's
first trace means both nodes loaded. Every timeout below is a safety net of many minutes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from client.runs import RunDir
from evals.core.run import RunOptions, run_benchmark, score_run_dir

ray = pytest.importorskip("ray")

from loopback_http import serve_directory  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from test_data_fetch import _dead_port, _mirror  # noqa: E402  (tests/evals is on sys.path)

# the Ray tests share one xdist worker (test.sh: --dist loadgroup); each Ray cluster here is the test's own
pytestmark = pytest.mark.xdist_group("ray")

LIMIT = 40
LATENCY = 1.0
"""Seconds per model turn (a sleep, which load cannot shorten): the run lasts long enough to lose a
node in the middle. After the fourth trace at least 36 tasks are left, 4 at a time, each of at least
2 turns: at least 18 s before the run could end, against the few milliseconds the test takes to
kill the node once it sees that trace."""
ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}  # Ray on 127.0.0.1 only
SAFETY_S = 900  # a safety net, never reached on a working setup however loaded: the waits are on state


@pytest.fixture
def mirror(data_dir: Path, tmp_path: Path) -> Iterator[str]:
    """A local stand-in for the hosts of the pinned FamilyTool files."""
    with serve_directory(_mirror(data_dir, tmp_path / "mirror", names=("familytool",))) as url:
        yield url


@pytest.fixture(scope="module")
def head_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache directory of the head node's processes (empty at first)."""
    return tmp_path_factory.mktemp("head") / "cache"


@pytest.fixture(scope="module")
def cluster(head_cache: Path) -> Iterator[Cluster]:
    """A Ray head node (1 CPU) with this machine's data directory and its own empty cache (one per
    module: the tests add and remove the second node)."""
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(ENV)
    head = Cluster()
    try:
        head.add_node(wait=False, num_cpus=1, node_ip_address="127.0.0.1", include_dashboard=False,
                      env_vars={"EVALS_CACHE_DIR": str(head_cache)})
        _settle(head)  # registered (Ray's own wait for it gives up after 30 s)
        yield head
    finally:
        head.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _settle(cluster: Cluster) -> None:
    """Wait until the nodes Ray counts as alive are exactly the cluster's nodes: an added node has
    registered, a removed one has been marked dead."""
    expected = {node.node_id for node in cluster.list_all_nodes()}
    deadline = time.monotonic() + SAFETY_S
    while (live := {n["NodeID"] for n in cluster.global_state.node_table() if n["Alive"]}) != expected:
        assert time.monotonic() < deadline, f"live nodes {sorted(live)}, expected {sorted(expected)}"
        time.sleep(0.2)


@pytest.fixture
def empty_node(cluster: Cluster) -> Iterator[Callable[[Path, str], Any]]:
    """``empty_node(root, mirror)``: a second node whose processes see an empty data directory and
    cache under ``root``, and ``mirror`` for downloads; returned once Ray counts it (and only it,
    beside the head) as alive. The test's nodes are removed at its end, whatever happened, so the next
    test starts from the head alone."""
    added: list[Any] = []

    def add(root: Path, mirror: str) -> Any:
        env = {"EVALS_DATA_DIR": str(root / "data"), "EVALS_CACHE_DIR": str(root / "cache"),
               "EVALS_DATA_URL_PREFIX": mirror}
        node = cluster.add_node(wait=False, num_cpus=1, node_ip_address="127.0.0.1", env_vars=env)
        added.append(node)
        _settle(cluster)
        return node

    yield add
    for node in added:
        if node in cluster.worker_nodes:
            cluster.remove_node(node)  # graceful: Ray counts it dead at once
    _settle(cluster)


def _args(cluster: Cluster, run: Path, latency: float) -> list[str]:
    return [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", f"oracle:{latency}", "--limit",
            str(LIMIT), "--concurrency", "4", "--workers", "2", "--executor", "ray", "--ray-address", cluster.address,
            "--run-dir", str(run), "--no-progress", "--json"]


async def test_two_nodes_a_node_killed_mid_run_and_a_resume_give_the_numbers_of_one_process(
    cluster, head_cache, empty_node, mirror, wait_for_traces, resume_to_the_end, run_traces, data_dir, tmp_path  # noqa: ANN001
):
    local = tmp_path / "local"
    _, expected = await run_benchmark(RunOptions(benchmark="familytool-b", model=f"oracle:{LATENCY}", limit=LIMIT,
                                                 concurrency=LIMIT, run_dir=local, progress=False, workers=1))
    node_b = empty_node(tmp_path / "node-b", mirror)  # the head and node b, and no other node, are alive
    run = tmp_path / "run"
    args = _args(cluster, run, LATENCY)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the first traces come only once both actors are ready (evals run waits for every actor)
        wait_for_traces(run / "traces.jsonl", 4, proc, timeout=SAFETY_S)
        # an actor on each node: the empty node fetched the data and built the KG into its own cache,
        # the head built the KG into its cache from this machine's data directory
        assert (tmp_path / "node-b" / "data" / "familytool" / "familykg-b.txt").is_file()
        assert list((tmp_path / "node-b" / "cache" / "kg").iterdir())
        assert list((head_cache / "kg").iterdir())
        # the node is lost, with its actor, while the run has at least 18 s of model turns left (LATENCY)
        cluster.remove_node(node_b, allow_graceful=False)
        _, err = proc.communicate(timeout=SAFETY_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    assert "(Ray actor on 127.0.0.1, pid" in err and "exited with" in err, err[-3000:]
    ids = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False)]
    assert 4 <= len(ids) < LIMIT and len(ids) == len(set(ids))

    empty_node(tmp_path / "node-c", mirror)  # a fresh node takes the lost one's place (node b counted dead)
    resume_to_the_end(args, run, LIMIT, timeout=SAFETY_S)
    assert list((tmp_path / "node-c" / "cache" / "kg").iterdir())  # the resume's second actor ran there
    assert run_traces(run) == run_traces(local)
    assert (await score_run_dir(run))["metrics"] == expected["metrics"]


def test_a_node_that_cannot_get_the_data_refuses_with_a_clear_message(cluster, empty_node, data_dir, tmp_path):  # noqa: ANN001
    empty_node(tmp_path / "node-b", f"http://127.0.0.1:{_dead_port()}")  # the head and this node only
    done = subprocess.run(_args(cluster, tmp_path / "run", 0.0), capture_output=True, text=True, timeout=SAFETY_S,
                          env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 2, done.stderr[-3000:]
    assert "(a Ray actor) failed to start: DataNotFound: familytool-b: the data is not in" in done.stderr
    assert str(tmp_path / "node-b" / "data") in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "run" / "traces.jsonl").is_file() or not (tmp_path / "run" / "traces.jsonl").read_bytes()
