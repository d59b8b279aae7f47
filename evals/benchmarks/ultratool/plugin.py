"""UltraTool as an ``evals run`` plugin: one of its task files per run (``--task``), two strategies.

Strategies (``--strategy``):

* ``paper``: the published runs' pipeline. One request per record, no tools: the task's few-shot
  prompt (:func:`.tasks.build_prompt`) under the official system message; the answer is read by
  the official parser (:mod:`.parsing`) and scored with the official metric (:mod:`.metrics`), or,
  for planning and tool creation, by the judge with the paper's rubric.
* ``agent`` (tool usage only): the sample's tools are live MCP tools at ``/mcp/ultratool/<id>``;
  the model is shown the question and the plan and calls the tools of the plan's tool steps. Its
  calls are mapped back to steps (the k-th call of a tool fills the k-th step that names that
  tool, in plan order) and scored with the same key-value Levenshtein metric, argument values
  written as text (strings as they are, anything else as JSON).

The oracle answers with the gold: ``paper``: the reference written so that the official parser
reads it back unchanged (:func:`.parsing.surviving_literal`); ``agent``: one gold call per turn.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.agent import run_agent
from client.runs import EpisodeOutcome
from server import BenchmarkMount, PromptSpec

from ...core.data import data_file
from ...core.metrics import TaskScore
from ...core.plugin import BenchmarkInfo, EpisodeEnv
from .files import APPROXIMATED, JUDGED, LANGUAGES, test_set_path
from .metrics import (
    CREATION_DIMENSIONS,
    PLANNING_DIMENSIONS,
    awareness_stop,
    awareness_values,
    judge_keys,
    levenshtein_scores,
    selection_values,
    usage_stop,
)
from .parsing import (
    ParseKind,
    clean_plan,
    judge_scores_of,
    parse_judge_scores,
    parse_steps,
    read_answer,
    step_number,
    surviving_literal,
)
from .predictions import read_official
from .prompts import creation_rubric, planning_rubric, run_prompts, system_message
from .tasks import Record, build_prompt, load_records
from .tools import UltraToolCatalog

__all__ = ["AGENT_PROMPT", "UltraToolBenchmark", "calls_to_steps", "value_text"]

if TYPE_CHECKING:
    from client.runs import EpisodeRecorder, RunDir

    from ...core.context import ScoreContext
    from ...core.formats import PredictionFormat

# The judge's answer budget: the official requests' ``max_tokens`` (``inference/openai_api.py`` gives
# 4096 to a model without "16k" in its name, as the published judge GPT-4 runs); a rubric answer
# with a reasoning per dimension does not fit the judge's short default.
JUDGE_MAX_TOKENS = 4096

AGENT_PROMPT = (
    "Carry out the plan below for the user's question. Some steps name a tool: call that tool once for "
    "each such step, in plan order, with the arguments the step needs (take values from the question, "
    "the plan and earlier tool results). Steps without a tool need no call. When every tool step is "
    "done, reply with a short summary and no tool call.\n\nQuestion: {question}\n\nPlan:\n{plan}"
)


def value_text(value: Any) -> Any:
    """An argument value of a live call as the paper's answers write it: text (JSON for non-strings)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def calls_to_steps(calls: Sequence[Mapping[str, Any]], gold: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[int]]:
    """Live calls mapped to the plan's tool steps: the k-th call of a tool fills the k-th gold step
    that names it. Returns the predicted steps (the paper's answer format) and the indices of calls
    that filled no step."""
    open_steps: dict[str, list[Mapping[str, Any]]] = {}
    for g in gold:
        open_steps.setdefault(str(g["tool"]), []).append(g)
    out: list[dict[str, Any]] = []
    extra: list[int] = []
    for i, call in enumerate(calls):
        queue = open_steps.get(str(call.get("name")))
        args = call.get("arguments")
        if not queue or not isinstance(args, Mapping):
            extra.append(i)
            continue
        step = queue.pop(0)
        out.append({"step": step["step"], "tool": call["name"], "param": {k: value_text(v) for k, v in args.items()}})
    return out, extra


