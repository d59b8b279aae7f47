"""Helpers of the conformance and Inspector tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2

__all__ = ["BENCHMARK", "NPM_BIN", "free_port", "serve_command", "stop", "wait_http"]

ROOT = Path(__file__).resolve().parents[2]
NPM_BIN = ROOT / ".ci" / "node_modules" / ".bin"
BENCHMARK = "familytool-b"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "evals.cli", "serve", *args]


def wait_http(url: str, proc: subprocess.Popen[str], what: str, timeout: float, log: Path) -> None:
    """Return once ``url`` answers HTTP (any status); raise if ``proc`` (its stderr in ``log``) exits or
    ``timeout`` s pass first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx2.get(url, timeout=2)
            return
        except httpx2.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {timeout:g} s")
        time.sleep(0.2)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
