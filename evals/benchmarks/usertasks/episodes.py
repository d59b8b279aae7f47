"""An episode's own world: its folder, its servers, its set-up calls and its state checks.

Before the model's first turn:

1. a fresh folder (``${EPISODE_DIR}``) is made and the task's ``setup.files`` are copied into it
   (when the task has files, names the folder, or a server is started per episode);
2. every MCP server started per episode (:class:`server.upstream.EpisodeServers`) is started for
   this episode, with the folder in its settings;
3. the task's ``setup.calls`` are made, in order; one that returns an error fails the episode
   (:class:`SetupFailed`: the task cannot start from the state it needs).

After the model's last turn the task's ``checks`` are made on the same tools, and their results kept
in the trace (scored by :mod:`.checks`); then the servers are stopped and the folder removed. The
same task therefore starts from the same state in every run, rerun and resume, as long as its
state lives in the folder or in a server started per episode. A remote (HTTP) server cannot be
reset by the run: see docs/your-own-tasks.md.

Harness calls go straight to the tools the run serves (validated against their schemas like the
model's calls, under the task's id so a per-episode server answers them), not through the model's
session: a check may use a tool the task does not offer the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from server.upstream import EpisodeServers
from tool_specs import CallContext, ToolSpec

from .refs import result_value
from .taskfile import Task

__all__ = ["EpisodeWorld", "SetupFailed", "harness_call"]

_MAX_TEXT = 4000  # of a harness call's result text kept in the trace


class SetupFailed(RuntimeError):
    """A set-up call of the task returned an error: the episode cannot start from its state."""


async def harness_call(tools: Mapping[str, ToolSpec], task_id: str, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """One call the harness makes: ``{name, arguments, value, text, is_error}`` (``value``: the result's
    text parsed as JSON, else its structured result, else its text)."""
    spec = tools.get(name)
    if spec is None:
        return {"name": name, "arguments": dict(arguments), "value": None, "text": f"no tool {name!r}", "is_error": True}
    ctx = CallContext(episode_id=f"harness:{task_id}", task_id=task_id, benchmark="taskfile")
    result = await spec.call(dict(arguments), ctx)
    text = result.text or ""
    return {"name": name, "arguments": dict(arguments), "value": None if result.is_error else result_value(text, result.structured),
            "text": text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…", "is_error": bool(result.is_error)}


def _copy(files: Sequence[tuple[str, str]], folder: Path) -> None:
    for src, dest in files:
        target = folder / dest  # "." (a folder's content into the episode's folder) is the folder itself
        target.parent.mkdir(parents=True, exist_ok=True)
        if Path(src).is_dir():
            shutil.copytree(src, target, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(src, target / Path(src).name if target.is_dir() else target, follow_symlinks=False)


class EpisodeWorld:
    """The tools and per-episode servers of a run, and what one episode needs of them."""

    def __init__(self, tools: Sequence[ToolSpec]):
        self.tools = {t.name: t for t in tools}
        self.servers = list({id(t.executor): t.executor for t in tools if isinstance(t.executor, EpisodeServers)}.values())

    def needs_folder(self, task: Task) -> bool:
        return bool(self.servers) or task.needs_episode_dir

    @contextlib.asynccontextmanager
    async def open(self, task: Task) -> AsyncIterator[tuple[str | None, list[dict[str, Any]]]]:
        """The episode's folder (None when it needs none) and the results of its set-up calls; the
        per-episode servers run inside. :class:`SetupFailed` when a set-up call returns an error."""
        folder = tempfile.mkdtemp(prefix=f"evals-episode-{task.id[:40]}-") if self.needs_folder(task) else None
        started: list[EpisodeServers] = []
        try:
            if folder is not None:
                await asyncio.to_thread(_copy, task.setup_files, Path(folder))
            for servers in self.servers:
                await asyncio.to_thread(servers.start, task.id, folder or "")
                started.append(servers)
            here = task.in_folder(folder)
            done = []
            for call in here.setup_calls:
                got = await harness_call(self.tools, task.id, call["name"], call["arguments"])
                done.append(got)
                if got["is_error"]:
                    raise SetupFailed(f"task {task.id!r} (line {task.line}): set-up call {call['name']} returned an error: "
                                      f"{got['text'][:300]}")
            yield folder, done
        finally:
            for servers in started:
                await asyncio.to_thread(servers.stop, task.id)
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    async def check(self, task: Task) -> list[dict[str, Any]]:
        """The results of the task's state checks (``task`` already in its folder)."""
        return [await harness_call(self.tools, task.id, c["name"], c["arguments"]) for c in task.checks]
