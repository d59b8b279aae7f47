"""The task-file benchmark as an ``evals run`` plugin: one strategy, ``agent`` (native tool calling
over MCP, turn by turn), over the task's tools from the run's sources (:mod:`.sources`).

Each task's endpoint serves the tools it names (or all of them). Each episode gets its own world
(:mod:`.episodes`: a fresh folder, servers started per episode, set-up calls before the model
starts, state checks after it). The oracle plays the gold calls one per turn, resolving references
from the results it got, then says the gold answer; it scores 100 on every metric only when the
tools can give the gold (scoring fails it otherwise, and says why: :mod:`.scoring`). When the MCP server behind a tool is gone, the episode fails with
:class:`~server.upstream.UpstreamUnavailable` (retryable: rerunning the command resumes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from client.adapters.base import DEFAULT_PARAMS, GenerateParams
from client.adapters.oracle import OracleAdapter
from client.agent import run_agent
from client.mcp_session import list_all_tools
from client.messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    ToolChoice,
    ToolDef,
    ToolResultMessage,
    UserMessage,
)
from client.runs import EpisodeOutcome
from server import BenchmarkMount
from server.upstream import UPSTREAM_UNAVAILABLE, UpstreamUnavailable
from tool_specs import StaticCatalog, ToolSpec
from tool_specs.matching import Matcher, ResponseMatcher, RuleMatcher

from ...core.formats import PredictionFormat
from ...core.metrics import TaskScore
from ...core.plugin import BenchmarkInfo, EpisodeEnv
from .episodes import EpisodeWorld
from .refs import UNRESOLVED, resolve_arguments, result_value
from .scoring import JudgeCallMatcher, predicted_calls, score_task
from .sources import mcp_sources, open_tools, read_replay, spec_file_tools
from .taskfile import Task, TaskFileError, problem_line, read_task_file, tool_problems
from .variables import TaskVariables

if TYPE_CHECKING:
    from mcp import Client

    from client.runs import EpisodeRecorder, RunDir
    from server.recording import Recording

    from ...core.context import ScoreContext


class ResolvingOracle(OracleAdapter):
    """The oracle for gold calls with references: each step's references are resolved from the
    results of the oracle's earlier calls before the step is played."""

    def __init__(self, steps: list[list[dict[str, Any]]], final_answer: str, *, task_id: str, turn_latency_s: float = 0.0):
        super().__init__([[dict(c) for c in s] for s in steps], final_answer, task_id=task_id, turn_latency_s=turn_latency_s)
        self.gold = steps

    async def complete(self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
                       params: GenerateParams = DEFAULT_PARAMS) -> ModelResponse:
        results = {m.tool_call_id: result_value(m.content) if not m.is_error else UNRESOLVED
                   for m in messages if isinstance(m, ToolResultMessage)}
        ids = {str(i): f"oracle_{i}_0" for i in range(len(self.gold))}
        ids.update({str(s[0].get("id")): f"oracle_{i}_0" for i, s in enumerate(self.gold) if s})
        done = sum(1 for m in messages if isinstance(m, AssistantMessage) and m.tool_calls)
        if done < len(self.gold):
            self.steps[done] = [{"name": c["name"], "arguments": resolve_arguments(
                c["arguments"], lambda cid: results.get(ids.get(cid, ""), UNRESOLVED))} for c in self.gold[done]]
        return await super().complete(messages, tools, tool_choice, params)


class _Guarded:
    """The episode's MCP session; a result that says the MCP server behind the tool is gone fails the
    episode (retryable) instead of going back to the model."""

    def __init__(self, session: Client):
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def call_tool(self, name: str, arguments: Any = None, *args: Any, **kw: Any) -> Any:
        result = await self._session.call_tool(name, arguments, *args, **kw)
        if result.is_error:
            text = "".join(getattr(c, "text", "") for c in result.content)
            if text.startswith(UPSTREAM_UNAVAILABLE):
                raise UpstreamUnavailable(text)
        return result


