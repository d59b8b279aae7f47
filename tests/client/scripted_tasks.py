"""A scripted model for task-file runs (``evals run taskfile``), answered through a local stand-in of an
OpenAI-compatible provider (:mod:`fake_providers`): it plays each task's gold calls, one per turn, then the
oracle's answer, except where a plan gives other turns or another answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fake_providers import openai_chat

from evals.benchmarks.usertasks.refs import UNRESOLVED, resolve_arguments, result_value
from evals.benchmarks.usertasks.taskfile import Task

__all__ = ["scripted"]


def scripted(tasks: list[Task], plan: dict[str, dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A model that plays each task's gold calls, one per turn (references resolved from the results it
    got), then the oracle's answer, except where ``plan[task id]`` gives other ``turns`` or ``answer``."""
    by_text = {t.user_text: t for t in tasks}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        task = by_text[[m for m in messages if m["role"] == "user"][-1]["content"]]
        mine = plan.get(task.id, {})
        turns = mine.get("turns", [[{"id": c.id, "name": c.name, "arguments": c.arguments}] for c in task.calls or ()])
        flat = [c for turn in turns for c in turn]
        where = {str(c.get("id", i)): i for i, c in enumerate(flat)}
        results = [m["content"] for m in messages if m["role"] == "tool"]
        done = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
        if done < len(turns):
            def result_of(cid: str) -> Any:
                i = where.get(cid, len(results))
                return result_value(results[i]) if i < len(results) else UNRESOLVED
            return openai_chat(tool_calls=[(c["name"], resolve_arguments(c["arguments"], result_of)) for c in turns[done]])
        return openai_chat(mine.get("answer", task.oracle_answer()))

    return respond
