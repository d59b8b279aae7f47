"""NesTools as an ``evals run`` plugin: the paper's one-shot prompt, and a live agent.

Strategies (``--strategy``):

* ``oneshot`` (the paper's setting): one user message, the paper's evaluation prompt (its
  instructions, the task's tools as the Python-literal list of their schemas with ``api_id``, the
  task) and no tools; the answer is the whole call list as text, nested values written as
  ``API_call_N`` placeholders, scored exactly as the official code scores it. The tool list is the
  one the MCP endpoint of the task serves (names and order), so the prompt shows what is served.
* ``agent``: the model calls the task's tools over MCP, turn by turn (parallel calls allowed);
  every call that passes its schema is answered with handles (:mod:`.tools`). The trace becomes the
  same call list (each call's ``responses`` are the handles the server returned, so a handle passed
  later names the call that produced it) and is scored by the same code.

The oracle (``--model oracle``) answers ``oneshot`` with the gold call list and plays the gold
calls one per turn in ``agent``; both score 100 on every metric.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from client.adapters.oracle import OracleAdapter
from client.agent import run_agent
from client.mcp_session import list_all_tools
from client.runs import EpisodeOutcome
from server import BenchmarkMount, PromptSpec

from ...core.data import data_file
from ...core.formats import PredictionFormat
from ...core.metrics import TaskScore
from ...core.plugin import BenchmarkInfo, EpisodeEnv
from .data import NesToolsTask, TaskSet, load_tasks
from .export import official_format
from .files import API_IDS, STRATEGIES, TEST_DATA
from .metrics import task_score
from .official import SampleCounts, score_prediction
from .tools import NesToolsCatalog

if TYPE_CHECKING:
    from pathlib import Path

    from client.runs import EpisodeRecorder

    from ...core.context import ScoreContext

# The evaluation prompt of the paper (its Table 9; the official make_test_prompt.py), verbatim:
# the model is asked for this exact text, so it is the benchmark's input, not our prose.
PROMPT_HEAD = (
    "You have access to a list of APIs and the task description.You need to follow the given task description and "
    "determine which API to call in sequence according to the order required by the task description. API can be "
    "retrieved from the APIs list. Finally, you only need to return the API call result without any other content.\n"
    'The final result should be in the format of [{"api_name":__,"api_id":__,"parameters":{"arg0":"value0",'
    '"arg1":"value1",...},"responses":{"arg0":"API_call_0", ... ,"argn":"API_call_n"}},{"api_name":__,"api_id":__,'
    '"parameters":{"arg0":"value0","arg1":"value1",...},"responses":{"arg0":"API_call_{n+1}",...}}, ...]. '
    "You don't need to know the actual return value of the API call, just assign each return value as a string "
    '"API_call_{number}" in "responses", such as "API_call_0","API_call_1","API_call_2" and so on. The "number" in '
    '"API_call_{number}" should increase by one from 0 globally. \n'
    "Please first determine which APIs to call in sequence based on the task, and then determine the parameter values "
    "of each API depending on the specific details of the task. If you decide to call the API, you need to fill in all "
    "this API's required parameters which can be found in this API's \"required\" list. If you think the task does "
    "not include the actual value of a necessary parameter in API's \"required\" list, you can assign the necessary "
    'parameter a value of "UNK". The remaining parameters are optional parameters, determine whether to fill them in '
    "according to the task. If you think the parameter value to be filled in is the return value of a previous API "
    'call, set it as "API_call_x", then the parameter value can be filled in with "API_call_x".\n\n'
    "Now it is your turn to generate the API call result based on the APIs and task description below. Remember that "
    "you only need to generate the API call result, not any additional explanations.\nAPIs:\n"
)

AGENT_PROMPT = (
    "Carry out the user's task with the tools you are given, calling them in the order the task needs. "
    "A tool does not return real values: it returns one handle per output, a string such as \"API_call_3\". "
    "When an argument should be the output of an earlier call, pass that call's handle as the argument's value. "
    "If the task does not give the value of a required argument, pass \"UNK\". "
    "You may make several independent calls at once. When every call the task needs is made, reply briefly "
    "without calling a tool."
)


def oneshot_prompt(apis: list[dict[str, Any]], query: str) -> str:
    """The paper's prompt for one sample: ``apis`` are the shown tools (schemas with ``api_id``)."""
    return PROMPT_HEAD + str(apis) + "\n\nTask description:\n" + query + "\n\nAPI call result:\n"


