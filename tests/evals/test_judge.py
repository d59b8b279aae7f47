"""The judge goes through what the model goes through: retries of transient failures, its own rate
limiter, a cache of decisions; and ``evals run NAME --help`` shows the judge only where a benchmark
uses it, with each benchmark's own options and no other's."""

from __future__ import annotations

import pytest
from fake_providers import FakeProviderServer, openai_chat, openai_error

from client.adapters.openai_adapter import OpenAIAdapter
from client.cache import ResponseCache
from client.ratelimit import RateLimiter
from client.retry import RetryPolicy
from evals import cli
from evals.core.judge import LLMJudge

ARGS = ("book it", {"name": "BookHouse"}, {"name": "BookHouse", "arguments": {"where_to": "Paris"}},
        {"name": "BookHouse", "arguments": {"where_to": "paris"}})


async def test_the_judge_retries_a_transient_failure_and_caches_the_decision(tmp_path):
    with FakeProviderServer() as server:
        server.openai.script(openai_error(503, "overloaded"), openai_chat("Same house.\nEQUIVALENT", usage=(100, 5)))
        adapter = OpenAIAdapter("judge", base_url=server.openai_base_url, api_key="k")
        cache = ResponseCache(tmp_path / "judge.sqlite")
        judge = LLMJudge(adapter, cache, retry=RetryPolicy(max_attempts=3, base_delay=0.01))
        first = await judge.decide(*ARGS)
        again = await judge.decide(*ARGS)
        await adapter.aclose()
        cache.close()
    assert first.equivalent and not first.cached and first.input_tokens == 100
    assert again.cached and again.cost_usd == 0.0
    assert len(server.openai.requests) == 2  # the 503, then the answer; the cache answered the rest


async def test_the_judge_waits_for_its_rate_limit():
    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:  # a clock of its own: no wall-clock assertion
        slept.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(120, burst_seconds=0.5, clock=lambda: now[0], sleep=sleep, name="judge")  # 1 per 0.5 s
    with FakeProviderServer() as server:
        server.openai.respond_with(lambda body: openai_chat("EQUIVALENT", usage=(10, 1)))
        adapter = OpenAIAdapter("judge", base_url=server.openai_base_url, api_key="k")
        judge = LLMJudge(adapter, limiter=limiter)
        for i in range(3):
            await judge.decide("q", {"name": "t"}, {"name": "t", "arguments": {"x": i}}, {"name": "t", "arguments": {"x": -i}})
        await adapter.aclose()
    assert len(server.openai.requests) == 3
    assert sum(slept) == pytest.approx(1.0, abs=0.05)  # the 2nd and 3rd request each waited for a slot


@pytest.mark.parametrize("name, own, other", [
    ("familytool-b", ["--kg-search", "--inductive", "--judge"], ["--dataset", "--derive-chains"]),
    ("toolhop", ["--dataset", "--derive-chains"], ["--kg-search", "--inductive", "--judge", "--allow-writes"]),
])
def test_run_help_lists_the_benchmarks_own_options_only(name, own, other, capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run", name, "--help"])
    shown = capsys.readouterr().out
    assert all(flag in shown for flag in own) and not any(flag in shown for flag in other)
    assert "--model" in shown and "--max-consecutive-errors" in shown  # the core's flags
