"""ToolHop as an ``evals run`` plugin: the paper's three modes, two feedback levels, its metrics.

Strategies (``--strategy``):

* ``direct``: no tools; the model answers from its own knowledge (no MCP session is opened);
* ``forced``: the model must call a tool on its first turn (``tool_choice="required"``), then
  chooses (``auto``), so that it can still give a final answer;
* ``free``: the model chooses from the first turn (``auto``);
* ``forced-minimal`` / ``free-minimal``: the same with the paper's "no detailed feedback"
  ablation: every failed call reads only ``Error: the tool call failed.``

The oracle (``--model oracle``) replays each task's gold chain (explicit or derived, see
:mod:`.chains`) through the MCP server, one call per turn, and answers with the
*real output of its last call*; it never sees the gold answer. Tasks without a chain are recorded
with ``outcome.gold_chain = null`` and no model turn, and the oracle's metrics cover only the tasks
with a chain (``scored_tasks``); ``tasks_with_gold_chain`` counts them. A real model is scored over
every task of the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.adapters.base import DEFAULT_PARAMS, GenerateParams
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
from server import BenchmarkMount
from tool_specs.sandbox import SandboxLimits, SandboxPool

from ...core.metrics import TaskScore
from ...core.plugin import BenchmarkInfo, EpisodeEnv
from .answers import answer_correct
from .chains import Chain, chains_cache_path, gold_chains
from .feedback import Feedback
from .files import STRATEGIES
from .metrics import task_score
from .tasks import ToolHopTask, data_path, dataset_in_use, load_tasks
from .tools import ToolHopCatalog

if TYPE_CHECKING:
    from client.runs import EpisodeRecorder

    from ...core.scoring import ScoreContext


SYSTEM_PROMPT = (
    "You answer multi-hop questions with the tools you are given. Break the question into steps, "
    "call one tool per step and use each result in the next call. When you know the answer, reply "
    "without calling a tool and end with a line 'Final answer: <answer>' (just the answer: a number, "
    "a name, a word or a date)."
)
DIRECT_PROMPT = (
    "Answer the multi-hop question from your own knowledge; no tools are available. Think step by "
    "step, then end with a line 'Final answer: <answer>' (just the answer: a number, a name, a word "
    "or a date)."
)


class LastOutputOracle(OracleAdapter):
    """The oracle for ToolHop: plays the gold chain, then answers ``Final answer: <the text of the
    last tool result it received>``, so a correct answer proves the real tools chained."""

    async def complete(
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> ModelResponse:
        last = next((m for m in reversed(messages) if isinstance(m, ToolResultMessage)), None)
        self.final = f"Final answer: {last.content}" if last is not None else "Final answer: (no tool was called)"
        return await super().complete(messages, tools, tool_choice, params)


def split_strategy(strategy: str) -> tuple[str, Feedback]:
    """``"forced-minimal"`` -> ``("forced", "minimal")``; ``"free"`` -> ``("free", "detailed")``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"toolhop has no strategy {strategy!r}; available: {', '.join(STRATEGIES)}")
    mode, _, feedback = strategy.partition("-")
    return mode, ("minimal" if feedback == "minimal" else "detailed")


