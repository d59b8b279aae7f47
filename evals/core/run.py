"""``evals run``: serve a benchmark, drive a model through its tasks over MCP, record, then score.

:class:`RunOptions` holds the core's settings (model, strategy, limits, model options) and the
benchmark's own options (``benchmark_options``, declared by the benchmark). ``config.json`` records
every setting that can change a result (under ``options``: the core's and the benchmark's), the
checksums of the data files the tasks came from (``data``) and the versions of the project and of
its engines (``versions``); a resumed run must match ``benchmark``, ``model``, ``strategy``,
``options`` and ``data``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.runs import RunDir, read_traces, redact_urls

from .anomalies import refresh_anomalies
from .dataset import dataset_identity
from .epochs import split_key, trial_keys
from .judge import LLMJudge
from .plugin import Benchmark
from .registry import get_benchmark, load_benchmark, own_options
from .run_options import RunOptions
from .scoring import summarize
from .selection import select_tasks, selection_of
from .transport import resolve_transport
from .versions import scorer_change, versions

if TYPE_CHECKING:  # running episodes (models, MCP sessions) is imported by run_benchmark: `evals score` needs none of it
    from client.adapters.base import ModelAdapter
    from client.breaker import RepeatingError
    from client.cache import ResponseCache
    from client.runner import RunResult
    from client.runs import EpisodeOutcome, EpisodeRecorder

__all__ = [
    "HASH_KEYS", "RunOptions", "build_run_config", "prepare_benchmark", "prepare_layout", "prepare_options",
    "resolve_workers", "run_benchmark", "run_task_ids", "score_run_dir", "worth_workers",
]

HASH_KEYS = ("benchmark", "model", "strategy", "options", "data")


def default_run_dir(opts: RunOptions, bench: Benchmark | None = None) -> Path:
    """``runs/<benchmark>[/<the benchmark's run_dir_part()>]/<model>/<strategy>``: the same command
    resumes the same run (a benchmark defined by a file names the file there, so that two files do
    not share a run directory)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", opts.model).strip("_") or "model"
    part = getattr(bench, "run_dir_part", None)
    extra = re.sub(r"[^A-Za-z0-9._-]+", "_", str(part())).strip("_") if callable(part) else ""
    base = Path("runs") / opts.benchmark
    return (base / extra if extra else base) / slug / (opts.strategy or "default")


_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def breaker_hint(opts: RunOptions) -> Callable[[RepeatingError], str | None]:
    """Fix-it lines for the circuit breaker that name this run's flags and variables."""
    provider = opts.model.partition(":")[0]

    def hint(err: RepeatingError) -> str | None:
        ours = err.provider is None or err.provider == provider  # not the --kg-model / --judge one
        if err.kind == "tool_server_unreachable" and opts.server_url:
            return f"check that the MCP server at {redact_urls(opts.server_url)} is running (--server-url)"
        if not ours:
            return None
        if err.kind == "auth":
            env = opts.api_key_env or _KEY_ENV.get(provider)
            if env is None:
                return "check the API key (--api-key-env names the variable that holds it)"
            unset = "" if os.environ.get(env) else " (it is not set)"
            return f"check the API key in ${env}{unset}, or name another variable with --api-key-env"
        if err.kind == "not_found":
            where = f" at --base-url {redact_urls(opts.base_url)}" if opts.base_url else ""
            return f"check the model name {opts.model!r} (does the server{where} serve it?) and --base-url"
        if err.kind == "model_unreachable":
            where = f"--base-url {redact_urls(opts.base_url)}" if opts.base_url else "the provider's API"
            return f"check that {where} is reachable (each call was tried {opts.max_attempts} time(s))"
        if err.kind == "context_window":
            return (f"the system prompt, tools and first message do not fit {opts.model}'s context window: "
                    "use a model (or server setting, e.g. vLLM's max model length) with a larger one")
        return None

    return hint


def run_task_ids(bench: Benchmark, config: Mapping[str, Any], traces: Mapping[str, Any]) -> list[str]:
    """The tasks a run covers: those its first invocation selected (``--task-ids``, ``--sample``,
    ``--limit``; :mod:`evals.core.selection`) plus every traced task
    (only the traced ones for a run whose ``run.only_traced`` is set: imported predictions)."""
    ids = bench.task_ids()
    run = config.get("run") or {}
    if run.get("only_traced"):
        return [t for t in ids if t in traces]
    head = set(select_tasks(ids, **selection_of(run)))
    return [t for t in ids if t in head or t in traces]


def data_checksums(paths: Sequence[Path]) -> dict[str, str]:
    """``{file name: sha256}`` of the data files a run's tasks come from."""
    from kg_store.digest import file_sha256

    return {path.name: file_sha256(path) for path in paths}


def build_run_config(opts: RunOptions, bench: Benchmark) -> dict[str, Any]:
    """``config.json``: the result config, the dataset (:mod:`.dataset`), the data checksums, versions, and every
    setting as given."""
    run = opts.as_dict()
    result = opts.result_config(bench.info.options, uses_judge=bench.info.uses_judge)
    data = data_checksums(bench.data_files())
    dataset = dataset_identity(bench.info, bench.options, data)
    extras = getattr(bench, "config_extras", None)
    return {
        **result,
        **({"dataset": dataset} if dataset is not None else {}),
        "data": data,
        "versions": versions(bench),
        "run": run,
        **(extras() if callable(extras) else {}),
    }


EPISODES_PER_WORKER = 32
"""``--workers auto`` gives each worker process (one event loop) this many of the run's concurrent
episodes: ``bench/bench_harness.py`` measures one loop near 0.9 of a 200 ms/turn model's throughput
up to about this concurrency, and a worker costs a second or two to start and its own copy of the
benchmark's data in memory."""


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


WORKER_MIN_EPISODES = 100
"""``--workers auto`` starts worker processes only when each gets at least this many of the run's
episodes: below that a worker costs more than it gives. Measured (``bench/bench_scale.py --quick
--crossover``, docs/performance.md): one process spends about 5 ms of CPU per instant episode, a
second worker costs about 0.25 s of CPU and can at best halve the episodes' time, so it gives back
as much wall as it costs CPU from about 2 x 0.25 / 0.005 = 100 episodes."""


def worth_workers(episodes: int) -> int:
    """The most worker processes that pay for themselves on a run of ``episodes`` episodes (at
    least 1: the episodes in this process)."""
    return max(1, episodes // WORKER_MIN_EPISODES)


def resolve_workers(opts: RunOptions) -> int:
    """The worker processes a run uses: ``opts.workers``, checked, or, when it is None (``--workers
    auto``), one per :data:`EPISODES_PER_WORKER` concurrent episodes, at most one per usable CPU
    (:func:`run_benchmark` then lowers it to what the run's episodes pay for: :func:`worth_workers`);
    1 (episodes in this process) with ``--server-url``."""
    shared_server = opts.server_url
    if opts.workers is None:
        if shared_server:
            return 1
        return max(1, min(usable_cpus(), -(-opts.concurrency // EPISODES_PER_WORKER)))
    if opts.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {opts.workers}")
    if opts.workers > 1 and shared_server:
        raise ValueError("--workers N > 1: each worker serves the benchmark's tools itself; "
                         "--server-url goes with one worker only")
    return opts.workers


def check_executor(opts: RunOptions) -> None:
    """``--executor`` and ``--ray-address``, checked (Ray itself is imported only when a run uses it)."""
    if opts.executor not in ("local", "ray"):
        raise ValueError(f"unknown --executor {opts.executor!r}; choose local or ray")
    if opts.executor != "ray":
        if opts.ray_address:
            raise ValueError("--ray-address goes with --executor ray")
        return
    if opts.server_url:
        raise ValueError("--executor ray: each Ray actor serves the benchmark's tools itself; "
                         "--server-url goes with --executor local")
    from .ray_executor import RAY_MISSING, ray_installed

    if not ray_installed():
        raise ValueError(RAY_MISSING)


def prepare_layout(opts: RunOptions) -> RunOptions:
    """``opts`` with where the episodes run checked and resolved (transport, executor, worker count);
    loads nothing."""
    transport = resolve_transport(opts)  # the config records the transport used
    check_executor(opts)
    if opts.executor == "ray" and opts.ray_address and opts.workers is None:  # the cluster's CPUs: ray_executor
        return replace(opts, transport=transport)
    return replace(opts, transport=transport, workers=resolve_workers(opts))


def prepare_options(opts: RunOptions) -> tuple[RunOptions, Benchmark]:
    """``opts`` checked and with what they leave to defaults filled in (strategy, transport, the
    benchmark's options), and the loaded benchmark."""
    return prepare_benchmark(prepare_layout(opts))


def prepare_benchmark(opts: RunOptions) -> tuple[RunOptions, Benchmark]:
    """Load the benchmark; ``opts`` with the strategy and the benchmark's options filled in and checked."""
    bench = load_benchmark(opts.benchmark, opts.benchmark_options)
    info = bench.info
    opts = replace(opts, benchmark_options=dict(bench.options), strategy=opts.strategy or info.default_strategy)
    if opts.strategy not in info.strategies:
        raise ValueError(f"{opts.benchmark} has no strategy {opts.strategy!r}; available: {', '.join(info.strategies)}")
    bench.check(opts.strategy, own_server=not opts.server_url)
    return opts, bench


async def run_benchmark(opts: RunOptions) -> tuple[RunResult, dict[str, Any]]:
    """Run the episodes (resuming), then score every finished episode of the run directory. ``opts``
    is resolved into the run's plan (:mod:`.run_options`) in steps: where the episodes run, the
    benchmark's settings, the number of workers (``--workers auto``, once the episodes are counted),
    the Ray cluster's size."""
    from client import runner  # run_episodes looked up on use (bench/bench_harness.py times it)
    from client.breaker import CircuitBreaker
    from client.cache import ResponseCache
    from client.ratelimit import RateLimiter
    from client.runner import Budget, RunControl

    from .episodes import open_episode_env, parse_oracle, second_model

    auto = opts.workers is None and opts.executor != "ray"
    opts = prepare_layout(opts)
    parse_oracle(opts.model)  # a bad oracle latency fails before anything starts
    limiter = RateLimiter(opts.rpm, opts.tpm, name=opts.model) if (opts.rpm or opts.tpm) else None
    control = RunControl()

    async with contextlib.AsyncExitStack() as stack:
        start_worker = None
        pool = None
        opts, bench = prepare_benchmark(opts)
        task_ids = select_tasks(bench.task_ids(), limit=opts.limit, task_ids=opts.task_ids, sample=opts.sample,
                                seed=opts.sample_seed)
        keys = trial_keys(task_ids, opts.epochs)  # one per trial (--epochs); the task ids themselves for one
        run_path = opts.run_dir or default_run_dir(opts, bench)
        traces_read = None
        if auto:  # now that the episodes left to run (a resumed run's unfinished ones) are counted
            traces_read = read_traces(run_path)  # the run reads them from here, not again
            pending = len(traces_read.pending(keys, retry_errored=opts.retry_errored))
            opts = replace(opts, workers=min(opts.workers or 1, worth_workers(pending)))
        if opts.executor != "ray" and (opts.workers or 1) > 1:
            from .workers import WorkerPool

            # forked from this process now that it has loaded the benchmark (before it opens the run
            # directory): they open their servers while this process prepares the run directory
            pool = WorkerPool(opts, limiter=limiter, control=control)
            stack.push_async_callback(pool.aclose)
            await pool.fork(bench)
        if opts.executor == "ray":  # connected first: the config records the number of actors
            from .ray_executor import open_cluster

            opts, start_worker = open_cluster(opts, stack)
        config = build_run_config(opts, bench)
        if auto:  # what --workers auto chose from (the number is run.workers)
            config["run"]["workers_auto"] = {"episodes": len(keys), "pending": pending,
                                             "concurrency": opts.concurrency, "cpus": usable_cpus()}
        run_dir = RunDir(run_path, config, hash_keys=HASH_KEYS, max_value_bytes=opts.trace_max_value_bytes,
                         event_log=opts.event_log, traces_read=traces_read)

        def open_cache(path: Path) -> ResponseCache:
            cache = ResponseCache(path)
            stack.callback(cache.close)
            return cache

        judge = open_judge(opts, second_model(opts, opts.judge_model if bench.info.uses_judge else None, stack),
                           run_dir, open_cache)
        episode: Callable[[str, EpisodeRecorder], Awaitable[EpisodeOutcome]]
        if start_worker is not None or (opts.workers or 1) > 1:
            from .workers import WorkerPool

            run_dir.open_for_writing()  # the lock, and a repaired events.jsonl, before workers append to it
            events = run_dir.events_path if run_dir.event_log else None
            if pool is None:
                pool = WorkerPool(opts, limiter=limiter, control=control, start=start_worker)
            pool.events_path = events.resolve() if events else None
            episode = (await stack.enter_async_context(pool)).episode
        else:
            env = await open_episode_env(opts, bench, stack, limiter)

            async def episode(key: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
                return await bench.episode(env, split_key(key, opts.epochs)[0], recorder)

        result = await runner.run_episodes(
            run_dir,
            keys,
            episode,
            concurrency=opts.concurrency,
            budget=Budget(opts.max_budget_tokens, opts.max_budget_usd) if (opts.max_budget_tokens or opts.max_budget_usd) else None,
            progress=opts.progress,
            score_fn=bench.progress_score,
            retry_errored=opts.retry_errored,
            control=control,
            handle_signals=True,
            breaker=CircuitBreaker(opts.max_consecutive_errors, hint=breaker_hint(opts)),
        )
        # the workers stop while the run is scored (the pool is closed again, a no-op, with the stack)
        stopping = asyncio.ensure_future(pool.aclose()) if pool is not None else None
        summary = await summarize(run_dir, bench, task_ids, judge=judge)
        if stopping is not None:
            await stopping
    return result, summary


def open_judge(
    opts: RunOptions, adapter: ModelAdapter | None, run_dir: RunDir, open_cache: Callable[[Path], ResponseCache]
) -> LLMJudge | None:
    """The LLM judge: retried like the model, its own rate limits, decisions cached in the run directory."""
    from client.ratelimit import RateLimiter
    from client.retry import RetryPolicy

    if adapter is None:
        return None
    limiter = RateLimiter(opts.judge_rpm, opts.judge_tpm, name=f"judge {opts.judge_model}") if (opts.judge_rpm or opts.judge_tpm) else None
    return LLMJudge(
        adapter, open_cache(run_dir.path / "judge_cache.sqlite"),
        retry=RetryPolicy(max_attempts=opts.max_attempts, base_delay=opts.retry_base_delay), limiter=limiter,
    )


async def score_run_dir(run_path: str | Path | RunDir, *, judge_model: str | None = None,
                        options: Mapping[str, Any] | None = None, **adapter_kw: Any) -> dict[str, Any]:
    """``evals score``: re-score a run from its traces and stored judge decisions (``judge_model``
    asks a judge for decisions that are not stored). ``options``: scoring-only options of the run's
    benchmark (``Option.scoring``) to score with instead of the run's (e.g. another reading of the
    same traces); the run's config is not changed, the summary names them under ``rescored_with``.
    ``run_path`` may be the ``RunDir`` that wrote the run (an import): its scan of the traces is taken
    (:meth:`~client.runs.RunDir.share_scan`), the config is read from the folder."""
    run_dir = RunDir.open(run_path.path if isinstance(run_path, RunDir) else run_path)
    if isinstance(run_path, RunDir):
        run_dir.share_scan(run_path)
    config = run_dir.config or {}
    if "benchmark" not in config:
        raise ValueError(f"{run_dir.path}: config.json names no benchmark; is this an evals run directory?")
    given = dict(options or {})
    declared = {o.name for o in get_benchmark(config["benchmark"]).options if o.scoring}
    foreign = sorted(set(given) - declared)
    if foreign:
        raise ValueError(f"{', '.join('--' + n.replace('_', '-') for n in foreign)}: not a scoring option of "
                         f"{config['benchmark']} (it has: {', '.join(sorted(declared)) or 'none'})")
    merged = {**own_options(config["benchmark"], config.get("options") or {}), **given}
    bench = load_benchmark(config["benchmark"], merged)
    ids = run_task_ids(bench, config, run_dir.latest_traces())
    async with contextlib.AsyncExitStack() as stack:
        judge = None
        if judge_model:
            from client.adapters import make_adapter
            from client.cache import ResponseCache

            adapter = make_adapter(judge_model, **adapter_kw)
            stack.push_async_callback(adapter.aclose)
            cache = ResponseCache(run_dir.path / "judge_cache.sqlite")
            stack.callback(cache.close)
            judge = LLMJudge(adapter, cache)
        summary = await summarize(run_dir, bench, ids, judge=judge)
    if (changed := scorer_change(config, bench)) is not None:
        summary["warnings"].append(changed)
    if given:
        summary["options"] = {**summary["options"], **{k: bench.options[k] for k in given}}
        summary["rescored_with"] = {k: bench.options[k] for k in given}
        refresh_anomalies(summary, config, run_dir.latest_traces(), ids)
    return summary
