"""FamilyTool as an ``evals run`` plugin: strategies, episodes and scoring."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from client.agent import run_agent

from . import familytool as ft
from .base import EpisodeEnv

if TYPE_CHECKING:
    from client.runs import EpisodeOutcome, EpisodeRecorder
    from server import ToolServer

    from ..pipeline import RunOptions


class FamilyToolPlugin:
    strategies = ("agent",)
    default_strategy = "agent"

    def __init__(self, name: str):
        self.name = name
        self.catalog = ft.FamilyToolCatalog(name)

    def task_ids(self) -> list[str]:
        return self.catalog.task_ids()

    def build_server(self, opts: RunOptions, stack: contextlib.AsyncExitStack) -> ToolServer:
        from ..serving import build_tool_server

        return build_tool_server([self.name], stack=stack)

    def result_options(self, opts: RunOptions) -> Mapping[str, Any]:
        return {}

    async def prepare(self, env: EpisodeEnv) -> None:
        return None

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        task = self.catalog.task(task_id)
        adapter = env.model(task_id, ft.oracle_steps(task))
        cfg = env.agent_cfg
        if cfg.system_prompt is None:
            import dataclasses

            cfg = dataclasses.replace(cfg, system_prompt=ft.AGENT_SYSTEM_PROMPT)
        async with env.session(self.name, task_id) as session:
            outcome = await run_agent(adapter, session, ft.agent_prompt(task), recorder, cfg, limiter=env.limiter)
        outcome.data.update(ft.call_agreement(task, outcome.data["calls"]))
        return outcome

    def progress_score(self, trace: Mapping[str, Any]) -> float | None:
        out = trace.get("outcome") or {}
        return float(out["exact_call_match"]) if "exact_call_match" in out else None

    def summarize(self, traces: Mapping[str, Mapping[str, Any]], task_ids: list[str], config: Mapping[str, Any]) -> dict[str, Any]:
        completed = [traces[t] for t in task_ids if t in traces and traces[t].get("status") == "completed"]
        n = len(task_ids)

        def pct(key: str) -> float:
            hits = sum(1 for t in completed if (t.get("outcome") or {}).get(key))
            return round(100.0 * hits / n, 2) if n else 0.0

        return {"metrics": {"exact_call_match": pct("exact_call_match"), "tool_name_match": pct("tool_name_match")}}
