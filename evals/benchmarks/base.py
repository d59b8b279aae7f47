"""What a benchmark provides to ``evals run`` / ``evals score`` / ``evals report``.

``evals.pipeline`` is benchmark-neutral: it starts (or reaches) the MCP server, opens the run
directory, makes the model adapter and drives the runner. A benchmark plugin supplies the rest:

* which tasks exist and which strategies it supports;
* the tool server to start in-process for a strategy (``build_server``);
* optional one-off preparation over MCP before the episodes (``prepare``);
* one episode (``episode``), using the :class:`EpisodeEnv` it is handed;
* scoring from traces alone (``summarize``), so ``evals score`` reproduces ``evals run``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcp import Client

    from client.adapters.base import ModelAdapter
    from client.agent import AgentConfig
    from client.mcp_session import HTTPClientPool
    from client.ratelimit import RateLimiter
    from client.runs import EpisodeOutcome, EpisodeRecorder
    from server import ToolServer

    from ..pipeline import RunOptions


@dataclass
class EpisodeEnv:
    """Everything an episode needs that the pipeline owns (one per run)."""

    opts: RunOptions
    base_url: str
    http: HTTPClientPool  # each session borrows an HTTP client of its own
    agent_cfg: AgentConfig
    adapter: ModelAdapter | None = None  # the shared model; None when the model is the oracle
    oracle_latency: float = 0.0
    limiter: RateLimiter | None = None
    extra_adapters: dict[str, ModelAdapter] = field(default_factory=dict)  # e.g. "kg": a step-1 model
    judge: Any = None  # an evals.matching.LLMJudge when --judge was given

    @property
    def is_oracle(self) -> bool:
        return self.adapter is None

    def model(self, task_id: str, oracle_steps: list[list[dict[str, Any]]], final_answer: str | None = None) -> ModelAdapter:
        """The model for one episode: the shared adapter, or an oracle scripted with the gold steps."""
        if self.adapter is not None:
            return self.adapter
        from client.adapters.oracle import OracleAdapter

        return OracleAdapter(oracle_steps, final_answer, task_id=task_id, turn_latency_s=self.oracle_latency)

    def url(self, benchmark: str, task_id: str | None = None) -> str:
        return f"{self.base_url}/mcp/{benchmark}" + (f"/{task_id}" if task_id else "")

    @contextlib.asynccontextmanager
    async def session(self, benchmark: str, task_id: str | None = None) -> AsyncIterator[Client]:
        """An MCP session at the task's endpoint (or the benchmark's playground).

        The URL names the session (``?session=<random id>``) so that the server keeps this
        episode's executor state (handles, replayed calls) apart from every other episode's.
        """
        import uuid

        from client.mcp_session import connect

        url = f"{self.url(benchmark, task_id)}?session={uuid.uuid4().hex}"
        async with self.http.borrow() as http, connect(url, http_client=http, discovery_key=self.base_url) as session:
            yield session


class BenchmarkPlugin(Protocol):
    """One benchmark as ``evals run`` sees it. See the module docstring."""

    name: str
    strategies: tuple[str, ...]
    default_strategy: str

    def task_ids(self) -> list[str]:
        """Every task id, in the benchmark's order (``--limit N`` takes the first N)."""
        ...

    def build_server(self, opts: RunOptions, stack: contextlib.AsyncExitStack) -> ToolServer:
        """The MCP tool server to run in-process for this run's strategy."""
        ...

    def result_options(self, opts: RunOptions) -> Mapping[str, Any]:
        """Strategy options that change results (stored in the run config; a resume must match)."""
        ...

    async def prepare(self, env: EpisodeEnv) -> None:
        """Run once before the episodes (e.g. extend the KG over MCP); may do nothing."""
        ...

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        """Run one task; ``outcome.data`` keeps what scoring needs."""
        ...

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        """0..1 score of one finished trace for the progress bar's running mean (None = n/a)."""
        ...

    def summarize(self, traces: Mapping[str, Mapping[str, Any]], task_ids: list[str], config: Mapping[str, Any]) -> dict[str, Any]:
        """Metrics from traces alone: ``{"metrics": {name: percent}, ...}`` plus any breakdowns.

        ``traces`` maps task id -> newest trace record; ``task_ids`` are the run's tasks (a task
        without a completed trace counts as a failure in every accuracy metric).
        """
        ...
