"""A worker's start: the run's zygote (fork after the benchmark is loaded) against the standard
library's forkserver with ``set_forkserver_preload`` (issue 45 item 1: measure before deleting).

Each mechanism starts ``--workers`` children; each child does what a worker does before its first
episode: has the benchmark (the zygote's child inherits it; the forkserver's child loads it, from the
derived cache, its modules preloaded in the forkserver) and builds its tool server and one task
endpoint's tools. Printed per mechanism, CPU seconds: the one-time cost (the zygote's loading, or
the forkserver's start with its preloads), each child's own CPU (median / max; ``getrusage`` in
the child), and all of it divided by the workers (the "CPU per worker" of the worker-start table;
target 0.5 s). ``--repeats`` rounds, interleaved; medians.

    python bench/bench_forkserver.py --workers 4 --repeats 3
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import cpu_s  # noqa: E402

BENCHMARK = "familytool-b"
PRELOAD = ["evals.core.episodes", "evals.core.registry", "evals.core.worker_process", "server", "client.agent",
           "anyio._backends._asyncio", "httpcore2", "kuzu"]


def _self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _open_server(bench: Any) -> None:
    from server import EndpointRef, ToolServer

    with contextlib.ExitStack() as stack:
        ts = ToolServer(bench.mounts(stack, strategy="agent"))
        ts.endpoint_tools(EndpointRef(BENCHMARK, bench.task_ids()[0]))


_LOADED: Any = None  # the zygote's benchmark, inherited by its forked children


def _zygote_child(out: Any) -> None:
    _open_server(_LOADED)
    out.send(_self_cpu())


def _forkserver_child(out: Any) -> None:
    from evals.core.registry import load_benchmark

    _open_server(load_benchmark(BENCHMARK))
    out.send(_self_cpu())


def _children(ctx: Any, target: Any, workers: int) -> list[float]:
    pipes = [ctx.Pipe(duplex=False) for _ in range(workers)]
    procs = [ctx.Process(target=target, args=(w,)) for _, w in pipes]
    for p in procs:
        p.start()
    cpus = [r.recv() for r, _ in pipes]
    for p in procs:
        p.join()
    return cpus


def zygote(workers: int) -> tuple[float, list[float]]:
    """In a fresh process: load the benchmark (the one-time cost), then fork the children from it."""
    ctx = multiprocessing.get_context("spawn")
    r, w = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_zygote_main, args=(workers, w))
    p.start()
    result = r.recv()
    p.join()
    return result  # type: ignore[no-any-return]


def _zygote_main(workers: int, out: Any) -> None:
    global _LOADED
    from evals.core.registry import load_benchmark
    from evals.core.worker_process import _warm_imports

    t0 = _self_cpu()
    import evals.core.episodes  # noqa: F401
    _LOADED = load_benchmark(BENCHMARK)
    _warm_imports()
    once = _self_cpu() - t0
    out.send((once, _children(multiprocessing.get_context("fork"), _zygote_child, workers)))


def forkserver(workers: int) -> tuple[float, list[float]]:
    """In a fresh process: a forkserver with the modules preloaded (its CPU the one-time cost), its children."""
    ctx = multiprocessing.get_context("spawn")
    r, w = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_forkserver_main, args=(workers, w))
    p.start()
    result = r.recv()
    p.join()
    return result  # type: ignore[no-any-return]


def _forkserver_main(workers: int, out: Any) -> None:
    from multiprocessing import forkserver as fs

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    fs.ensure_running()
    pid = fs._forkserver._forkserver_pid  # type: ignore[attr-defined]
    cpus = _children(ctx, _forkserver_child, workers)
    time.sleep(0.2)
    out.send((cpu_s(pid), cpus))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows: dict[str, list[tuple[float, list[float]]]] = {"zygote (today)": [], "forkserver + preload": []}
    for _ in range(args.repeats):
        rows["zygote (today)"].append(zygote(args.workers))
        rows["forkserver + preload"].append(forkserver(args.workers))
    print(f"{BENCHMARK}, {args.workers} workers, {args.repeats} rounds interleaved, load {os.getloadavg()[0]:.1f}; "
          "CPU seconds, medians\n")
    print("| mechanism | one-time | each child (median / max) | all / workers |")
    print("|---|---|---|---|")
    for name, runs in rows.items():
        once = statistics.median(o for o, _ in runs)
        child = statistics.median(statistics.median(c) for _, c in runs)
        worst = statistics.median(max(c) for _, c in runs)
        per = statistics.median((o + sum(c)) / args.workers for o, c in runs)
        print(f"| {name} | {once:.2f} | {child:.2f} / {worst:.2f} | {per:.2f} |")


if __name__ == "__main__":
    main()
