"""Record the real responses of MCP servers (``--record FILE``) and replay them offline (``--replay FILE``).

A recording is a JSON Lines file, appended to as calls are answered (safe across the worker
processes of one run: each line is written with one ``write`` on a file opened for appending):

* ``{"kind": "tools", "source": NAME, "tools": [<MCP Tool>, ...]}`` when a server is listed;
* ``{"kind": "call", "source": NAME, "task_id": ID, "episode": KEY, "tool": NAME, "arguments": {...},
  "result": {"text": ..., "structured": ..., "is_error": ...}}`` for each answered call.

A recording is untrusted: its listing follows the rules every tool source does
(:func:`server.upstream.listed_specs`) and a recorded result over :data:`tool_specs.MAX_RESULT_BYTES`
is replayed as an error. Replaying needs no server: the tools are the recorded listing and :class:`RecordedExecutor` answers
a call with a recorded result, deterministically:

1. the same task's recorded call with equal arguments (after type normalisation by the tool's
   schema; the k-th such call of a session gets the k-th recording of the task's last recorded
   episode, then the last one again);
2. else the first recorded call of another task with equal arguments;
3. else the first recorded call that a matcher of the cascade (``matchers``) accepts;
4. else an error result that says no response was recorded for these arguments.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import types

from tool_specs import CallContext, DocumentError, ToolLike, ToolResult, ToolSpec, load_json
from tool_specs.argument_matching import normalize_arguments
from tool_specs.bounded_read import read_text_lines
from tool_specs.matching import Matcher, decide

from .mcp_sources import McpSourceError
from .upstream import listed_specs

__all__ = ["CallRecording", "RecordedExecutor", "Recording", "read_recording", "replay_specs"]


class CallRecording:
    """Appends a server's listing and every answered call to a recording file (``--record``)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def _write(self, record: Mapping[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)

    def tools(self, source: str, tools: Sequence[types.Tool]) -> None:
        self._write({"kind": "tools", "source": source,
                     "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]})

    def __call__(self, source: str, task_id: str | None, tool: str, arguments: dict[str, Any], result: ToolResult,
                 episode: str | None = None) -> None:
        self._write({"kind": "call", "source": source, "task_id": task_id, "episode": episode, "tool": tool,
                     "arguments": arguments,
                     "result": {"text": result.text, "structured": result.structured, "is_error": result.is_error}})

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


@dataclass
class Recording:
    """What a recording file holds: the last listing of each source and every call, in file order."""

    path: Path
    tools: dict[str, list[types.Tool]] = field(default_factory=dict)
    calls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # tool name -> its recorded calls
    sources: dict[str, str] = field(default_factory=dict)  # tool name -> its source


def _recording_lines(p: Path) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a recording, none read past ``MAX_LINE_BYTES`` (it is untrusted)."""
    try:
        yield from read_text_lines(p)
    except OSError as exc:
        raise McpSourceError(f"{p}: cannot read the recording: {exc.strerror or exc}") from None
    except ValueError as exc:  # a line past the bound (LineTooLong) or not UTF-8: FILE:LINE
        raise McpSourceError(str(exc)) from None


def read_recording(path: str | Path) -> Recording:
    """Read a recording; :class:`McpSourceError` names the file and line of a bad record."""
    p = Path(path)
    rec = Recording(p)
    for number, line in _recording_lines(p):
        try:
            item = load_json(line, p, line=number, allow_nan=True)  # bounded depth, no key twice
            kind = item["kind"]
            if kind == "tools":
                rec.tools[str(item["source"])] = [types.Tool.model_validate(t) for t in item["tools"]]
            elif kind == "call":
                if not isinstance(item["arguments"], dict) or not isinstance(item["result"], dict):
                    raise ValueError("arguments and result must be objects")
                rec.calls.setdefault(str(item["tool"]), []).append(item)
            else:
                raise ValueError(f"unknown kind {kind!r}")
        except DocumentError as exc:
            raise McpSourceError(f"{p}:{number}: not a recording line ({exc.problem})") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise McpSourceError(f"{p}:{number}: not a recording line ({type(exc).__name__}: {exc})") from None
    for source, tools in rec.tools.items():
        for tool in tools:
            rec.sources[tool.name] = source
    return rec


def _key(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> str:
    return json.dumps(normalize_arguments(arguments, schema), sort_keys=True, ensure_ascii=False, default=str)


def _result(item: Mapping[str, Any]) -> ToolResult:
    r = item["result"]
    structured = r.get("structured")
    return ToolResult(is_error=bool(r.get("is_error")), text=str(r.get("text") or ""),
                      structured=structured if isinstance(structured, dict) else None)


class RecordedExecutor:
    """Answers a tool's calls from its recorded calls (see the module docstring for the order)."""

    kind = "recorded"

    def __init__(self, path: Path, calls: Sequence[Mapping[str, Any]], *, matchers: Sequence[Matcher] = ()):
        self.path = path
        self.calls = [dict(c) for c in calls]
        self.matchers = list(matchers)

    def __repr__(self) -> str:
        return f"RecordedExecutor({self.path.name}, {len(self.calls)} calls)"

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "recording": str(self.path), "calls": len(self.calls)}

    def _task_calls(self, task_id: str | None) -> list[dict[str, Any]]:
        """The calls of the task's last recorded episode."""
        mine = [c for c in self.calls if c.get("task_id") == task_id]
        if not mine:
            return []
        last = mine[-1].get("episode")
        return [c for c in mine if c.get("episode") == last]

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        """The recorded answer (a recorded result larger than :data:`tool_specs.MAX_RESULT_BYTES` is an error)."""
        return (await self._answer(spec, arguments, ctx)).bounded(spec.name)

    async def _answer(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        schema = spec.input_schema
        key = _key(arguments, schema)
        same = [c for c in self._task_calls(ctx.task_id) if _key(c["arguments"], schema) == key]
        if same:
            used: dict[str, int] = ctx.state.setdefault("recorded.used", {})
            n = used.get(f"{spec.name}\0{key}", 0)
            used[f"{spec.name}\0{key}"] = n + 1
            return _result(same[min(n, len(same) - 1)])
        for call in self.calls:
            if _key(call["arguments"], schema) == key:
                return _result(call)
        pred = {"name": spec.name, "arguments": arguments}
        for call in self.calls:
            if (await decide(pred, {"name": spec.name, "arguments": call["arguments"]}, self.matchers)).matched:
                return _result(call)
        return ToolResult.error(
            f"{spec.name}: no response was recorded for these arguments ({json.dumps(arguments, ensure_ascii=False)}); "
            f"the recording {self.path.name} has {len(self.calls)} call(s) of this tool. Record it with a live "
            "run (--record)."
        )


def replay_specs(rec: Recording, sources: Sequence[str] | None = None, *, matchers: Sequence[Matcher] = ()) -> list[ToolSpec]:
    """The recorded tools (of ``sources``, default all) answered from the recording.

    Raises:
        McpSourceError: a recorded tool breaks the rules every tool source follows (a name, a
            schema; :func:`server.upstream.listed_specs`); the message names the file and the server.
    """
    out: list[ToolSpec] = []
    for source, tools in rec.tools.items():
        if sources is not None and source not in sources:
            continue
        out += listed_specs(
            tools, lambda tool: RecordedExecutor(rec.path, rec.calls.get(tool.name, []), matchers=matchers), source,
            f"{rec.path}: the recorded MCP server {source!r}",
        )
    return out
