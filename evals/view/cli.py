"""``evals view [RUN_DIR ...]`` and ``evals leaderboard DIR``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .site import Site

__all__ = ["add_leaderboard_parser", "add_view_parser", "cmd_leaderboard", "cmd_view"]

DEFAULT_PORT = 8766  # beside `evals serve` (8765), so both run at once


def _error(message: str) -> int:
    sys.stderr.write(f"error: {message}\n")
    return 2


def _warn_damaged(site: Site) -> bool:
    """Say on standard error which runs are left out and why; False when no run is left."""
    for d in site.damaged:
        sys.stderr.write(f"warning: skipping the damaged run {d['run_dir']}: {d['reason']}\n")
    if site.views:
        return True
    sys.stderr.write("error: every run found is damaged (see above)\n")
    return False


def cmd_view(args: argparse.Namespace) -> int:
    from .site import Site

    try:
        site = Site(args.run_dirs or ["runs"], load_benchmarks=not args.no_benchmark_views)
    except (FileNotFoundError, ValueError) as exc:
        return _error(str(exc))
    if not _warn_damaged(site):
        return 2
    if args.export:
        from .export import export_site

        damaged_before = site.damaged
        try:
            done = export_site(site, args.export)
        except (OSError, ValueError) as exc:
            return _error(str(exc))
        sys.stdout.write(f"{done['index']}\n")
        sys.stderr.write(f"{done['runs']} run(s), {done['episodes']} episode(s), {done['comparisons']} comparison(s) written\n")
        for d in done["damaged"][len(damaged_before):]:  # runs found damaged while exporting
            sys.stderr.write(f"warning: skipped the damaged run {d['run_dir']}: {d['reason']}\n")
        return 0
    import uvicorn

    from server.loopback import is_loopback

    from .app import make_app

    if not is_loopback(args.host):
        sys.stderr.write(f"warning: serving on {args.host}: anyone who can reach it can read these runs "
                         "(a Host header must be an address, localhost or that name)\n")
    import socket

    try:  # a clear error for a port in use (uvicorn would log it and exit 1)
        with socket.create_server((args.host, args.port)):
            pass
    except OSError as exc:
        return _error(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    config = uvicorn.Config(make_app(site, args.host), host=args.host, port=args.port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    url = f"http://{args.host}:{args.port}/"
    sys.stdout.write(f"evals view: {len(site.views)} run(s) at {url} (Ctrl-C to stop)\n")
    sys.stdout.flush()
    if args.open:
        import threading
        import webbrowser

        threading.Timer(0.8, webbrowser.open, args=(url,)).start()
    server.run()
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from .leaderboard import leaderboard_groups, render_leaderboard
    from .site import Site

    try:
        site = Site([args.dir], load_benchmarks=False)
    except (FileNotFoundError, ValueError) as exc:
        return _error(str(exc))
    if not _warn_damaged(site):
        return 2
    text = render_leaderboard(leaderboard_groups(list(site.views.values())), args.format, damaged=site.damaged)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def add_view_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "view", help="browse runs in a local web app: tasks, transcripts, comparisons, leaderboard",
        description="Serve a local web app (127.0.0.1) over run directories: the runs, each run's metrics, "
                    "breakdowns and tasks (filter, sort), each episode's transcript with the gold and predicted "
                    "calls, paired comparisons with significance tests, and a leaderboard. --export writes the "
                    "same pages as a static site that opens from disk.")
    p.add_argument("run_dirs", nargs="*", metavar="RUN_DIR",
                   help="run directories, or directories holding runs (default: ./runs)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument("--export", metavar="DIR", help="write a static site into DIR instead of serving")
    p.add_argument("--no-benchmark-views", action="store_true",
                   help="do not load the benchmarks' data for their episode sections (gold calls, KG paths)")
    p.set_defaults(func=cmd_view)
    return p


def add_leaderboard_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "leaderboard", help="every run under a directory, by benchmark, task set and setting, one row per model",
        description="Find every run under DIR and print a leaderboard from their stored scores: one table per "
                    "benchmark, task set (a task file's name and sha256) and setting, one row per model (its newest run), "
                    "best first, with standard errors; a model without a price costs 'unknown'.")
    p.add_argument("dir", metavar="DIR", help="a directory holding run directories")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format (default table)")
    p.add_argument("-o", "--out", metavar="FILE", help="write to FILE instead of standard output")
    p.set_defaults(func=cmd_leaderboard)
    return p
