"""Scaling over cores (not a test): ``evals run --workers N`` and ``--concurrency`` with a slow model.

Each row is one ``evals run familytool-b --model oracle[:S]`` child process, timed from outside:
whole command (wall), the CPU of the command and every process under it (``RUSAGE_CHILDREN``: the
workers and their zygote are reaped inside it), and the episodes' own wall from its ``--json``
summary. Tables:

* a second worker's cost: the CPU of ``--workers 2`` over ``--workers 1`` on 40 instant episodes
  (``--model oracle:0``; see :func:`pair_cpu`; ``--pair-only`` prints only this table);
* ``--crossover N ...``: ``--workers 1`` against ``2`` on N instant episodes at c=64 (wall of the
  whole command and of the episodes, CPU), from which ``--workers auto``'s
  ``WORKER_MIN_EPISODES`` is set (docs/performance.md); only this table is printed;
* worker start: CPU seconds per extra worker (``--workers 4`` less ``--workers 1``, and less
  ``--workers 2``; 8 episodes; see :func:`start_cpu`);
* workers 1..16 (``--model oracle:0``): episodes/s over the episodes, speed-up, whole command, CPU
  per episode with start-up;
* concurrency 64..1024 with a 0.5 s model turn (``oracle:0.5``, ``--workers auto``);
* ``evals serve --workers N``: calls/s against N (``bench/bench_load.py --workers ... --lean-load``, its
  table as it prints it), when this checkout's ``evals serve`` has the flag (else a note).

``--compare-ref REF`` runs the same rows from a ``git worktree`` of REF, interleaved, ratios beside.

    python bench/bench_scale.py                 # 16 cores, a few minutes
    python bench/bench_scale.py --quick         # 2 cores: workers 1,2,4, small sizes
    python bench/bench_scale.py --quick --compare-ref main
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def run_once(root: Path, args: list[str]) -> dict[str, float]:
    """One ``evals run`` from the checkout ``root``: wall, CPU of the whole tree, episodes' seconds."""
    env = dict(os.environ, PYTHONPATH=str(root))
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "evals.cli", "run", "familytool-b", *args,
                               "--run-dir", f"{tmp}/run", "--no-progress", "--json"],
                              cwd=root, env=env, capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"error: {root}: evals run {' '.join(args)} exited {proc.returncode}: {proc.stderr[-500:]}")
    summary: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if summary.get("errored"):
        raise SystemExit(f"error: {root}: {summary['errored']} episodes errored")
    found = re.search(r"stopped_reason=\w+, .*?, ([0-9.]+)s, score", proc.stderr)  # the episodes' own wall
    episodes_s = float(found.group(1)) if found else wall
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "episodes_s": episodes_s}


