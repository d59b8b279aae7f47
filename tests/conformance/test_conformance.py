"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``, server mode) against
``evals serve``: over HTTP, every active scenario at the newest protocol revision the suite knows and
at the one before; over stdio through a bridge (npm ``supergateway``), the scenarios a benchmark
server can pass. Failures other than those of ``expected_failures.yaml`` (scenarios that need the
suite's own fixture tools, prompts and resources) fail the test, and so does a stale entry there.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from npm_tools import BENCHMARK, free_port, serve_command, stop, wait_http

HERE = Path(__file__).parent
BASELINE = HERE / "expected_failures.yaml"
REVISIONS = ["2025-11-25", "2025-06-18"]  # the suite's newest revision and the one before
# Over the bridge every scenario starts a fresh `evals serve --stdio` (8-17 s each), so a few of the
# scenarios that do not need the suite's fixtures run there: one per kind of request. dns-rebinding-protection is left out:
# it tests the bridge's own HTTP server, which does not check Host headers (a false alarm for us).
STDIO_SCENARIOS = ["server-initialize", "logging-set-level", "tools-list", "resources-list", "prompts-list"]


def _run_suite(npm_env: dict[str, str], url: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["conformance", "server", "--url", url, "--expected-failures", str(BASELINE), "-o", str(out), *extra],
        env=npm_env, capture_output=True, text=True, timeout=300,
    )


def _summary(proc: subprocess.CompletedProcess[str]) -> str:
    text = proc.stdout + proc.stderr
    return text[text.find("=== SUMMARY ==="):] if "=== SUMMARY ===" in text else text[-4000:]


@pytest.mark.parametrize("revision", REVISIONS)
def test_conformance_over_http(npm_env, serve_url, revision, tmp_path):
    proc = _run_suite(npm_env, f"{serve_url}/mcp/{BENCHMARK}", tmp_path, "--spec-version", revision)
    summary = _summary(proc)
    print(summary)
    assert proc.returncode == 0, summary
    # resources-subscribe is an expected failure: it subscribes to the suite's fixture URI, which this server
    # does not serve (tests/security/test_subscriptions.py subscribes to the URIs it does serve)
    for scenario in ("server-initialize", "tools-list", "resources-list", "prompts-list", "logging-set-level"):
        assert f"✓ {scenario}:" in summary, summary


def test_conformance_over_stdio_through_a_bridge(npm_env, tmp_path):
    port = free_port()
    command = shlex.join(serve_command("--stdio", "--benchmark", BENCHMARK, "--allow-writes"))
    log = tmp_path / "bridge-stderr.txt"
    with log.open("w") as err:  # a file, not a pipe: a pipe nobody reads would block the bridge once full
        bridge = subprocess.Popen(
            ["supergateway", "--stdio", command, "--outputTransport", "streamableHttp", "--stateful",
             "--port", str(port), "--logLevel", "none"],
            env=npm_env, stdout=subprocess.DEVNULL, stderr=err, text=True,
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/mcp", bridge, "supergateway", 60, log)
        for scenario in STDIO_SCENARIOS:
            proc = _run_suite(npm_env, f"http://127.0.0.1:{port}/mcp", tmp_path / scenario, "--scenario", scenario)
            summary = _summary(proc)
            assert proc.returncode == 0 and re.search(r"Passed: (\d+)/\1, 0 failed", summary), summary
    finally:
        stop(bridge)
