"""ToolHop as an ``evals run`` plugin: the paper's three modes, two feedback levels, its metrics.

Strategies (``--strategy``):

* ``direct``: no tools; the model answers from its own knowledge (no MCP session is opened);
* ``forced``: the model must call a tool on its first turn (``tool_choice="required"``), then
  chooses (``auto``), so that it can still give a final answer;
* ``free``: the model chooses from the first turn (``auto``);
* ``forced-minimal`` / ``free-minimal``: the same with the paper's "no detailed feedback"
  ablation: every failed call reads only ``Error: the tool call failed.``

The oracle (``--model oracle``) replays each task's gold chain (explicit or derived, see
:mod:`evals.benchmarks.toolhop`) through the MCP server, one call per turn, and answers with the
*real output of its last call*; it never sees the gold answer. Tasks without a chain are recorded
with ``outcome.gold_chain = null`` and no model turn, and the oracle's metrics cover only the tasks
with a chain (``scored_tasks``); ``tasks_with_gold_chain`` counts them. A real model is scored over
every task of the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from client.adapters.oracle import OracleAdapter
from client.agent import run_agent
from client.messages import (
    Message,
    ModelResponse,
    ToolChoice,
    ToolDef,
    ToolResultMessage,
)
from client.runs import EpisodeOutcome
from tool_specs.sandbox import SandboxLimits, SandboxPool

from . import toolhop as th
from .base import EpisodeEnv

if TYPE_CHECKING:
    from client.runs import EpisodeRecorder
    from server import ToolServer

    from ..pipeline import RunOptions

STRATEGIES = ("free", "forced", "direct", "free-minimal", "forced-minimal")


class LastOutputOracle(OracleAdapter):
    """The oracle for ToolHop: plays the gold chain, then answers ``Final answer: <the text of the
    last tool result it received>``, so a correct answer proves the real tools chained."""

    async def complete(
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto", *,
        max_tokens: int | None = None, temperature: float | None = None,
    ) -> ModelResponse:
        last = next((m for m in reversed(messages) if isinstance(m, ToolResultMessage)), None)
        self.final = f"Final answer: {last.content}" if last is not None else "Final answer: (no tool was called)"
        return await super().complete(messages, tools, tool_choice, max_tokens=max_tokens, temperature=temperature)


def split_strategy(strategy: str) -> tuple[str, th.Feedback]:
    """``"forced-minimal"`` -> ``("forced", "minimal")``; ``"free"`` -> ``("free", "detailed")``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"toolhop has no strategy {strategy!r}; available: {', '.join(STRATEGIES)}")
    mode, _, feedback = strategy.partition("-")
    return mode, ("minimal" if feedback == "minimal" else "detailed")


