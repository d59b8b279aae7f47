"""A run folder's size, and reading it back: ``evals score`` and the viewer's first page, side by side with other commits.

For this checkout and each ``--compare-ref REF`` (checked out into a temporary git worktree), one BFCL
oracle run (``evals run bfcl --model oracle:0 --limit-per-category N``, every category, no tokens: the
harness alone) is written into a fresh folder; then, ``--repeat`` times each, interleaved between the
checkouts (a loaded machine slows them alike), each reads its own folder back:

* ``evals score RUN``: a fresh process, as a user runs it; wall seconds and the process's peak RSS
  (``/usr/bin/time``);
* the viewer's first page: a fresh process that opens the run (:class:`evals.view.site.Site`) and
  builds the runs page's data (``Site.runs()``: the index and the summary, imports included), then
  the tasks table (a fresh index and its rows) and the transcript of the run's middle task (which
  reads its tool lists back); seconds inside it (the first page's include its imports), and the
  process's peak RSS.

Printed: each file of the folder (bytes), the folder's total and its ratio to each reference's, and
the medians of the timings with the ratio this checkout / REF. A REF of the commit before
``--event-log`` existed (``106bfff``, main before issue 50) writes ``events.jsonl`` as runs did then; this checkout runs
without the flag (its default). ``--scale K`` repeats every trace line of each folder K times under
new task ids before the reading steps (a run K times as long, for the memory of the readers: the
scorer scores the unknown ids as not in the benchmark's selection and skips them).

    python bench/bench_run_folder.py --compare-ref main --compare-ref 106bfff [--limit-per-category 20] [--repeat 5]

Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, checkout_env, ref_worktree  # noqa: E402  (bench/ is on sys.path when run as a script)

VIEW = """
import json, sys, time
t0 = time.perf_counter()
from evals.view.site import Site
Site([sys.argv[1]]).runs()
first = time.perf_counter() - t0
from evals.view.index import RunIndex
from evals.view.runs import RunView
from evals.view.transcript import episode
t1 = time.perf_counter()
view = RunView("r", RunIndex.open(sys.argv[1]))
view.task_rows()
tasks = time.perf_counter() - t1
ids = list(view.index.traces)
t2 = time.perf_counter()
episode(view, ids[len(ids) // 2])
print(json.dumps({"first": first, "tasks": tasks, "episode": time.perf_counter() - t2}))
"""


def _files(run: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in sorted(run.rglob("*")):
        if p.is_file() and p.name != ".lock":
            out[str(p.relative_to(run))] = p.stat().st_size
    return out


def _scale(run: Path, k: int) -> None:
    """Every trace line K times, the copies under new task ids (``<id>~copy<n>``)."""
    if k <= 1:
        return
    path = run / "traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    with open(path, "ab") as f:
        for n in range(1, k):
            for line in lines:
                cut = line.find(b'"task_id": "') + len(b'"task_id": "')
                end = line.find(b'"', cut)
                f.write(line[:end] + f"~copy{n}".encode() + line[end:])


def _timed(argv: list[str], root: Path) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KB) and stdout of a command."""
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True, env=checkout_env(root), cwd=root)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} (in {root}) exited with {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, int(proc.stderr.strip().splitlines()[-1]), proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare-ref", action="append", default=[], metavar="REF", help="also measure this commit (repeatable)")
    ap.add_argument("--limit-per-category", type=int, default=20, metavar="N", help="BFCL entries per category (default 20)")
    ap.add_argument("--repeat", type=int, default=5, help="reads of each folder (default 5)")
    ap.add_argument("--scale", type=int, default=1, metavar="K", help="repeat the traces K times before reading (default 1)")
    args = ap.parse_args()
    py = sys.executable
    load_before = os.getloadavg()
    with contextlib.ExitStack() as stack:
        impls = {"this checkout": ROOT}
        for ref in args.compare_ref:
            impls[ref] = stack.enter_context(ref_worktree(ref))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench_folder_")))
        runs, files, wrote = {}, {}, {}
        for n, (name, root) in enumerate(impls.items()):
            run = runs[name] = tmp / f"run-{n}"
            argv = [py, "-m", "evals.cli", "run", "bfcl", "--model", "oracle:0", "--limit-per-category",
                    str(args.limit_per_category), "--run-dir", str(run), "--no-progress"]
            wrote[name] = _timed(argv, root)[0]
            files[name] = _files(run)
            entries = (run / "traces.jsonl").read_bytes().count(b"\n")
            _scale(run, args.scale)
        samples: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeat):
            for name, root in impls.items():
                wall, rss, _ = _timed([py, "-m", "evals.cli", "score", str(runs[name])], root)
                samples.setdefault(("evals score, wall s", name), []).append(wall)
                samples.setdefault(("evals score, peak RSS MB", name), []).append(rss / 1024)
                _, rss, out = _timed([py, "-c", VIEW, str(runs[name])], root)
                got = json.loads(out.strip().splitlines()[-1])
                samples.setdefault(("viewer first page (runs list), s", name), []).append(got["first"])
                samples.setdefault(("viewer process, peak RSS MB", name), []).append(rss / 1024)
                samples.setdefault(("viewer tasks table, s", name), []).append(got["tasks"])
                samples.setdefault(("viewer transcript of one task, s", name), []).append(got["episode"])
    load_after = os.getloadavg()
    names = list(impls)
    refs = names[1:]
    print(f"# run folder: BFCL oracle run, --limit-per-category {args.limit_per_category} "
          f"({entries} entries), "
          f"reads x{args.scale}; medians of {args.repeat}, interleaved; {platform.python_implementation()} "
          f"{platform.python_version()}, {os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{x:.2f}' for x in load_before)} before, {', '.join(f'{x:.2f}' for x in load_after)} after")
    width = max(14, *(len(n) + 2 for n in names))
    head = f"{'file (bytes)':<40}" + "".join(f"{n:>{width}}" for n in names)
    print(head)
    every = sorted({f for n in names for f in files[n]}, key=lambda f: (f.count("/"), f))
    for f in every:
        print(f"{f:<40}" + "".join(f"{files[n].get(f, 0):>{width},}" for n in names))
    totals = {n: sum(files[n].values()) for n in names}
    print(f"{'whole folder':<40}" + "".join(f"{totals[n]:>{width},}" for n in names))
    for ref in refs:
        print(f"{'this checkout / ' + ref:<40}{totals[names[0]] / totals[ref]:>{width}.3f}")
    print(f"{'evals run (the writing), wall s':<40}" + "".join(f"{wrote[n]:>{width}.2f}" for n in names))
    print()
    head = f"{'reading (median)':<40}" + "".join(f"{n:>{width}}" for n in names) + "".join(f"{'x ' + r:>{width}}" for r in refs)
    print(head)
    for label in dict.fromkeys(k for k, _ in samples):
        med = {n: statistics.median(samples[(label, n)]) for n in names}
        print(f"{label:<40}" + "".join(f"{med[n]:>{width}.3f}" for n in names)
              + "".join(f"{med[names[0]] / med[r]:>{width}.2f}" for r in refs))


if __name__ == "__main__":
    main()
