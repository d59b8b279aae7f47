"""Helpers for the real-vLLM tests: the report, the environment paths, process trees and memory."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
REPORT: dict[str, Any] = {}
"""Measurements, written out and printed at the end of the session (see conftest.py)."""


@dataclass(frozen=True)
class VLLMCPU:
    venv: Path
    model: Path

    @property
    def vllm(self) -> Path:
        return self.venv / "bin" / "vllm"


# ------------------------------------------------------------------ processes


def marked_pids(marker: str) -> list[int]:
    """Processes whose environment holds ``EVALS_TEST_MARKER=<marker>`` (a test's process tree:
    every descendant inherits it, even one that was orphaned)."""
    needle = f"EVALS_TEST_MARKER={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                stat = (entry / "stat").read_text()
                if stat[stat.rfind(")") + 2 :].split()[0] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_no_marked(marker: str, timeout: float = 30.0) -> list[int]:
    """Wait until no marked process runs; those still running after ``timeout`` (killed, then returned)."""
    deadline = time.monotonic() + timeout
    while (left := marked_pids(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return left


def _memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of ``pid`` in KiB; (0, 0) when it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    rss = pss = 0
    for line in text.splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Pss:"):
            pss = int(line.split()[1])
    return rss, pss


class MemorySampler:
    """Samples the summed RSS and PSS of the processes marked ``marker`` (except ``exclude``) twice a second."""

    def __init__(self, marker: str, exclude: set[int] | None = None) -> None:
        self.marker = marker
        self.exclude = exclude or set()
        self.peak_rss_kib = 0
        self.peak_pss_kib = 0
        self.peak_procs = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = [p for p in marked_pids(self.marker) if p not in self.exclude]
            sizes = [_memory_kib(p) for p in pids]
            self.peak_rss_kib = max(self.peak_rss_kib, sum(s[0] for s in sizes))
            self.peak_pss_kib = max(self.peak_pss_kib, sum(s[1] for s in sizes))
            self.peak_procs = max(self.peak_procs, len(pids))
            self._stop.wait(0.5)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def report(self) -> dict[str, Any]:
        return {
            "peak_rss_gib": round(self.peak_rss_kib / 2**20, 2),
            "peak_pss_gib": round(self.peak_pss_kib / 2**20, 2),
            "processes": self.peak_procs,
        }
