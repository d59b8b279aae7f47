"""Helpers shared by the bench scripts: a free port, waiting for a server, a process's CPU time, another
commit checked out beside this one (``--compare-ref``) and the environment a checkout's commands run in."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx2

__all__ = ["ROOT", "checkout_env", "cpu_s", "free_port", "ref_worktree", "wait_for_health"]

ROOT = Path(__file__).resolve().parents[1]


def checkout_env(root: Path) -> dict[str, str]:
    """The environment for commands of the checkout at ``root`` (its own code; the data of this checkout's
    ``../shared/data`` unless ``EVALS_DATA_DIR`` is set: a temporary worktree has none)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    shared = ROOT.parent / "shared" / "data"
    if "EVALS_DATA_DIR" not in env and shared.is_dir():
        env["EVALS_DATA_DIR"] = str(shared)
    return env


@contextlib.contextmanager
def ref_worktree(ref: str) -> Iterator[Path]:
    """``ref`` checked out (detached) into a temporary git worktree, removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="bench_ref_"))
    dest = tmp / "checkout"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(dest), ref], check=True)
    try:
        yield dest
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(dest)], check=False)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def wait_for_health(base: str, tries: int, path: str = "/health") -> None:
    """Poll ``base + path`` every 0.1 s until it answers (200, or any status when ``path`` is not
    ``/health``); exit after ``tries`` polls."""
    async with httpx2.AsyncClient() as http:
        for _ in range(tries):
            try:
                status = (await http.get(base + path)).status_code
                if status == 200 or path != "/health":
                    return
            except httpx2.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit(f"HTTP server at {base} did not start")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used (from ``/proc``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

