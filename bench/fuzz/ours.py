"""Our side of a case: `evals score ...` in one long-lived child process, and `LineServer`, the one way
the fuzzer keeps a process alive between cases (ours, and the official code of NesTools and UltraTool).

A fresh `evals` process per case costs about 2 s of imports and data loading, too slow for thousands of
files on a shared machine; so one child process (`python -m bench.fuzz.ours --serve`, one per
environment asked for) imports `evals` once and runs `evals.cli.main([...])` per request in a fresh
working directory, its stdout and stderr captured. An exception that escapes `main` is a traceback
(crashed); a case that runs past the timeout kills the child (a fresh one serves the next case) and
counts as crashed too.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .outcome import Outcome

__all__ = ["LineServer", "Result", "evals_score", "score_outcome"]

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    """One `evals` call: exit status (None: a traceback or a timeout), stdout, stderr, the --json summary."""

    rc: int | None
    stdout: str
    stderr: str
    summary: dict[str, Any] | None
    traceback: str = ""

    def outcome(self, numbers: dict[str, str], same: tuple[str, ...] = ()) -> Outcome:
        """What the fuzzer makes of this call, with ``numbers`` (ours, as the target compares them):
        crashed (a traceback, a timeout, an exit that is neither 0 nor 2, or exit 0 without a summary),
        stopped (exit 2: refused in one line), else warned when the summary has a warning that holds none
        of ``same`` (phrases of warnings that say the number is the official one)."""
        if self.rc not in (0, 2) or self.traceback or "Traceback (most recent call last)" in self.stderr:
            last = (self.traceback or self.stderr).strip().splitlines() or ["?"]
            return Outcome(crashed=True, note=f"exit {self.rc}: {last[-1][:200]}")
        if self.rc == 2:
            return Outcome(stopped=True, note=self.stderr.strip()[:200])
        if self.summary is None:
            return Outcome(crashed=True, note=f"exit 0 without a summary: {self.stderr.strip()[-200:]}")
        warnings = [w for w in self.summary.get("warnings") or [] if not any(s in w for s in same)]
        return Outcome(numbers=numbers, warned=bool(warnings), note="; ".join(warnings)[:300])


class LineServer:
    """A child process that answers one JSON line per JSON request line (started on first use, killed and
    started again after a timeout)."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str] | None = None):
        self.cmd, self.cwd, self.env = cmd, cwd, env
        self.proc: subprocess.Popen[str] | None = None

    def ask(self, request: Any, timeout: float) -> dict[str, Any] | None:
        """The child's answer to ``request``; None when it timed out or died (it is then killed)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, encoding="utf-8")
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
        reader.start()
        reader.join(timeout)
        if not box or not box[0]:
            proc.kill()
            proc.wait()
            self.proc = None
            return None
        answer: dict[str, Any] = json.loads(box[0])
        return answer


_CHILDREN: dict[tuple[tuple[str, str], ...], LineServer] = {}


def evals_score(argv: list[str], env: dict[str, str] | None = None, timeout: float = 300.0) -> Result:
    """Run `evals <argv>` in the serving child for ``env`` (added to this process's environment; one child
    per distinct ``env``); a timeout kills it (Result.rc None)."""
    key = tuple(sorted((env or {}).items()))
    if key not in _CHILDREN:
        full = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", **dict(key)}
        _CHILDREN[key] = LineServer([sys.executable, "-m", "bench.fuzz.ours", "--serve"], ROOT, full)
    reply = _CHILDREN[key].ask(argv, timeout)
    if reply is None:
        return Result(None, "", "", None, "timeout, or the serving process died")
    out = reply["stdout"]
    summary = None
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                summary = json.loads(line)
            break
    return Result(reply["rc"], out, reply["stderr"], summary, reply["traceback"])


def score_outcome(case: Path, fmt: str, bench: str, digits: int, same: tuple[str, ...] = ()) -> Outcome:
    """Our side of a case: `evals score CASE --format FMT --benchmark BENCH --json` as an Outcome, every
    metric of the summary printed with ``digits`` decimals (see `Result.outcome` for ``same``)."""
    got = evals_score(["score", str(case), "--format", fmt, "--benchmark", bench, "--json", "--out", "run"])
    metrics = (got.summary or {}).get("metrics") or {}
    return got.outcome({k: f"{v:.{digits}f}" for k, v in metrics.items() if isinstance(v, int | float)}, same)


def _serve() -> None:
    from evals.cli import main

    for line in sys.stdin:
        argv = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        rc: int | None
        tb = ""
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)  # a relative --out lands here, and goes with it
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = main(argv)
                except SystemExit as exc:
                    rc = exc.code if isinstance(exc.code, int) else 1
                except BaseException:  # noqa: BLE001 - a traceback is what the fuzzer looks for
                    rc, tb = None, traceback.format_exc()
                finally:
                    os.chdir(here)
        try:
            sys.stdout.write(json.dumps({"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue(), "traceback": tb},
                                        ensure_ascii=True) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # the fuzzer stopped
            break


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    _serve()
