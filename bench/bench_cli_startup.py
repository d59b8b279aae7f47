"""Start-up time of the ``evals`` command line: ``evals --help`` and ``evals run NAME --help``
against ``python -c pass`` (the interpreter alone), each a fresh process.

Prints, per command, the median and the minimum wall time over ``--repeat`` runs, and the time
over the bare interpreter. Target: help in under 0.5 s on a quiet machine.

    python bench/bench_cli_startup.py                  # 10 runs of each
    python bench/bench_cli_startup.py --repeat 30 --benchmark familytool-b

Not a test: nothing is asserted (the times depend on the machine and its load).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _time(argv: list[str], repeat: int) -> list[float]:
    times = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env, cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=10, help="runs of each command (default 10)")
    ap.add_argument("--benchmark", default="toolhop", help="the NAME of `evals run NAME --help` (default toolhop)")
    args = ap.parse_args()
    py = sys.executable
    commands = [
        ("python -c pass", [py, "-c", "pass"]),
        ("evals --help", [py, "-m", "evals.cli", "--help"]),
        (f"evals run {args.benchmark} --help", [py, "-m", "evals.cli", "run", args.benchmark, "--help"]),
        ("evals --version", [py, "-m", "evals.cli", "--version"]),
    ]
    print(f"# evals start-up, {args.repeat} runs each; {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'command':<32} {'median s':>9} {'min s':>7} {'median over python':>19}")
    base = None
    for label, argv in commands:
        times = _time(argv, args.repeat)
        med = statistics.median(times)
        base = med if base is None else base
        print(f"{label:<32} {med:9.3f} {min(times):7.3f} {med - base:19.3f}")


if __name__ == "__main__":
    main()
