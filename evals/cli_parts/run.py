"""``evals run NAME``: the core's flags and the benchmark's own options, the command, and its exit
statuses (:data:`RUN_EXIT_STATUSES`) with the one-line account of a run that did not complete."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ..core.options import add_options
from ..core.registry import all_benchmarks, get_benchmark
from .data import ensure_benchmark_data, json_line
from .parser import workers_arg
from .summary import print_summary, print_warnings, summary_table

__all__ = [
    "EXIT_BREAKER",
    "EXIT_BUDGET",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "RUN_EXIT_STATUSES",
    "build_run_parser",
    "cmd_run",
    "redacted",
    "run_exit_status",
    "run_status_line",
]

err = Console(stderr=True, soft_wrap=True)  # an error is one line, never wrapped to the terminal


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


def redacted(text: str) -> str:
    """``text`` with the credentials in its URLs redacted (``client.runs.redact_urls``, imported when
    used): for every error line the commands print."""
    from client.runs import redact_urls

    return redact_urls(text)


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
    return redacted("; ".join(parts))


def _task_ids_arg(value: str) -> list[str]:
    from ..core.selection import parse_task_ids

    try:
        return parse_task_ids(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# RunOptions fields that are flags of `evals run` under the same name (dest)
_RUN_FIELDS = (
    "model", "strategy", "limit", "task_ids", "sample", "sample_seed", "concurrency", "server_url", "transport", "workers", "executor", "ray_address", "max_turns", "tool_choice",
    "max_tokens", "temperature", "base_url", "api_key_env", "max_budget_tokens", "max_budget_usd", "rpm", "tpm",
    "retry_errored", "max_attempts", "max_consecutive_errors", "epochs", "trace_max_value_bytes",
)


def cmd_run(args: argparse.Namespace) -> int:
    from client import eventloop
    from client.adapters.errors import ModelError
    from client.runs import RunConfigMismatch, RunDiskFull, RunLocked, RunTracesLost

    from ..core.run import RunOptions, run_benchmark
    from ..core.workers import WorkerError

    info = get_benchmark(args.benchmark)
    given = {o.name: getattr(args, o.name) for o in info.options if hasattr(args, o.name)}
    ensure_benchmark_data([args.benchmark], required=True, options={args.benchmark: given})  # first use: download
    opts = RunOptions(
        benchmark=args.benchmark,
        **{name: getattr(args, name) for name in _RUN_FIELDS},
        run_dir=Path(args.run_dir) if args.run_dir else None,
        server_token=args.server_token or os.environ.get("EVALS_SERVER_TOKEN") or None,
        progress=not args.no_progress,
        event_log=args.event_log,
        judge_model=getattr(args, "judge", None),
        judge_rpm=getattr(args, "judge_rpm", None),
        judge_tpm=getattr(args, "judge_tpm", None),
        cache=Path(args.cache) if args.cache else None,
        adapter_options=_model_args(args.model_arg),
        benchmark_options=given,
    )
    try:
        result, summary = eventloop.run(run_benchmark(opts))
    except (RunConfigMismatch, RunLocked, ValueError, ModelError, WorkerError) as exc:
        # a list of problems (one FILE:LINE each) is printed as it is, not wrapped at the terminal's width;
        # "openai:m: set" is no emoji code
        err.print(f"[red]error:[/] {escape(redacted(str(exc)))}", soft_wrap=True, emoji=False)
        return EXIT_USAGE
    except RunDiskFull as exc:  # finished episodes are kept; the same command resumes the run
        err.print(f"[red]error:[/] {escape(redacted(exc.strerror or str(exc)))}")
        return EXIT_INCOMPLETE
    except RunTracesLost as exc:  # traces.jsonl deleted/replaced mid-run: what was held is kept elsewhere
        print(f"evals run: error (exit {EXIT_INCOMPLETE}): {exc.describe_now()}", file=sys.stderr, flush=True)
        return EXIT_INCOMPLETE
    table = summary_table(summary)
    table.add_row("tokens (this call)", str(result.tokens), "", "")
    from ..core.scoring import cost_text

    model_totals = (summary.get("totals") or {}).get("model") or {}
    table.add_row("cost USD (this call)", cost_text({**model_totals, "cost_usd": result.cost_usd}), "", "")
    print_summary(Console(stderr=args.json), summary, table)
    err.print(redacted(result.describe()), markup=False, highlight=False)
    err.print(f"run directory: {summary['run_dir']}", markup=False, highlight=False)
    print_warnings(summary)
    if args.json:
        json_line(summary)
    status = run_exit_status(result, summary)
    if status != EXIT_OK:  # one plain line (no wrapping, no markup) for people and for log scrapers
        print(run_status_line(status, result, summary, retry_errored=args.retry_errored), file=sys.stderr, flush=True)
    return status



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
    r.add_argument("--model", required=True, help="oracle[:SECONDS_PER_TURN] | openai:<model> | anthropic:<model> | vllm:<model-or-path> | "
                   "replay:FILE (a scripted model: recorded or hand-written assistant turns, JSON Lines; "
                   "docs/running-models.md)")
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
        "--transport",
        choices=("memory", "http", "stdio"),
        help="how episodes' MCP sessions reach the tool server: memory (the SDK's in-process transport; the "
        "default for a server the run starts itself, and the fastest), http (127.0.0.1; always with --server-url), stdio (a server process per episode: slow). Results do not depend on it",
    )
    r.add_argument(
        "--workers", type=workers_arg, default=None, metavar="N|auto",
        help="split the episodes over N worker processes (each its own event loop, MCP client and tool server; "
        "--concurrency is the total). One run: traces, progress, rate limits and budget stay in this process. "
        "Default auto: one worker per 32 concurrent episodes, at most one per CPU and one per 100 episodes (so 1, "
        "in this process, up to --concurrency 32 or below 200 episodes); 1 with --server-url",
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
    from ..core.run_options import TRACE_MAX_VALUE_BYTES

    r.add_argument("--trace-max-value-bytes", type=_non_negative_int, default=TRACE_MAX_VALUE_BYTES, metavar="N",
                   help="what a trace keeps of one value (a tool-call argument, a tool result), in bytes: a longer "
                   "one is cut, marked and its length kept; recorded in config.json; 0 = keep everything "
                   f"(default {TRACE_MAX_VALUE_BYTES})")
    r.add_argument("--cache", metavar="PATH", help="response cache (sqlite file): identical model requests are answered from it")
    r.add_argument("--no-progress", action="store_true", help="no progress bar (the summary is printed all the same)")
    r.add_argument("--event-log", action="store_true",
                   help="also write events.jsonl: every event as it happens, for a run that hangs or is killed "
                        "(traces.jsonl holds every fact of a finished episode; the log repeats them)")
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

def build_run_parser(r: argparse.ArgumentParser) -> None:
    rsub = r.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    for name, info in all_benchmarks().items():
        def build(rb: argparse.ArgumentParser, info: Any = info) -> None:
            _add_run_arguments(rb, info)
            rb.set_defaults(func=cmd_run)

        rsub.add_lazy(name, build, help=info.description, description=info.description,  # type: ignore[attr-defined]
                      epilog=RUN_EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
