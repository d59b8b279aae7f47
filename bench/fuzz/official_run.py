"""Running an official script's driver for the fuzzer: the system Python (outside the project's venv),
a timeout, and the driver's last stdout line as JSON: ``{"stopped": "<error>"}`` or ``{"numbers": {...}}``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench.fuzz.outcome import Outcome


def driver_outcome(args: list[str], *, cwd: Path | None = None, timeout: float = 60) -> Outcome:
    try:
        p = subprocess.run(["python3", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return Outcome(stopped=True, note="timed out")
    try:
        got = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Outcome(stopped=True, note=f"driver failed: {p.stderr.strip()[-200:]}")
    if "stopped" in got:
        return Outcome(stopped=True, note=got["stopped"])
    return Outcome(numbers=dict(got["numbers"]))
