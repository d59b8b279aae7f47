"""The ``evals`` command line: serve benchmark tools over MCP, run and score models, reports, data.

Nothing here names a benchmark: ``evals run NAME`` has one sub-command per registered benchmark,
with the core's flags plus that benchmark's own options (see :mod:`evals.core.options`). Here: the
parser, ``evals score`` and ``evals export``; the other commands are in :mod:`evals.cli_parts`."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from .cli_parts.data import build_data_parser, ensure_benchmark_data, json_line
from .cli_parts.listing import VersionAction, add_list_parser
from .cli_parts.parser import EvalsParser, LazySubParsers
from .cli_parts.run import EXIT_INTERRUPTED, EXIT_USAGE, RUN_EXIT_STATUSES, build_run_parser, redacted
from .cli_parts.serve import build_serve_parser
from .cli_parts.summary import print_summary, print_warnings
from .core.options import OptionError, add_options, load_config_file
from .core.registry import all_benchmarks, scoring_options

if TYPE_CHECKING:
    from client.runs import RunDir

__all__ = ["build_parser", "ensure_benchmark_data", "main", "sub_parser"]

err = Console(stderr=True, soft_wrap=True)  # an error is one line, never wrapped to the terminal


_json_line = json_line  # the machine-readable last line of a ``--json`` command


# ---- evals score / export (evals serve and evals run are in cli_parts.serve and cli_parts.run) ----
def cmd_score(args: argparse.Namespace) -> int:
    if args.format and (info := all_benchmarks().get(args.benchmark or "")) is not None and info.score_start:
        info.score_start(args.format, Path(args.run_dir))  # first: the reader's own early work (BenchmarkInfo)
    given = {o.name: getattr(args, o.name) for o in scoring_options() if hasattr(args, o.name)}
    collecting = gc.isenabled()
    if not args.judge:
        # The cyclic collector walks every object held (the benchmark's data, the run's traces) again and again
        # while scoring allocates, and finds next to nothing: about a fifth of the CPU time of scoring a large
        # result folder (docs/performance.md). Off for the command (reference counting frees what it frees; a run's
        # scoring makes few cycles), back on after; not with --judge, whose network calls may run long.
        gc.disable()
    try:
        return _score(args, given)
    finally:
        if collecting:
            gc.enable()


def _score(args: argparse.Namespace, given: dict[str, Any]) -> int:
    try:
        run_dir: Any = args.run_dir
        if args.format:  # first: a reader may start work of its own that scoring takes later (e.g. processes)
            run_dir = _import_predictions(args, given)  # the RunDir written: scored from the traces it holds
            err.print(f"imported {escape(args.run_dir)} ({escape(args.format)}) into {escape(str(run_dir.path))}")
        elif args.benchmark or args.strategy or args.out:
            raise ValueError("--benchmark, --strategy and --out go with --format (scoring predictions made elsewhere)")
        from client import eventloop

        from .core.run import score_run_dir

        summary = eventloop.run(score_run_dir(run_dir, judge_model=args.judge, options=given))
    except (FileNotFoundError, ValueError, KeyError, OptionError) as exc:
        err.print(f"[red]error:[/] {escape(redacted(str(exc)))}")
        return 2
    print_summary(Console(stderr=args.json), summary)
    print_warnings(summary)
    if args.json:
        _json_line(summary)
    return 0



def _import_predictions(args: argparse.Namespace, given: dict[str, Any]) -> RunDir:
    """``evals score PATH --format NAME --benchmark B``: PATH's predictions into a new run directory."""
    import re

    from .core.formats import import_run

    if not args.benchmark:
        raise ValueError("--format needs --benchmark (which benchmark the predictions are for)")
    if args.benchmark not in all_benchmarks():
        raise ValueError(f"unknown benchmark {args.benchmark!r}; available: {', '.join(all_benchmarks())}")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(args.run_dir).name).strip("_") or "predictions"
    out = Path(args.out) if args.out else Path("runs") / args.benchmark / f"imported-{args.format}" / slug
    from .core.registry import own_options

    options = {k: v for k, v in own_options(args.benchmark, given).items() if v is not None}  # e.g. how to decode
    return import_run(args.run_dir, args.format, args.benchmark, out, strategy=args.strategy, options=options)


def cmd_export(args: argparse.Namespace) -> int:
    from .core.formats import export_run

    try:
        files = export_run(args.run_dir, args.format, args.out, args.model_name)
    except (FileNotFoundError, ValueError, KeyError, OptionError) as exc:
        err.print(f"[red]error:[/] {escape(redacted(str(exc)))}")
        return 2
    for f in files:
        err.print(f"wrote {escape(str(f))}")
    if args.json:
        _json_line({"format": args.format, "files": [str(f) for f in files]})
    return 0



def _config_argument(argv: list[str]) -> tuple[str, str] | None:
    """``(benchmark, FILE)`` when ``argv`` is ``run BENCHMARK ... --config FILE ...``."""
    if len(argv) < 2 or argv[0] != "run":
        return None
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            return argv[1], argv[i + 1]
        if arg.startswith("--config="):
            return argv[1], arg.partition("=")[2]
    return None


