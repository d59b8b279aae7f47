"""Models built once per role (issue 45, item 2): the episode environment holds ``--model`` and a
benchmark's other models (FamilyTool's ``--kg-model``) each built once, with the run's cache, rate limit
and retries; an oracle is wrapped with the same rate limit and retries."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from client.model import Model
from client.ratelimit import RateLimiter
from evals.core.episodes import open_episode_env
from evals.core.run import prepare_options
from evals.core.run_options import RunOptions


async def test_each_role_is_built_once_with_the_runs_cache_limit_and_retries(data_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    opts, bench = prepare_options(RunOptions(  # the run's plan, resolved as the run resolves it
        benchmark="familytool-b", model="openai:m", base_url="http://127.0.0.1:9/v1", strategy="kgetool",
        transport="memory", run_dir=tmp_path / "r", cache=str(tmp_path / "c.sqlite"), max_attempts=3,
        benchmark_options={"kg_model": "openai:k"}, progress=False))
    limiter = RateLimiter(60, name="t")
    async with contextlib.AsyncExitStack() as stack:
        env = await open_episode_env(opts, bench, stack, limiter)
        first, second = env.model("a", []), env.model("b", [])
        assert isinstance(first, Model) and first is second is env.shared
        assert first.limiter is limiter and first.cache is not None and first.retry is not None
        assert first.retry.max_attempts == 3 and first.retry is env.agent_cfg.retry
        kg = env.roles["kg_model"]
        assert isinstance(kg, Model) and kg.model == "k" and kg.limiter is limiter and kg.retry is first.retry


async def test_an_oracle_is_wrapped_with_the_runs_limit_and_retries(data_dir: Path, tmp_path: Path) -> None:
    opts, bench = prepare_options(RunOptions(benchmark="familytool-b", model="oracle", transport="memory",
                                             run_dir=tmp_path / "r", progress=False))
    limiter = RateLimiter(60, name="t")
    async with contextlib.AsyncExitStack() as stack:
        env = await open_episode_env(opts, bench, stack, limiter)
        assert env.is_oracle and env.shared is None and env.roles == {}
        oracle = env.model("a", [[{"name": "x", "arguments": {}}]], final_answer="done")
        assert isinstance(oracle, Model) and oracle.limiter is limiter and oracle.retry is env.agent_cfg.retry
        assert env.model("b", []) is not oracle  # each episode's script is its own


async def test_an_episode_env_takes_the_runs_plan_not_options_left_unresolved(data_dir: Path, tmp_path: Path) -> None:
    given = RunOptions(benchmark="familytool-b", model="oracle", transport="memory", run_dir=tmp_path / "r", progress=False)
    opts, bench = prepare_options(given)
    assert opts.chosen_strategy == bench.info.default_strategy  # resolved once, by the run
    async with contextlib.AsyncExitStack() as stack:
        with pytest.raises(ValueError, match="not a run's plan"):
            await open_episode_env(given, bench, stack, None)