def calls_from_trace(trace: Mapping[str, Any], api_ids: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An ``agent`` trace as the official call list: every call the model made, in order, with the
    id of the tool of that name (``None`` for a name not offered), its arguments (``{}`` when they
    could not be parsed) and the handles it got back (``{}`` for a call answered with an error)."""
    out = []
    for event in trace.get("events") or []:
        if event.get("kind") != "tool_call":
            continue
        name = event.get("name")
        arguments = event.get("arguments")
        structured = event.get("structured")
        responses = structured if isinstance(structured, dict) and not event.get("is_error") else {}
        out.append({"api_name": name, "api_id": api_ids.get(str(name)),
                    "parameters": dict(arguments) if isinstance(arguments, dict) and "parse_error" not in event else {},
                    "responses": dict(responses)})
    return out


def _raw(stored: Any) -> Any:
    """What the official parser gets from an imported response as the trace keeps it (see
    :func:`.export.read`): the text; an already parsed ``{"official_parse": value}`` (a text holding a
    lone surrogate); anything else (not text) -1, malformed."""
    if isinstance(stored, str):
        return stored
    if isinstance(stored, dict) and "official_parse" in stored:
        return stored["official_parse"]
    return -1


class NesToolsBenchmark:
    """NesTools (see the module docstring)."""

    def __init__(self, info: BenchmarkInfo, options: Mapping[str, Any]) -> None:
        self.info = info
        self.name = info.name
        self.options = options
        tasks = load_tasks()
        self.tasks: dict[str, NesToolsTask] = {t.id: t for t in tasks}
        self.taskset = TaskSet(tasks, distractors=int(options.get("distractors", 5)), seed=int(options.get("seed", 0)))

    def task_ids(self) -> list[str]:
        return list(self.tasks)

    def check(self, strategy: str, *, own_server: bool) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"nestools has no strategy {strategy!r}; available: {', '.join(STRATEGIES)}")

    def mounts(
        self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *, strategy: str | None = None
    ) -> list[BenchmarkMount]:
        return [BenchmarkMount(catalog=NesToolsCatalog(self.name, self.taskset))]

    def data_files(self) -> list[Path]:
        return [data_file(*TEST_DATA), data_file(*API_IDS)]

    # ---- what MCP clients see besides tools (evals serve) -----------------------------------------
    def prompts(self) -> list[PromptSpec]:
        return [PromptSpec.for_task(
            "oneshot", "NesTools one-shot",
            "The paper's evaluation prompt for one task: its tools (with api_id) and its description; "
            "the model answers with the whole nested call list at once.",
            lambda task_id: oneshot_prompt([a.with_id() for a in self.taskset.offered(task_id)],
                                           self.tasks[task_id].query),
        )]

    def task_query(self, task_id: str) -> str:
        return self.tasks[task_id].query

    async def prepare(self, env: EpisodeEnv) -> None:
        pass

    def _shown(self, task: NesToolsTask) -> dict[str, int]:
        return {a.name: a.api_id for a in self.taskset.offered(task.id)}

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        task = self.tasks[task_id]
        strategy = env.opts.chosen_strategy
        api_ids = self._shown(task)
        info: dict[str, Any] = {"strategy": strategy, "api_ids": api_ids}
        if strategy == "oneshot":
            by_name = {a.name: a for a in self.taskset.offered(task_id)}
            async with env.session(self.name, task_id) as session:
                listed = [t.name for t in await list_all_tools(session)]
            unknown = [n for n in listed if n not in by_name]
            if unknown:
                raise RuntimeError(f"the endpoint of task {task_id} serves tools the task does not offer: {unknown}")
            prompt = oneshot_prompt([by_name[n].with_id() for n in listed], task.query)
            adapter = env.shared or env.wrap(OracleAdapter([], json.dumps(task.gold_prediction(), ensure_ascii=False),
                                                           task_id=task_id, turn_latency_s=env.oracle_latency))
            cfg = dataclasses.replace(env.agent_cfg, tool_choice="none", max_turns=1)
            outcome = await run_agent(adapter, None, prompt, recorder, cfg)
        else:
            steps = [[{"name": c["api_name"], "arguments": dict(c["parameters"])}] for c in task.calls]
            model = env.model(task_id, steps, final_answer="Done.")
            cfg = dataclasses.replace(env.agent_cfg, system_prompt=env.agent_cfg.system_prompt or AGENT_PROMPT)
            async with env.session(self.name, task_id) as session:
                outcome = await run_agent(model, session, task.query, recorder, cfg)
        outcome.data.update(info)
        return outcome

    def prediction(self, task_id: str, trace: Mapping[str, Any]) -> Any:
        """What the official scorer reads for this trace: the raw answer text (``oneshot``), or
        the call list (``agent``)."""
        outcome = trace.get("outcome") or {}
        if "prediction" in outcome:  # imported from the official format: the raw response
            return _raw(outcome["prediction"])
        if outcome.get("strategy") == "agent":
            return calls_from_trace(trace, outcome.get("api_ids") or {})
        text = trace.get("final_answer")
        return text if isinstance(text, str) else ""

    def counts(self, task_id: str, trace: Mapping[str, Any] | None) -> SampleCounts | None:
        """The official counts of the task's trace (None: the episode failed or never ran)."""
        task = self.tasks[task_id]
        if trace is None or trace.get("status") != "completed":
            return None
        return score_prediction(task.calls, task.api_ids, self.prediction(task_id, trace))

    def repeat_counts(self, task_id: str, trace: Mapping[str, Any] | None) -> list[SampleCounts]:
        """The official counts of an imported file's later lines for the same test id (``eval.py``
        scores every line; see :mod:`.export`), in file order."""
        if trace is None or trace.get("status") != "completed":
            return []
        task = self.tasks[task_id]
        repeats = (trace.get("outcome") or {}).get("repeats") or []
        return [score_prediction(task.calls, task.api_ids, _raw(r)) for r in repeats]

    def formats(self) -> list[PredictionFormat]:
        return [official_format(self.task_ids(), self.prediction, self.response_counts)]

    def response_counts(self, task_id: str, response: Any) -> SampleCounts:
        """The official counts of one raw response (text, or -1) for the task."""
        task = self.tasks[task_id]
        return score_prediction(task.calls, task.api_ids, response)

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        task_id = str(trace.get("task_id"))
        if task_id not in self.tasks:
            return None
        counts = self.counts(task_id, trace)
        return None if counts is None else float(counts.tree)

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: the gold and predicted call lists side by side, and their placeholder handles."""
        from .view import episode_sections

        task = self.tasks[task_id]
        completed = trace is not None and trace.get("status") == "completed"
        return episode_sections(task.gold_prediction(), self.prediction(task_id, trace) if completed and trace else [])

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        if task_id not in self.tasks:
            raise ValueError(f"the run has a task id that is not in NesTools: {task_id!r}")
        return task_score(self.counts(task_id, trace), repeats=self.repeat_counts(task_id, trace))
