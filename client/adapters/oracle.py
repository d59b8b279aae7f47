"""The ``oracle`` adapter: answers a task with its gold calls, through the same MCP path as a model.

It is the harness's own sanity check: it plays a model that emits the gold call steps one turn
at a time (the calls of one step as parallel tool calls), then a final answer. Every benchmark
must score 100% with it; anything less is a bug in loading, serving, recording or scoring.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from client.adapters.base import DEFAULT_PARAMS, GenerateParams
from client.messages import AssistantMessage, Message, ModelResponse, ToolCall, ToolChoice, ToolDef, Usage

__all__ = ["OracleAdapter"]


class OracleAdapter:
    """A scripted model for one task: ``steps`` is a list of steps, each a list of gold calls
    ``{"name": ..., "arguments": {...}}``; ``final_answer`` is said after the last step."""

    provider = "oracle"

    def __init__(
        self,
        steps: list[list[dict[str, Any]]],
        final_answer: str | None = None,
        *,
        task_id: str = "",
        turn_latency_s: float = 0.0,
    ):
        self.steps = steps
        self.turn_latency_s = turn_latency_s
        self.final = final_answer if final_answer is not None else "Done."
        self.model = "oracle"
        self.name = "oracle"
        self.task_id = task_id

    async def complete(
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> ModelResponse:
        if self.turn_latency_s > 0:  # plays a model's thinking time (harness benchmarks)
            await asyncio.sleep(self.turn_latency_s)
        done = sum(1 for m in messages if isinstance(m, AssistantMessage) and m.tool_calls)
        offered = {t.name for t in tools}
        if done < len(self.steps):
            step = self.steps[done]
            missing = [c["name"] for c in step if c["name"] not in offered]
            if missing:  # a gold tool the server did not list: the harness is wrong, say so loudly
                raise RuntimeError(f"oracle: gold tool(s) {missing} not offered for task {self.task_id!r}")
            calls = [
                ToolCall.from_arguments(f"oracle_{done}_{i}", c["name"], dict(c["arguments"]))
                for i, c in enumerate(step)
            ]
            text, stop = None, "tool_calls"
        else:
            calls, text, stop = [], self.final, "end_turn"
        raw = {"text": text, "tool_calls": [c.to_dict() for c in calls]}
        return ModelResponse(
            text=text, tool_calls=calls, reasoning=None, usage=Usage(), stop_reason=stop,
            latency_s=self.turn_latency_s, model="oracle", raw=json.loads(json.dumps(raw)),
        )

    async def aclose(self) -> None:
        return None
