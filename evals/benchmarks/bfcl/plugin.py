"""BFCL as an ``evals run`` plugin: every selected entry served, run, checked and shown by its kind.

Strategies ``fc`` (function calling, as BFCL runs its ``-FC`` models) and ``prompting`` (BFCL's prompting
mode: :mod:`.prompting`, and for the entries of several steps :mod:`.prompting_turns`). Which kind holds a category is decided once (:mod:`.kinds`):
the single-turn entries (:mod:`.single_turn`, with the oracle's calls), the multi-turn ones
(:mod:`.multi_turn_episode`), the memory ones (:mod:`.memory_run`, ``memory_vector`` with a local
embedding model: :mod:`.memory_vector`), web search when named and a key is set (:mod:`.web_search`); the plugin hands every question
about an entry to its kind, and mounts one catalog of them all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.metrics import TaskScore
from ...core.plugin import BenchmarkInfo, EpisodeEnv
from .agentic import AgenticVerdict
from .checker import Verdict
from .data import verified_wheel
from .files import FORMAT_SENSITIVITY, MEMORY_SERVED, MEMORY_VECTOR, MULTI_TURN, SERVED, WEB_SEARCH
from .kinds import BfclCatalog, Kind, kinds_for
from .metrics import task_score
from .multi_turn import step_limit
from .single_turn import calls_from_trace, entry_verdict

if TYPE_CHECKING:
    from client.runs import EpisodeOutcome, EpisodeRecorder
    from server import BenchmarkMount

    from ...core.context import ScoreContext
    from ...core.formats import PredictionFormat
    from .web_search import WebSearchKind

__all__ = ["BfclBenchmark", "selected_categories"]

STRATEGIES = ("fc", "prompting")


def selected_categories(option: Any) -> tuple[str, ...]:
    """The categories a ``--category`` value selects (None or ``all``: every served one), in BFCL's order."""
    chosen = set(option or ["all"])
    every = SERVED + MEMORY_SERVED
    picked = every if "all" in chosen else tuple(c for c in every if c in chosen)
    web = tuple(c for c in WEB_SEARCH if c in chosen or "web_search" in chosen)  # only when named: they need a key
    vector = (MEMORY_VECTOR,) if MEMORY_VECTOR in chosen else ()  # only when named: it needs a local model
    return picked + vector + web + ((FORMAT_SENSITIVITY,) if FORMAT_SENSITIVITY in chosen else ())  # only when named


