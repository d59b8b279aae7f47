"""Running an official script for the fuzzer, outside the project's venv, in one of two ways:

* `driver_outcome`: a driver run by the system Python per case, with a timeout; its last stdout line is
  JSON, ``{"stopped": "<error>"}`` or ``{"numbers": {...}}`` (ComplexFuncBench, ToolHop);
* `served_outcome`: a driver kept running in the official code's venv (`ours.LineServer`), one request
  line per case, answering ``{"error": "<error>"}`` or the numbers (NesTools, UltraTool: their imports
  cost seconds).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .ours import LineServer
from .outcome import Outcome


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


_SERVERS: dict[tuple[str, ...], LineServer] = {}


def served_outcome(work: Path, driver: Path, arg: Path, request: Any,
                   numbers: Callable[[dict[str, Any]], dict[str, str]]) -> Outcome:
    """``driver ARG`` run by ``work/venv``'s Python (started once), asked ``request``; its answer made
    numbers by ``numbers``; a timeout (600 s), a dead driver or ``{"error": ...}`` is the code stopping."""
    cmd = [str(work / "venv" / "bin" / "python"), str(driver), str(arg)]
    answer = _SERVERS.setdefault(tuple(cmd), LineServer(cmd, work)).ask(request, timeout=600)
    if answer is None:
        return Outcome(stopped=True, note="timeout, or the official process died")
    if "error" in answer:
        return Outcome(stopped=True, note=str(answer["error"])[:200])
    return Outcome(numbers=numbers(answer))
