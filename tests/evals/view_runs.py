"""Real run directories for the viewer's tests: FamilyTool runs of a scripted OpenAI-compatible model.

The model (a local stand-in for the provider, driven through the real ``openai`` SDK, the agent loop
and the MCP server) walks the gold KG path with ``kg_search_path``, then makes the gold call, except
on the tasks it is told to get wrong: there it passes the name of the first person on the path (e.g.
"Alice") where the gold call has the entity at the path's end (e.g. ``dinnertime_0002``). The
text of its first turn holds markup (``<script>``, ``onerror``) that a page must show as text.

Task-file runs (:func:`taskfile_runs`): the family example of docs/your-own-tasks.md and a second task
file (its first four tasks), each run by the oracle, and the second by a scripted model with known
mistakes; none of the models has a price. :func:`serve_view` serves the viewer over a folder of runs.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from fake_providers import FakeProviderServer, openai_chat, tool_call

from evals.benchmarks.familytool.data import agent_prompt, load_tasks
from evals.benchmarks.familytool.metrics import gold_paths
from evals.core.run import RunOptions, run_benchmark

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "family"
MINI_TASKS = 4  # the second task file: the example's first four tasks (f01 to f04)
# the scripted model's mistakes on it: f01's answer; f03 looks Maya up with another tool (the gold call
# `find` is missed, so the reference to its result stays unresolved) and books another restaurant
MINI_MISTAKES: dict[str, dict[str, Any]] = {
    "f01": {"answer": "Rosa"},
    "f03": {"turns": [[{"name": "kg_neighbors", "arguments": {"entity": "Maya"}}],
                      [{"name": "book_restaurant", "arguments": {"restaurant": "restaurant_0001", "people": 2}}]]},
}

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_view(root: Path) -> Iterator[str]:
    """``evals view ROOT``'s app served on 127.0.0.1 in a thread; yields its URL."""
    import uvicorn

    from evals.view.app import make_app
    from evals.view.site import Site

    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(make_app(Site([root])), host="127.0.0.1", port=port, log_level="warning",
                                        lifespan="off"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not srv.started and time.time() < deadline:
        time.sleep(0.05)
    assert srv.started, "the viewer did not start"
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        srv.should_exit = True
        thread.join(10)


def taskfile_runs(root: Path) -> Path:
    """``root/runs/{family-oracle, mini-oracle, mini-model}`` (see the module docstring); returns ``root/runs``."""
    from fake_providers import FakeProviderServer
    from scripted_tasks import scripted

    from evals.benchmarks.usertasks.taskfile import load_task_file
    from evals.cli import main

    text = (EXAMPLE / "family_tasks.yaml").read_text(encoding="utf-8")
    mini = root / "mini_tasks.yaml"
    mini.write_text(text[:text.index(f"  - id: f{MINI_TASKS + 1:02d}")], encoding="utf-8")
    assert len(load_task_file(mini)) == MINI_TASKS
    tools = ["--kg", str(EXAMPLE / "family.triples"), "--tools-dir", str(EXAMPLE / "tools"), "--no-progress"]
    runs = root / "runs"

    def run(tasks: Path, name: str, *model: str) -> None:
        assert main(["run", "taskfile", "--tasks", str(tasks), *tools, *model, "--run-dir", str(runs / name)]) == 0

    run(mini, "mini-oracle", "--model", "oracle")
    with FakeProviderServer() as fake:
        fake.openai.respond_with(scripted(load_task_file(mini), MINI_MISTAKES))
        run(mini, "mini-model", "--model", "openai:m", "--base-url", fake.openai_base_url, "--api-key-env", "PATH")
    run(EXAMPLE / "family_tasks.yaml", "family-oracle", "--model", "oracle")  # the newest oracle run
    return runs
