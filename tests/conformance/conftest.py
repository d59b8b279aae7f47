"""npm tools (installed by ``.ci/run`` into ``.ci/node_modules``) and an ``evals serve`` to point them at.

Without ``.ci/node_modules`` these tests are skipped, unless ``EVALS_REQUIRE_NPM_TOOLS=1`` (set by
``.ci/run``, which installs them) makes that a failure.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import httpx2
import pytest
from npm_tools import BENCHMARK, NPM_BIN, free_port, serve_command


@pytest.fixture(scope="session")
def npm_env(data_dir) -> dict[str, str]:  # noqa: ARG001 - data_dir skips without data
    """The environment to run the npm tools in: Node 22 and the tools first on PATH."""
    if not (NPM_BIN / "node").exists():
        if os.environ.get("EVALS_REQUIRE_NPM_TOOLS") == "1":
            pytest.fail(f"{NPM_BIN} is missing: .ci/run installs it (npm install --prefix .ci)")
        pytest.skip("npm tools not installed (.ci/run: npm install --prefix .ci)")
    return {**os.environ, "PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def serve_url(npm_env) -> Iterator[str]:
    """``evals serve`` over HTTP with FamilyTool-b (its KG writable), until the module's tests end."""
    port = free_port()
    proc = subprocess.Popen(
        serve_command("--port", str(port), "--benchmarks", BENCHMARK, "--allow-writes"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"evals serve exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
            try:
                if httpx2.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("evals serve did not start within 120 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
