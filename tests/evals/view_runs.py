"""Real run directories for the viewer's tests: FamilyTool runs of a scripted OpenAI-compatible model.

The model (a local stand-in for the provider, driven through the real ``openai`` SDK, the agent loop
and the MCP server) walks the gold KG path with ``kg_search_path``, then makes the gold call, except
on the tasks it is told to get wrong: there it passes the name of the first person on the path (e.g.
"Alice") where the gold call has the entity at the path's end (e.g. ``dinnertime_0002``). The
text of its first turn holds markup (``<script>``, ``onerror``) that a page must show as text.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from fake_providers import FakeProviderServer, openai_chat, tool_call

from evals.benchmarks.familytool.data import agent_prompt, load_tasks
from evals.benchmarks.familytool.metrics import gold_paths
from evals.core.run import RunOptions, run_benchmark

ANSWER = 'Done <script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def wrong_arguments(task: Any) -> dict[str, Any]:
    """The gold call's arguments with the first value replaced by the name of a person on the path."""
    gold = dict(task.gold_calls[0].arguments)
    path = gold_paths(task.gold_kg)[0]
    person = path[0][2] if len(path) > 1 else (task.speaker or "Bob")
    key = next(iter(gold))
    gold[key] = person
    return gold


async def scripted_run(run_dir: Path, *, limit: int, wrong: Collection[int], model: str = "fake-model") -> dict[str, Any]:
    """Run ``familytool-b --limit N`` with the scripted model; tasks at the ``wrong`` positions fail."""
    tasks = load_tasks("b")[:limit]
    by_prompt = {agent_prompt(t): (i, t) for i, t in enumerate(tasks)}

    def answer(body: dict[str, Any]) -> object:
        msgs = body["messages"]
        user = next(m["content"] for m in msgs if m["role"] == "user")
        i, task = by_prompt[user]
        results = [m for m in msgs if m["role"] == "tool"]
        if not results:
            path = gold_paths(task.gold_kg)[0]
            return openai_chat(ANSWER, tool_calls=[tool_call("kg_search_path", {"start": path[0][0],
                                                                                "path": [t[1] for t in path]})],
                               usage=(200 + i, 20))
        if len(results) == 1:
            gold = task.gold_calls[0]
            args = wrong_arguments(task) if i in wrong else dict(gold.arguments)
            return openai_chat(tool_calls=[tool_call(gold.name, args)], usage=(300 + i, 25))
        return openai_chat(ANSWER, usage=(350, 10))

    with FakeProviderServer() as fake:
        fake.openai.respond_with(answer)
        opts = RunOptions(benchmark="familytool-b", model=f"openai:{model}", limit=limit, concurrency=4,
                          run_dir=run_dir, base_url=fake.openai_base_url, progress=False)
        _, summary = await run_benchmark(opts)
    return summary
