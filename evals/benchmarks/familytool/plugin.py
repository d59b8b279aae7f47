"""FamilyTool as an ``evals run`` plugin: the paper's KGETool pipeline and its ablations, plus an
agent that queries the live KG over MCP itself.

Strategies (``--strategy``):

``kgetool``
    The paper's two steps. Step 1 sends the official pipeline's prompt (``kg_step_prompt.txt``) with
    the KG's relation names (from ``kg_list_relations`` over MCP) and the query, and the model writes
    ``KG.search(start=..., path=[...])`` lines; each search our parser accepts is extracted by the
    server's ``kg_search_path`` with ``--kg-search exact|greedy|retrieval`` (``--top-k``), for the
    record and the project's reading. Scoring re-reads the step-1 text with the official
    post-processing (``official``). Step 2 asks for the tool call, offering only the task's candidate
    tools; what it gets is ``--tool-step`` (below). ``--kg-model`` makes another model do step 1 (the
    paper's cross-LLM table; ``oracle`` writes the gold paths).
``golden-kg``
    Step 2 only, with the gold sub-KG (the paper's upper bound).
``full-kg``
    Step 2 with the whole KG as the extra information (the paper's ablation, Table 8).

Step 2's input (``--tool-step``). ``official`` (the default) is what the official pipeline feeds it
(``KG_extraction_post`` writes the query, ``Tooluse_generation`` runs UnifiedToolHub's
``APIRequester``): the system message of ``tool_step_system.txt`` with ``--current-date``, and as the
user message the query exactly as in the data, speaker tag included, with its ``(...)`` replaced by
the extra information: for ``kgetool`` the official post-processing of the step-1 text
(``official.extraction_text``: first link per entity and relation, greedy fallback,
``<bad_extract>`` marks; empty for a format error), for ``golden-kg`` nothing replaced, for
``full-kg`` the KG file's links written like the gold sub-KG (the official code for this ablation is
not published); the candidate tools as ``convert_to_openai_tools`` rewrites them (``official.api_tools``,
shown through :class:`OfficialToolView`; the calls still reach the live tools). ``project`` is the project's earlier step 2: its own instruction (use the KG's
entity ids) and the query followed by "The extra information for the query is ([h, r, t], ...)."
with, for ``kgetool``, every link the server's ``kg_search_path`` found (``--kg-search`` decides
the fallback; ``official`` needs the official greedy search, ``--kg-search greedy``) and the tools'
schemas as served.
``agent``
    No extra information: the model gets the KG tools and the candidate tools over MCP and finds the
    path itself. Its KG lookups are scored as KG extraction too (the triples the tools returned).

Every strategy ends the episode once the model calls a candidate tool: FamilyTool's answer is that
call. ``--inductive`` (FamilyTool-e only) serves the -e tasks over FamilyTool-b's KG and, before the
episodes, adds the facts that only -e has through ``kg_add_fact`` over MCP, so the new people and
relations are unseen until run time (the model never sees ``kg_add_fact`` itself).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import mcp.types as mcp_types

from client.agent import result_text, run_agent
from client.mcp_session import list_all_tools
from client.runs import EpisodeOutcome
from kg_store import KGStore
from kg_store.triples import parse_triple_file
from server import BenchmarkMount, KGConfig, PromptSpec
from tool_specs.matching import response_match, rule_match

from ...core.data import data_file
from ...core.metrics import TaskScore
from ...core.plugin import BenchmarkInfo, EpisodeEnv
from . import data as ft
from . import official as off
from .kg import open_family_kg
from .metrics import (
    AGENT_KG_BLOCK,
    EXTRACTING,
    add_official,
    add_project,
    format_kg_search,
    gold_paths,
    kg_scores,
    official_calls,
    parse_kg_searches,
    step1_text,
    task_groups,
    tool_scores,
)
from .prompts import (
    familytool_prompts,
    kg_step_system,
    tool_step_system,
)

if TYPE_CHECKING:
    from mcp import Client

    from client.runs import EpisodeRecorder

    from ...core.formats import PredictionFormat
    from ...core.scoring import ScoreContext

STRATEGIES = ("agent", "kgetool", "golden-kg", "full-kg")
KG_LOOKUP_TOOLS = ("kg_neighbors", "kg_search_path")
KG_WRITE_TOOLS = ("kg_add_fact", "kg_remove_fact")  # the harness's, never the model's

# The step-1 instruction of the official pipeline (``pipeline/KG_extraction.py``,
# ``get_rewrite_prompt``, at the pinned commit; the paper's Figure 5), verbatim in
# --tool-step project: the project's step-2 instruction
TOOL_STEP_SYSTEM = (
    "You are the assistant of a family. The user's name is given in <speak> tags. Requests refer to "
    "people and their preferences indirectly; the extra information after the request gives the "
    "relevant facts of the family knowledge graph as [head, relation, tail] triples. Call exactly one "
    "of the tools to carry out the request, using the knowledge graph's entity ids (such as "
    "dinnertime_0002) as parameter values."
)


def triples_text(triples: list[tuple[str, str, str]] | list[list[str]]) -> str:
    return ", ".join(f"[{h}, {r}, {t}]" for h, r, t in triples)


def with_extra_information(task: ft.FamilyToolTask, triples: list[Any]) -> str:
    """The step-2 query: the request followed by the paper's extra-information sentence."""
    return f"{ft.agent_prompt(task)}  {ft.EXTRA_MARKER} ({triples_text(triples)})."


