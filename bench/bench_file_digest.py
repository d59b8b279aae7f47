"""Files hashed by one ``evals run``: the one file digest (``kg_store.digest``, read once per file
version and process) against the same code reading every file each time it is asked, and, with
``--compare-ref REF``, against REF's code (issue 45 item 5: five hashing helpers before).

Each row is a fresh process running one in-process oracle run (``--workers 1``, ``--limit``
tasks) with the user cache warm; it counts the bytes given to SHA-256 (the derived cache's own
entry checksums included, the same in every row) and the time spent in it. Medians over
``--repeat`` rounds, interleaved.

    python bench/bench_file_digest.py --repeat 3 --compare-ref main
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ref_worktree  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

_CHILD = """
import asyncio, hashlib, json, sys, tempfile, time
from pathlib import Path
real, seen = hashlib.sha256, {"bytes": 0, "s": 0.0}
class Counted:
    def __init__(self, data=b""):
        t = time.perf_counter(); self.h = real(data); seen["bytes"] += len(data); seen["s"] += time.perf_counter() - t
    def update(self, data):
        t = time.perf_counter(); self.h.update(data); seen["bytes"] += len(data); seen["s"] += time.perf_counter() - t
    def hexdigest(self): return self.h.hexdigest()
    def digest(self): return self.h.digest()
hashlib.sha256 = Counted
if sys.argv[3] == "read":
    import kg_store.digest
    kg_store.digest.RACY_NS = 1 << 62  # nothing is old enough to be remembered
from evals.core.run import RunOptions, run_benchmark
opts = RunOptions(benchmark=sys.argv[1], model="oracle", limit=int(sys.argv[2]), workers=1, progress=False,
                  run_dir=Path(tempfile.mkdtemp()) / "run")
t0 = time.perf_counter()
asyncio.run(run_benchmark(opts))
print(json.dumps({"mb": seen["bytes"] / 1e6, "ms": seen["s"] * 1000, "run_s": time.perf_counter() - t0}))
"""


def _one(tree: Path, benchmark: str, limit: int, mode: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", _CHILD, benchmark, str(limit), mode], env=env, cwd=tree,
                         capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=int, default=5, help="tasks per run (default 5)")
    ap.add_argument("--benchmarks", nargs="*", default=["familytool-b", "bfcl"])
    ap.add_argument("--compare-ref", metavar="REF", help="also REF's code (a temporary git worktree), interleaved")
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        impls = {"remembered (this checkout)": (ROOT, "remember"), "read every time": (ROOT, "read")}
        if args.compare_ref:
            impls[args.compare_ref] = (stack.enter_context(ref_worktree(args.compare_ref)), "remember")
        for bench in args.benchmarks:  # the user cache warm for every row
            _one(ROOT, bench, args.limit, "remember")
        rows: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _ in range(args.repeat):
            for bench in args.benchmarks:
                for label, (tree, mode) in impls.items():
                    rows.setdefault((bench, label), []).append(_one(tree, bench, args.limit, mode))
    print(f"one-process oracle runs of {args.limit} tasks, medians of {args.repeat}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'benchmark':<14} {'digest':<28} {'MB hashed':>10} {'ms hashing':>11} {'run s':>7}")
    for (bench, label), samples in rows.items():
        med = {k: statistics.median(s[k] for s in samples) for k in ("mb", "ms", "run_s")}
        print(f"{bench:<14} {label:<28} {med['mb']:10.1f} {med['ms']:11.0f} {med['run_s']:7.2f}")


if __name__ == "__main__":
    main()
