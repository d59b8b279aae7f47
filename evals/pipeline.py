"""``evals run``: serve a benchmark, drive a model through its tasks over MCP, record and summarise."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from client.adapters import make_adapter
from client.adapters.base import ModelAdapter
from client.adapters.caching import CachingAdapter
from client.agent import AgentConfig
from client.breaker import CircuitBreaker, RepeatingError
from client.cache import ResponseCache
from client.mcp_session import HTTPClientPool
from client.ratelimit import RateLimiter
from client.retry import RetryPolicy
from client.runner import Budget, RunResult, run_episodes
from client.runs import EpisodeOutcome, EpisodeRecorder, RunDir
from server import create_app, serve_in_background

from .benchmarks import get_plugin
from .benchmarks.base import BenchmarkPlugin, EpisodeEnv
from .matching import LLMJudge


@dataclass
class RunOptions:
    """Everything ``evals run`` takes; the fields under ``options`` in the run config."""

    benchmark: str
    model: str
    strategy: str | None = None  # None: the benchmark's default strategy
    limit: int | None = None
    concurrency: int = 4
    run_dir: Path | None = None
    server_url: str | None = None
    server_token: str | None = None
    server_process: bool = False  # serve from a child process (a core of its own) instead of this event loop
    max_turns: int = 10
    tool_choice: str = "auto"
    max_tokens: int | None = 1024
    temperature: float | None = 0.0
    base_url: str | None = None
    api_key_env: str | None = None
    max_budget_tokens: int | None = None
    max_budget_usd: float | None = None
    rpm: float | None = None
    tpm: float | None = None
    retry_errored: bool = False
    max_attempts: int = 6
    retry_base_delay: float = 1.0
    # stop after this many errors that will repeat on every task (bad key, unknown model, endpoint
    # down, ...) with no completed episode in between; 0: never (client.breaker)
    max_consecutive_errors: int = 3
    progress: bool = True
    adapter_options: dict[str, Any] = field(default_factory=dict)
    # benchmark-specific (FamilyTool): KG extraction, cross-LLM step 1, LLM judge, inductive setting
    kg_search: str = "greedy"
    top_k: int = 3
    kg_model: str | None = None
    judge_model: str | None = None
    inductive: bool = False
    cache: Path | None = None  # response cache (sqlite) keyed by the exact request

    def result_config(self) -> dict[str, Any]:
        """The part of the config that changes results (a resumed run must match it)."""
        return {
            "benchmark": self.benchmark,
            "model": self.model,
            "strategy": self.strategy,
            "options": {
                "max_turns": self.max_turns,
                "tool_choice": self.tool_choice,
                "max_tokens": self.max_tokens,
                "temperature": self.temperature,
                "base_url": self.base_url,
                "model_args": dict(self.adapter_options),
            },
        }


def default_run_dir(opts: RunOptions) -> Path:
    """``runs/<benchmark>/<model>/<strategy>``: the same command resumes the same run."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", opts.model).strip("_") or "model"
    return Path("runs") / opts.benchmark / slug / opts.strategy


_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def breaker_hint(opts: RunOptions) -> Callable[[RepeatingError], str | None]:
    """Fix-it lines for the circuit breaker that name this run's flags and variables."""
    provider = opts.model.partition(":")[0]

    def hint(err: RepeatingError) -> str | None:
        ours = err.provider is None or err.provider == provider  # not the --kg-model / --judge one
        if err.kind == "tool_server_unreachable" and opts.server_url:
            return f"check that the MCP server at {opts.server_url} is running (--server-url)"
        if not ours:
            return None
        if err.kind == "auth":
            env = opts.api_key_env or _KEY_ENV.get(provider)
            if env is None:
                return "check the API key (--api-key-env names the variable that holds it)"
            unset = "" if os.environ.get(env) else " (it is not set)"
            return f"check the API key in ${env}{unset}, or name another variable with --api-key-env"
        if err.kind == "not_found":
            where = f" at --base-url {opts.base_url}" if opts.base_url else ""
            return f"check the model name {opts.model!r} (does the server{where} serve it?) and --base-url"
        if err.kind == "model_unreachable":
            where = f"--base-url {opts.base_url}" if opts.base_url else "the provider's API"
            return f"check that {where} is reachable (each call was tried {opts.max_attempts} time(s))"
        if err.kind == "context_window":
            return (f"the system prompt, tools and first message do not fit {opts.model}'s context window: "
                    "use a model (or server setting, e.g. vLLM's max model length) with a larger one")
        return None

    return hint