class ToolHopPlugin:
    strategies = STRATEGIES
    default_strategy = "free"

    def __init__(self, name: str = th.NAME) -> None:
        self.name = name
        self.dataset = th.dataset_in_use()
        self.tasks = {t.id: t for t in th.load_tasks(self.dataset)}
        self._chains: dict[str, th.Chain] | None = None
        self._pool: SandboxPool | None = None

    def task_ids(self) -> list[str]:
        return list(self.tasks)

    def chains(self) -> dict[str, th.Chain]:
        """Gold chains (explicit, then derived; derivation runs tools in the sandbox once and is
        cached under ``$EVALS_CACHE_DIR``). ``EVALS_TOOLHOP_DERIVE=0`` keeps the explicit ones only."""
        if self._chains is None:
            derive = os.environ.get("EVALS_TOOLHOP_DERIVE", "1") != "0"
            self._chains = th.gold_chains(list(self.tasks.values()), self._pool, derive=derive)
        return self._chains

    def build_server(self, opts: RunOptions, stack: contextlib.AsyncExitStack) -> ToolServer:
        from server import BenchmarkMount, ToolServer

        _, feedback = split_strategy(opts.strategy or self.default_strategy)
        pool = SandboxPool(max(2, min(8, opts.concurrency)), limits=SandboxLimits())
        stack.callback(pool.close)
        self._pool = pool
        catalog = th.ToolHopCatalog(self.name, list(self.tasks.values()), feedback=feedback, pool=pool)
        return ToolServer([BenchmarkMount(catalog=catalog)])

    def result_options(self, opts: RunOptions) -> Mapping[str, Any]:
        mode, feedback = split_strategy(opts.strategy or self.default_strategy)
        return {"dataset": self.dataset, "mode": mode, "feedback": feedback}

    async def prepare(self, env: EpisodeEnv) -> None:
        if env.is_oracle:
            import asyncio

            await asyncio.to_thread(self.chains)

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        task = self.tasks[task_id]
        mode, _ = split_strategy(env.opts.strategy or self.default_strategy)
        info = {"hops": task.hop_count, "domain": task.domain}
        adapter = env.adapter
        if env.is_oracle:
            chain = self.chains().get(task_id)
            info["gold_chain"] = chain.source if chain else None
            if chain is None:
                recorder.note("no gold chain for this task: the oracle does not play it")
                return EpisodeOutcome(final_answer=None, data={"calls": [], "stop": "no_gold_chain", **info})
            steps = chain.steps() if mode != "direct" else []
            adapter = LastOutputOracle(steps, task_id=task_id, turn_latency_s=env.oracle_latency)
        assert adapter is not None
        if mode == "direct":
            return await self._direct(env, adapter, task, recorder, info)
        first: ToolChoice = "required" if mode == "forced" else "auto"
        cfg = dataclasses.replace(
            env.agent_cfg, system_prompt=env.agent_cfg.system_prompt or th.SYSTEM_PROMPT,
            tool_choice=first, later_tool_choice="auto",
        )
        async with env.session(self.name, task_id) as session:
            outcome = await run_agent(adapter, session, task.question, recorder, cfg, limiter=env.limiter)
        outcome.data.update(info)
        return outcome

    async def _direct(self, env: EpisodeEnv, adapter: Any, task: th.ToolHopTask, recorder: EpisodeRecorder,
                      info: dict[str, Any]) -> EpisodeOutcome:
        """One model turn without tools (no MCP session)."""
        cfg = dataclasses.replace(env.agent_cfg, system_prompt=env.agent_cfg.system_prompt or th.DIRECT_PROMPT,
                                  tool_choice="none")
        outcome = await run_agent(adapter, None, task.question, recorder, cfg, limiter=env.limiter)
        outcome.data.update(info)
        return outcome

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        task = self.tasks.get(str(trace.get("task_id")))
        if task is None or trace.get("status") != "completed":
            return None
        if (trace.get("outcome") or {}).get("stop") == "no_gold_chain":
            return None
        return float(th.answer_correct(trace.get("final_answer"), task.answer))

    def summarize(self, traces: Mapping[str, Mapping[str, Any]], task_ids: list[str], config: Mapping[str, Any]) -> dict[str, Any]:
        """Metrics from the traces and the task data alone (nothing is run). For oracle runs the
        tasks without a gold chain (``outcome.stop == "no_gold_chain"``) are left out of every
        metric; ``tasks_with_gold_chain`` counts the others."""
        oracle = str(config.get("model", "")).partition(":")[0] == "oracle"
        ids = [t for t in task_ids if t in self.tasks]
        unknown = [t for t in task_ids if t not in self.tasks]
        if unknown:
            raise ValueError(f"the run has task ids that are not in ToolHop ({self.dataset}): {unknown[:5]}")

        known = self._explicit_or_cached()

        def has_chain(tid: str) -> bool:
            trace = traces.get(tid)
            if trace is None or trace.get("status") != "completed":
                return tid in known  # an oracle episode that failed still counts (as wrong)
            return (trace.get("outcome") or {}).get("stop") != "no_gold_chain"

        scored = [t for t in ids if has_chain(t)] if oracle else ids
        scores = {t: th.score_trace(self.tasks[t], traces.get(t)) for t in scored}
        overall = th.metrics(list(scores.values()))
        with_chain = len(scored) if oracle else sum(1 for t in ids if t in known)
        metrics = {k: overall[k] for k in th.METRIC_KEYS}
        metrics["tasks_with_gold_chain"] = with_chain
        metrics["scored_tasks"] = len(scored)
        metrics["calls"] = overall["calls"]
        breakdowns: dict[str, dict[str, Any]] = {"hops": {}, "domain": {}}
        for key, group in (("hops", lambda t: str(t.hop_count)), ("domain", lambda t: t.domain.strip().lower() or "?")):
            buckets: dict[str, list[th.TaskScore]] = {}
            for tid in scored:
                buckets.setdefault(group(self.tasks[tid]), []).append(scores[tid])
            order = sorted(buckets, key=lambda k: (int(k) if k.isdigit() else 0, k))
            for name in order:
                m = th.metrics(buckets[name])
                breakdowns[key][name] = {"tasks": m["tasks"], **{k: m[k] for k in th.METRIC_KEYS}}
        return {"metrics": metrics, "breakdowns": breakdowns, "dataset": self.dataset}

    def _explicit_or_cached(self) -> set[str]:
        """Task ids with an explicit chain, or a derived one already in the cache (no derivation
        is run while scoring)."""
        ids = {t.id for t in self.tasks.values() if t.gold_calls}
        path = th.chains_cache_path(list(self.tasks.values()))
        if path.is_file():
            import json

            ids |= set(json.loads(path.read_text()))
        return ids
