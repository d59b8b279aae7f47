"""The ``evals`` command line: serve benchmark tools over MCP, inspect data."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from client import eventloop

from .benchmarks import BENCHMARKS, runnable

err = Console(stderr=True)


def _json_line(obj: Any) -> None:
    """The machine-readable last line of a ``--json`` command."""
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


# ---- first use: fetch missing data ----------------------------------------------------------------
def ensure_benchmark_data(benchmarks: list[str], *, required: bool) -> list[str]:
    """Download the missing data of ``benchmarks`` (pinned, sha256-checked); the benchmarks that have it.

    A benchmark whose data cannot be had (the network is unreachable, say) raises
    :class:`~evals.data.DataNotFound` (exit status 2, the message says how to fix it) when
    ``required``; otherwise it is left out with a warning, unless every benchmark is.
    """
    from .data import DataNotFound, data_dir
    from .fetch import ensure_data, unavailable_message

    missing = ensure_data(benchmarks, data_dir(), console=err)
    if not missing:
        return benchmarks
    if required or len(missing) == len(benchmarks):
        raise DataNotFound(unavailable_message(missing.values()))
    for m in missing.values():
        err.print(f"[yellow]warning:[/] not serving {escape(m.message())}")
    return [b for b in benchmarks if b not in missing]


# ---- evals serve -------------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    from server import EndpointRef, ServerConfigError, check_bind, create_app, serve, serve_stdio

    from .serving import build_tool_server

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    token = args.token or os.environ.get("EVALS_SERVER_TOKEN") or None
    benchmarks = [args.benchmark] if args.benchmark else list(args.benchmarks or BENCHMARKS)
    if args.stdio and not args.benchmark and not args.tools_dir:
        err.print("[red]error:[/] --stdio needs --benchmark NAME (and optionally --task TASK_ID) or --tools-dir")
        return 2
    if args.task and not args.benchmark:
        err.print("[red]error:[/] --task needs --benchmark")
        return 2
    if not args.stdio:
        try:
            check_bind(args.host, token)
        except ServerConfigError as exc:
            err.print(f"[red]error:[/] {exc}")
            return 2
    default = None
    if args.benchmark:
        default = EndpointRef(args.benchmark, args.task)
    elif args.stdio:
        default = EndpointRef("custom")
        benchmarks = []
    # first use: download what is missing; `evals serve` alone serves the benchmarks it can have
    benchmarks = ensure_benchmark_data(benchmarks, required=bool(args.benchmark or args.benchmarks))
    with contextlib.ExitStack() as stack:
        ts = build_tool_server(
            benchmarks,
            stack=stack,
            tools_dirs=[Path(d) for d in args.tools_dir],
            kg_search=args.kg_search,
            top_k=args.top_k,
            allow_writes=args.allow_writes,
            default=default,
            page_size=args.page_size,
        )
        if args.stdio:
            eventloop.run(serve_stdio(ts))
            return 0
        app = create_app(ts, host=args.host, token=token, json_response=args.json_response)
        shown = f"http://{args.host}:{args.port}"
        err.print(f"[bold]MCP server[/] on {shown}  (health: {shown}/health)")
        for name, info in ts.describe().items():
            err.print(f"  {shown}/mcp/{name}  playground, {info['tasks']} task endpoints at {shown}/mcp/{name}/<task_id>")
        serve(app, host=args.host, port=args.port, log_level="info" if args.verbose else "warning")
    return 0


# ---- evals data stats ---------------------------------------------------------------------------
def dataset_stats(name: str) -> dict[str, Any]:
    """Dataset and KG statistics for a FamilyTool dataset (the KG numbers come from Kuzu)."""
    from .benchmarks import get_benchmark
    from .serving import open_family_kg

    stats = dict(get_benchmark(name).load_catalog().stats())  # type: ignore[attr-defined]
    with contextlib.ExitStack() as stack:
        kg = open_family_kg(name, writable=False, stack=stack).stats()
    stats.update(
        kg_triples=kg.triples,
        kg_entities=kg.entities,
        kg_relation_types=kg.relation_types,
        kg_out_degree={str(k): v for k, v in sorted(kg.out_degree.items())},
    )
    return stats


def cmd_data_stats(args: argparse.Namespace) -> int:
    stats = dataset_stats(args.benchmark)
    table = Table(title=f"{args.benchmark} statistics")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for key in ("tasks", "gold_tools", "candidate_tools", "kg_triples", "kg_entities", "kg_relation_types"):
        table.add_row(key, str(stats[key]))
    hops = Table(title="gold sub-KG triples per task (hops)")
    hops.add_column("hops", justify="right")
    hops.add_column("tasks", justify="right")
    for k, v in stats["hops"].items():
        hops.add_row(k, str(v))
    out = Console(stderr=args.json)
    out.print(table)
    out.print(hops)
    if args.json:
        _json_line(stats)
    return 0


def cmd_data_fetch(args: argparse.Namespace) -> int:
    from .data import data_dir
    from .fetch import FetchError, download_progress, fetch

    dest = Path(args.data_dir) if args.data_dir else data_dir()
    try:
        with download_progress(err) as progress:
            paths = fetch(args.benchmark, dest, url_prefix=args.url_prefix, report=err.print, progress=progress)
    except FetchError as exc:
        err.print(f"[red]error:[/] {exc}")
        return 1
    err.print(f"{len(paths)} file(s) in {dest}; point EVALS_DATA_DIR there if it is not the default")
    return 0


# ---- evals run / score -------------------------------------------------------------------------
def summary_table(summary: dict[str, Any]) -> Table:
    """The summary of a run as a table: counts, then every metric (percent)."""
    table = Table(title=f"{summary.get('benchmark')} · {summary.get('model')} · {summary.get('strategy')}")
    table.add_column("")
    table.add_column("value", justify="right")
    for key in ("tasks", "completed", "errored"):
        table.add_row(key, str(summary[key]))
    for key, value in summary["metrics"].items():
        table.add_row(f"{key} (%)" if isinstance(value, float) else key, f"{value:.2f}" if isinstance(value, float) else str(value))
    return table


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
    return out


def cmd_score(args: argparse.Namespace) -> int:
    from client.runs import RunDir

    from .pipeline import summarize

    try:
        run_dir = RunDir.open(args.run_dir)
        summary = summarize(run_dir)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        err.print(f"[red]error:[/] {exc}")
        return 2
    Console(stderr=args.json).print(summary_table(summary))
    if args.json:
        _json_line(summary)
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


def cmd_run(args: argparse.Namespace) -> int:
    from client.adapters.errors import ModelError
    from client.runs import RunConfigMismatch

    from .pipeline import RunOptions, run_benchmark
    from .server_process import ServerProcessError

    inductive_kg = ["familytool-b"] if args.inductive and args.benchmark.startswith("familytool") else []
    ensure_benchmark_data([args.benchmark, *inductive_kg], required=True)  # first use: download the data
    opts = RunOptions(
        benchmark=args.benchmark,
        model=args.model,
        strategy=args.strategy,
        limit=args.limit,
        concurrency=args.concurrency,
        run_dir=Path(args.run_dir) if args.run_dir else None,
        server_url=args.server_url,
        server_process=args.server_process,
        server_token=args.server_token or os.environ.get("EVALS_SERVER_TOKEN") or None,
        max_turns=args.max_turns,
        tool_choice=args.tool_choice,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        max_budget_tokens=args.max_budget_tokens,
        max_budget_usd=args.max_budget_usd,
        rpm=args.rpm,
        tpm=args.tpm,
        retry_errored=args.retry_errored,
        max_attempts=args.max_attempts,
        max_consecutive_errors=args.max_consecutive_errors,
        progress=not args.no_progress,
        kg_search=args.kg_search,
        top_k=args.top_k,
        kg_model=args.kg_model,
        judge_model=args.judge,
        inductive=args.inductive,
        cache=Path(args.cache) if args.cache else None,
        adapter_options=_model_args(args.model_arg),
    )
    try:
        result, summary = eventloop.run(run_benchmark(opts))
    except (RunConfigMismatch, ValueError, ModelError, ServerProcessError) as exc:
        err.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    table = summary_table(summary)
    table.add_row("tokens (this call)", str(result.tokens))
    table.add_row("cost USD (this call)", f"{result.cost_usd:.4f}")
    Console(stderr=args.json).print(table)
    err.print(result.describe(), markup=False, highlight=False)
    err.print(f"run directory: {summary['run_dir']}", markup=False, highlight=False)
    if args.json:
        _json_line(summary)
    status = run_exit_status(result, summary)
    if status != EXIT_OK:  # one plain line (no wrapping, no markup) for people and for log scrapers
        print(run_status_line(status, result, summary, retry_errored=args.retry_errored), file=sys.stderr, flush=True)
    return status


# ---- parser ---------------------------------------------------------------------------------------
def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evals", description="MCP tool server and evaluation client for multi-hop tool use.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="serve benchmark tools and the family KG over MCP (HTTP, or stdio)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need --token)")
    s.add_argument("--port", type=int, default=8765)
    s.add_argument("--token", help="bearer token required on /mcp requests (or $EVALS_SERVER_TOKEN)")
    s.add_argument("--stdio", action="store_true", help="serve one session over stdin/stdout (for assistant clients)")
    s.add_argument("--benchmark", choices=list(BENCHMARKS), help="bind the session to this benchmark (stdio), or serve only it")
    s.add_argument("--benchmarks", nargs="+", choices=list(BENCHMARKS), help="benchmarks to serve over HTTP (default: all)")
    s.add_argument("--task", help="bind the session to this task id (with --benchmark); default: the playground")
    s.add_argument("--tools-dir", action="append", default=[], metavar="DIR",
                   help="directory of YAML/JSON tool spec files, served at /mcp/custom (repeatable)")
    s.add_argument("--kg-search", choices=["exact", "greedy", "retrieval"], default="greedy",
                   help="fallback of kg_search_path when a relation does not exist (default greedy)")
    s.add_argument("--top-k", type=int, default=3, help="candidates per unknown relation for --kg-search retrieval")
    s.add_argument("--allow-writes", action="store_true", help="expose kg_add_fact (on a private copy of the KG)")
    s.add_argument("--page-size", type=int, help="tools per tools/list page (0 = no pagination; default 200)")
    s.add_argument("--json-response", action="store_true", help="answer HTTP requests with JSON instead of SSE")
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(func=cmd_serve)

    r = sub.add_parser("run", help="run a model through a benchmark's tasks over MCP (resumable)",
                       epilog=RUN_EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("benchmark", choices=runnable())
    r.add_argument("--model", required=True, help="oracle[:SECONDS_PER_TURN] | openai:<model> | anthropic:<model> | vllm:<model-or-path>")
    r.add_argument("--strategy", help="how the model is driven (per benchmark; default: the benchmark's first)")
    r.add_argument("--limit", type=int, help="only the first N tasks")
    r.add_argument("--concurrency", type=int, default=4)
    r.add_argument("--run-dir", help="run directory (default runs/<benchmark>/<model>/<strategy>); rerun to resume")
    r.add_argument("--server-url", help="use a running server (its base URL) instead of one started in-process")
    r.add_argument("--server-token", help="bearer token for --server-url (or $EVALS_SERVER_TOKEN)")
    r.add_argument(
        "--server-process",
        action="store_true",
        help="start the server in a child process (a core of its own: faster at high --concurrency with a fast "
        "model) instead of on this process's event loop",
    )
    r.add_argument("--max-turns", type=int, default=10)
    r.add_argument("--tool-choice", default="auto", help="first turn: auto | required | none | <tool name>")
    r.add_argument("--max-tokens", type=int, default=1024)
    r.add_argument("--temperature", type=float, default=0.0)
    r.add_argument("--base-url", help="OpenAI-compatible server for openai:<model> (vLLM, DeepSeek, OpenRouter, Ollama, ...)")
    r.add_argument("--api-key-env", help="environment variable holding the API key")
    r.add_argument("--max-budget-tokens", type=int, help="stop starting episodes after this many tokens")
    r.add_argument("--max-budget-usd", type=float, help="stop starting episodes after this estimated cost")
    r.add_argument("--rpm", type=float, help="requests per minute limit for the model")
    r.add_argument("--tpm", type=float, help="tokens per minute limit for the model")
    r.add_argument("--retry-errored", action="store_true", help="re-run episodes that ended with an error")
    r.add_argument("--max-attempts", type=int, default=6, help="attempts per model call for transient failures")
    r.add_argument("--max-consecutive-errors", type=_non_negative_int, default=3, metavar="N",
                   help="circuit breaker: stop after N episodes in a row fail with an error that will repeat on "
                   "every task (bad API key, unknown model, endpoint down after the retries, context window too "
                   "small); 0 = never stop (default 3)")
    r.add_argument("--kg-search", choices=["exact", "greedy", "retrieval"], default="greedy",
                   help="FamilyTool: path extraction for made-up relations (default greedy, as in the paper)")
    r.add_argument("--top-k", type=int, default=3, help="FamilyTool: relations tried per made-up one (--kg-search retrieval)")
    r.add_argument("--kg-model", help="FamilyTool kgetool: another model for step 1 (KG path generation); 'oracle' writes the gold paths")
    r.add_argument("--judge", help="model that judges calls neither rule nor response matching accepts (e.g. openai:gpt-4o-mini)")
    r.add_argument("--inductive", action="store_true",
                   help="FamilyTool-e over FamilyTool-b's KG, extended with -e's facts over MCP at run time")
    r.add_argument("--model-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="adapter option, repeatable; VALUE is JSON if it parses (e.g. parallel_tool_calls=false)")
    r.add_argument("--cache", metavar="PATH", help="response cache (sqlite file): identical model requests are answered from it")
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--json", action="store_true", help="print one JSON summary object as the last line")
    r.set_defaults(func=cmd_run)

    sc = sub.add_parser("score", help="recompute a run's metrics from its traces (no model is called)")
    sc.add_argument("run_dir")
    sc.add_argument("--json", action="store_true", help="print one JSON summary object as the last line")
    sc.set_defaults(func=cmd_score)

    from .report import add_report_parser

    add_report_parser(sub)

    d = sub.add_parser("data", help="benchmark data")
    dsub = d.add_subparsers(dest="data_command", required=True)
    st = dsub.add_parser("stats", help="dataset and KG statistics")
    st.add_argument("benchmark", choices=[n for n, b in BENCHMARKS.items() if b.has_kg])
    st.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    st.set_defaults(func=cmd_data_stats)
    f = dsub.add_parser("fetch", help="download a benchmark's files from their public source (sha256-pinned)")
    f.add_argument("benchmark", choices=["familytool", "toolhop", "toolhop-subset"], help="familytool (both datasets and KGs), toolhop (the "
                   "full file, from Hugging Face) or toolhop-subset (the 100 sandbox-runnable queries)")
    f.add_argument("--data-dir", help="where to put the files (default: $EVALS_DATA_DIR or the user cache)")
    f.add_argument("--url-prefix", help="mirror to download from instead of the pinned commit (default: $EVALS_DATA_URL_PREFIX)")
    f.set_defaults(func=cmd_data_fetch)
    return p


def main(argv: list[str] | None = None) -> int:
    from .data import DataNotFound

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DataNotFound as exc:
        err.print(f"[red]error:[/] {exc}")
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C (or one before the run started): finished traces are intact
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
