"""The ``evals`` command line: serve benchmark tools over MCP, run and score models, reports, data.

Nothing here names a benchmark: ``evals run NAME`` has one sub-command per registered benchmark,
with the core's flags plus that benchmark's own options (see :mod:`evals.core.options`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from .cli_parts.data import build_data_parser, json_line
from .cli_parts.listing import add_list_parser, add_serve_option_groups, version_string
from .cli_parts.parser import EvalsParser, LazySubParsers
from .cli_parts.summary import print_summary, summary_table
from .core.options import OptionError, add_options, load_config_file
from .core.registry import all_benchmarks, get_benchmark, scoring_options, serve_options

if TYPE_CHECKING:
    from server import EndpointRef, HTTPLimits, SessionLimits

err = Console(stderr=True)


_json_line = json_line  # the machine-readable last line of a ``--json`` command


# ---- first use: fetch missing data ----------------------------------------------------------------
def ensure_benchmark_data(
    benchmarks: list[str], *, required: bool, options: dict[str, dict[str, Any]] | None = None
) -> list[str]:
    """Download the missing data of ``benchmarks`` (pinned, sha256-checked); the benchmarks that have it.

    A benchmark whose data cannot be had (the network is unreachable, say) raises
    :class:`~evals.data.DataNotFound` (exit status 2, the message says how to fix it) when
    ``required``; otherwise it is left out with a warning, unless every benchmark is.
    """
    from .core.data import DataNotFound, data_dir
    from .core.fetch import ensure_data, unavailable_message

    missing = ensure_data(benchmarks, data_dir(), options=options, console=err)
    if not missing:
        return benchmarks
    if required or len(missing) == len(benchmarks):
        raise DataNotFound(unavailable_message(missing.values()))
    for m in missing.values():
        err.print(f"[yellow]warning:[/] not serving {escape(m.message())}")
    return [b for b in benchmarks if b not in missing]


# ---- evals serve -------------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from kg_store import KGError
    from server import EndpointRef, HTTPLimits, McpSourceError, ServerConfigError, SessionLimits, check_bind
    from tool_specs import SandboxError, SpecLoadError

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    token = args.token or os.environ.get("EVALS_SERVER_TOKEN") or None
    own_tools = bool(args.tools_dir or args.mcp_server or args.mcp_config or args.kg_file)
    if args.benchmark:
        benchmarks = [args.benchmark]
    elif args.benchmarks or not own_tools:
        benchmarks = list(args.benchmarks or [n for n, b in all_benchmarks().items() if b.served_by_default])
    else:  # the user's tools alone (--tools-dir, --mcp-server, --kg-file): no benchmark data needed
        benchmarks = []
    given = {o.name: getattr(args, o.name) for o in serve_options() if hasattr(args, o.name)}
    if args.stdio and not args.benchmark and not (args.tools_dir or args.mcp_server or args.mcp_config or args.kg_file):
        err.print("[red]error:[/] --stdio needs --benchmark NAME (and optionally --task TASK_ID), --tools-dir, "
                  "--mcp-server or --kg-file")
        return 2
    if args.task and not args.benchmark:
        err.print("[red]error:[/] --task needs --benchmark")
        return 2
    sessions: SessionLimits | None = None
    limits: HTTPLimits | None = None
    if not args.stdio:
        try:
            check_bind(args.host, token)
            sessions = SessionLimits(args.max_sessions, args.max_sessions_per_endpoint, args.session_idle_timeout)
            limits = HTTPLimits(args.max_connections, args.header_timeout, args.body_timeout, args.keep_alive_timeout)
        except (ServerConfigError, ValueError) as exc:
            err.print(f"[red]error:[/] {exc}")
            return 2
    default = None
    if args.benchmark:
        default = EndpointRef(args.benchmark, args.task)
    elif args.stdio:
        default = EndpointRef("custom")
        benchmarks = []
    # first use: download what is missing; `evals serve` alone serves the benchmarks it can have
    if benchmarks:
        benchmarks = ensure_benchmark_data(benchmarks, required=bool(args.benchmark or args.benchmarks),
                                           options=dict.fromkeys(benchmarks, given))
    try:
        _serve(args, benchmarks, given, default, token, sessions, limits)
    except KGError as exc:  # --kg-file: a missing file or a bad line (file:line), no traceback
        err.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        return 2
    except (SandboxError, McpSourceError) as exc:  # e.g. no kernel namespaces: say why, no traceback
        err.print(f"[red]error:[/] {exc}")
        return 2
    except SpecLoadError as exc:  # every problem of every --tools-dir file, one line each
        print(f"evals serve: error: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


def _serve(args: argparse.Namespace, benchmarks: list[str], given: dict[str, Any], default: EndpointRef | None,
           token: str | None, sessions: SessionLimits | None, limits: HTTPLimits | None) -> None:
    """Build the tool server and serve it on stdio, or over HTTP with ``sessions`` and ``limits``."""
    from client import eventloop
    from server import create_app, serve, serve_stdio

    from .core.serving import build_tool_server

    with contextlib.ExitStack() as stack:
        ts = build_tool_server(
            benchmarks,
            stack=stack,
            tools_dirs=[Path(d) for d in args.tools_dir],
            options=given,
            default=default,
            page_size=args.page_size,
            mcp_sources=_serve_mcp_sources(args),
            kg_file=Path(args.kg_file) if args.kg_file else None,
        )
        if args.stdio or sessions is None or limits is None:
            eventloop.run(serve_stdio(ts))
            return
        ts.session_limits = sessions
        app = create_app(ts, host=args.host, token=token, json_response=args.json_response)
        shown = f"http://{args.host}:{args.port}"
        err.print(f"[bold]MCP server[/] on {shown}  (health: {shown}/health)")
        for name, info in ts.describe().items():
            if info["tasks"]:
                err.print(f"  {shown}/mcp/{name}  playground, {info['tasks']} task endpoints at {shown}/mcp/{name}/<task_id>")
            else:  # the user's own tools (--tools-dir): one endpoint, no tasks
                err.print(f"  {shown}/mcp/{name}")
        serve(app, host=args.host, port=args.port, log_level="info" if args.verbose else "warning", limits=limits)


def _serve_mcp_sources(args: argparse.Namespace) -> list[Any]:
    """The MCP servers of ``evals serve --mcp-config`` and ``--mcp-server`` (repeatable)."""
    from server import McpSourceError, load_mcp_config, parse_mcp_server

    sources = load_mcp_config(args.mcp_config) if args.mcp_config else []
    sources += [parse_mcp_server(s, token_env=args.mcp_token_env if s.strip().startswith("http") else None)
                for s in args.mcp_server]
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise McpSourceError(f"two MCP servers have one name ({', '.join(names)}); name them: NAME=COMMAND")
    return sources


# ---- evals run / score -------------------------------------------------------------------------
def _model_args(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs for the model adapter; VALUE is JSON when it parses (``false``, ``{...}``), else a string."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"evals run: error: --model-arg expects KEY=VALUE, got {item!r}", file=sys.stderr)
            raise SystemExit(EXIT_USAGE)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    _refuse_secrets(out)
    return out


def _refuse_secrets(model_args: dict[str, Any]) -> None:
    """Exit 2 when a ``--model-arg`` holds a key, token or password: it would be written to the run's
    ``config.json``; the key belongs in an environment variable named by ``--api-key-env``."""
    from client.runs import secret_paths

    found = secret_paths(model_args)
    if found:
        print(f"evals run: error: --model-arg {', '.join(found)}: a key, token or password is never passed as a "
              "model argument (it would be written to the run's config.json); put it in an environment variable "
              "and name that with --api-key-env VAR", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def cmd_score(args: argparse.Namespace) -> int:
    from client import eventloop

    from .core.run import score_run_dir

    given = {o.name: getattr(args, o.name) for o in scoring_options() if hasattr(args, o.name)}
    try:
        run_dir = args.run_dir
        if args.format:
            run_dir = _import_predictions(args)
            err.print(f"imported {escape(args.run_dir)} ({escape(args.format)}) into {escape(str(run_dir))}")
        elif args.benchmark or args.strategy or args.out:
            raise ValueError("--benchmark, --strategy and --out go with --format (scoring predictions made elsewhere)")
        summary = eventloop.run(score_run_dir(run_dir, judge_model=args.judge, options=given))
    except (FileNotFoundError, ValueError, KeyError, OptionError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return 2
    print_summary(Console(stderr=args.json), summary)
    print_warnings(summary)
    if args.json:
        _json_line(summary)
    return 0


def print_warnings(summary: dict[str, Any]) -> None:
    """The summary's warnings (counts that must not pass unnoticed, e.g. unreadable judge outputs;
    what an import found), one plain line each on stderr."""
    for line in summary.get("warnings") or ():
        print(f"warning: {line}", file=sys.stderr, flush=True)


def _import_predictions(args: argparse.Namespace) -> Path:
    """``evals score PATH --format NAME --benchmark B``: PATH's predictions into a new run directory."""
    import re

    from .core.formats import import_predictions

    if not args.benchmark:
        raise ValueError("--format needs --benchmark (which benchmark the predictions are for)")
    if args.benchmark not in all_benchmarks():
        raise ValueError(f"unknown benchmark {args.benchmark!r}; available: {', '.join(all_benchmarks())}")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(args.run_dir).name).strip("_") or "predictions"
    out = Path(args.out) if args.out else Path("runs") / args.benchmark / f"imported-{args.format}" / slug
    return import_predictions(args.run_dir, args.format, args.benchmark, out, strategy=args.strategy)


