"""The evaluation harness's own cost (not a test): episodes/s with a scripted model of fixed latency.

The model is the oracle with a fixed think time per turn (``oracle:0.2`` = 200 ms); a FamilyTool
episode is two turns (the gold call, then the final answer), so an ideal harness finishes
``concurrency / (2 x 0.2 s)`` episodes per second. Everything else is real: the MCP server over
HTTP on 127.0.0.1, one MCP session per episode, traces fsync'd per episode.

    EVALS_DATA_DIR=../shared/data python bench/bench_harness.py [--concurrency 1 8 64] [--c1-limit 40]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from evals.pipeline import RunOptions, run_benchmark  # noqa: E402

TURNS = 2


async def one(concurrency: int, limit: int | None, latency: float, root: Path) -> dict:
    opts = RunOptions(
        benchmark="familytool-b", model=f"oracle:{latency}", limit=limit, concurrency=concurrency,
        run_dir=root / f"c{concurrency}", progress=False,
    )
    result, summary = await run_benchmark(opts)
    assert summary["completed"] == summary["tasks"], summary
    episodes = result.completed
    rate = episodes / result.wall_s
    ideal = concurrency / (TURNS * latency)
    ideal = min(ideal, episodes / (TURNS * latency))  # fewer episodes than slots: one wave
    return {"c": concurrency, "episodes": episodes, "wall": result.wall_s, "rate": rate, "ideal": ideal}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--latency", type=float, default=0.2, help="model think time per turn, seconds")
    ap.add_argument("--limit", type=int, help="tasks per run (default: all 483)")
    ap.add_argument("--c1-limit", type=int, default=40, help="tasks for concurrency 1 (0 = all; 483 take ~3.5 min)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in args.concurrency:
            limit = (args.c1_limit or args.limit) if c == 1 else args.limit
            rows.append(await one(c, limit, args.latency, Path(tmp)))
    table = Table(title=f"harness throughput, scripted model {args.latency * 1000:.0f} ms/turn, {TURNS} turns/episode")
    for col in ("concurrency", "episodes", "wall s", "episodes/s", "ideal/s", "ratio"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["c"]), str(r["episodes"]), f"{r['wall']:.1f}", f"{r['rate']:.1f}", f"{r['ideal']:.1f}",
                      f"{r['rate'] / r['ideal']:.2f}")
    Console().print(table)


if __name__ == "__main__":
    asyncio.run(main())