class UserTasksBenchmark:
    """A benchmark defined by a task file (see the package docstring)."""

    def __init__(self, info: BenchmarkInfo, options: Mapping[str, Any]):
        self.info = info
        self.name = info.name
        self.options = options
        self.variables = TaskVariables(options.get("var"), allowed=options.get("allow_env"),
                                       task_dir=str(Path(options["tasks"]).resolve().parent)
                                       if options.get("tasks") else None)
        # without a task file (``evals serve --benchmark``) it has no tasks and serves nothing; a run refuses
        tasks, problems = read_task_file(options["tasks"], self.variables) if options.get("tasks") else ([], [])
        self.tasks: dict[str, Task] = {t.id: t for t in tasks}
        mcp_sources(options, self.variables)  # a bad --mcp-server / --mcp-config fails here, before anything runs
        self._spec_tools: dict[str, ToolSpec] | None = None
        self._world: EpisodeWorld | None = None  # the tools as mounts() opened them, for the harness's calls
        self._replay: Recording | None = None  # the --replay recording, once check() has read it
        # the trials of one task (--epochs) take turns when the task has a world: its per-episode servers
        # and the harness's calls are found by the task's id
        self._turns: dict[str, asyncio.Lock] = {}
        if problems:  # every problem at once: the task file's, and its tool names against the sources
            raise TaskFileError(Path(options["tasks"]), sorted([*problems, *self._tool_name_problems(tasks)], key=problem_line))

    def _tool_name_problems(self, tasks: Sequence[Task]) -> list[str]:
        """The tool names of ``tasks`` that no source offers (the sources opened and closed again)."""
        try:
            with contextlib.ExitStack() as stack:
                names = [t.name for t in open_tools(self.options, stack, self.variables)]
        except Exception as exc:  # noqa: BLE001 -- a source that fails is reported when the run starts
            return [f"{self.options['tasks']}: tool names not checked: a tool source did not open: {str(exc).splitlines()[0]}"]
        return tool_problems(self.options["tasks"], tasks, names)

    def config_extras(self) -> dict[str, Any]:
        """``variables``: where each ``${NAME}`` came from (environment values only as a SHA-256)."""
        return {"variables": self.variables.recorded()} if self.variables.given or self.variables.from_environment else {}

    def task_ids(self) -> list[str]:
        return list(self.tasks)

    def run_dir_part(self) -> str:
        """The task file's name: ``runs/taskfile/<file stem>/<model>/agent`` by default."""
        return Path(self.options.get("tasks") or "none").stem

    def check(self, strategy: str, *, own_server: bool) -> None:
        if not self.options.get("tasks"):
            raise ValueError(f"evals run {self.name} needs --tasks FILE (a JSON Lines or YAML task file)")
        if self.options.get("record") and self.options.get("replay"):
            raise ValueError("--record and --replay go with different runs: record with the live server, then replay")
        if not own_server and self._needs_world():
            raise ValueError("set-up calls, state checks, ${EPISODE_DIR} and servers started per episode need the tool "
                             "server the run starts itself (drop --server-url)")
        if self.options.get("replay"):  # a bad recording is refused before the run folder is made
            self._replay = read_replay(self.options, self.variables)

    def _needs_world(self) -> bool:
        return bool(self.options.get("fresh_servers")) or any(
            t.setup_calls or t.checks or t.needs_episode_dir for t in self.tasks.values())

    def catalog(self, tools: Sequence[ToolSpec]) -> StaticCatalog:
        """Each task's endpoint with the tools it names; unknown names are listed, every one, with their
        lines and a did-you-mean."""
        by_name = {t.name: t for t in tools}
        problems = tool_problems(self.options["tasks"], list(self.tasks.values()), list(by_name))
        if problems:
            raise TaskFileError(Path(self.options["tasks"]), problems)
        return StaticCatalog(self.name, {t.id: [by_name[n] for n in t.tools] if t.tools is not None else list(tools)
                                         for t in self.tasks.values()})

    def mounts(self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *, strategy: str | None = None) -> list[BenchmarkMount]:
        if not self.options.get("tasks"):
            return []
        tools = open_tools(self.options, stack, self.variables, replay=self._replay)
        self._world = EpisodeWorld(tools)
        return [BenchmarkMount(catalog=self.catalog(tools))]

    def data_files(self) -> list[Path]:
        files = [Path(self.options["tasks"])] if self.options.get("tasks") else []
        for key in ("kg", "replay"):  # not --mcp-config: fixing a server's settings must not block resuming
            if self.options.get(key):
                files.append(Path(self.options[key]))
        if self.options.get("tools_dir"):
            files += sorted(p for p in Path(self.options["tools_dir"]).iterdir() if p.is_file() and not p.name.startswith("."))
        return files

    async def prepare(self, env: EpisodeEnv) -> None:
        pass

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        world = self._world
        if world is None:
            if self._needs_world():
                raise ValueError("set-up calls, state checks, ${EPISODE_DIR} and servers started per episode need the "
                                 "tool server the run starts itself (--transport memory or http, no --server-process)")
            world = EpisodeWorld([])
        written = self.tasks[task_id]
        has_world = bool(world.servers or written.needs_episode_dir or written.setup_calls or written.checks)
        turn = self._turns.setdefault(task_id, asyncio.Lock()) if has_world else contextlib.nullcontext()
        async with turn, world.open(written) as (folder, setup):
            task = written.in_folder(folder)
            outcome = await self._play(env, task, recorder)
            if task.checks:
                outcome.data["checks"] = await world.check(task)
        if folder is not None:
            outcome.data["episode_dir"] = folder
        if setup:  # what the set-up calls said (their text, cut), not their values: the trace stays small
            outcome.data["setup"] = [{k: v for k, v in c.items() if k != "value"} for c in setup]
        outcome.data["oracle"] = env.is_oracle
        return outcome

    async def _play(self, env: EpisodeEnv, task: Task, recorder: EpisodeRecorder) -> EpisodeOutcome:
        task_id = task.id
        model = env.shared or env.wrap(ResolvingOracle(task.oracle_steps(), task.oracle_answer(), task_id=task_id,
                                                       turn_latency_s=env.oracle_latency))
        cfg = env.agent_cfg
        if task.system:
            cfg = dataclasses.replace(cfg, system_prompt=task.system)
        history: list[Message] = [UserMessage(m["content"]) if m["role"] == "user" else AssistantMessage(m["content"])
                                  for m in task.history]
        async with env.session(self.name, task_id) as session:
            listed = await list_all_tools(session)
            outcome = await run_agent(model, cast("Client", _Guarded(session)), task.user_text, recorder, cfg, history=history)
        # the schemas scoring normalises arguments by: of the gold tools and of the tools called
        wanted = {c.name for c in task.calls or ()} | {str(c.get("name")) for c in outcome.data.get("calls") or []}
        outcome.data["tools"] = {t.name: {"description": t.description or "", "input_schema": t.input_schema}
                                 for t in listed if t.name in wanted}
        return outcome

    def _spec_for(self, name: str) -> ToolSpec | None:
        if self._spec_tools is None:
            self._spec_tools = {t.name: t for t in spec_file_tools(self.options)}
        return self._spec_tools.get(name)

    def matchers(self, task: Task, tools: Mapping[str, Any], ctx: ScoreContext) -> list[Matcher]:
        """The cascade of ``--matcher``: rule; then response (deterministic spec-file tools); then the judge."""
        def schema_for(name: str) -> Mapping[str, Any] | None:
            return (tools.get(name) or {}).get("input_schema")

        out: list[Matcher] = [RuleMatcher(schema_for, fill_defaults=True, argument_rules=True)]
        if self.options.get("matcher") in ("response", "llm"):
            out.append(ResponseMatcher(self._spec_for))
        if self.options.get("matcher") == "llm" and ctx.can_judge:
            out.append(JudgeCallMatcher(ctx, task.request, lambda n: {"name": n, **(tools.get(n) or {})}))
        return out

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        return None

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        if task_id not in self.tasks:
            raise ValueError(f"the run has a task id that is not in {self.options['tasks']}: {task_id!r}")
        task = self.tasks[task_id]
        tools = ((trace or {}).get("outcome") or {}).get("tools") or {}

        def schema_for(name: str) -> Mapping[str, Any] | None:
            got = (tools.get(name) or {}).get("input_schema")
            if got is None and (spec := self._spec_for(name)) is not None:
                return spec.input_schema
            return cast("Mapping[str, Any] | None", got)

        return await score_task(task, trace, ctx, self.matchers(task, tools, ctx), schema_for)

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: each gold call beside the predicted one (references resolved or named), and the
        gold answer beside the final answer (:mod:`.view`)."""
        from .view import episode_sections

        task = self.tasks.get(task_id)
        if task is None:
            raise ValueError(f"task {task_id!r} is not in {self.options.get('tasks')} (the task file changed since the run)")
        return episode_sections(task, trace, score)

    # ---- export --------------------------------------------------------------------------------
    def formats(self) -> list[PredictionFormat]:
        return [PredictionFormat(name="jsonl", description="one JSON line per task: id, status, calls (name, "
                                 "arguments, result), answer", export=self._export)]

    def _export(self, run_dir: RunDir, out: Path) -> list[Path]:
        path = out if out.suffix == ".jsonl" else out / "predictions.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        traces = run_dir.latest_traces()
        with path.open("w", encoding="utf-8") as f:
            for task_id in self.tasks:
                trace = traces.get(task_id)
                if trace is None:
                    continue
                calls = [{"name": c["name"], "arguments": c["arguments"], "result": c["result"], "is_error": c["is_error"]}
                         for c in predicted_calls(trace)]
                f.write(json.dumps({"id": task_id, "status": trace.get("status"), "calls": calls,
                                    "answer": trace.get("final_answer")}, ensure_ascii=False) + "\n")
        return [path]