def parse_oracle(model: str) -> float | None:
    """``oracle`` -> 0.0; ``oracle:0.2`` -> 0.2 s of simulated thinking per turn; other models -> None."""
    prefix, _, arg = model.partition(":")
    if prefix != "oracle":
        return None
    try:
        latency = float(arg) if arg else 0.0
    except ValueError:
        raise ValueError(f"oracle takes an optional per-turn latency in seconds (oracle:0.2), not {arg!r}") from None
    if latency < 0:
        raise ValueError(f"oracle latency must be >= 0, got {latency}")
    return latency


def _choice(value: str) -> Any:
    return value if value in ("auto", "required", "none") else {"name": value}


async def run_benchmark(opts: RunOptions) -> tuple[RunResult, dict[str, Any]]:
    """Run the episodes (resuming), then summarise every finished episode of the run directory."""
    if opts.server_url and opts.server_process:
        raise ValueError("--server-url uses a running server; --server-process starts one: give one of them")
    plugin = get_plugin(opts.benchmark)
    opts.strategy = opts.strategy or plugin.default_strategy
    if opts.strategy not in plugin.strategies:
        raise ValueError(
            f"{opts.benchmark} has no strategy {opts.strategy!r}; available: {', '.join(plugin.strategies)}"
        )
    all_ids = plugin.task_ids()
    task_ids = all_ids[: opts.limit] if opts.limit else all_ids
    run_path = opts.run_dir or default_run_dir(opts)
    result_cfg = opts.result_config()
    result_cfg["options"].update(plugin.result_options(opts))
    config = {**result_cfg, "run": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(opts).items()}}
    run_dir = RunDir(run_path, config)

    oracle_latency = parse_oracle(opts.model)
    kw = dict(opts.adapter_options)
    if opts.base_url:
        kw["base_url"] = opts.base_url
    if opts.api_key_env:
        kw["api_key_env"] = opts.api_key_env
    limiter = RateLimiter(opts.rpm, opts.tpm, name=opts.model) if (opts.rpm or opts.tpm) else None
    agent_cfg = AgentConfig(
        max_turns=opts.max_turns,
        tool_choice=_choice(opts.tool_choice),
        max_tokens=opts.max_tokens,
        temperature=opts.temperature,
        retry=RetryPolicy(max_attempts=opts.max_attempts, base_delay=opts.retry_base_delay),
    )

    async with contextlib.AsyncExitStack() as stack:

        def open_adapter(spec: str, **options: Any) -> ModelAdapter:
            adapter = make_adapter(spec, **options)
            stack.push_async_callback(adapter.aclose)
            return adapter

        def open_cache(path: Path) -> ResponseCache:
            cache = ResponseCache(path)
            stack.callback(cache.close)
            return cache

        def second_model(spec: str | None) -> ModelAdapter | None:
            if not spec or parse_oracle(spec) is not None:
                return None
            # --base-url / --api-key-env apply to a second model of the same provider as --model
            same = spec.partition(":")[0] == opts.model.partition(":")[0]
            return open_adapter(spec, **(kw if same else {}))

        shared: ModelAdapter | None = None
        if oracle_latency is None:
            shared = open_adapter(opts.model, **kw)
            if opts.cache:  # a rerun of the same requests is free and deterministic
                shared = CachingAdapter(shared, open_cache(opts.cache), key_extra=opts.adapter_options or None)
        kg_model = second_model(opts.kg_model)
        judge_model = second_model(opts.judge_model)
        judge = LLMJudge(judge_model, open_cache(run_dir.path / "judge_cache.sqlite")) if judge_model else None

        if opts.server_url:
            base = opts.server_url.rstrip("/")
        elif opts.server_process:
            from .server_process import serve_in_subprocess

            base = await stack.enter_async_context(serve_in_subprocess(opts))
        else:
            ts = plugin.build_server(opts, stack)
            base = await stack.enter_async_context(serve_in_background(create_app(ts, json_response=True)))
        http = await stack.enter_async_context(HTTPClientPool(token=opts.server_token))
        env = EpisodeEnv(
            opts=opts, base_url=base, http=http, agent_cfg=agent_cfg, adapter=shared,
            oracle_latency=oracle_latency or 0.0, limiter=limiter,
            extra_adapters={"kg": kg_model} if kg_model else {}, judge=judge,
        )
        await plugin.prepare(env)

        async def episode(task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
            return await plugin.episode(env, task_id, recorder)

        result = await run_episodes(
            run_dir,
            task_ids,
            episode,
            concurrency=opts.concurrency,
            budget=Budget(opts.max_budget_tokens, opts.max_budget_usd) if (opts.max_budget_tokens or opts.max_budget_usd) else None,
            progress=opts.progress,
            score_fn=plugin.progress_score,
            retry_errored=opts.retry_errored,
            handle_signals=True,
            breaker=CircuitBreaker(opts.max_consecutive_errors, hint=breaker_hint(opts)),
        )
    return result, summarize(run_dir, task_ids, plugin=plugin)


def summarize(run_dir: RunDir, task_ids: list[str] | None = None, *, plugin: BenchmarkPlugin | None = None) -> dict[str, Any]:
    """The run's outcome from its traces alone (no model is called): the ``--json`` object."""
    config = run_dir.config or {}
    if "benchmark" not in config:
        raise ValueError(f"{run_dir.path}: config.json names no benchmark; is this an evals run directory?")
    plugin = plugin or get_plugin(config["benchmark"])
    traces = run_dir.latest_traces()
    ids = task_ids if task_ids is not None else _run_task_ids(plugin, config, traces)
    done = [traces[t] for t in ids if t in traces]
    first_error = next((t for t in done if t.get("status") == "errored"), None)
    scored = plugin.summarize(traces, ids, config)
    return {
        "run_dir": str(run_dir.path),
        "benchmark": config.get("benchmark"),
        "model": config.get("model"),
        "strategy": config.get("strategy"),
        "tasks": len(ids),
        "completed": sum(1 for t in done if t.get("status") == "completed"),
        "errored": sum(1 for t in done if t.get("status") == "errored"),
        "first_error": _error_brief(first_error),
        **scored,
    }


def _error_brief(trace: dict[str, Any] | None) -> dict[str, Any] | None:
    """The task, class, message and retryability of a trace's error (``None`` without one)."""
    if trace is None:
        return None
    error = trace.get("error") or {}
    message = " ".join(str(error.get("message") or "").split())
    return {
        "task_id": trace.get("task_id"),
        "type": error.get("type") or "Error",
        "message": message if len(message) <= 500 else message[:499] + "…",
        "retryable": bool(error.get("retryable", False)),
    }


def _run_task_ids(plugin: BenchmarkPlugin, config: dict[str, Any], traces: dict[str, Any]) -> list[str]:
    """The tasks a run covers: the first ``limit`` of its first invocation plus every traced task."""
    ids = plugin.task_ids()
    limit = (config.get("run") or {}).get("limit")
    head = set(ids[:limit] if limit else ids)
    return [t for t in ids if t in head or t in traces]