def official_tool_query(task: ft.FamilyToolTask, extra: str | None) -> str:
    """The official step-2 user message: the query as in the data, its ``(...)`` replaced by ``extra``
    (``None``: the gold sub-KG, unchanged)."""
    return task.raw_query if extra is None else off.tool_step_query(task.raw_query, extra)


def kg_step_prompt(task: ft.FamilyToolTask) -> str:
    """The step-1 user message: the query up to the extra information, as the official pipeline sends it."""
    return task.official_query


def oracle_kg_search(task: ft.FamilyToolTask) -> str:
    """The gold sub-KG written as the KG searches that retrieve it (one per root-to-leaf path)."""
    return "\n".join(format_kg_search(p[0][0], [t[1] for t in p]) for p in gold_paths(task.gold_kg))


def search_hallucinated(result: Mapping[str, Any]) -> bool:
    """A ``kg_search_path`` result used a relation the KG lacks, or started at an unknown entity."""
    return bool(result.get("missing_relations")) or not result.get("start_found", True)


def agent_kg_record(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What an agent retrieved with its KG lookups, in the shape :func:`kg_scores` reads."""
    paths: list[dict[str, Any]] = []
    extracted: dict[tuple[str, str, str], None] = {}
    for ev in events:
        if ev.get("kind") != "tool_call" or ev.get("name") not in KG_LOOKUP_TOOLS:
            continue
        args = ev.get("arguments") if isinstance(ev.get("arguments"), dict) else {}
        st = ev.get("structured") if isinstance(ev.get("structured"), dict) else None
        if ev.get("is_error") or st is None:
            paths.append({"tool": ev["name"], "arguments": args, "hallucinated": True})
            continue
        if ev["name"] == "kg_search_path":
            found = st.get("triples", [])
            paths.append({"tool": ev["name"], "start": st.get("start"), "path": st.get("path"),
                          "hallucinated": search_hallucinated(st)})
        else:
            found = list(st.get("out", [])) + list(st.get("in", []))
            paths.append({"tool": ev["name"], "entity": st.get("entity"), "hallucinated": False})
        for t in found:
            extracted[tuple(t)] = None
    ok = any(not p["hallucinated"] for p in paths)
    return {"format_error": not ok, "paths": paths, "extracted": [list(t) for t in extracted]}


class OfficialToolView:
    """An MCP session whose tool list is the task's candidate tools as the official step 2 shows them
    (``official.api_tools``: the data's tools rewritten, in the data's order) in place of the served
    schemas; everything else, calls included, goes to the session unchanged.

    A listed tool keeps its served name (the calls must reach it; the official rewrite changes no
    FamilyTool name) and gets the official description and parameters. A tool the data lists twice
    (identical copies, in 27 tasks of -b and 26 of -e) is shown once, where it first occurs: the
    official request repeats it, which strict providers (Anthropic, DeepSeek) refuse. Tools the data
    does not list (the KG tools) follow, as served."""

    def __init__(self, session: Client, candidate_tools: Iterable[Mapping[str, Any]]):
        self._session = session
        self._official: dict[str, dict[str, Any]] = {}
        for tool in candidate_tools:
            fn = off.api_tool(tool)["function"]
            self._official.setdefault(str(tool["name"]).strip(), fn)

    async def list_tools(self, cursor: str | None = None) -> mcp_types.ListToolsResult:
        tools = list(await list_all_tools(self._session)) if cursor is None else []
        served = {t.name: t for t in tools}
        missing = [name for name in self._official if name not in served]
        if missing:
            raise RuntimeError(f"--tool-step official: the server does not serve the candidate tools {missing}")
        shown = [served[name].model_copy(update={"description": fn["description"], "input_schema": fn["parameters"]})
                 for name, fn in self._official.items()]
        shown += [t for t in tools if t.name not in self._official]
        return mcp_types.ListToolsResult(tools=shown)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class FamilyToolBenchmark:
    """FamilyTool-b or -e (see the module docstring)."""

    def __init__(self, info: BenchmarkInfo, options: Mapping[str, Any]):
        self.info = info
        self.options = options
        self.name = info.name
        self.catalog = ft.load_catalog(self.name)
        self._specs = {s.name: s for s in self.catalog.playground_tools()}
        self._schemas = {name: spec.input_schema for name, spec in self._specs.items()}
        self._store: KGStore | None = None  # the KG of the last mounts() (its relations fill a prompt)

    def task_ids(self) -> list[str]:
        return self.catalog.task_ids()

    # ---- server ----------------------------------------------------------------------------------
    def check(self, strategy: str, *, own_server: bool) -> None:
        options = self.options
        if options.get("inductive") and self.name != "familytool-e":
            raise ValueError("--inductive evaluates familytool-e over familytool-b's KG; run it on familytool-e")
        if options.get("inductive") and not own_server:
            raise ValueError("--inductive needs the in-process server (it extends a private copy of the KG); drop --server-url")
        if options.get("kg_model") and strategy != "kgetool":
            raise ValueError("--kg-model is the step-1 model of --strategy kgetool")
        search = options.get("kg_search", "greedy")
        if strategy == "kgetool" and options.get("tool_step", "official") == "official" and search != "greedy":
            raise ValueError(f"--tool-step official feeds step 2 the official pipeline's own greedy search; "
                             f"--kg-search {search} (the server's extraction) needs --tool-step project")

    def mounts(
        self, stack: contextlib.ExitStack | contextlib.AsyncExitStack, *, strategy: str | None = None
    ) -> list[BenchmarkMount]:
        options = self.options
        # inductive: a private, writable copy of -b's KG, turned into -e's by prepare()
        inductive = bool(options.get("inductive"))
        writable = inductive or bool(options.get("allow_writes"))
        store = open_family_kg(self.name, writable=writable, stack=stack, source="familytool-b" if inductive else None)
        self._store = store
        kg = KGConfig(store=store, search_mode=options.get("kg_search", "greedy"), top_k=options.get("top_k", 3),
                      allow_writes=writable)
        return [BenchmarkMount(catalog=self.catalog, kg=kg)]

    # ---- what MCP clients see besides tools (evals serve) -----------------------------------------
    def prompts(self) -> list[PromptSpec]:
        return familytool_prompts(self.catalog, lambda: self._store,
                                  self.options.get("current_date", "2025-05-26"))

    def task_query(self, task_id: str) -> str:
        return self.catalog.task(task_id).official_query  # cut before the gold sub-KG

    def data_files(self) -> list[Path]:
        files = [data_file("familytool", f"{self.name}.jsonl"), ft.kg_file(self.name)]
        if self.options.get("inductive"):
            files.append(ft.kg_file("familytool-b"))
        return files

    async def prepare(self, env: EpisodeEnv) -> None:
        """Inductive setting: turn the served -b KG into -e's, over MCP: add the facts only -e has,
        and remove the two -b facts that -e corrected (``[Jack, mother, Alice]``, and a second
        ``prefer_travel_city`` of Bob's)."""
        if not self.options.get("inductive"):
            return
        base = parse_triple_file(ft.kg_file("familytool-b"))
        target = parse_triple_file(ft.kg_file("familytool-e"))
        base_set, target_set = set(base), set(target)
        added = [t for t in target if t not in base_set]
        removed = [t for t in base if t not in target_set]
        async with env.session(self.name) as session:
            for tool, facts in (("kg_add_fact", added), ("kg_remove_fact", removed)):
                for h, r, t in facts:
                    res = await session.call_tool(tool, {"head": h, "relation": r, "tail": t})
                    if res.is_error:
                        raise RuntimeError(f"inductive setting: {tool} {[h, r, t]} failed: {result_text(res)}")

    # ---- episodes --------------------------------------------------------------------------------
    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        task = self.catalog.task(task_id)
        strategy = env.opts.chosen_strategy
        candidates = {s.name for s in self.catalog.task_tools(task_id)}
        forced = env.agent_cfg.tool_choice == "required"
        cfg = dataclasses.replace(
            env.agent_cfg,
            stop_after_tools=frozenset(candidates),
            later_tool_choice="required" if forced else env.agent_cfg.later_tool_choice,
        )
        kg: dict[str, Any] | None = None
        async with env.session(self.name, task_id) as session:
            if strategy == "agent":
                steps = [[{"name": "kg_search_path", "arguments": {"start": p[0][0], "path": [t[1] for t in p]}}
                          for p in gold_paths(task.gold_kg)], *ft.oracle_steps(task)]
                model = env.model(task_id, steps)
                cfg = dataclasses.replace(cfg, system_prompt=cfg.system_prompt or ft.AGENT_SYSTEM_PROMPT)
                outcome = await run_agent(model, session, ft.agent_prompt(task), recorder, cfg,
                                          visible=lambda n: n not in KG_WRITE_TOOLS)
                kg = agent_kg_record(recorder.events_of("tool_call"))
            else:
                if strategy == "kgetool":
                    kg = await self._extract(env, task, session, recorder)
                if self.options.get("tool_step", "official") == "official":
                    system = tool_step_system(self.options.get("current_date", "2025-05-26"))
                    if strategy == "kgetool":
                        text = off.extraction_text(step1_text(kg, strategy), off.load_official_kg(ft.kg_file(self.name)))
                        prompt = official_tool_query(task, text)
                    else:
                        prompt = official_tool_query(task, None if strategy == "golden-kg" else off.links_text(self._full_kg))
                else:
                    system = TOOL_STEP_SYSTEM
                    extra = (kg or {}).get("extracted", []) if strategy == "kgetool" else (
                        [list(t) for t in task.gold_kg] if strategy == "golden-kg" else self._full_kg)
                    prompt = with_extra_information(task, extra)
                model = env.model(task_id, ft.oracle_steps(task))
                cfg = dataclasses.replace(cfg, system_prompt=cfg.system_prompt or system)
                shown = session
                if self.options.get("tool_step", "official") == "official":
                    shown = cast("Client", OfficialToolView(session, task.candidate_tools))
                outcome = await run_agent(model, shown, prompt, recorder, cfg,
                                          visible=candidates.__contains__)
        pred = ft.predicted_call(outcome.data["calls"])
        gold = task.gold_calls[0]
        outcome.data.update(
            prediction={"name": pred["name"], "arguments": pred["arguments"]} if pred else None,
            tool_name_match=bool(pred) and pred["name"] == gold.name,  # type: ignore[index]
            # the rule matcher, as in strict scoring (the progress bar's running score)
            exact_call_match=bool(pred) and rule_match(
                pred["name"], pred["arguments"], gold.name, gold.arguments, self._schemas.get(gold.name)  # type: ignore[index]
            ),
        )
        if kg is not None:
            outcome.data["kg"] = kg
        return outcome

    @cached_property
    def _full_kg(self) -> list[list[str]]:
        """The dataset's whole KG (the ``full-kg`` extra information), read once."""
        return [list(t) for t in parse_triple_file(ft.kg_file(self.name))]

    async def _extract(
        self, env: EpisodeEnv, task: ft.FamilyToolTask, session: Client, recorder: EpisodeRecorder
    ) -> dict[str, Any]:
        """KGETool step 1: relation path generation by the (step-1) model, then extraction over MCP."""
        rel = await session.call_tool("kg_list_relations", {})
        relations = (rel.structured_content or {}).get("relations", [])
        kg_model = env.roles.get("kg_model") or env.shared
        if kg_model is None or self.options.get("kg_model") == "oracle":
            from client.adapters.oracle import OracleAdapter

            kg_model = env.wrap(OracleAdapter([], oracle_kg_search(task), task_id=task.id,
                                              turn_latency_s=env.oracle_latency))
        step1 = dataclasses.replace(env.agent_cfg, system_prompt=kg_step_system(relations), tool_choice="auto",
                                    later_tool_choice="auto", max_turns=1, stop_after_tools=frozenset())
        recorder.note("kgetool step 1: relation path generation", model=getattr(kg_model, "name", None))
        gen = await run_agent(kg_model, None, kg_step_prompt(task), recorder, step1)
        text = gen.final_answer or ""
        searches = parse_kg_searches(text)
        paths: list[dict[str, Any]] = []
        extracted: dict[tuple[str, str, str], None] = {}
        recorder.note("kgetool step 1: path extraction", searches=[s.to_dict() for s in searches], mode=self.options["kg_search"])
        for s in searches:
            args = {"start": s.start, "path": list(s.path), "mode": self.options["kg_search"]}
            res = await session.call_tool("kg_search_path", args)
            st = res.structured_content if not res.is_error else None
            recorder.tool_call("kg_search_path", args, result_text(res), structured=st, is_error=bool(res.is_error), by="harness")
            if st is None:
                paths.append({"start": s.start, "path": list(s.path), "hallucinated": True, "error": result_text(res)})
                continue
            paths.append({"start": s.start, "path": list(s.path), "mode": st.get("mode"),
                          "missing_relations": st.get("missing_relations", []), "start_found": st.get("start_found"),
                          "hallucinated": search_hallucinated(st)})
            for t in st.get("triples", []):
                extracted[tuple(t)] = None
        return {"generation": text, "format_error": not searches, "paths": paths,
                "extracted": [list(t) for t in extracted]}

    # ---- scoring ---------------------------------------------------------------------------------
    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        out = trace.get("outcome") or {}
        return float(out["exact_call_match"]) if "exact_call_match" in out else None

    async def score(self, task_id: str, trace: Mapping[str, Any] | None, ctx: ScoreContext) -> TaskScore:
        """One task's official metrics (strict and non-strict; KG extraction for the strategies that
        extract), plus the project's reading with ``--scoring project``: tool use with the matcher
        cascade (rule, then response, then the judge when there is one) and rule-only."""
        task = self.catalog.task(task_id)
        trace = trace or {}
        outcome = (trace.get("outcome") or {}) if trace.get("status") == "completed" else {}
        strategy = ctx.config.get("strategy") or self.info.default_strategy
        score = TaskScore(groups=task_groups(task))
        calls = official_calls(outcome.get("calls") or [])
        kg_official = None
        if strategy in EXTRACTING:
            text = step1_text(outcome.get("kg"), strategy)
            extracted = off.extraction_text(text, off.load_official_kg(ft.kg_file(self.name)))
            kg_official = off.kg_values(extracted, off.gold_links(task.raw_query), task.gold_text)
            score.details["official_extraction"] = extracted
        add_official(score, off.tool_values(task.official_gold, calls, strict=True),
                     off.tool_values(task.official_gold, calls, strict=False),
                     None if strategy == "agent" else kg_official)
        if strategy == "agent" and kg_official is not None:  # no KG step of the paper's: our own names
            for key, value in kg_official.items():
                score.add(f"{AGENT_KG_BLOCK}.{key}", value)
        if self.options.get("scoring", "official") == "project":
            await self._score_project(task, outcome, ctx, strategy, score)
        return score

    async def _score_project(self, task: ft.FamilyToolTask, outcome: Mapping[str, Any], ctx: ScoreContext,
                             strategy: str, score: TaskScore) -> None:
        pred = outcome.get("prediction")
        gold = task.gold_calls[0]
        schema = self._schemas.get(gold.name)
        rule_ok = rule_match(pred["name"], pred.get("arguments"), gold.name, gold.arguments, schema) if pred else False
        response_ok = judged = False
        if pred and not rule_ok:
            spec = self._specs.get(gold.name)
            if pred["name"] == gold.name and spec is not None:
                response_ok = await response_match(spec, pred.get("arguments"), gold.arguments)
            if not response_ok and ctx.can_judge:
                tool = next((t for t in task.candidate_tools if t["name"] == gold.name), {"name": gold.name})
                decision = await ctx.judge(ft.agent_prompt(task), tool, gold.to_dict(), pred)
                judged = bool(decision and decision.equivalent)
        tools = tool_scores(task, pred, schema, rule_ok=rule_ok, response_ok=response_ok, judged_equivalent=judged)
        kg = kg_scores(task, outcome.get("kg")) if strategy in EXTRACTING else None
        add_project(score, tools, kg)

    def episode_view(self, task_id: str, trace: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: the gold call beside the predicted one, the gold and walked KG paths."""
        from .view import episode_sections

        return episode_sections(self.catalog.task(task_id), trace, score)

    # ---- other harnesses' formats ----------------------------------------------------------------
    def formats(self) -> list[PredictionFormat]:
        from .export import official_format

        return [official_format(self)]
