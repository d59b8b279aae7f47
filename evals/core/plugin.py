"""What a benchmark provides to ``evals serve``, ``evals run``, ``evals score`` and ``evals report``.

The core is benchmark-neutral: it starts (or reaches) the MCP server, opens the run directory, makes
the model adapters, drives the runner, scores the traces and aggregates the metrics. A benchmark is
one folder under ``evals/benchmarks/`` whose ``__init__`` lists :class:`BenchmarkInfo` entries (see
:mod:`evals.core.registry`); each entry names its plugin class as a string (``".plugin:ClassName"``,
imported only when the benchmark is used), and ``load()`` returns that class's :class:`Benchmark`
(``ClassName(info, options)``), which supplies:

* which tasks exist (``task_ids``; ``load`` gets the benchmark's options), checked settings (``check``);
* the endpoints it serves (``mounts``): the same call for ``evals serve`` and ``evals run``;
* optional one-off preparation over MCP before the episodes (``prepare``);
* one episode (``episode``) with the :class:`EpisodeEnv` it is handed;
* scoring, a phase of its own after the episodes (``score``: one task's trace to its metric
  samples; it may ask the judge, whose decisions are stored with the scores), re-runnable offline.

Its metrics are declared (:class:`~evals.core.metrics.Metric`) and aggregated by the core.

Optional methods (looked up with ``getattr``; a benchmark without them loses only that feature):

* ``formats() -> Sequence[PredictionFormat]``: the prediction formats it can write (``evals export
  RUN_DIR --format NAME``) and read (``evals score PATH --format NAME --benchmark B``), e.g. its
  official scripts' input files (see :mod:`evals.core.formats`);
* ``summary_extras(config) -> dict``: extra keys for the run's summary;
* ``config_extras() -> dict``: extra keys for the run's ``config.json`` (what the benchmark read from
  outside its options, e.g. a digest of an environment variable it used; never a secret's value);
* ``run_dir_part() -> str``: a folder between the benchmark's and the model's in the default run
  directory (a benchmark defined by a file names the file, so that two files get two runs);
* ``episode_view(task_id, trace, score) -> list[dict]``: the benchmark's own sections of an episode in
  ``evals view`` (gold beside predicted calls with the matcher's decision, a KG path, placeholder
  handles, replayed responses...), built with :mod:`evals.core.episode_view`; without it the viewer
  shows the transcript and the scores alone;
* ``prompts() -> Sequence[server.PromptSpec]``: its published prompts, offered to MCP clients as
  prompts (``prompts/list``, ``prompts/get``) on its endpoints; the texts come from where the
  benchmark keeps them for its runs (default: none);
* ``task_query(task_id) -> str | None``: a task's query as a user would see it, never its answer,
  served as the ``task://<benchmark>/<task_id>`` resource of the task's endpoint (default: no such
  resource). Both are attached to every mount the benchmark returns (:func:`attach_surface`).
"""

from __future__ import annotations

import contextlib
import importlib
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .metrics import Metric, TaskScore
from .options import Option

if TYPE_CHECKING:
    from mcp import Client

    from client.adapters.base import ModelAdapter
    from client.agent import AgentConfig
    from client.model import Model
    from client.ratelimit import RateLimiter
    from client.runs import EpisodeOutcome, EpisodeRecorder
    from server import BenchmarkMount

    from .context import ScoreContext
    from .data import RemoteFile
    from .run_options import RunOptions
    from .transport import Sessions

__all__ = ["Benchmark", "BenchmarkInfo", "EpisodeEnv", "PaperNumbers", "attach_surface"]


#: what ``BenchmarkInfo.plugin`` holds: a module (relative to the benchmark's package with a leading
#: dot), a colon and the class's name
PLUGIN_REF = re.compile(r"\.*[A-Za-z_][\w.]*:[A-Za-z_]\w*")


