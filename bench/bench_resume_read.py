"""A resumed run's reading of ``traces.jsonl`` with ``--workers auto``: the count of the tasks left
(before the workers are forked), then the runner's own scan once the run is opened. This checkout
reads the file once (``client.runs.read_traces``, handed to ``RunDir(traces_read=...)``); with
``--compare-ref REF``, REF's code beside it (before issue 50's follow-up: ``pending_tasks`` and then
the runner's scan, twice).

Every task of RUN_DIR is taken as selected (nothing is pending, as on a finished run resumed). The
folder is copied to a temporary one first (the runner's lock and repair touch it). Each round is a
fresh process per checkout, interleaved; the time is the median of ``--inner`` reads in it.

    python bench/bench_resume_read.py RUN_DIR --repeat 5 --compare-ref main
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, checkout_env, ref_worktree  # noqa: E402

_CHILD = """
import json, statistics, sys, time
from pathlib import Path
from client import runs
run, inner = Path(sys.argv[1]), int(sys.argv[2])
keys = [json.loads(line)["task_id"] for line in open(run / "traces.jsonl", "rb") if line.strip()]
times = []
for _ in range(inner):
    t0 = time.perf_counter()
    if hasattr(runs, "read_traces"):
        seen = runs.read_traces(run)
        pending = len(seen.pending(keys))
        rd = runs.RunDir(run, None, traces_read=seen)
    else:
        pending = len(runs.pending_tasks(run, keys))
        rd = runs.RunDir(run, None)
    rd.open_for_writing()
    records = len(rd.scan_traces().records)
    times.append(time.perf_counter() - t0)
    rd.close()
print(json.dumps({"s": statistics.median(times), "pending": pending, "records": records}))
"""


def _one(tree: Path, run: Path, inner: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(run), str(inner)], env=checkout_env(tree), cwd=tree,
                         capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a finished run folder (a full BFCL oracle run: 4,751 traces)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (a fresh process per checkout each)")
    parser.add_argument("--inner", type=int, default=3, help="reads per process (their median)")
    parser.add_argument("--compare-ref", help="a git ref whose code is measured beside this checkout's")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench_resume_")))
        run = tmp / "run"
        shutil.copytree(args.run_dir, run, ignore=shutil.ignore_patterns(".lock"))
        trees = {"this checkout": ROOT}
        if args.compare_ref:
            trees[args.compare_ref] = stack.enter_context(ref_worktree(args.compare_ref))
        got: dict[str, list[float]] = {name: [] for name in trees}
        records = 0
        for _ in range(args.repeat):
            for name, tree in trees.items():
                one = _one(tree, run, args.inner)
                got[name].append(one["s"])
                records = int(one["records"])
    base = statistics.median(got["this checkout"])
    print(f"resume's trace reading with --workers auto, {records} traces ({args.run_dir}); "
          f"median of {args.repeat} rounds, each the median of {args.inner} reads\n")
    print("| code | median s | fastest s | ratio |\n|---|---|---|---|")
    for name, times in got.items():
        print(f"| {name} | {statistics.median(times):.3f} | {min(times):.3f} | {statistics.median(times) / base:.2f} |")


if __name__ == "__main__":
    main()
