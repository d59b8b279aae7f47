"""What a process needs to run episodes: the models, the tool server and sessions to it.

``evals run`` builds it once (one process) or once in each worker (``--workers``,
:mod:`evals.core.workers`), from the run's options.
"""

from __future__ import annotations

import contextlib
from typing import Any

from client.adapters import make_adapter
from client.adapters.base import ModelAdapter
from client.agent import AgentConfig
from client.cache import ResponseCache
from client.mcp_session import HTTPClientPool
from client.model import Model
from client.ratelimit import RateLimiter
from client.retry import RetryPolicy
from server import ToolServer, create_app, serve_in_background

from .plugin import Benchmark, EpisodeEnv
from .run_options import RunOptions
from .serving import run_session_limits
from .transport import HTTPSessions, MemorySessions, Sessions, StdioSessions

__all__ = ["adapter_kwargs", "open_episode_env", "open_sessions", "parse_oracle", "second_model"]


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


def adapter_kwargs(opts: RunOptions) -> dict[str, Any]:
    kw = dict(opts.adapter_options)
    if opts.base_url:
        kw["base_url"] = opts.base_url
    if opts.api_key_env:
        kw["api_key_env"] = opts.api_key_env
    return kw


def second_model(opts: RunOptions, spec: str | None, stack: contextlib.AsyncExitStack) -> ModelAdapter | None:
    """A model besides ``--model`` (a benchmark's step-1 model, the judge); None for none or an oracle."""
    if not spec or parse_oracle(spec) is not None:
        return None
    # --base-url / --api-key-env apply to a second model of the same provider as --model
    same = spec.partition(":")[0] == opts.model.partition(":")[0]
    adapter = make_adapter(spec, **(adapter_kwargs(opts) if same else {}))
    stack.push_async_callback(adapter.aclose)
    return adapter


async def open_episode_env(
    opts: RunOptions, bench: Benchmark, stack: contextlib.AsyncExitStack, limiter: RateLimiter | None
) -> EpisodeEnv:
    """The models, the tool server and the sessions to it, for this process's episodes; prepared."""
    oracle_latency = parse_oracle(opts.model)
    retry = RetryPolicy(max_attempts=opts.max_attempts, base_delay=opts.retry_base_delay)
    agent_cfg = AgentConfig(
        max_turns=opts.max_turns,
        tool_choice=_choice(opts.tool_choice),
        max_tokens=opts.max_tokens,
        temperature=opts.temperature,
        retry=retry,
    )
    shared: Model | None = None
    if oracle_latency is None:  # the model role, built once: its cache, the rate limit, retries
        adapter = make_adapter(opts.model, **adapter_kwargs(opts))
        stack.push_async_callback(adapter.aclose)
        cache = None
        if opts.cache:  # a rerun of the same requests is free and deterministic
            cache = ResponseCache(opts.cache)
            stack.callback(cache.close)
        shared = Model(adapter, cache, key_extra=opts.adapter_options or None, limiter=limiter, retry=retry)
    roles: dict[str, Model] = {}
    for option in bench.info.options:
        if option.model and (other := second_model(opts, opts.benchmark_options.get(option.name), stack)) is not None:
            roles[option.name] = Model(other, limiter=limiter, retry=retry)
    sessions = await open_sessions(opts, bench, stack)
    env = EpisodeEnv(
        opts=opts, sessions=sessions, agent_cfg=agent_cfg, shared=shared,
        oracle_latency=oracle_latency or 0.0, limiter=limiter, roles=roles,
    )
    await bench.prepare(env)
    return env


async def open_sessions(opts: RunOptions, bench: Benchmark, stack: contextlib.AsyncExitStack) -> Sessions:
    """Start (or reach) the run's tool server; the episodes' sessions reach it over ``opts.transport``."""
    if opts.transport == "stdio":
        return StdioSessions(opts)
    if opts.transport == "memory":
        return MemorySessions(ToolServer(bench.mounts(stack, strategy=opts.chosen_strategy)))
    if opts.server_url:
        base = opts.server_url.rstrip("/")
    else:
        ts = ToolServer(bench.mounts(stack, strategy=opts.chosen_strategy), session_limits=run_session_limits(opts.concurrency))
        base = await stack.enter_async_context(serve_in_background(create_app(ts, json_response=True)))
    return HTTPSessions(base, await stack.enter_async_context(HTTPClientPool(token=opts.server_token)))