@dataclass(frozen=True)
class PaperNumbers:
    """A benchmark's published numbers (``paper_numbers.yaml``) and how a run's settings map onto
    the papers' (``setting(summary)``: e.g. ``{"dataset": ..., "strategy": ..., "feedback": ...}``).

    ``evals report`` (:mod:`evals.report.paper`) shows a run beside the rows of its *setting*: rows
    whose ``dataset`` is the run's, that state a ``strategy`` equal to the run's, and none of whose
    other setting keys disagrees with what the run states (a key the run or the row does not state
    takes its value in ``defaults``; one with no default is not compared, e.g. a table's ``step``). Values
    are compared case-insensitively after ``synonyms`` (e.g. ``{"mandatory": "forced"}``).

    ``model_keys`` name setting keys whose values are model names (e.g. another model for a first
    step), matched through the file's ``model_aliases``: a row states one only when that model is
    not the row's own model; a run whose value is another model than its own takes the rows that
    state that model and the plain rows of that model itself.
    """

    setting: Callable[[Mapping[str, Any]], dict[str, Any]]
    main_metric: str
    path: Path | None = None  # None: the paper_numbers.yaml beside the benchmark's __init__ (set by the registry)
    model_keys: tuple[str, ...] = ()  # setting keys whose values are model names (matched by alias)
    defaults: Mapping[str, Any] = field(default_factory=dict)  # what a run that does not state a key ran with
    synonyms: Mapping[str, str] = field(default_factory=dict)  # setting value -> the value it means (lowercase)
    # setting keys that split the rows like the dataset does (e.g. a test set's language): a run never
    # meets a row whose value differs from its own, not even among "other settings"
    separate: tuple[str, ...] = ()


@dataclass(frozen=True)
class BenchmarkInfo:
    """A benchmark as the registry knows it before its data is loaded (names, options, help).

    ``plugin`` names the class of the loaded benchmark, ``"module:ClassName"`` (a leading dot: a module
    of the package that declares the entry, e.g. ``".plugin:ArithBenchmark"``); it is imported by
    :meth:`load` only, so declaring a benchmark stays cheap. ``package`` is set by the registry."""

    name: str
    plugin: str
    description: str = ""  # "": the first paragraph of the declaring package's docstring (set by the registry)
    strategies: tuple[str, ...] = ("agent",)
    default_strategy: str = ""  # "": the first of ``strategies``
    options: tuple[Option, ...] = ()
    metrics: tuple[Metric, ...] = ()
    uses_judge: bool = False  # takes --judge (the LLM matcher)
    data_sources: Mapping[str, tuple[RemoteFile, ...]] = field(default_factory=dict)  # `evals data fetch NAME`
    # the (source, file) pairs a run with these options lacks under the data directory; None: every
    # file of ``data_sources`` that is not there
    needed_files: Callable[[Mapping[str, Any], Path], list[tuple[str, RemoteFile]]] | None = None
    paper_numbers: PaperNumbers | None = None
    stats: Callable[[], dict[str, Any]] | None = None  # `evals data stats NAME`
    # summary blocks renamed since an earlier summary schema: old name -> the block it is now. The
    # summary repeats the block under its old name for one schema version (see ``deprecated_blocks``).
    block_aliases: Mapping[str, str] = field(default_factory=dict)
    # the main-block metric that is a task's pass/fail outcome (pass@k, pass^k over --epochs trials);
    # None: the paper's main metric when it is 0/1 per task, else the first such metric
    pass_metric: str | None = None
    served_by_default: bool = True  # `evals serve` without --benchmark(s) serves it (False: it needs a file to have tasks)
    # the option naming the file the tasks come from, when a run's tasks are whatever file it was given:
    # runs of different files (name and sha256) are never ranked, listed or compared as one (evals.core.dataset)
    dataset_option: str | None = None
    # the metrics the runs list and the leaderboard show for a run, in order (``evals view``); empty: the
    # main metric, then the next two of the main block
    headline_metrics: tuple[str, ...] = ()
    # the version of this benchmark's scoring code: raised (with a line in CHANGELOG.md) whenever a change
    # can change a number of an existing run; config.json records it, `evals score` says when it changed
    scorer_version: int = 1
    # called by `evals score PATH --format NAME --benchmark THIS` with NAME and PATH right after the arguments are
    # parsed, before the plugin is loaded or PATH read: work of the format's own that reading PATH takes later may
    # start here (e.g. a process that imports code meanwhile). A hint only: it must be cheap, raise nothing, and
    # leave every result as it would be without it (reading PATH does all the checking)
    score_start: Callable[[str, Path], None] | None = None
    package: str = ""  # the package that declares it (the registry sets it): where ``plugin`` and paper_numbers.yaml are

    def __post_init__(self) -> None:
        if not self.default_strategy and self.strategies:
            object.__setattr__(self, "default_strategy", self.strategies[0])

    def plugin_class(self) -> Callable[[BenchmarkInfo, Mapping[str, Any]], Benchmark]:
        """The class ``plugin`` names, imported now; ``ValueError`` names the entry when it cannot be found."""
        module, _, name = self.plugin.partition(":")
        if not PLUGIN_REF.fullmatch(self.plugin):
            raise ValueError(f"benchmark {self.name!r}: plugin {self.plugin!r} is not 'module:ClassName' (e.g. '.plugin:MyBenchmark')")
        if module.startswith(".") and not self.package:
            raise ValueError(f"benchmark {self.name!r}: the relative plugin {self.plugin!r} needs the declaring package "
                             "(entries come from evals.core.registry, which sets it)")
        found = getattr(importlib.import_module(module, self.package or None), name, None)
        if not callable(found):
            raise ValueError(f"benchmark {self.name!r}: {module} (in {self.package}) has no class {name!r}")
        return found  # type: ignore[no-any-return]

    def load(self, options: Mapping[str, Any]) -> Benchmark:
        """The loaded benchmark with its resolved ``options``: ``plugin``'s class, given this entry."""
        return self.plugin_class()(self, options)

    def missing_files(self, options: Mapping[str, Any], data_dir: Path) -> list[tuple[str, RemoteFile]]:
        """The ``(source, file)`` pairs a run with ``options`` needs and ``data_dir`` lacks."""
        if self.needed_files is not None:
            return self.needed_files(options, data_dir)
        return [(source, f) for source, files in self.data_sources.items() for f in files
                if not (data_dir / f.dest).is_file()]

    @property
    def serve_options(self) -> tuple[Option, ...]:
        return tuple(o for o in self.options if o.serve)


