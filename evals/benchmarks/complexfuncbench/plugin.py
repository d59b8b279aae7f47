"""ComplexFuncBench's ``evals run`` plugin: samples, the replay endpoints, the episode, scoring."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.agent import run_agent
from server import BenchmarkMount
from tool_specs import StaticCatalog

from ...core.data import DataNotFound, data_dir, data_file
from ...core.metrics import TaskScore
from ...core.plugin import BenchmarkInfo, EpisodeEnv
from .data import Sample, load_exact_match, load_samples
from .files import EXACT_MATCH, FULL, NAME, PROMPTS_COMPARE, PROMPTS_RESPONSE, SAMPLE, TOOL_INFO
from .metrics import task_score
from .results import (
    NEEDS_DATASET,
    ResultRecord,
    ResultSample,
    foreign_domains,
    load_result_samples,
    read_result_file,
)
from .tools import FINISH_TOOL, HIDDEN_TOOLS, TURN_TOOL, ReplayConfig, sample_tools

if TYPE_CHECKING:
    from client.messages import ToolCall
    from client.runs import EpisodeOutcome, EpisodeRecorder

    from ...core.context import ScoreContext
    from ...core.formats import PredictionFormat

__all__ = ["ComplexFuncBenchBenchmark", "sample_paths"]

FULL_SET = 1000


def sample_paths(options: Mapping[str, Any]) -> list[Path]:
    """The files the samples come from: ``--samples-file`` files, else the official file (``--sample-set
    full``), the one complete sample held (``sample``), or the first that is there (``auto``)."""
    given = str(options.get("samples_file") or "").strip()
    if given:
        paths = [Path(p).expanduser() for p in given.split(",") if p.strip()]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise DataNotFound(f"--samples-file: no such file(s): {', '.join(missing)}")
        return paths
    choice = options.get("sample_set", "auto")
    if choice == "full" or (choice == "auto" and data_dir().joinpath(*FULL).is_file()):
        return [data_file(*FULL)]
    return [data_file(*SAMPLE)]


class ComplexFuncBenchBenchmark:
    def __init__(self, info: BenchmarkInfo, options: Mapping[str, Any]):
        self.info, self.options = info, options
        results = str(options.get("results_file") or "").strip()
        # scoring a result file alone (see .results): no dataset is read
        self.results_file = Path(results).expanduser() if results and not options.get("samples_file") else None
        self.result_samples: dict[str, ResultSample] = {}
        self.result_records: list[ResultRecord] = []
        self._samples: dict[str, Sample] | None = None  # read on first use: reading a result file needs none
        self._paths: list[Path] | None = None
        self._exact: Any = None
        if self.results_file is not None:
            self._paths, self._samples = [], {}
            try:
                self.result_records = read_result_file(self.results_file)
            except FileNotFoundError as exc:
                raise FileNotFoundError(f"--results-file: {exc}") from None
            self.result_samples = {s.id: s for s in load_result_samples(self.result_records)}

    @property
    def paths(self) -> list[Path]:
        if self._paths is None:
            self._paths = sample_paths(self.options)
        return self._paths

    @property
    def samples(self) -> dict[str, Sample]:
        if self._samples is None:
            self._samples = {s.id: s for s in load_samples(self.paths)}
        return self._samples

    @property
    def exact(self) -> Any:
        if self._exact is None:
            self._exact = load_exact_match(data_file(*EXACT_MATCH))
        return self._exact

    # ---- the contract ----
    def task_ids(self) -> list[str]:
        return list(self.result_samples or self.samples)

    def check(self, strategy: str, *, own_server: bool) -> None:
        if self.results_file is not None:
            raise ValueError(f"--results-file scores an official result file without the dataset; a run needs the "
                             f"samples: leave it out (it is {self.results_file})")
        if self.options.get("rapidapi_matcher") and not own_server:
            raise ValueError("--rapidapi-matcher shapes the served tools: give it to `evals serve`, not to a run "
                             "against --server-url")

    def data_files(self) -> list[Path]:
        if self.results_file is not None:
            return [self.results_file] if self.results_file.is_file() else []
        return [*self.paths, data_file(*EXACT_MATCH)]

    def summary_extras(self, config: Mapping[str, Any]) -> dict[str, Any]:
        if self.results_file is not None:
            reported = sum(s.reported for s in self.result_samples.values())
            dividing = sum(s.divides for s in self.result_samples.values())
            foreign = foreign_domains(self.result_records)
            return {"dataset_note": (
                f"scored from the result file alone, as print_results.py scores it (the dataset is absent): "
                f"{reported} records, {len(self.result_samples) - reported} of the full set's "
                f"{FULL_SET} samples unreported (counted as failed in the success rates, as the official division by "
                f"150 / 400 / 1,000 counts them). Needs the dataset: {NEEDS_DATASET}"),
                "full_set": dividing == FULL_SET, "scored_from": "results_file",
                **({"foreign_domains": foreign} if foreign else {})}
        n = len(self.samples)
        note = None if n == FULL_SET else (
            f"{n} of the {FULL_SET} samples: not comparable with the paper's table (the official success "
            f"rates divide by the full set's 150 / 400 / 1,000)")
        return {"dataset_note": note, "full_set": n == FULL_SET}

    def replay_config(self, stack: contextlib.ExitStack | contextlib.AsyncExitStack | None = None) -> ReplayConfig:
        """The matchers the replay server decides with (from the options)."""
        response = None
        if self.options.get("rapidapi_matcher"):
            from .rapidapi import RapidAPICompare

            info = json.loads(data_file(*TOOL_INFO).read_text(encoding="utf-8"))["booking-com15"]
            response = RapidAPICompare(info, base_url=str(self.options.get("rapidapi_url") or "") or None)
        llm = None
        spec = self.options.get("call_judge")
        if spec:
            from client.adapters import make_adapter

            from ...core.judge import LLMJudge
            from .judging import CallJudge

            kw: dict[str, Any] = {}
            if self.options.get("call_judge_base_url"):
                kw["base_url"] = self.options["call_judge_base_url"]
            adapter = make_adapter(spec, **kw)
            if isinstance(stack, contextlib.AsyncExitStack):
                stack.push_async_callback(adapter.aclose)
            llm = CallJudge(LLMJudge(adapter, max_tokens=512), data_file(*PROMPTS_COMPARE))
        return ReplayConfig(self.exact, response, llm)

    def mounts(self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *, strategy: str | None = None) -> list[BenchmarkMount]:
        cfg = self.replay_config(stack)
        return [BenchmarkMount(catalog=StaticCatalog(NAME, {sid: sample_tools(s, cfg) for sid, s in self.samples.items()}))]

    async def prepare(self, env: EpisodeEnv) -> None:
        pass

    def oracle_steps(self, sample: Sample) -> list[list[dict[str, Any]]]:
        aliases = sample.aliases
        return [[{"name": aliases[c["name"]], "arguments": c["arguments"]} for c in step] for step in sample.steps]

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        sample = self.samples[task_id]
        model = env.model(task_id, self.oracle_steps(sample), final_answer=sample.final or "")
        async with env.session(NAME, task_id) as session:

            async def on_turn(turn: int, calls: list[ToolCall]) -> bool:
                res = await session.call_tool(TURN_TOOL, {"calls": [{"name": c.name, "arguments": c.arguments} for c in calls]})
                if res.is_error:
                    raise RuntimeError(f"the replay server refused turn {turn}: {res.content}")
                return bool((res.structured_content or {}).get("ended"))

            outcome = await run_agent(model, session, sample.query, recorder, env.agent_cfg,
                                      visible=lambda n: n not in HIDDEN_TOOLS, on_turn=on_turn)
            final = outcome.final_answer if outcome.data.get("stop") == "final_answer" else None
            res = await session.call_tool(FINISH_TOOL, {"final": final})
            if res.is_error or res.structured_content is None:
                raise RuntimeError(f"the replay server did not end the episode: {res.content}")
            outcome.data["official"] = {**res.structured_content, "final_answer": final}
        return outcome

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        official = (trace.get("outcome") or {}).get("official") if trace.get("status") == "completed" else None
        return None if official is None else float((official.get("result") or {}).get("message") == "Success.")

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: each turn's replay decisions, the gold calls still pending, how the episode ended."""
        from .view import episode_sections

        done = trace is not None and trace.get("status") == "completed"
        return episode_sections((trace.get("outcome") or {}).get("official") if done and trace is not None else None)

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        done = trace is not None and trace.get("status") == "completed"
        official = (trace.get("outcome") or {}).get("official") if done and trace is not None else None
        if self.results_file is not None:  # the file alone: its judgements as they are, as print_results.py
            known = self.result_samples[task_id]
            resp_eval = official.get("resp_eval") if official else None
            score = task_score(known.domain, known.gold_calls, official, resp_eval, divides=known.divides)
            if known.foreign:  # its official per-domain numbers: the summary's foreign_domains
                score.groups.pop("domain", None)
            return self._scored(score, task_id, official, resp_eval)
        sample = self.samples[task_id]
        resp_eval = None
        if official is not None:
            resp_eval = official.get("resp_eval")  # imported from an official result file
            final = official.get("final_answer")
            if resp_eval is None and isinstance(final, str) and (ctx.can_judge or final == ""):
                from .judging import response_eval

                prompts = data_file(*PROMPTS_RESPONSE) if final != "" else Path()
                convs = sample.record["conversations"]
                resp_eval = await response_eval(
                    lambda system, prompt, verdict: ctx.ask(system, prompt, verdict=verdict),
                    prompts, sample.query, convs[:-1], final)
        return self._scored(task_score(sample.domain, sample.gold_calls, official, resp_eval), task_id, official,
                            resp_eval)

    @staticmethod
    def _scored(score: TaskScore, task_id: str, official: Mapping[str, Any] | None, resp_eval: Any) -> TaskScore:
        score.details["official"] = {
            "id": task_id,
            "message": (official.get("result") or {}).get("message") if official else None,
            "count_dict": official.get("count_dict") if official else None,
            "resp_eval": resp_eval,
        }
        return score

    def formats(self) -> Sequence[PredictionFormat]:
        from .export import official_format

        return [official_format()]
