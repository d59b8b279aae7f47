"""The settings of ``evals run``: the core's, plus the benchmark's own (``benchmark_options``).

A :class:`RunOptions` is frozen: what the command line gives is one value, and the run resolves it
into its plan (:func:`evals.core.run.prepare_layout`, :func:`~evals.core.run.prepare_benchmark`: the
transport, the worker count, the strategy and the benchmark's options filled in) as new values made
with :func:`dataclasses.replace`, never by changing one in place. The run, its workers and the
run's ``config.json`` all read the plan; nothing derives a setting a second time.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .options import Option

__all__ = ["TRACE_MAX_VALUE_BYTES", "RunOptions"]

TRACE_MAX_VALUE_BYTES = 1_048_576
"""``--trace-max-value-bytes``' default: 1 MiB, far above any value the benchmarks' tasks produce."""


@dataclass(frozen=True)
class RunOptions:
    """Everything ``evals run`` takes. ``benchmark_options`` are the benchmark's own (validated).
    Frozen (the module docs): a resolved value is a new one."""

    benchmark: str
    model: str
    strategy: str | None = None  # None: the benchmark's default strategy
    limit: int | None = None
    task_ids: Sequence[str] | None = None  # only these tasks (evals.core.selection)
    sample: int | None = None  # a random sample of this many tasks, drawn with ``sample_seed``
    sample_seed: int = 0
    concurrency: int = 4
    run_dir: Path | None = None
    server_url: str | None = None
    server_token: str | None = None
    # how sessions reach the server: memory | http | stdio (evals.core.transport); None: the fastest
    # for the run's server (memory for one the run starts itself, http otherwise). Results do not
    # depend on it; the run's config records the one used (run.transport)
    transport: str | None = None
    # worker processes the episodes are split over (each with its own event loop, MCP client and
    # tool server); the parent keeps the run directory, progress, rate limits, budget and breaker.
    # None: what the machine can use (evals.core.run.resolve_workers); the config records the number
    workers: int | None = None
    # where the workers run: local (child processes of this one; 1 worker: this process) | ray (Ray
    # actors, one per worker, on a local head or the cluster at ray_address; evals.core.ray_executor).
    # Results do not depend on it
    executor: str = "local"
    ray_address: str | None = None  # an existing Ray cluster (auto, ray://host:10001); None: a local head
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
    # write events.jsonl (every event as it happens: a debugging aid for a run that hangs or is killed);
    # off by default: traces.jsonl holds every fact of a finished episode, once (issue 50)
    event_log: bool = False
    adapter_options: Mapping[str, Any] = field(default_factory=dict)
    judge_model: str | None = None  # the LLM matcher (benchmarks that use one)
    judge_rpm: float | None = None
    judge_tpm: float | None = None
    cache: Path | None = None  # response cache (sqlite) keyed by the exact request
    # what a trace keeps of one string value (a tool-call argument, a tool result...), in bytes; a
    # longer one is cut and marked with its length (client._runs.sharing). 0/None: no cap. It can change
    # scores (a scorer reads the kept value), so it is one of the result options
    trace_max_value_bytes: int | None = TRACE_MAX_VALUE_BYTES
    benchmark_options: Mapping[str, Any] = field(default_factory=dict)
    # trials per task (evals.core.epochs): each its own episode and trace; the papers' metrics stay
    # the first trial's. In the config's run settings, not the result config: a run can be extended
    # to more epochs by running it again with a larger value
    epochs: int = 1

    @property
    def chosen_strategy(self) -> str:
        """The plan's strategy (:func:`~evals.core.run.prepare_benchmark` sets it): what an episode
        and the run's tool server read. ``ValueError`` for options not resolved into a plan."""
        if self.strategy is None:
            raise ValueError("these run options are not a run's plan (no strategy): resolve them with "
                             "evals.core.run.prepare_options")
        return self.strategy

    def for_worker(self) -> RunOptions:
        """The plan as one worker process (or Ray actor) runs it: its episodes in its own loop, no progress bar."""
        return replace(self, workers=1, progress=False, executor="local", ray_address=None)

    def as_dict(self) -> dict[str, Any]:
        """Every option as a JSON value (paths as strings): the run's config records them so."""
        return {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(self).items()}

    def encode(self) -> str:
        """These options as one line of JSON, for a child process (:meth:`decode` reads it back)."""
        return json.dumps(self.as_dict())

    @classmethod
    def decode(cls, line: str) -> RunOptions:
        """Options from :meth:`encode`'s line; raises ValueError on a field this version does not have."""
        data = json.loads(line)
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"unknown run options {unknown}: the parent and the child run different versions")
        for key in ("run_dir", "cache"):
            if data.get(key) is not None:
                data[key] = Path(data[key])
        return cls(**data)

    def result_config(self, declared: Sequence[Option] = (), *, uses_judge: bool = False) -> dict[str, Any]:
        """The part of the config that changes results (a resumed run must match it): the core's
        settings and every ``declared`` benchmark option that affects results."""
        options: dict[str, Any] = {
            "max_turns": self.max_turns,
            "tool_choice": self.tool_choice,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "base_url": self.base_url,
            "model_args": dict(self.adapter_options),
            "trace_max_value_bytes": self.trace_max_value_bytes or 0,
        }
        if uses_judge:
            options["judge_model"] = self.judge_model
        for o in declared:
            if o.affects_results:
                options[o.name] = self.benchmark_options.get(o.name, o.default)
        return {"benchmark": self.benchmark, "model": self.model, "strategy": self.strategy, "options": options}