class BfclBenchmark:
    """BFCL v4's served categories (see the module docstring)."""

    def __init__(self, info: BenchmarkInfo, options: Mapping[str, Any]) -> None:
        self.info = info
        self.name = info.name
        self.options = options
        self.categories = selected_categories(options.get("category"))

    # The kinds and their entries are made when first asked for, not when the plugin is loaded: `evals score` of a
    # result folder loads it first only for its formats and strategies (every served category's entries: about
    # 0.1 s it does not need).
    @functools.cached_property
    def kinds(self) -> list[Kind]:
        return kinds_for(self.categories, self.name, self.options)

    @functools.cached_property
    def _kind(self) -> dict[str, Kind]:
        """An entry's kind; its keys are every selected entry, in BFCL's order."""
        return {task_id: kind for kind in self.kinds for task_id in kind.entries}

    @functools.cached_property
    def entries(self) -> dict[str, Any]:
        """Every selected entry, in BFCL's order."""
        return {task_id: entry for kind in self.kinds for task_id, entry in kind.entries.items()}

    def task_ids(self) -> list[str]:
        """Every selected entry in BFCL's order; with ``--limit-per-category N``, the first N of each category."""
        limit = self.options.get("limit_per_category")
        taken: dict[str, int] = {}
        out = []
        for entry in self.entries.values():
            taken[entry.category] = taken.get(entry.category, 0) + 1
            if limit is None or taken[entry.category] <= limit:
                out.append(entry.id)
        return out

    def summary_extras(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A run over the first N entries of each category is a subset, whatever the core's selection says."""
        limit = self.options.get("limit_per_category")
        if limit is None:
            return {}
        return {"benchmark_tasks": len(self.entries),
                "subset_note": f"the first {limit} entries of each category (--limit-per-category): not comparable "
                               "with BFCL's leaderboard (over every entry)"}

    def config_extras(self) -> dict[str, Any]:
        """BFCL's per-turn step limit (read from the wheel), when multi-turn entries run; web search's
        endpoint and that a key was set (never the key); memory_vector's model folder and its digest."""
        out = {"bfcl_step_limit": step_limit()} if any(c in MULTI_TURN for c in self.categories) else {}
        web = self._web()
        if web is not None:
            out.update(web.config_record())
        model = self._vector_model()
        if model:
            from .memory_vector import model_record

            out.update(model_record(model))
        return out

    def _web(self) -> WebSearchKind | None:
        """The web-search kind, when the run names web search (its module is imported only then)."""
        if not any(c in WEB_SEARCH for c in self.categories):
            return None
        from .web_search import WebSearchKind

        return next((k for k in self.kinds if isinstance(k, WebSearchKind)), None)

    def _vector_model(self) -> str | None:
        """memory_vector's model folder, handed to the holders' zygote (which loads it before forking), or None."""
        path = self.options.get("bfcl_embedding_model")
        if MEMORY_VECTOR not in self.categories or not path:
            return None
        from .memory_vector import MODEL_ENV

        os.environ[MODEL_ENV] = str(Path(path).resolve())  # a path, not a setting: the option is recorded
        return str(path)

    def check(self, strategy: str, *, own_server: bool) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"bfcl has no strategy {strategy!r}; available: {', '.join(STRATEGIES)}")
        web = self._web()
        if web is not None:
            web.check(strategy)
        if MEMORY_VECTOR in self.categories:
            from .memory_vector import unavailable_reason

            reason = unavailable_reason(self.options.get("bfcl_embedding_model"))
            if reason is not None:
                raise ValueError(f"BFCL category {MEMORY_VECTOR} is not served here: {reason}")
        if strategy == "prompting":
            from .prompting import refused_category

            for category in self.categories:
                reason = refused_category(category)
                if reason is not None:
                    raise ValueError(f"BFCL category {category!r} is not served with --strategy prompting: {reason}")
        elif FORMAT_SENSITIVITY in self.categories:
            raise ValueError(f"BFCL category {FORMAT_SENSITIVITY!r} runs with --strategy prompting only (BFCL runs it "
                             "only for prompting models and skips it for function-calling ones)")

    def mounts(self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *,
               strategy: str | None = None) -> list[BenchmarkMount]:
        from server import BenchmarkMount  # serving only: `evals score` imports no MCP code

        self._vector_model()  # before the catalog starts the holders' zygote
        return [BenchmarkMount(catalog=BfclCatalog(self.kinds, self.name))]

    def data_files(self) -> list[Path]:
        return [verified_wheel()]

    def task_query(self, task_id: str) -> str | None:
        return self.entries[task_id].query if task_id in self.entries else None

    async def prepare(self, env: EpisodeEnv) -> None:
        pass

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        return await self._kind[task_id].episode(env, task_id, recorder)

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        task_id = str(trace.get("task_id"))
        return float(self.verdict(task_id, trace).valid) if task_id in self._kind else None

    def verdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict | AgenticVerdict:
        return self._kind[task_id].verdict(task_id, trace)

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        if task_id not in self.entries:
            raise ValueError(f"the run has a task id that is not among its BFCL entries: {task_id!r}")
        errored = trace is None or trace.get("status") != "completed"
        return task_score(self.entries[task_id].category, await self._kind[task_id].averdict(task_id, trace),
                          errored=errored, entry_id=task_id)

    def formats(self) -> list[PredictionFormat]:
        """BFCL's own result files (``bfcl-official``, also named ``bfcl`` as issue 39 calls it, :mod:`.results`):
        read by ``evals score --format``, written by ``evals export``."""
        from .export import FORMAT, official_format

        official = official_format(calls_from_trace, self.options, entry_verdict)
        return [official, dataclasses.replace(official, name="bfcl", description=f"the same as {FORMAT}")]

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None,
                     score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: the entry as its kind shows it (a single-turn entry's possible answers beside
        the predicted calls, a multi-turn entry's turns, a memory question's answers and prerequisite
        conversations); nothing for an id the run does not hold."""
        kind = self._kind.get(task_id)
        return kind.view(task_id, trace, score) if kind is not None else []