class Benchmark(Protocol):
    """One loaded benchmark. See the module docstring."""

    info: BenchmarkInfo
    options: Mapping[str, Any]  # its own options, resolved (every declared option has a value)

    def task_ids(self) -> list[str]:
        """Every task id, in the benchmark's order (``--limit N`` takes the first N)."""
        ...

    def check(self, strategy: str, *, own_server: bool) -> None:
        """Refuse settings that do not go together (raise ``ValueError`` naming them)."""
        ...

    def mounts(
        self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *, strategy: str
    ) -> list[BenchmarkMount]:
        """The endpoints this benchmark serves for ``strategy`` (``evals serve``: the benchmark's
        default strategy; ``evals run``: the plan's)."""
        ...

    def data_files(self) -> list[Path]:
        """The data files the tasks come from (their checksums go into the run's config)."""
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

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        """One task's metric samples from its newest trace (``None``: the task never ran)."""
        ...


@dataclass
class EpisodeEnv:
    """Everything an episode needs that the core owns (one per process).

    Models by role (as Inspect AI's model roles): ``shared`` is ``--model``, built once with its
    response cache, rate limit and retries; ``roles`` holds a benchmark's other models (an option
    declared with ``model=True``, e.g. a step-1 model of a paper's pipeline), each built once the same way. An
    oracle (``shared`` None) is wrapped per episode by :meth:`wrap` with the same rate limit and retries."""

    opts: RunOptions
    sessions: Sessions  # how sessions reach the tool server (--transport; evals.core.transport)
    agent_cfg: AgentConfig
    shared: Model | None = None  # --model; None when the model is the oracle
    oracle_latency: float = 0.0
    limiter: RateLimiter | None = None
    roles: dict[str, Model] = field(default_factory=dict)  # option name -> its model

    @property
    def is_oracle(self) -> bool:
        return self.shared is None

    def wrap(self, adapter: ModelAdapter) -> Model:
        """A benchmark's own scripted model (an oracle) with the run's rate limit and retries."""
        from client.model import Model

        return Model(adapter, limiter=self.limiter, retry=self.agent_cfg.retry)

    def model(self, task_id: str, oracle_steps: list[list[dict[str, Any]]], final_answer: str | None = None) -> Model:
        """The model for one episode: the shared model, or an oracle scripted with the gold steps."""
        if self.shared is not None:
            return self.shared
        from client.adapters.oracle import OracleAdapter

        return self.wrap(OracleAdapter(oracle_steps, final_answer, task_id=task_id, turn_latency_s=self.oracle_latency))

    @contextlib.asynccontextmanager
    async def session(self, benchmark: str, task_id: str | None = None) -> AsyncIterator[Client]:
        """An MCP session of its own at the task's endpoint (or the benchmark's playground).

        Each session has its own executor state (handles, replayed calls) on the server, apart from
        every other episode's, whatever the transport (see :mod:`evals.core.transport`).
        """
        async with self.sessions.session(benchmark, task_id) as session:
            yield session


def attach_surface(benchmark: Benchmark, mounts: list[BenchmarkMount]) -> list[BenchmarkMount]:
    """The mounts with the benchmark's optional ``prompts()`` and ``task_query`` hooks attached
    (what MCP clients see besides tools; a benchmark without the hooks offers neither)."""
    prompts = getattr(benchmark, "prompts", None)
    task_query = getattr(benchmark, "task_query", None)
    found = tuple(prompts()) if callable(prompts) else ()
    for mount in mounts:
        if found and not mount.prompts:
            mount.prompts = found
        if callable(task_query) and mount.task_query is None:
            mount.task_query = task_query
    return mounts