def _unreadable_note(stored: Any, keys: tuple[str, ...]) -> str:
    """Why a stored judgment was not read: the keys it holds against the ones the official script reads."""
    if not isinstance(stored, list):
        return f"not a JSON list of {len(keys)} objects"
    held = [k for item in stored if isinstance(item, dict) for k in item]
    other = [lang for lang in LANGUAGES if set(judge_keys("planning", lang)) <= set(held)]
    hint = f" (they are the {other[0]} rubric's: is --language right?)" if other else ""
    return f"holds the keys {held[:8]}, not the official {list(keys)}{hint}"


def _readable(keys: tuple[str, ...]) -> Any:
    def verdict(text: str) -> bool | None:
        return True if parse_judge_scores(text, keys) is not None else None
    return verdict


class UltraToolBenchmark:
    """UltraTool (see the module docstring)."""

    def __init__(self, info: BenchmarkInfo, options: Mapping[str, Any]) -> None:
        self.info = info
        self.name = info.name
        self.options = options
        self.task: str = str(options.get("task", "tool_usage"))
        self.language: str = str(options.get("language") or "en")
        self._records: dict[str, Record] | None = None

    @property
    def records(self) -> dict[str, Record]:
        if self._records is None:
            distractors = int(self.options.get("distractors", 3))
            self._records = {r.id: r for r in load_records(self.task, distractors=distractors, language=self.language)}
        return self._records

    def task_ids(self) -> list[str]:
        return list(self.records)

    def check(self, strategy: str, *, own_server: bool) -> None:
        if strategy not in self.info.strategies:
            raise ValueError(f"ultratool has no strategy {strategy!r}; available: {', '.join(self.info.strategies)}")
        if strategy == "agent" and self.task != "tool_usage":
            raise ValueError(f"--strategy agent calls tools, so it goes with --task tool_usage only (not {self.task})")
        if strategy == "paper":  # its prompts come from the official files: a missing one is named before any episode
            run_prompts(self.language)
            system_message()

    def mounts(
        self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *, strategy: str | None = None
    ) -> list[BenchmarkMount]:
        records = (list(self.records.values()) if self.task == "tool_usage"
                   else load_records("tool_usage", language=self.language))
        return [BenchmarkMount(catalog=UltraToolCatalog(self.name, records))]

    # ---- what MCP clients see besides tools (evals serve) -----------------------------------------
    def prompts(self) -> list[PromptSpec]:
        return [PromptSpec.for_task(
            "few_shot_cot", f"UltraTool few-shot CoT ({self.task})",
            "The published runs' prompt for one task, from the official code's texts: the task's "
            "instructions, the worked example and the record.",
            lambda task_id: build_prompt(self.records[task_id]),
        )]

    def task_query(self, task_id: str) -> str:
        return self.records[task_id].question

    def data_files(self) -> list[Path]:
        return [data_file(*test_set_path(self.task, self.language).split("/"))]

    def summary_extras(self, config: Mapping[str, Any]) -> dict[str, Any]:
        extra: dict[str, Any] = {"task": self.task, "language": self.language}
        if self.task in APPROXIMATED:
            extra["approximation"] = ("built from test.json (the official test file is not public): "
                                      "not comparable with the paper's numbers")
        return extra

    async def prepare(self, env: EpisodeEnv) -> None:
        pass

    # ---- episodes ---------------------------------------------------------------------------------
    def gold_answer(self, record: Record) -> str:
        """The oracle's answer in the paper's format."""
        if record.task == "planning":
            return str(record.reference)
        return surviving_literal(record.reference)

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        record = self.records[task_id]
        strategy = env.opts.chosen_strategy
        if strategy == "agent":
            return await self._agent(env, record, recorder)
        model = env.model(task_id, [], final_answer=self.gold_answer(record))
        cfg = dataclasses.replace(env.agent_cfg, system_prompt=env.agent_cfg.system_prompt or system_message(), tool_choice="none")
        outcome = await run_agent(model, None, build_prompt(record), recorder, cfg)
        outcome.data["task"] = record.task
        return outcome

    async def _agent(self, env: EpisodeEnv, record: Record, recorder: EpisodeRecorder) -> EpisodeOutcome:
        gold = record.reference
        model = env.model(record.id, [[{"name": g["tool"], "arguments": dict(g["param"])}] for g in gold],
                          final_answer="Done.")
        plan = "\n".join(s["step"] + (f"  [tool: {s['tool']}]" if s.get("tool") else "") for s in record.data["input"])
        prompt = AGENT_PROMPT.format(question=str(record.data.get("question", "")).strip(), plan=plan)
        cfg = dataclasses.replace(env.agent_cfg, max_turns=max(env.agent_cfg.max_turns, len(gold) + 2))
        async with env.session(self.name, record.id) as session:
            outcome = await run_agent(model, session, prompt, recorder, cfg)
        outcome.data.update(task=record.task, live=True)
        return outcome

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        if self.task in JUDGED or trace.get("status") != "completed":
            return None
        record = self.records.get(str(trace.get("task_id")))
        if record is None:
            return None
        samples = self._rule_scores(record, trace).samples
        num, den = samples.get("local_levenshtein") or samples.get("local_accuracy") or (0.0, 1.0)
        return num / den if den else None

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: gold steps beside the predicted ones (tool usage), else the gold answer beside the final one."""
        from .view import episode_sections

        record = self.records[task_id]
        return episode_sections(record.task, record.reference, self.gold_answer(record), self.prediction(record, trace), trace)

    # ---- scoring ----------------------------------------------------------------------------------
    def prediction(self, record: Record, trace: Mapping[str, Any] | None) -> Any:
        """The model's answer as the official code reads it (``None``: not readable, or no answer)."""
        if trace is None or trace.get("status") != "completed":
            return None
        outcome = trace.get("outcome") or {}
        if record.task == "tool_usage" and outcome.get("live"):  # the agent strategy: its calls
            return calls_to_steps(outcome.get("calls") or [], record.reference)[0]
        kind: ParseKind = "param" if record.task == "tool_usage" else "label"
        open_model = self.options.get("parser") == "open"
        replay = outcome.get("official_read")
        if isinstance(replay, dict):  # an imported record the official loop reads with the records before it
            if "value" in replay:
                return replay["value"]
            if "answer" in replay:
                return parse_steps(replay["answer"], kind, multiple_lists=open_model, carried=replay.get("carried"))
            return None
        return parse_steps(trace.get("final_answer"), kind, multiple_lists=open_model)

    def _eval_expression(self, record: Record, trace: Mapping[str, Any] | None) -> bool:
        """Whether the official ``eval`` may read this answer differently (a candidate is Python, no literal)."""
        outcome = (trace or {}).get("outcome") or {}
        replay = outcome.get("official_read")
        answer, carried = ((replay.get("answer"), replay.get("carried")) if isinstance(replay, dict)
                           else ((trace or {}).get("final_answer"), None))
        if not isinstance(answer, str) or outcome.get("live"):
            return False
        kind: ParseKind = "param" if record.task == "tool_usage" else "label"
        return read_answer(answer, kind, multiple_lists=self.options.get("parser") == "open", carried=carried).expression

    def _rule_scores(self, record: Record, trace: Mapping[str, Any] | None) -> TaskScore:
        score = TaskScore()
        pred = self.prediction(record, trace)
        answered = trace is not None and trace.get("status") == "completed"
        score.add("unparsable_answers", float(answered and pred is None), 1.0)
        score.add("eval_expressions", float(answered and self._eval_expression(record, trace)), 1.0)
        stop = str(((trace or {}).get("outcome") or {}).get("official_error") or "")
        if record.task == "tool_usage":
            stop = stop or usage_stop(pred, record.reference)
        score.add("official_errors", float(bool(answered and stop)), 1.0)
        if stop:
            score.details["official_error"] = stop
            pred = None  # scored 0: the official script stops here and gives no number
        if record.task == "tool_usage":
            values = levenshtein_scores(pred if pred is not None else [], record.reference)
            score.add("local_levenshtein", sum(values), len(values))
            score.details["step_scores"] = values
            score.groups["tool_steps"] = str(len(record.reference))
        else:
            reader = selection_values if record.task == "tool_selection_approx" else awareness_values
            got, want = reader(pred if pred is not None else [], record.reference)
            label_stop = awareness_stop(got) if reader is awareness_values and answered else ""
            if label_stop:  # the official script stops on the file: counted, warned, this record scored 0
                score.add("official_errors", 1.0, 1.0)
                score.details["official_error"] = label_stop
                got, want = reader([], record.reference)
            score.add("global_accuracy", float(got == want), 1.0)
            score.add("local_accuracy", float(sum(a == b for a, b in zip(got, want, strict=True))), len(want))
            score.details["predicted"], score.details["gold"] = got, want
        return score

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        record = self.records.get(task_id)
        if record is None:
            raise ValueError(f"the run has a task id that is not in UltraTool {self.task}: {task_id!r}")
        if record.task == "planning":
            return await self._score_plan(record, trace, ctx)
        if record.task == "tool_creation":
            return await self._score_creation(record, trace, ctx)
        return self._rule_scores(record, trace)

    async def _judged(self, ctx: ScoreContext, prompt: str, keys: tuple[str, ...]) -> list[float] | None | str:
        decision = await ctx.ask(system_message(), prompt, verdict=_readable(keys), max_tokens=JUDGE_MAX_TOKENS)
        if decision is None:
            return "missing"
        return parse_judge_scores(decision.answer, keys)

    async def _score_plan(self, record: Record, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        score = TaskScore()
        names = [n for n, _ in PLANNING_DIMENSIONS]
        keys = judge_keys("planning", self.language)
        done = trace is not None and trace.get("status") == "completed"
        stored = ((trace or {}).get("outcome") or {}).get("judgement") if done else None
        values: list[float] | None | str
        if ((trace or {}).get("outcome") or {}).get("judgement_missing"):  # an imported row without `eval`
            values = None
        elif stored is not None:  # imported with the published judge's outputs
            values = judge_scores_of(stored, keys)
        elif not done:
            values = [0.0] * len(names)
        else:
            answer = clean_plan((trace or {}).get("final_answer") or "")
            prompt = planning_rubric(self.language).format(question=record.data["input"], reference=record.reference,
                                                           answer=answer)
            values = await self._judged(ctx, prompt, keys)
        if values == "missing":
            return score  # no judge and nothing stored: counted in judge_missing, left out of the metrics
        score.add("judge_unreadable", float(values is None), 1.0)
        if not isinstance(values, list):  # counted and warned about; never a silent 0
            score.details["judge_unreadable"] = (_unreadable_note(stored, keys) if stored is not None
                                                 else "the row has no eval field")
            return score
        for name, value in zip(names, values, strict=True):
            score.add(name, value, 10.0)
        return score

    async def _score_creation(self, record: Record, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        """Per gold step, the created tool of the predicted step with its number (the first one) is
        judged against the gold tool; the judge's "user instruction" is the step's second word, as in
        the official script. A task's samples are the judged tools; when none was judged, every gold
        step counts 0 (the official aggregation)."""
        score = TaskScore()
        names = [n for n, _ in CREATION_DIMENSIONS]
        keys = judge_keys("tool_creation", self.language)
        pred = self.prediction(record, trace)
        items = pred if isinstance(pred, list) else []
        answered = trace is not None and trace.get("status") == "completed"
        score.add("unparsable_answers", float(answered and pred is None), 1.0)
        sums = [0.0] * len(names)
        judged = unreadable = 0
        for gold in record.reference:
            found = next((p for p in items if isinstance(p, dict) and isinstance(p.get("step"), str)
                          and step_number(p["step"]) == step_number(gold["step"])), None)
            tool = found.get("tool") if found else None
            if not isinstance(tool, dict) or not tool:
                continue
            words = str(gold["step"]).split(" ")
            prompt = creation_rubric(self.language).format(question=words[1] if len(words) > 1 else "", reference=gold["tool"], answer=tool)
            values = await self._judged(ctx, prompt, keys)
            if values == "missing":
                return TaskScore()
            judged += 1
            if not isinstance(values, list):  # counted and warned about; left out, never a silent 0
                unreadable += 1
                continue
            sums = [a + b for a, b in zip(sums, values, strict=True)]
        count = (judged - unreadable) if judged else len(record.reference)
        score.add("judge_unreadable", float(unreadable), float(max(judged, 1)))
        if count:
            for name, total in zip(names, sums, strict=True):
                score.add(name, total, 10.0 * count)
        score.details["judged_tools"] = judged
        return score

    # ---- the official scripts' format -------------------------------------------------------------
    def formats(self) -> list[PredictionFormat]:
        from ...core.formats import PredictionFormat

        return [PredictionFormat(
            name="ultratool-official",
            description="the published runs' files: one JSON line {data, 'init output'} per record, as "
                        "predictions/English-dataset/<model>/<task>.json or predictions/Chinese-dataset/... "
                        "(and eval/planning_eval.json with the judge's outputs); read by evaluation/*.py",
            export=self._export,
            read=read_official,
        )]

    def _export(self, run_dir: RunDir, out: Path) -> list[Path]:
        if self.task in APPROXIMATED:
            raise ValueError(f"{self.task} is our approximation; the official scripts have no file for it")
        traces = run_dir.latest_traces()
        out.mkdir(parents=True, exist_ok=True)
        lines = []
        for task_id, record in self.records.items():  # the tasks the run has (a --limit run: its first N)
            trace = traces.get(task_id)
            if trace is None:
                continue
            answer: Any = trace.get("final_answer") or ""
            outcome = trace.get("outcome") or {}
            if self.task == "tool_usage" and outcome.get("live"):  # the agent's calls, as the paper's answer
                answer = json.dumps(calls_to_steps(outcome.get("calls") or [], record.reference)[0], ensure_ascii=False)
            lines.append(json.dumps({"data": record.data, "init output": answer}, ensure_ascii=False))
        path = out / f"{self.task}.json"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        written = [path]
        if self.task == "planning":
            judged = self._export_judgments(run_dir, traces, out / "eval" / "planning_eval.json")
            written += [judged] if judged else []
        return written

    def _export_judgments(self, run_dir: RunDir, traces: Mapping[str, Any], path: Path) -> Path | None:
        """Planning: the stored judgments as the official ``eval/planning_eval.json`` (what
        ``evaluation/planning.py`` averages); tasks whose judgment is missing or unreadable are left out."""
        from ...core.scoring import read_scores

        keys = judge_keys("planning", self.language)
        answers = {r["task_id"]: (r.get("judge") or [{}])[0].get("answer") for r in read_scores(run_dir)}
        lines = []
        for task_id, record in self.records.items():
            trace, answer = traces.get(task_id), answers.get(task_id)
            if trace is None or not isinstance(answer, str) or parse_judge_scores(answer, keys) is None:
                continue
            row = {"data": record.data, "init output": trace.get("final_answer") or ""}
            lines.append(json.dumps({"data": row, "eval": json.loads(answer.replace("json", "").strip("`"))},
                                    ensure_ascii=False))
        if not lines:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return path
