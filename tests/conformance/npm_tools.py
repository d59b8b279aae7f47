"""Helpers of the conformance and Inspector tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

__all__ = ["BENCHMARK", "NPM_BIN", "free_port", "serve_command"]

ROOT = Path(__file__).resolve().parents[2]
NPM_BIN = ROOT / ".ci" / "node_modules" / ".bin"
BENCHMARK = "familytool-b"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "evals.cli", "serve", *args]
