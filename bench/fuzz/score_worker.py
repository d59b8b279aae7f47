"""`evals score` in one long-lived subprocess, for the fuzzer's `run_ours` (ComplexFuncBench, FamilyTool,
ToolHop): a fresh `python -m`/`evals` process per file costs about 1.8 s of start-up, most of it imports,
which would make a few thousand files per benchmark take hours on this machine. The worker imports the
project once and runs `evals.cli.main(argv)` per request, with its stdout and stderr captured, in a fresh
working directory; an exception that escapes `main` is returned as a traceback (a crash, as it would be
in a process of its own). One request per line on stdin, one JSON answer per line on stdout.

:func:`score` is the client side: it starts the worker on first use (and again if it died).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.fuzz.outcome import Outcome

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Scored:
    rc: int
    stdout: str
    stderr: str
    traceback: str

    def summary(self) -> dict[str, Any] | None:
        """The ``--json`` summary (the last stdout line), or ``None``."""
        lines = self.stdout.strip().splitlines()
        if self.rc != 0 or not lines:
            return None
        try:
            got = json.loads(lines[-1])
        except ValueError:
            return None
        return got if isinstance(got, dict) else None

    def outcome(self, numbers: dict[str, str]) -> Outcome:
        """What the fuzzer's Outcome says of this: crashed (a traceback, or an exit that is neither 0 nor
        2), stopped (exit 2), warned (a warning in the summary), with ``numbers``."""
        crashed = bool(self.traceback) or "Traceback (most recent call last)" in self.stderr or self.rc not in (0, 2)
        summary = self.summary() or {}
        note = (self.traceback.strip().splitlines() or [""])[-1] if crashed else self.stderr.strip()[-200:]
        return Outcome(numbers=numbers, stopped=self.rc == 2 and not crashed, warned=bool(summary.get("warnings")),
                       crashed=crashed, note=note.replace("\n", " ")[:300])


_proc: subprocess.Popen[str] | None = None
_env: dict[str, str] | None = None


def score(argv: list[str], env: dict[str, str], timeout: float = 120) -> Scored:
    """Run ``evals <argv>`` in the worker (started with ``env`` added to this process's environment)."""
    global _proc, _env
    if _proc is None or _proc.poll() is not None or env != _env:
        if _proc is not None and _proc.poll() is None:
            _proc.kill()
            _proc.wait()
        full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        _proc = subprocess.Popen([sys.executable, "-m", "bench.fuzz.score_worker"], cwd=ROOT, env=full, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 encoding="utf-8", errors="surrogateescape")
        _env = dict(env)
    assert _proc.stdin is not None and _proc.stdout is not None
    _proc.stdin.write(json.dumps(argv) + "\n")
    _proc.stdin.flush()
    line = _readline(_proc.stdout, timeout)
    if not line:
        _proc.kill()
        _proc.wait()
        _proc = None
        return Scored(-1, "", "", "the score worker died or timed out")
    got = json.loads(line)
    return Scored(got["rc"], got["stdout"], got["stderr"], got["traceback"])


def _readline(stream: IO[str], timeout: float) -> str:
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    ready = sel.select(timeout)
    sel.close()
    return stream.readline() if ready else ""


def _serve() -> None:
    from evals.cli import main

    for line in sys.stdin:
        argv = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        rc, tb = 0, ""
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    rc = main(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001  (a crash, reported as a traceback)
                rc, tb = 1, traceback.format_exc()
            finally:
                os.chdir(here)
        answer = {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue(), "traceback": tb}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
