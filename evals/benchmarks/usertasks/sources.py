"""Where the tasks' tools come from: spec files, a family KG, and MCP servers (live, recorded or replayed).

* ``--tools-dir DIR``: spec files (the project's YAML/JSON, OpenAI function tools, BFCL function
  docs; ``tool_specs.load_tool_dir``);
* ``--kg FILE``: a KG triple file (one ``['head', 'relation', 'tail']`` per line), built into a
  private Kuzu database and served as the KG tools (``kg_neighbors``, ``kg_search_path``, ...);
* ``--mcp-server CMD|URL`` and ``--mcp-config FILE``: MCP servers whose tools are listed at start
  and reached through our server (``server.upstream``); ``--record FILE`` appends each real
  response to a recording, ``--replay FILE`` answers from one with no server started
  (``server.recording``).

Two sources may not offer the same tool name (the error names both). ``${NAME}`` variables are
expanded in the MCP servers' command lines, arguments, working directories and URLs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from server import KGConfig, kg_tools
from server.mcp_sources import McpSource, load_mcp_config, parse_mcp_server
from server.recording import CallRecording, read_recording, replay_specs
from server.upstream import open_sources
from tool_specs import SpecLoadError, ToolSpec, UndefinedVariable, expand_variables, load_tool_dir

__all__ = ["mcp_sources", "open_tools", "spec_file_tools"]


def spec_file_tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    """The tools of ``--tools-dir`` (none without it); a ``ValueError`` says what is wrong in which file."""
    if not options.get("tools_dir"):
        return []
    try:
        return load_tool_dir(options["tools_dir"])
    except SpecLoadError as exc:
        raise ValueError(f"--tools-dir: {exc}") from None


def _expanded(source: McpSource, variables: Callable[[str], str | None], where: str) -> McpSource:
    """``source`` with ``${NAME}`` replaced in its command, arguments, working directory and URL
    (not in its env or headers: those are where secrets go, read from the environment by the server)."""
    try:
        return dataclasses.replace(
            source, command=None if source.command is None else expand_variables(source.command, variables),
            args=tuple(expand_variables(a, variables) for a in source.args),
            cwd=None if source.cwd is None else expand_variables(source.cwd, variables),
            url=None if source.url is None else expand_variables(source.url, variables))
    except UndefinedVariable as exc:
        raise ValueError(f"{where}: MCP server {source.name!r}: {exc}") from None


def mcp_sources(options: Mapping[str, Any], variables: Callable[[str], str | None] | None = None) -> list[McpSource]:
    """The MCP servers of ``--mcp-config`` and ``--mcp-server`` (``${NAME}`` expanded by ``variables``)."""
    lookup = variables or (lambda _name: None)
    out = [_expanded(s, lookup, f"--mcp-config {options['mcp_config']}")
           for s in (load_mcp_config(options["mcp_config"]) if options.get("mcp_config") else [])]
    if options.get("mcp_server"):
        try:
            text = expand_variables(options["mcp_server"], lookup)
        except UndefinedVariable as exc:
            raise ValueError(f"--mcp-server: {exc}") from None
        out.append(parse_mcp_server(text, token_env=options.get("mcp_token_env")))
    names = [s.name for s in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"two MCP servers are named {', '.join(twice)}; name them apart (NAME=COMMAND, or the "
                         "keys of --mcp-config)")
    return out


def _kg(path: str, search: str, stack: contextlib.ExitStack | contextlib.AsyncExitStack) -> list[ToolSpec]:
    from kg_store import KGError, KGStore

    tmp = Path(tempfile.mkdtemp(prefix="tasks-kg-"))
    stack.callback(shutil.rmtree, tmp, ignore_errors=True)
    try:
        store = KGStore.build(tmp / "db", path)
    except KGError as exc:
        raise ValueError(f"--kg: {exc}") from None
    stack.callback(store.close)
    return kg_tools(KGConfig(store=store, search_mode=search))


def open_tools(options: Mapping[str, Any], stack: contextlib.ExitStack | contextlib.AsyncExitStack,
               variables: Callable[[str], str | None] | None = None) -> list[ToolSpec]:
    """Every tool of the run's sources, opened on ``stack`` (MCP servers started, the KG built)."""
    found: list[tuple[str, ToolSpec]] = [(f"--tools-dir {options['tools_dir']}", s) for s in spec_file_tools(options)]
    if options.get("kg"):
        found += [(f"--kg {options['kg']}", s) for s in _kg(options["kg"], options.get("kg_search", "greedy"), stack)]
    sources = mcp_sources(options, variables)
    if options.get("replay"):
        rec = read_recording(options["replay"])
        wanted = [s.name for s in sources] or None
        missing = [n for n in wanted or [] if n not in rec.tools]
        if missing:
            raise ValueError(f"--replay {options['replay']}: no recorded tools of MCP server(s) {', '.join(missing)} "
                             f"(it has: {', '.join(rec.tools) or 'none'})")
        found += [(f"MCP server {s.annotations['source']} (replayed)", s) for s in replay_specs(rec, wanted)]
    else:
        recording = None
        if options.get("record"):
            recording = CallRecording(options["record"])
            stack.callback(recording.close)
        listed = None if recording is None else (lambda src, tools: recording.tools(src.name, tools))
        for source, specs in open_sources(sources, stack, record=recording, on_listed=listed):
            found += [(f"MCP server {source.describe()}", s) for s in specs]
    origin: dict[str, str] = {}
    out: list[ToolSpec] = []
    for where, spec in found:
        if spec.name in origin:
            raise ValueError(f"tool {spec.name!r} is offered by both {origin[spec.name]} and {where}")
        origin[spec.name] = where
        out.append(spec)
    return out
