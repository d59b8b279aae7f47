"""npm tools (installed by ``.ci/run`` into ``.ci/node_modules``) and an ``evals serve`` to point them at.

Without ``.ci/node_modules`` these tests are skipped, unless ``EVALS_REQUIRE_NPM_TOOLS=1`` (set by
``.ci/run``, which installs them) makes that a failure.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
from npm_tools import BENCHMARK, NPM_BIN, free_port, serve_command, stop, wait_http


@pytest.fixture(scope="session")
def npm_env(data_dir) -> dict[str, str]:  # noqa: ARG001 - data_dir skips without data
    """The environment to run the npm tools in: Node 22 and the tools first on PATH."""
    if not (NPM_BIN / "node").exists():
        if os.environ.get("EVALS_REQUIRE_NPM_TOOLS") == "1":
            pytest.fail(f"{NPM_BIN} is missing: .ci/run installs it (npm install --prefix .ci)")
        pytest.skip("npm tools not installed (.ci/run: npm install --prefix .ci)")
    return {**os.environ, "PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def serve_url(npm_env, tmp_path_factory) -> Iterator[str]:
    """``evals serve`` over HTTP with FamilyTool-b (its KG writable), until the module's tests end."""
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "stderr.txt"
    with log.open("w") as err:  # a file, not a pipe: a pipe nobody reads would block the server once full
        proc = subprocess.Popen(
            serve_command("--port", str(port), "--benchmarks", BENCHMARK, "--allow-writes"),
            stdout=subprocess.DEVNULL, stderr=err, text=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url + "/health", proc, "evals serve", 120, log)
        yield url
    finally:
        stop(proc)
