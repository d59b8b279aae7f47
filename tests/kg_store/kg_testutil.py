"""Helpers for the kg_store tests (kept out of conftest.py so test modules can import them)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from kg_store import Triple

REPO_ROOT = Path(__file__).resolve().parents[2]


def read_triples_independently(path: Path) -> list[Triple]:
    """Parse a KG file without kg_store's parser, for cross-checking it."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            h, r, t = ast.literal_eval(line)
            out.append(Triple(h, r, t))
    return out


def reference_walks(triples: list[Triple], start: str, hops: list[set[str] | None]) -> list[list[Triple]]:
    """All walks from ``start`` whose i-th edge relation is in ``hops[i]`` (None: any), by brute force."""
    walks: list[list[Triple]] = [[]]
    ends = [start]
    for hop in hops:
        new_walks, new_ends = [], []
        for walk, end in zip(walks, ends, strict=True):
            for t in triples:
                if t.head == end and (hop is None or t.relation in hop):
                    new_walks.append([*walk, t])
                    new_ends.append(t.tail)
        walks, ends = new_walks, new_ends
    return sorted(walks)


def run_python(code: str, *, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports this checkout (same engine env var)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def start_python(code: str) -> subprocess.Popen[str]:
    """Start ``code`` in a fresh interpreter with pipes for stdin/stdout (see :func:`run_python`)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