def cmd_export(args: argparse.Namespace) -> int:
    from .core.formats import export_run

    try:
        files = export_run(args.run_dir, args.format, args.out)
    except (FileNotFoundError, ValueError, KeyError, OptionError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return 2
    for f in files:
        err.print(f"wrote {escape(str(f))}")
    if args.json:
        _json_line({"format": args.format, "files": [str(f) for f in files]})
    return 0


EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE, EXIT_BREAKER, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
RUN_EXIT_STATUSES = """\
exit status:
  0    every selected task completed (in this call or an earlier one)
  1    the run went through, but some selected tasks did not complete: their episodes
       errored, now or in an earlier call (errors that are not transient are kept on
       resume; --retry-errored runs those tasks again)
  2    usage or configuration error (bad flag, run directory made with other settings,
       missing data or API key); nothing ran
  3    stopped by the circuit breaker: errors that will repeat on every task (bad API
       key, unknown model, endpoint down, context window too small) on
       --max-consecutive-errors episodes in a row; fix what the message says and rerun
  4    stopped by --max-budget-tokens/--max-budget-usd with tasks left; rerun to go on
  130  interrupted (Ctrl-C, SIGTERM) after a clean stop; rerun to resume
When the status is not 0 the last line on stderr says how many tasks completed, errored
and did not run, the first error's class and message, and the run directory.
"""


def run_exit_status(result: Any, summary: dict[str, Any]) -> int:
    """``evals run``'s exit status (see :data:`RUN_EXIT_STATUSES`) from the run's result and summary."""
    if result.stopped_reason == "interrupted":
        return EXIT_INTERRUPTED
    if summary["completed"] >= summary["tasks"]:
        return EXIT_OK
    if result.stopped_reason == "circuit_breaker":
        return EXIT_BREAKER
    if result.stopped_reason == "budget":
        return EXIT_BUDGET
    return EXIT_INCOMPLETE


def run_status_line(status: int, result: Any, summary: dict[str, Any], *, retry_errored: bool) -> str:
    """The one-line account of a run that did not complete every task (the last line on stderr)."""
    tasks, completed, errored = summary["tasks"], summary["completed"], summary["errored"]
    why = {
        EXIT_INCOMPLETE: "some tasks errored",
        EXIT_BREAKER: "stopped by the circuit breaker",
        EXIT_BUDGET: "stopped by the budget",
        EXIT_INTERRUPTED: "interrupted",
    }.get(status, "not every task completed")
    parts = [f"evals run: {why} (exit {status}): {completed} of {tasks} task(s) completed, "
             f"{errored} errored, {tasks - completed - errored} not run"]
    if status == EXIT_BREAKER and result.message:
        parts.append(result.message)
    first = summary.get("first_error")
    if first:
        message = first["message"] if len(first["message"]) <= 300 else first["message"][:299] + "…"
        parts.append(f"first error (task {first['task_id']}): {first['type']}: {message}")
        if not first.get("retryable") and not retry_errored:
            parts.append("errored tasks are kept on resume: rerun with --retry-errored to run them again")
    parts.append(f"run directory: {summary['run_dir']}")
    return "; ".join(parts)


def _workers_arg(value: str) -> int | None:
    if value == "auto":
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of workers or 'auto', got {value!r}") from None


def _task_ids_arg(value: str) -> list[str]:
    from .core.selection import parse_task_ids

    try:
        return parse_task_ids(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# RunOptions fields that are flags of `evals run` under the same name (dest)
_RUN_FIELDS = (
    "model", "strategy", "limit", "task_ids", "sample", "sample_seed", "concurrency", "server_url", "server_process", "transport", "workers", "executor", "ray_address", "max_turns", "tool_choice",
    "max_tokens", "temperature", "base_url", "api_key_env", "max_budget_tokens", "max_budget_usd", "rpm", "tpm",
    "retry_errored", "max_attempts", "max_consecutive_errors", "epochs", "trace_max_value_bytes",
)


def cmd_run(args: argparse.Namespace) -> int:
    from client import eventloop
    from client.adapters.errors import ModelError
    from client.runs import RunConfigMismatch, RunDiskFull, RunLocked, RunTracesLost

    from .core.run import RunOptions, run_benchmark
    from .core.server_process import ServerProcessError
    from .core.workers import WorkerError

    info = get_benchmark(args.benchmark)
    given = {o.name: getattr(args, o.name) for o in info.options if hasattr(args, o.name)}
    ensure_benchmark_data([args.benchmark], required=True, options={args.benchmark: given})  # first use: download
    opts = RunOptions(
        benchmark=args.benchmark,
        **{name: getattr(args, name) for name in _RUN_FIELDS},
        run_dir=Path(args.run_dir) if args.run_dir else None,
        server_token=args.server_token or os.environ.get("EVALS_SERVER_TOKEN") or None,
        progress=not args.no_progress,
        judge_model=getattr(args, "judge", None),
        judge_rpm=getattr(args, "judge_rpm", None),
        judge_tpm=getattr(args, "judge_tpm", None),
        cache=Path(args.cache) if args.cache else None,
        adapter_options=_model_args(args.model_arg),
        benchmark_options=given,
    )
    try:
        result, summary = eventloop.run(run_benchmark(opts))
    except (RunConfigMismatch, RunLocked, ValueError, ModelError, ServerProcessError, WorkerError) as exc:
        # a list of problems (one FILE:LINE each) is printed as it is, not wrapped at the terminal's width;
        # "openai:m: set" is no emoji code
        err.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap="\n" in str(exc), emoji=False)
        return EXIT_USAGE
    except RunDiskFull as exc:  # finished episodes are kept; the same command resumes the run
        err.print(f"[red]error:[/] {escape(exc.strerror or str(exc))}")
        return EXIT_INCOMPLETE
    except RunTracesLost as exc:  # traces.jsonl deleted/replaced mid-run: what was held is kept elsewhere
        print(f"evals run: error (exit {EXIT_INCOMPLETE}): {exc}", file=sys.stderr, flush=True)
        return EXIT_INCOMPLETE
    table = summary_table(summary)
    table.add_row("tokens (this call)", str(result.tokens), "", "")
    table.add_row("cost USD (this call)", f"{result.cost_usd:.4f}", "", "")
    print_summary(Console(stderr=args.json), summary, table)
    err.print(result.describe(), markup=False, highlight=False)
    err.print(f"run directory: {summary['run_dir']}", markup=False, highlight=False)
    print_warnings(summary)
    if args.json:
        _json_line(summary)
    status = run_exit_status(result, summary)
    if status != EXIT_OK:  # one plain line (no wrapping, no markup) for people and for log scrapers
        print(run_status_line(status, result, summary, retry_errored=args.retry_errored), file=sys.stderr, flush=True)
    return status


# ---- parser ---------------------------------------------------------------------------------------
def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def _add_run_arguments(r: argparse.ArgumentParser, info: Any) -> None:
    """The core's flags of ``evals run``, then the benchmark's own options in a group of their own."""
    r.add_argument("--config", metavar="FILE", help="YAML/JSON file of settings (any flag below, by its name, "
                   "e.g. `model: openai:gpt-4o`, `kg_search: retrieval`); flags given on the command line win")
    r.add_argument("--model", required=True, help="oracle[:SECONDS_PER_TURN] | openai:<model> | anthropic:<model> | vllm:<model-or-path>")
    r.add_argument("--strategy", choices=info.strategies, help=f"how the model is driven (default {info.default_strategy})")
    sel = r.add_argument_group("which tasks (default: every task; a part of the benchmark is not comparable with "
                               "the papers' numbers, and its summary and report say so)")
    sel.add_argument("--task-ids", type=_task_ids_arg, metavar="ID,ID|@FILE",
                     help="only these tasks (comma-separated, or a file with one id per line; `evals list NAME` "
                     "lists them)")
    sel.add_argument("--sample", type=int, metavar="N", help="a random sample of N tasks (drawn with --sample-seed)")
    sel.add_argument("--sample-seed", type=int, default=0, metavar="S", help="the seed of --sample")
    sel.add_argument("--limit", type=int, metavar="N", help="only the first N tasks (after --task-ids and --sample)")
    r.add_argument("--concurrency", type=int, default=4, help="episodes run at the same time (in total, over --workers)")
    r.add_argument("--run-dir", help="run directory (default runs/<benchmark>/<model>/<strategy>); rerun to resume")
    r.add_argument("--server-url", help="use a running server (its base URL) instead of one started in-process")
    r.add_argument("--server-token", help="bearer token for --server-url (or $EVALS_SERVER_TOKEN)")
    r.add_argument(
        "--server-process",
        action="store_true",
        help="start the server in a child process (a core of its own: faster at high --concurrency with a fast "
        "model) instead of on this process's event loop",
    )
    r.add_argument(
        "--transport",
        choices=("memory", "http", "stdio"),
        help="how episodes' MCP sessions reach the tool server: memory (the SDK's in-process transport; the "
        "default for a server the run starts itself, and the fastest), http (127.0.0.1; always with --server-url "
        "and --server-process), stdio (a server process per episode: slow). Results do not depend on it",
    )
    r.add_argument(
        "--workers", type=_workers_arg, default=None, metavar="N|auto",
        help="split the episodes over N worker processes (each its own event loop, MCP client and tool server; "
        "--concurrency is the total). One run: traces, progress, rate limits and budget stay in this process. "
        "Default auto: one worker per 32 concurrent episodes, at most one per CPU (so 1, in this process, up to "
        "--concurrency 32); 1 with --server-url / --server-process",
    )
    r.add_argument(
        "--executor", choices=("local", "ray"), default="local",
        help="where the workers run: local (processes on this machine) or ray (Ray actors, --workers of them, "
        "each serving the tools itself; needs the ray extra). Results do not depend on it",
    )
    r.add_argument(
        "--ray-address", metavar="ADDR",
        help="with --executor ray: an existing Ray cluster (auto, ray://HOST:10001, HOST:6379); default: start a "
        "local Ray head on 127.0.0.1 for this run. --workers auto: one actor per CPU of the cluster",
    )
    r.add_argument("--max-turns", type=int, default=10, help="model turns per episode")
    r.add_argument("--tool-choice", default="auto", help="first turn: auto | required | none | <tool name>")
    r.add_argument("--max-tokens", type=int, default=1024, help="the model's output tokens per turn")
    r.add_argument("--temperature", type=float, default=0.0, help="sampling temperature of the model")
    r.add_argument("--base-url", help="the provider's API at another address, for openai:<model> (an OpenAI-compatible "
                   "server: vLLM, DeepSeek, OpenRouter, Ollama, ...) and anthropic:<model> (an Anthropic-compatible "
                   "one; with or without a trailing /v1)")
    r.add_argument("--api-key-env", help="environment variable holding the API key")
    r.add_argument("--max-budget-tokens", type=int, help="stop starting episodes after this many tokens")
    r.add_argument("--max-budget-usd", type=float, help="stop starting episodes after this estimated cost")
    r.add_argument("--rpm", type=float, help="requests per minute limit for the model")
    r.add_argument("--tpm", type=float, help="tokens per minute limit for the model")
    r.add_argument("--retry-errored", action="store_true", help="re-run episodes that ended with an error")
    r.add_argument("--epochs", type=_positive_int, default=1, metavar="K",
                   help="run each task K times, each trial its own trace (resumable; a larger K later adds trials); "
                   "the summary's epochs block gives each metric's mean over trials with its standard error, "
                   "pass@k and pass^k, and the tasks whose outcome changed; the papers' metrics stay trial 1's")
    r.add_argument("--max-attempts", type=int, default=6, help="attempts per model (and judge) call for transient failures")
    r.add_argument("--max-consecutive-errors", type=_non_negative_int, default=3, metavar="N",
                   help="circuit breaker: stop after N episodes in a row fail with an error that will repeat on "
                   "every task (bad API key, unknown model, endpoint down after the retries, context window too "
                   "small); 0 = never stop (default 3)")
    r.add_argument("--model-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="adapter option, repeatable; VALUE is JSON if it parses (e.g. parallel_tool_calls=false, seed=0)")
    from .core.run_options import TRACE_MAX_VALUE_BYTES

    r.add_argument("--trace-max-value-bytes", type=_non_negative_int, default=TRACE_MAX_VALUE_BYTES, metavar="N",
                   help="what a trace keeps of one value (a tool-call argument, a tool result), in bytes: a longer "
                   "one is cut, marked and its length kept; recorded in config.json; 0 = keep everything "
                   f"(default {TRACE_MAX_VALUE_BYTES})")
    r.add_argument("--cache", metavar="PATH", help="response cache (sqlite file): identical model requests are answered from it")
    r.add_argument("--no-progress", action="store_true", help="no progress bar (the summary is printed all the same)")
    r.add_argument("--json", action="store_true", help="print one JSON summary object as the last line")
    if info.uses_judge:
        j = r.add_argument_group("judge (the LLM matcher: calls neither rule nor response matching accepts)")
        j.add_argument("--judge", metavar="MODEL", help="the judge model (e.g. openai:gpt-4o-mini); retried, rate "
                       "limited and cached like the model, its cost counted apart")
        j.add_argument("--judge-rpm", type=float, help="requests per minute limit for the judge")
        j.add_argument("--judge-tpm", type=float, help="tokens per minute limit for the judge")
    own = [o for o in info.options if o.run]
    if own:
        add_options(r.add_argument_group(f"{info.name} options"), own)


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


def _add_limit_arguments(g: argparse._ArgumentGroup) -> None:
    from server import HTTPLimits, SessionLimits

    h, k = HTTPLimits(), SessionLimits()
    g.add_argument("--max-sessions", type=int, default=k.max_sessions, metavar="N",
                   help=f"sessions kept in total; at the cap the least recently used idle one is closed (default {k.max_sessions})")
    g.add_argument("--max-sessions-per-endpoint", type=int, default=k.max_sessions_per_endpoint, metavar="N",
                   help=f"sessions kept per endpoint (default {k.max_sessions_per_endpoint})")
    g.add_argument("--session-idle-timeout", type=float, default=k.idle_timeout, metavar="S",
                   help=f"a session unused this long is closed (default {k.idle_timeout:g} s)")
    g.add_argument("--max-connections", type=int, default=h.max_connections, metavar="N",
                   help=f"open connections; at the cap the longest idle one is closed (default {h.max_connections})")
    g.add_argument("--header-timeout", type=float, default=h.header_timeout, metavar="S",
                   help=f"time a client has to send a request's headers (default {h.header_timeout:g} s)")
    g.add_argument("--body-timeout", type=float, default=h.body_timeout, metavar="S",
                   help=f"time a client has to send a request's body (default {h.body_timeout:g} s)")
    g.add_argument("--keep-alive-timeout", type=float, default=h.keep_alive_timeout, metavar="S",
                   help=f"an idle keep-alive connection is closed after this long (default {h.keep_alive_timeout:g} s)")


def _build_serve(s: argparse.ArgumentParser) -> None:
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need --token)")
    s.add_argument("--port", type=int, default=8765, help="port to listen on")
    s.add_argument("--token", help="bearer token required on /mcp requests (or $EVALS_SERVER_TOKEN)")
    s.add_argument("--stdio", action="store_true", help="serve one session over stdin/stdout (for assistant clients)")
    benchmarks = all_benchmarks()
    s.add_argument("--benchmark", choices=list(benchmarks), help="bind the session to this benchmark (stdio), or serve only it")
    s.add_argument("--benchmarks", nargs="+", choices=list(benchmarks),
                   help="benchmarks to serve over HTTP (default: all, or none with --tools-dir)")
    s.add_argument("--task", help="bind the session to this task id (with --benchmark); default: the playground")
    s.add_argument("--tools-dir", action="append", default=[], metavar="DIR",
                   help="directory of tool spec files (YAML/JSON; OpenAI function tools; BFCL function docs), "
                   "served at /mcp/custom (repeatable); alone, only these tools are served (add --benchmarks to "
                   "serve benchmarks too)")
    s.add_argument("--mcp-server", action="append", default=[], metavar="CMD|URL",
                   help="an MCP server whose tools are served (proxied) at /mcp/custom: a command line run over "
                   "stdio, or a streamable-HTTP URL; NAME=... names it (repeatable)")
    s.add_argument("--mcp-config", metavar="FILE", help="MCP servers in the mcpServers JSON format (command, args, "
                   "env; or url, headers, bearer_token_env), served at /mcp/custom")
    s.add_argument("--mcp-token-env", metavar="VAR", help="environment variable with the bearer token of an "
                   "--mcp-server URL")
    s.add_argument("--kg-file", metavar="FILE", help="serve your own KG, a triple file (one ['head', 'relation', "
                   "'tail'] per line), as the KG tools at /mcp/custom (built once into the cache)")
    s.add_argument("--page-size", type=int, help="tools per tools/list page (0 = no pagination; default 200)")
    s.add_argument("--json-response", action="store_true", help="answer HTTP requests with JSON instead of SSE")
    _add_limit_arguments(s.add_argument_group(
        "limits on what clients may hold (HTTP; they do not change results)"))
    s.add_argument("-v", "--verbose", action="store_true", help="log every request (uvicorn's info level)")
    add_serve_option_groups(s)
    s.set_defaults(func=cmd_serve)


def _build_run(r: argparse.ArgumentParser) -> None:
    rsub = r.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    for name, info in all_benchmarks().items():
        def build(rb: argparse.ArgumentParser, info: Any = info) -> None:
            _add_run_arguments(rb, info)
            rb.set_defaults(func=cmd_run)

        rsub.add_lazy(name, build, help=info.description, description=info.description,  # type: ignore[attr-defined]
                      epilog=RUN_EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)


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
    ex.add_argument("--json", action="store_true", help="print the files written as one JSON object")
    ex.set_defaults(func=cmd_export)


def _build_report(p: argparse.ArgumentParser) -> None:
    from .report.cli import report_arguments

    report_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    """The ``evals`` parser; each sub-command's arguments are added when the command line selects it
    (:class:`~evals.cli_parts.parser.LazySubParsers`), so ``evals --help`` loads no sub-command's code."""
    p = EvalsParser(prog="evals", description="MCP tool server and evaluation client for multi-hop tool use.")
    p.add_argument("--version", action="version", version=version_string(), help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True)
    assert isinstance(sub, LazySubParsers)
    sub.add_lazy("serve", _build_serve, help="serve benchmark tools and the family KG over MCP (HTTP, or stdio)")
    sub.add_lazy("run", _build_run, help="run a model through a benchmark's tasks over MCP (resumable)",
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
    from .core.data import DataNotFound

    args = _apply_config_file(build_parser(), argv)
    try:
        return int(args.func(args) or 0)
    except DataNotFound as exc:
        err.print(f"[red]error:[/] {exc}")
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C (or one before the run started): finished traces are intact
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
