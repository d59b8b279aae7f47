"""``evals list`` and ``evals --version``: what the project offers, without reading any data.

``evals list`` prints every benchmark with its size and whether its data is here, its strategies
(the default first) and options; ``evals list BENCHMARK`` adds its task ids (``--task-ids`` takes
them). Sizes come from the data files when they are present, else from the pinned download list.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.registry import all_benchmarks, get_benchmark, serve_options

__all__ = ["VersionAction", "add_list_parser", "add_serve_option_groups", "benchmark_listing", "cmd_list", "version_string"]


def version_string() -> str:
    """``evals X.Y.Z`` (the installed distribution's version) and the Python it runs on."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("mcp-multihop-evals")
    except PackageNotFoundError:  # pragma: no cover - run from a checkout that is not installed
        v = "unknown (not installed)"
    return f"evals {v} (Python {sys.version.split()[0]})"


class VersionAction(argparse.Action):
    """``--version``: prints :func:`version_string` and exits; the distribution's metadata is read only
    then (argparse's own ``version`` action takes the string when the parser is built, for every command)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(version_string())
        parser.exit()


def add_serve_option_groups(parser: argparse.ArgumentParser) -> None:
    """``evals serve``'s benchmark options, one help group per benchmark (an option several
    benchmarks declare alike goes in one group named after all of them)."""
    owners: dict[str, list[str]] = {}
    for name, info in all_benchmarks().items():
        for o in info.serve_options:
            owners.setdefault(o.name, []).append(name)
    groups: dict[tuple[str, ...], list[Any]] = {}
    for option in serve_options():
        groups.setdefault(tuple(owners[option.name]), []).append(option)
    for names, options in groups.items():
        g = parser.add_argument_group(f"{', '.join(names)} options")
        for option in options:
            option.add_to(g)


def _data_status(name: str) -> str:
    """``present`` / ``missing: N file(s), X MB to download`` for benchmark ``name`` (default options)."""
    from ..core.data import data_dir
    from ..core.fetch import needed_files

    info = get_benchmark(name)
    if info.needed_files is None and not info.data_sources:  # its tasks come from a file the user names (no data to fetch)
        return "none needed (the tasks come from a file you name)"
    try:
        missing = needed_files(name, data_dir())
    except Exception as exc:  # a broken data directory must not break the listing
        return f"unknown ({type(exc).__name__})"
    if not missing:
        return "present"
    return f"missing: {len(missing)} file(s), {sum(f.size for _, f in missing) / 1e6:.1f} MB on first use"


def _size(name: str) -> int | None:
    """The number of tasks, where the data is here (None otherwise)."""
    from ..core.data import DataNotFound
    from ..core.registry import load_benchmark

    try:
        return len(load_benchmark(name).task_ids())
    except (DataNotFound, OSError, ValueError):
        return None


def benchmark_listing(*, sizes: bool = True) -> list[dict[str, Any]]:
    """One entry per benchmark: name, description, tasks (None without the data), data status,
    strategies (default first), default strategy, run options."""
    out = []
    for name, info in all_benchmarks().items():
        status = _data_status(name)
        out.append({
            "name": name,
            "description": info.description,
            "tasks": _size(name) if sizes and status == "present" else None,  # a file-defined benchmark: None
            "data": status,
            "strategies": [info.default_strategy] + [s for s in info.strategies if s != info.default_strategy],
            "default_strategy": info.default_strategy,
            "options": [o.flag for o in info.options if o.run],
        })
    return out


def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    out = Console(stderr=args.json)
    if args.benchmark:
        try:
            get_benchmark(args.benchmark)
        except KeyError as exc:
            Console(stderr=True, soft_wrap=True).print(f"[red]error:[/] {exc.args[0]}")
            return 2
        from ..core.data import DataNotFound
        from ..core.registry import load_benchmark

        try:
            ids = load_benchmark(args.benchmark).task_ids()
        except DataNotFound as exc:
            Console(stderr=True, soft_wrap=True).print(f"[red]error:[/] {exc}")
            return 2
        if args.json:
            sys.stdout.write(json.dumps({"benchmark": args.benchmark, "task_ids": ids}) + "\n")
        else:
            for task_id in ids:
                sys.stdout.write(f"{task_id}\n")
            print(f"{len(ids)} task(s) of {args.benchmark}; run some with --task-ids ID,ID or --task-ids @FILE",
                  file=sys.stderr)
        return 0
    rows = benchmark_listing()
    table = Table(title="benchmarks (evals run NAME; evals list NAME lists its task ids)")
    # a name is what the user types next: never cut (an 80-column terminal wraps the description instead)
    widest = max((len(r["name"]) for r in rows), default=0)
    table.add_column("benchmark", no_wrap=True, min_width=widest)
    table.add_column("tasks", justify="right", no_wrap=True)
    for col in ("data", "strategies (default first)", "description"):
        table.add_column(col, overflow="fold")  # a long word is folded, not cut with an ellipsis
    for r in rows:
        table.add_row(r["name"], "–" if r["tasks"] is None else str(r["tasks"]), r["data"],
                      ", ".join(r["strategies"]), r["description"])
    out.print(table)
    if args.json:
        sys.stdout.write(json.dumps(rows, sort_keys=True) + "\n")
    return 0


def add_list_parser(sub: Any) -> None:
    """Add ``list`` to the ``evals`` sub-commands."""
    p = sub.add_parser("list", help="the benchmarks (sizes, data status, strategies), or one benchmark's task ids")
    p.add_argument("benchmark", nargs="?", metavar="BENCHMARK", help="list this benchmark's task ids instead")
    p.add_argument("--json", action="store_true", help="print one JSON value as the last line")
    p.set_defaults(func=cmd_list)