def size(episodes: int) -> list[str]:
    """``--limit``/``--epochs`` for about ``episodes`` episodes (FamilyTool-b has 483 tasks)."""
    epochs = -(-episodes // 483)
    return ["--limit", str(-(-episodes // epochs)), "--epochs", str(epochs)]


def median_rows(roots: dict[str, Path], args: list[str], repeats: int) -> dict[str, dict[str, float]]:
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in roots}
    for _ in range(repeats):  # interleaved: a loaded machine slows both alike
        for name, root in roots.items():
            runs[name].append(run_once(root, args))
    return {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}


def start_cpu(roots: dict[str, Path], extra: int, repeats: int) -> dict[str, list[tuple[float, float]]]:
    """CPU seconds per extra worker, for runs of 8 instant episodes (start-up and teardown are all
    there is): ``(--workers 1+extra less --workers 1) / extra`` (all that N workers cost over one
    process: with a zygote, its one interpreter and benchmark load too) and ``(--workers 1+extra less
    --workers 2) / (extra - 1)`` (what one more worker costs once there are workers). One pair per
    repeat; each root's three runs back to back, interleaved with the other roots."""
    per: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
    args = ["--model", "oracle:0", "--limit", "8", "--concurrency", "8"]
    for _ in range(repeats):
        for name, root in roots.items():
            one, two, many = (run_once(root, [*args, "--workers", str(n)])["cpu"] for n in (1, 2, 1 + extra))
            per[name].append(((many - one) / extra, (many - two) / (extra - 1)))
    return per


def pair_cpu(roots: dict[str, Path], episodes: int, repeats: int) -> dict[str, dict[str, float]]:
    """Median CPU seconds (the whole process tree) and wall of ``--workers 1`` and ``--workers 2`` on
    ``episodes`` instant episodes, each root's pair back to back, interleaved with the other roots;
    ``ratio`` is the median of the per-repeat ratios w2 / w1."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in roots}
    args = ["--model", "oracle:0", "--limit", str(episodes), "--concurrency", "8"]
    for _ in range(repeats):
        for name, root in roots.items():
            one, two = (run_once(root, [*args, "--workers", str(n)]) for n in (1, 2))
            runs[name].append({"w1": one["cpu"], "w2": two["cpu"], "ratio": two["cpu"] / one["cpu"],
                               "wall1": one["wall"], "wall2": two["wall"]})
    return {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}


def serve_has_workers(root: Path) -> bool:
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-m", "evals.cli", "serve", "--help"], cwd=root, env=env,
                         capture_output=True, text=True, check=False).stdout
    return "--workers" in out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 cores: workers 1,2,4, fewer episodes")
    ap.add_argument("--compare-ref", metavar="REF", help="also time a git worktree of REF, interleaved")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--start-repeats", type=int, default=5, help="repeats of the worker-start CPU table")
    ap.add_argument("--start-only", action="store_true", help="only the worker-start CPU table")
    ap.add_argument("--crossover", type=int, nargs="+", metavar="N",
                    help="only: --workers 1 against 2 on N instant episodes at c=64")
    ap.add_argument("--pair-only", action="store_true", help="only the --workers 2 over 1 CPU table")
    ap.add_argument("--pair-episodes", type=int, default=40, help="episodes of the --workers 2 over 1 table")
    ap.add_argument("--pair-repeats", type=int, default=5, help="repeats of the --workers 2 over 1 table")
    a = ap.parse_args()
    workers = [1, 2, 4] if a.quick else [1, 2, 4, 8, 16]
    limit = 200 if a.quick else 3864
    conc = [64, 256] if a.quick else [64, 256, 1024]
    repeats = a.repeats or (1 if not a.quick else 2)
    roots = {"this": REPO}
    tmp = None
    if a.compare_ref:
        tmp = tempfile.mkdtemp(prefix="bench-scale-ref-")
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", tmp, a.compare_ref],
                       check=True, capture_output=True)
        roots[a.compare_ref] = Path(tmp)
    try:
        print(f"load before: {Path('/proc/loadavg').read_text().split()[:3]}; {os.cpu_count()} CPUs")
        if a.crossover:
            print("\n| instant episodes, c=64 | --workers 1: whole s / episodes s / CPU s | --workers 2: whole s / "
                  "episodes s / CPU s | 2 over 1: whole / CPU |")
            print("|---|---|---|---|")
            for n in a.crossover:
                runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
                for _ in range(repeats):  # interleaved
                    for w in (1, 2):
                        runs[w].append(run_once(REPO, ["--model", "oracle:0", *size(n), "--concurrency", "64",
                                                       "--workers", str(w)]))
                one, two = ({k: statistics.median(r[k] for r in runs[w]) for k in runs[w][0]} for w in (1, 2))
                print(f"| {n} | {one['wall']:.2f} / {one['episodes_s']:.2f} / {one['cpu']:.2f} | {two['wall']:.2f} / "
                      f"{two['episodes_s']:.2f} / {two['cpu']:.2f} | {two['wall'] / one['wall']:.2f} / "
                      f"{two['cpu'] / one['cpu']:.2f} |", flush=True)
            return 0
        pair = pair_cpu(roots, a.pair_episodes, a.pair_repeats)
        print(f"\n| {a.pair_episodes} instant episodes, c=8 | CPU s, --workers 1 | CPU s, --workers 2 | ratio (target "
              "<= 1.25) | whole command s, 1 / 2 |")
        print("|---|---|---|---|---|")
        for name, r in pair.items():
            print(f"| {name} | {r['w1']:.2f} | {r['w2']:.2f} | {r['ratio']:.2f} | {r['wall1']:.2f} / {r['wall2']:.2f} |",
                  flush=True)
        if a.pair_only:
            print(f"load after: {Path('/proc/loadavg').read_text().split()[:3]}")
            return 0
        per = start_cpu(roots, 3, a.start_repeats)
        print("\n| worker start, CPU s per extra worker (8 episodes) | (w4 - w1) / 3 | (w4 - w2) / 2 | runs (w4-w1)/3 |")
        for name, values in per.items():
            print(f"| {name} | {statistics.median(v[0] for v in values):.2f} | {statistics.median(v[1] for v in values):.2f}"
                  f" | {' '.join(f'{v[0]:.2f}' for v in values)} |", flush=True)
        if a.start_only:
            print(f"load after: {Path('/proc/loadavg').read_text().split()[:3]}")
            return 0
        print("\n| workers | ep/s over the episodes | speed-up | whole command s | CPU/episode ms |"
              + (f" x {a.compare_ref}: wall | CPU/ep |" if a.compare_ref else ""))
        base = None
        for n in workers:
            rows = median_rows(roots, ["--model", "oracle:0", *size(limit), "--concurrency", "256",
                                       "--workers", str(n)], repeats)
            r = rows["this"]
            eps = limit / r["episodes_s"]
            base = base or eps
            line = f"| {n} | {eps:,.0f} | {eps / base:.1f} | {r['wall']:.1f} | {1000 * r['cpu'] / limit:.1f} |"
            if a.compare_ref:
                o = rows[a.compare_ref]
                line += f" {r['wall'] / o['wall']:.2f} | {r['cpu'] / o['cpu']:.2f} |"
            print(line, flush=True)
        slow_limit = limit // 2
        print("\n| concurrency (0.5 s turn, --workers auto) | episodes s | ideal s | of ideal | whole command s |")
        for c in conc:
            r = median_rows({"this": REPO}, ["--model", "oracle:0.5", *size(slow_limit),
                                             "--concurrency", str(c)], 1)["this"]
            ideal = 0.5 * 2 * -(-slow_limit // c)  # two model turns per FamilyTool episode (oracle)
            print(f"| {c} | {r['episodes_s']:.1f} | {ideal:.1f} | {ideal / r['episodes_s']:.2f} | {r['wall']:.1f} |",
                  flush=True)
        if serve_has_workers(REPO):
            print("\n`evals serve --workers N` (bench/bench_load.py, bare HTTP tools/call load):", flush=True)
            clients = max(1, (os.cpu_count() or 2) // 4)
            subprocess.run([sys.executable, str(REPO / "bench" / "bench_load.py"), "--workers", *map(str, workers),
                            "--repeats", str(repeats), "--minutes", "0.25" if a.quick else "0.5", "--lean-load",
                            "--sessions", "32" if a.quick else "128", "--client-processes", str(clients)],
                           cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
        else:
            print("\nnote: this checkout's `evals serve` has no --workers flag: server table skipped")
        print(f"load after: {Path('/proc/loadavg').read_text().split()[:3]}")
    finally:
        if tmp is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", tmp], check=False,
                           capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
