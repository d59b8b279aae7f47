"""Start-up time of the ``evals`` command line, each command a fresh process:

* ``python -c pass`` (the interpreter alone), ``evals --help``, ``evals run NAME --help``, ``evals --version``;
* for each benchmark of ``--runs``, a one-task oracle run (``evals run NAME --model oracle --limit 1
  --no-progress``, a fresh run directory each time): ``first episode`` is the wall time from starting
  the command to its first episode's start (the ``ts`` of the run's first ``episode_started`` event in
  ``events.jsonl``), ``whole`` the whole command (the summary table included), ``whole, CPU s`` its
  CPU time (user + system; less sensitive to a loaded machine than wall time). An entry of ``--runs``
  is the arguments after ``evals run`` (paths relative to the checkout); the default list ends with
  the family task file of ``docs/your-own-tasks.md``.

Each run comes after one warm-up run of the same command (so the user cache, e.g. a benchmark's
cached task index, and the bytecode are warm, as for a user's second run). Prints per command the
median and minimum over ``--repeat`` runs and, with ``--compare-ref REF``, the same for REF (checked
out into a temporary git worktree, run the same way, interleaved with this checkout's runs so that a
loaded machine slows both alike) and this checkout's median over REF's.

    python bench/bench_cli_startup.py                           # 10 runs of each
    python bench/bench_cli_startup.py --repeat 7 --compare-ref main
    python bench/bench_cli_startup.py --repeat 5 --runs familytool-b "toolhop --strategy agent"

Not a test: nothing is asserted (the times depend on the machine and its load: compare rows of one
run, and read the load average it prints).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _common import ROOT, ref_worktree  # bench/ is on sys.path when run as a script

FAMILY = "docs/examples/family"
DEFAULT_RUNS = ["familytool-b", "toolhop", "nestools", "bfcl",
                f"taskfile --tasks {FAMILY}/family_tasks.yaml --kg {FAMILY}/family.triples --tools-dir {FAMILY}/tools"]


def _env(root: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    shared = ROOT.parent / "shared" / "data"  # where the checkout's own data is (a temporary worktree has none)
    if "EVALS_DATA_DIR" not in env and shared.is_dir():
        env["EVALS_DATA_DIR"] = str(shared)
    return env


def _run_argv(py: str, spec: str, run_dir: Path) -> list[str]:
    return [py, "-m", "evals.cli", "run", *shlex.split(spec), "--model", "oracle", "--limit", "1", "--no-progress", "--event-log",
            "--run-dir", str(run_dir)]


def _run_label(spec: str) -> str:
    """``familytool-b``; ``taskfile family_tasks.yaml`` for a task file."""
    words = shlex.split(spec)
    return f"{words[0]} {Path(words[words.index('--tasks') + 1]).name}" if "--tasks" in words else words[0]


def _first_episode_ts(run_dir: Path) -> float:
    """The wall-clock time (seconds since the epoch) the run's first episode started."""
    for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("kind") == "episode_started":
            return datetime.fromisoformat(event["ts"]).timestamp()
    raise SystemExit(f"{run_dir}: no episode_started event")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(argv: list[str], root: Path, run_dir: Path | None) -> tuple[float, float | None, float]:
    """Wall seconds of the command, to its first episode (a run) or None, and its CPU seconds."""
    cpu0, start_wall, t0 = _children_cpu(), time.time(), time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(root), cwd=root)
    whole = time.perf_counter() - t0
    cpu = _children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} (in {root}) exited with {proc.returncode}: "
                         f"{proc.stderr.decode(errors='replace')[-2000:]}")
    return whole, None if run_dir is None else _first_episode_ts(run_dir) - start_wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=10, help="runs of each command (default 10)")
    ap.add_argument("--benchmark", default="toolhop", help="the NAME of `evals run NAME --help` (default toolhop)")
    ap.add_argument("--runs", nargs="*", default=DEFAULT_RUNS, metavar="NAME",
                    help="the one-task oracle runs: each the arguments after `evals run` (default: familytool-b, toolhop, "
                         "nestools, bfcl and the family task file)")
    ap.add_argument("--compare-ref", metavar="REF", help="also time the checkout of this git commit, interleaved")
    args = ap.parse_args()
    py = sys.executable
    load_before = os.getloadavg()
    with contextlib.ExitStack() as stack:
        impls = {"this checkout": ROOT}
        if args.compare_ref:
            impls[args.compare_ref] = stack.enter_context(ref_worktree(args.compare_ref))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench_startup_")))
        plain = [
            ("python -c pass", [py, "-c", "pass"]),
            ("evals --help", [py, "-m", "evals.cli", "--help"]),
            (f"evals run {args.benchmark} --help", [py, "-m", "evals.cli", "run", args.benchmark, "--help"]),
            ("evals --version", [py, "-m", "evals.cli", "--version"]),
        ]
        labels = [label for label, _ in plain]
        for bench in args.runs:
            labels += [f"run {_run_label(bench)}: {what}" for what in ("first episode", "whole", "whole, CPU s")]
        samples: dict[tuple[str, str], list[float]] = {}
        counter = 0
        for rep in range(args.repeat + 1):  # the first round warms up and is not counted
            for label, argv in plain:
                for name, root in impls.items():
                    whole, _, _ = time_command(argv, root, None)
                    if rep:
                        samples.setdefault((label, name), []).append(whole)
            for bench in args.runs:
                for name, root in impls.items():
                    counter += 1
                    run_dir = tmp / f"run-{counter}"
                    whole, first, cpu = time_command(_run_argv(py, bench, run_dir), root, run_dir)
                    if rep:
                        assert first is not None
                        for what, value in (("first episode", first), ("whole", whole), ("whole, CPU s", cpu)):
                            samples.setdefault((f"run {_run_label(bench)}: {what}", name), []).append(value)
    load_after = os.getloadavg()
    print(f"# evals start-up: medians of {args.repeat} runs each (after a warm-up run), interleaved; "
          f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load average {', '.join(f'{x:.2f}' for x in load_before)} before, "
          f"{', '.join(f'{x:.2f}' for x in load_after)} after")
    head = f"{'command':<44} {'median s':>9} {'min s':>7}"
    if args.compare_ref:
        ref = args.compare_ref
        head += f" {ref + ' median s':>16} {ref + ' min s':>12} {'x ' + ref:>9}"
    print(head)
    for label in labels:
        ours = samples[(label, "this checkout")]
        line = f"{label:<44} {statistics.median(ours):9.3f} {min(ours):7.3f}"
        if args.compare_ref:
            theirs = samples[(label, args.compare_ref)]
            line += (f" {statistics.median(theirs):16.3f} {min(theirs):12.3f}"
                     f" {statistics.median(ours) / statistics.median(theirs):9.2f}")
        print(line)


if __name__ == "__main__":
    main()