def _apply_config_file(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse ``argv``; with ``evals run NAME --config FILE`` the file's settings become the defaults
    of NAME's flags first (so flags given on the command line win)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    found = _config_argument(argv)
    if found is None or found[0] not in all_benchmarks():
        return parser.parse_args(argv)
    name, path = found
    run_parser = sub_parser(parser, "run", name)
    known = {a.dest: a for a in run_parser._actions if a.dest not in ("help", "config")}
    try:
        settings = load_config_file(path)
    except OptionError as exc:
        parser.exit(EXIT_USAGE, f"evals run: error: {exc}\n")
    unknown = sorted(set(settings) - set(known))
    if unknown:
        parser.exit(EXIT_USAGE, f"evals run: error: {path}: unknown setting(s) {', '.join(unknown)} for "
                    f"{name}; known: {', '.join(sorted(known))}\n")
    defaults: dict[str, Any] = {}
    for dest, value in settings.items():
        action = known[dest]
        if dest == "model_arg" and isinstance(value, dict):
            value = [f"{k}={json.dumps(v)}" for k, v in value.items()]
        elif callable(action.type) and value is not None and not isinstance(value, list | dict):
            try:
                value = action.type(value if isinstance(value, str) else json.dumps(value))
            except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
                parser.exit(EXIT_USAGE, f"evals run: error: {path}: {dest}: {exc}\n")
        defaults[dest] = value
        action.required = False
    run_parser.set_defaults(**defaults)
    return parser.parse_args(argv)



def _build_score(sc: argparse.ArgumentParser) -> None:
    sc.add_argument("run_dir", metavar="RUN_DIR", help="a run directory; with --format, the predictions (file or folder)")
    sc.add_argument("--judge", metavar="MODEL", help="ask this judge for decisions the run has not stored (else "
                    "they are counted as missing)")
    sc.add_argument("--json", action="store_true", help="print one JSON summary object as the last line")
    sc.add_argument("--format", metavar="NAME", help="RUN_DIR holds predictions in this format (see `evals export`): "
                    "import them into a new run directory and score it")
    sc.add_argument("--benchmark", metavar="NAME", help="with --format: the benchmark the predictions are for")
    sc.add_argument("--strategy", help="with --format: the strategy they were made with (default: what the files "
                    "say, else the benchmark's default)")
    sc.add_argument("--out", metavar="DIR", help="with --format: the run directory to create (default "
                    "runs/<benchmark>/imported-<format>/<name of RUN_DIR>)")
    add_options(sc.add_argument_group("scoring options (re-score offline with another reading; each benchmark takes "
                                      "the ones it declares; the run's config is not changed)"), scoring_options())
    sc.set_defaults(func=cmd_score)


def _build_export(ex: argparse.ArgumentParser) -> None:
    ex.add_argument("run_dir", metavar="RUN_DIR", help="the run directory whose predictions to write")
    ex.add_argument("--format", required=True, metavar="NAME", help="a prediction format the run's benchmark offers")
    ex.add_argument("-o", "--out", metavar="PATH", help="where to write (default RUN_DIR/export-<format>)")
    ex.add_argument("--model-name", metavar="NAME", help="the model the files are written under, for a format whose "
                    "official scripts look the model up by name (e.g. a leaderboard's registry; default: the run's model)")
    ex.add_argument("--json", action="store_true", help="print the files written as one JSON object")
    ex.set_defaults(func=cmd_export)


def _build_report(p: argparse.ArgumentParser) -> None:
    from .report.cli import report_arguments

    report_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    """The ``evals`` parser; each sub-command's arguments are added when the command line selects it
    (:class:`~evals.cli_parts.parser.LazySubParsers`), so ``evals --help`` loads no sub-command's code."""
    p = EvalsParser(prog="evals", description="MCP tool server and evaluation client for multi-hop tool use.")
    p.add_argument("--version", action=VersionAction, help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True)
    assert isinstance(sub, LazySubParsers)
    sub.add_lazy("serve", build_serve_parser, help="serve benchmark tools and the family KG over MCP (HTTP, or stdio)")
    sub.add_lazy("run", build_run_parser, help="run a model through a benchmark's tasks over MCP (resumable)",
                 description="Run a model through a benchmark's tasks over MCP. `evals run NAME --help` "
                 "lists the benchmark's own options.",
                 epilog=RUN_EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub.add_lazy("score", _build_score, help="recompute a run's metrics from its traces (no model is called), or "
                 "score predictions made elsewhere (--format)")
    sub.add_lazy("export", _build_export,
                 help="write a run's predictions in a benchmark's format (e.g. for its official scripts)")
    sub.add_lazy("report", _build_report, help="write a Markdown and a self-contained HTML report of one or more "
                 "runs, with the papers' numbers")
    sub.add_lazy("data", build_data_parser, help="benchmark data: statistics, downloads")
    add_list_parser(sub)
    from .view.cli import add_leaderboard_parser, add_view_parser

    add_view_parser(sub)
    add_leaderboard_parser(sub)
    return p


def sub_parser(parser: argparse.ArgumentParser, *names: str) -> argparse.ArgumentParser:
    """The (built) parser of sub-command ``names`` (e.g. ``"run", NAME``)."""
    for name in names:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.build(name) if isinstance(sub, LazySubParsers) else sub.choices[name]
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``evals`` command: ``argv`` (default: the process's own arguments), its exit status.

    Run as the command (``argv`` None: the ``evals`` script, ``python -m evals.cli``), the objects
    left when the command is done are frozen on the way out (:func:`gc.freeze`), so that the
    interpreter's exit does not walk them with the cyclic collector again (every module, the SDK's
    pydantic models, the benchmark's data): about 0.2 s of a one-task run's 1.1 s
    (``bench/bench_cli_startup.py``). Files, sessions and servers are closed by then; exit still
    runs the ``atexit`` handlers and frees what reference counting frees. A caller in the same
    process (tests, ``bench/fuzz``) passes ``argv`` and keeps its collector as it was.
    """
    from .core.data import DataNotFound

    args = _apply_config_file(build_parser(), argv)
    try:
        return int(args.func(args) or 0)
    except DataNotFound as exc:
        err.print(f"[red]error:[/] {escape(redacted(str(exc)))}")
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C (or one before the run started): finished traces are intact
        return EXIT_INTERRUPTED
    finally:
        if argv is None:
            gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