class ToolHopBenchmark:
    """ToolHop (see the module docstring)."""

    def __init__(self, info: BenchmarkInfo, options: Mapping[str, Any]) -> None:
        self.info = info
        self.name = info.name
        self.dataset = dataset_in_use(options.get("dataset", "auto"))
        # the run's config records the file used, not "auto"
        self.options: Mapping[str, Any] = {**options, "dataset": "full" if self.dataset == "full" else "subset"}
        results = str(options.get("results_file") or "").strip()
        # an official output file scored alone (see .official): no dataset is read
        self.results_file = Path(results).expanduser() if results else None
        self.result_keys: dict[str, bool] = {}  # task key -> divides (one of the 995 the official scripts divide by)
        self.result_lines = 0
        if self.results_file is not None:
            from .official import FULL_SET, read_output_file

            keys = [r.key for r in read_output_file(self.results_file)]
            self.result_keys = {key: n < FULL_SET for n, key in enumerate(keys)}
            self.result_lines = len(keys)
            k = 0
            while len(self.result_keys) < FULL_SET:  # placeholders, named apart from the file's own keys
                k += 1
                self.result_keys.setdefault(f"unreported-{k}", True)
        # read on first use: scoring an official output file alone needs no dataset
        self._tasks: dict[str, ToolHopTask] | None = {} if self.results_file is not None else None
        self._chains: dict[str, Chain] | None = None
        self._pool: SandboxPool | None = None
        self._known_ids: set[str] | None = None
        self._view_chains: dict[str, Chain] | None = None

    @property
    def tasks(self) -> dict[str, ToolHopTask]:
        if self._tasks is None:
            self._tasks = {t.id: t for t in load_tasks(self.dataset)}
        return self._tasks

    def task_ids(self) -> list[str]:
        return list(self.result_keys) if self.results_file is not None else list(self.tasks)

    def check(self, strategy: str, *, own_server: bool) -> None:
        if self.results_file is not None:
            raise ValueError(f"--results-file scores an official output file alone; a run needs the dataset: leave it "
                             f"out (it is {self.results_file})")
        split_strategy(strategy)

    def chains(self) -> dict[str, Chain]:
        """Gold chains (explicit, then derived unless ``--no-derive-chains``; derivation runs tools in
        the sandbox once and is cached under ``$EVALS_CACHE_DIR``)."""
        if self._chains is None:
            derive = bool(self.options.get("derive_chains", True))
            if self._pool is not None or not derive:
                self._chains = gold_chains(list(self.tasks.values()), self._pool, derive=derive)
            else:  # no server in this process (e.g. --server-process): a pool of our own, same isolation
                with self._new_pool(2) as pool:
                    self._chains = gold_chains(list(self.tasks.values()), pool, derive=derive)
        return self._chains

    def _new_pool(self, size: int) -> SandboxPool:
        """A sandbox pool; without kernel namespaces it refuses to start unless the user passed
        ``--unsafe-sandbox-without-namespaces`` (then it warns)."""
        return SandboxPool(size, limits=SandboxLimits(),
                           allow_unsafe=bool(self.options.get("unsafe_sandbox_without_namespaces", False)))

    def mounts(
        self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *, strategy: str
    ) -> list[BenchmarkMount]:
        _, feedback = split_strategy(strategy)
        pool = self._new_pool(int(self.options.get("sandbox_workers", 4)))
        stack.callback(pool.close)
        self._pool = pool
        catalog = ToolHopCatalog(self.name, list(self.tasks.values()), feedback=feedback, pool=pool)
        return [BenchmarkMount(catalog=catalog)]

    def data_files(self) -> list[Path]:
        if self.results_file is not None:
            return [self.results_file]
        return [data_path(self.dataset)]

    def summary_extras(self, config: Mapping[str, Any]) -> dict[str, Any]:
        if self.results_file is not None:
            from .official import FULL_SET

            lines = self.result_lines
            return {"scored_from": "results_file", "full_set": lines == FULL_SET, "dataset_note": (
                f"scored from the official output file alone, as evaluation_closed.py scores it: {lines} lines over "
                f"the {FULL_SET} queries it always divides by; official_result is its printed Result, "
                f"official_answer_rule its sample_process rule re-applied to every line")}
        if self.dataset == "full":
            return {"dataset": self.dataset}
        return {"dataset": self.dataset, "full_set": False,
                "dataset_note": f"the {len(self.tasks)}-query subset, not the paper's 995 queries: not comparable with "
                                "its numbers (`evals data fetch toolhop` fetches the full file)"}

    async def prepare(self, env: EpisodeEnv) -> None:
        if env.is_oracle:
            import asyncio

            await asyncio.to_thread(self.chains)

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        task = self.tasks[task_id]
        mode, _ = split_strategy(env.opts.chosen_strategy)
        info = {"hops": task.hop_count, "domain": task.domain}
        adapter = env.shared
        if env.is_oracle:
            chain = self.chains().get(task_id)
            info["gold_chain"] = chain.source if chain else None
            if chain is None:
                recorder.note("no gold chain for this task: the oracle does not play it")
                return EpisodeOutcome(final_answer=None, data={"calls": [], "stop": "no_gold_chain", **info})
            steps = chain.steps() if mode != "direct" else []
            adapter = env.wrap(LastOutputOracle(steps, task_id=task_id, turn_latency_s=env.oracle_latency))
        assert adapter is not None
        if mode == "direct":
            return await self._direct(env, adapter, task, recorder, info)
        first: ToolChoice = "required" if mode == "forced" else "auto"
        cfg = dataclasses.replace(
            env.agent_cfg, system_prompt=env.agent_cfg.system_prompt or SYSTEM_PROMPT,
            tool_choice=first, later_tool_choice="auto",
        )
        async with env.session(self.name, task_id) as session:
            outcome = await run_agent(adapter, session, task.question, recorder, cfg)
        outcome.data.update(info)
        return outcome

    async def _direct(self, env: EpisodeEnv, adapter: Any, task: ToolHopTask, recorder: EpisodeRecorder,
                      info: dict[str, Any]) -> EpisodeOutcome:
        """One model turn without tools (no MCP session)."""
        cfg = dataclasses.replace(env.agent_cfg, system_prompt=env.agent_cfg.system_prompt or DIRECT_PROMPT,
                                  tool_choice="none")
        outcome = await run_agent(adapter, None, task.question, recorder, cfg)
        outcome.data.update(info)
        return outcome

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        task = self.tasks.get(str(trace.get("task_id")))
        if task is None or trace.get("status") != "completed":
            return None
        if (trace.get("outcome") or {}).get("stop") == "no_gold_chain":
            return None
        return float(answer_correct(trace.get("final_answer"), task.answer))

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        """The paper's metrics of one task. For oracle runs a task without a gold chain
        (``outcome.stop == "no_gold_chain"``) is left out of every metric; ``tasks_with_gold_chain``
        counts the others (for a real model: the tasks with an explicit or already derived chain)."""
        if self.results_file is not None:
            return self._official_score(task_id, trace)
        task = self.tasks.get(task_id)
        if task is None:
            raise ValueError(f"the run has a task id that is not in ToolHop ({self.dataset}): {task_id!r}")
        oracle = str(ctx.config.get("model", "")).partition(":")[0] == "oracle"
        if oracle:
            if trace is None or trace.get("status") != "completed":
                scored = task_id in self._known()  # an oracle episode that failed still counts (as wrong)
            else:
                scored = (trace.get("outcome") or {}).get("stop") != "no_gold_chain"
            if not scored:
                return TaskScore()
            return task_score(task, trace, has_chain=True)
        return task_score(task, trace, has_chain=task_id in self._known())

    def _official_score(self, task_id: str, trace: Mapping[str, Any] | None) -> TaskScore:
        """A line of an official output file (or an unreported placeholder): the printout's and the rule's samples."""
        weight = 1.0 if self.result_keys.get(task_id, True) else 0.0
        done = trace is not None and trace.get("status") == "completed"
        official = ((trace.get("outcome") or {}).get("official") or {}) if done and trace is not None else {}
        score = TaskScore()
        score.add("official_result", float(official.get("recorded") or 0.0), weight)
        score.add("official_answer_rule", float(official.get("rule") == 1), weight)
        score.details["official"] = official
        return score

    def formats(self) -> list[Any]:
        from .export import official_format

        return [official_format()]

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: each hop's gold call beside the predicted one, the gold answer beside the final one."""
        from .chains import derive_chains
        from .view import episode_sections

        task = self.tasks[task_id]
        if self._view_chains is None:  # explicit chains, and the derived ones already cached (no tool is run here)
            tasks = list(self.tasks.values())
            derived = derive_chains(tasks) if chains_cache_path(tasks).is_file() else {}
            self._view_chains = {**derived, **gold_chains(tasks, derive=False)}
        chain = self._view_chains.get(task_id)
        return episode_sections(task, chain.calls if chain else None, chain.source if chain else None, trace)

    def _known(self) -> set[str]:
        """Task ids with an explicit chain, or a derived one already in the cache (no derivation
        is run while scoring); read once."""
        if self._known_ids is None:
            ids = {t.id for t in self.tasks.values() if t.gold_calls}
            path = chains_cache_path(list(self.tasks.values()))
            if path.is_file():
                import json

                ids |= set(json.loads(path.read_text()))
            self._known_ids = ids
        return self._known_ids
