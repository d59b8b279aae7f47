"""BFCL's own code run over a request in the BFCL venv (``.ci/bfcl-venv``): the fidelity tests' one way to ask it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DRIVER = Path(__file__).with_name("bfcl_official_driver.py")


def run_official(bfcl_python: Path, request: Mapping[str, Any], tmp_path: Path,
                 env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """BFCL's answer to ``request`` (``{"cases": [...]}`` or ``{"tools": [...]}``: see
    ``bfcl_official_driver.py``)."""
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    done = subprocess.run([str(bfcl_python), str(DRIVER), str(path)], capture_output=True, text=True, timeout=600,
                          check=False, env=dict(env) if env is not None else None)
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer
