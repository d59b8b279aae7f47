"""``evals data stats [BENCHMARK|all]`` and ``evals data fetch SOURCE|all``: every benchmark's
statistics (its own, else the core's: tasks and data files), and the pinned downloads."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..core.registry import all_benchmarks, get_benchmark

__all__ = ["build_data_parser", "cmd_data_fetch", "cmd_data_stats", "ensure_benchmark_data", "json_line"]

err = Console(stderr=True, soft_wrap=True)  # an error is one line, never wrapped to the terminal


def json_line(obj: Any) -> None:
    """The machine-readable last line of a ``--json`` command."""
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


# ---- first use: fetch missing data ----------------------------------------------------------------
def ensure_benchmark_data(
    benchmarks: list[str], *, required: bool, options: dict[str, dict[str, Any]] | None = None
) -> list[str]:
    """Download the missing data of ``benchmarks`` (pinned, sha256-checked); the benchmarks that have it.

    A benchmark whose data cannot be had (the network is unreachable, say) raises
    :class:`~evals.data.DataNotFound` (exit status 2, the message says how to fix it) when
    ``required``; otherwise it is left out with a warning, unless every benchmark is.
    """
    from ..core.data import DataNotFound, data_dir
    from ..core.fetch import ensure_data, unavailable_message

    missing = ensure_data(benchmarks, data_dir(), options=options, console=err)
    if not missing:
        return benchmarks
    if required or len(missing) == len(benchmarks):
        raise DataNotFound(unavailable_message(missing.values()))
    for m in missing.values():
        err.print(f"[yellow]warning:[/] not serving {escape(m.message())}")
    return [b for b in benchmarks if b not in missing]



def cmd_data_stats(args: argparse.Namespace) -> int:
    names = list(all_benchmarks()) if args.benchmark == "all" else [args.benchmark]
    out = Console(stderr=args.json)
    every: dict[str, Any] = {}
    for name in names:
        try:
            stats = _stats_of(name)
        except FileNotFoundError as exc:  # `all`: a benchmark whose data is not here is said, not fatal
            if len(names) == 1:
                raise
            err.print(f"[yellow]{name}:[/] no statistics: {escape(str(exc).splitlines()[0])}")
            continue
        every[name] = stats
        for t in _stats_tables(name, stats):
            out.print(t)
    if args.json:
        json_line(every if args.benchmark == "all" else every[args.benchmark])
    return 0


def _stats_of(name: str) -> dict[str, Any]:
    """The benchmark's own statistics, else the core's: its tasks and data files (bytes)."""
    stats_of = get_benchmark(name).stats
    if stats_of is not None:
        return stats_of()
    from ..core.registry import load_benchmark

    bench = load_benchmark(name)
    return {"tasks": len(bench.task_ids()), "data_file_bytes": {p.name: p.stat().st_size for p in bench.data_files()}}


def _stats_tables(name: str, stats: dict[str, Any]) -> list[Table]:
    table = Table(title=f"{name} statistics")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    tables = [table]
    for key, value in stats.items():
        if isinstance(value, dict):  # a distribution: a table of its own
            sub = Table(title=f"{name}: {key.replace('_', ' ')}")
            sub.add_column(key, justify="right")
            sub.add_column("bytes" if key.endswith("bytes") else "count", justify="right")
            for k, v in value.items():
                sub.add_row(str(k), str(v))
            tables.append(sub)
        else:
            table.add_row(key, str(value))
    return tables


def cmd_data_fetch(args: argparse.Namespace) -> int:
    from ..core.data import data_dir
    from ..core.fetch import FetchError, download_progress, fetch, sources

    dest = Path(args.data_dir) if args.data_dir else data_dir()
    names = list(sources()) if args.benchmark == "all" else [args.benchmark]
    paths: list[Path] = []
    try:
        with download_progress(err) as progress:
            for name in names:
                paths += fetch(name, dest, url_prefix=args.url_prefix, report=err.print, progress=progress)
    except FetchError as exc:
        err.print(f"[red]error:[/] {exc}")
        return 1
    err.print(f"{len(paths)} file(s) in {dest}; point EVALS_DATA_DIR there if it is not the default")
    return 0


def build_data_parser(d: argparse.ArgumentParser) -> None:
    """``evals data``'s sub-commands on parser ``d``."""
    benchmarks = all_benchmarks()
    dsub = d.add_subparsers(dest="data_command", required=True)
    st = dsub.add_parser("stats", help="dataset statistics of one benchmark, or of every one (all)")
    st.add_argument("benchmark", nargs="?", default="all", choices=[*benchmarks, "all"], metavar="BENCHMARK",
                    help=f"one of: {', '.join(benchmarks)}, or all")
    st.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    st.set_defaults(func=cmd_data_stats)
    from ..core.fetch import sources

    f = dsub.add_parser("fetch", help="download a benchmark's files from their public source (sha256-pinned)")
    f.add_argument("benchmark", choices=[*sources(), "all"], metavar="SOURCE",
                   help="one of: " + ", ".join(f"{name} ({', '.join(x.dest for x in files)})" for name, files in sources().items())
                   + "; or all (every source)")
    f.add_argument("--data-dir", help="where to put the files (default: $EVALS_DATA_DIR, else ../shared/data beside "
                   "the checkout, else the user cache)")
    f.add_argument("--url-prefix", help="mirror to download from instead of the pinned commit (default: $EVALS_DATA_URL_PREFIX)")
    f.set_defaults(func=cmd_data_fetch)
