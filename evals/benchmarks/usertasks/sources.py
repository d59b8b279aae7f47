"""Where the tasks' tools come from: spec files, a family KG, and MCP servers (live, recorded or replayed).

* ``--tools-dir DIR``: spec files (the project's YAML/JSON, OpenAI function tools, BFCL function
  docs; ``tool_specs.load_tool_dir``);
* ``--kg FILE``: a KG triple file (one ``['head', 'relation', 'tail']`` per line), built into a
  private Kuzu database and served as the KG tools (``kg_neighbors``, ``kg_search_path``, ...);
* ``--mcp-server CMD|URL``, ``--mcp-config FILE`` and a YAML task file's ``servers``: MCP servers whose tools are listed at start
  and reached through our server (``server.upstream``); ``--record FILE`` appends each real
  response to a recording, ``--replay FILE`` answers from one with no server started
  (``server.recording``).

Two sources may not offer the same tool name (the error names both). ``${NAME}`` variables are
expanded in the MCP servers' command lines, arguments, working directories, ``env`` values and URLs
(not in headers); in ``env`` a secret-like name is read from the environment and recorded nowhere.
In an ``--mcp-config`` entry or a task file's ``servers``, a ``cwd``, argument or ``env`` value that starts
with ``./`` or ``../`` is a path relative to the folder of the file that declares it. A stdio server whose settings name
``${EPISODE_DIR}`` (or every stdio server, with ``--fresh-servers``; or one whose entry says
``per_episode``) is started afresh for every episode (``server.upstream.EpisodeServers``).
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
from server.mcp_sources import McpSource, load_mcp_config, parse_mcp_server, parse_mcp_servers
from server.recording import CallRecording, Recording, read_recording, replay_specs
from server.upstream import open_sources
from tool_specs import SpecLoadError, ToolSpec, UndefinedVariable, expand_variables, load_tool_dir

from .taskfile import task_file_servers
from .variables import EPISODE_MARK, names_episode_dir

__all__ = ["mcp_sources", "open_tools", "read_replay", "spec_file_tools"]


def spec_file_tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    """The tools of ``--tools-dir`` (none without it); a ``ValueError`` says what is wrong in which file."""
    if not options.get("tools_dir"):
        return []
    try:
        return load_tool_dir(options["tools_dir"])
    except SpecLoadError as exc:
        raise ValueError(f"--tools-dir: {exc}") from None


def _relative(text: str, base: Path | None) -> str:
    """``./x`` and ``../x`` made absolute against ``base`` (the config file's folder); anything else as it is."""
    if base is None or not text.startswith(("./", "../")):
        return text
    return str((base / text).resolve())


def _expanded(source: McpSource, variables: Callable[[str], str | None], where: str, *, base: Path | None = None,
              env_lookup: Callable[[str], str | None] | None = None, fresh: bool = False) -> McpSource:
    """``source`` with ``${NAME}`` replaced in its command, arguments, working directory, env values and
    URL (not in headers), relative paths resolved against ``base``, and started per episode when its
    settings name the episode's folder (or ``fresh``, for a stdio server)."""
    env_of = env_lookup or variables
    try:
        out = dataclasses.replace(
            source, command=None if source.command is None else _relative(expand_variables(source.command, variables), base),
            args=tuple(_relative(expand_variables(a, variables), base) for a in source.args),
            env={k: _relative(expand_variables(v, env_of), base) for k, v in source.env.items()},
            cwd=None if source.cwd is None else _relative(expand_variables(source.cwd, variables), base),
            url=None if source.url is None else expand_variables(source.url, variables))
    except UndefinedVariable as exc:
        raise ValueError(f"{where}: MCP server {source.name!r}: {exc}") from None
    names_folder = names_episode_dir([out.command, list(out.args), out.cwd, dict(out.env), out.url])
    if names_folder and out.command is None:
        raise ValueError(f"{where}: MCP server {source.name!r}: a remote server cannot be given the episode's folder "
                         "(${EPISODE_DIR}); only a stdio server is started per episode")
    if names_folder or (out.command is not None and (fresh or out.per_episode)):
        out = dataclasses.replace(out, per_episode=True, folder_mark=EPISODE_MARK)
    return out


def mcp_sources(options: Mapping[str, Any], variables: Callable[[str], str | None] | None = None) -> list[McpSource]:
    """The MCP servers of ``--mcp-config`` and ``--mcp-server`` (``${NAME}`` expanded by ``variables``)."""
    lookup = variables or (lambda _name: None)
    env_lookup = getattr(variables, "for_env", None)
    fresh = bool(options.get("fresh_servers"))
    out = []
    if options.get("mcp_config"):
        base = Path(options["mcp_config"]).resolve().parent
        out = [_expanded(s, lookup, f"--mcp-config {options['mcp_config']}", base=base, env_lookup=env_lookup, fresh=fresh)
               for s in load_mcp_config(options["mcp_config"])]
    declared = task_file_servers(options["tasks"]) if options.get("tasks") else {}
    if declared and not options.get("trust_task_servers"):
        raise ValueError(f"{options['tasks']}: declares MCP servers ({', '.join(map(str, declared))}) under servers:, "
                         "commands it would run on this machine; give --trust-task-servers to start them (only for a "
                         "task file you trust), or name them in your own --mcp-config")
    if declared:
        base = Path(options["tasks"]).resolve().parent
        out += [_expanded(s, lookup, f"{options['tasks']}: servers", base=base, env_lookup=env_lookup, fresh=fresh)
                for s in parse_mcp_servers(declared, f"{options['tasks']}: servers")]
    if options.get("mcp_server"):
        try:
            text = expand_variables(options["mcp_server"], lookup)
        except UndefinedVariable as exc:
            raise ValueError(f"--mcp-server: {exc}") from None
        out.append(_expanded(parse_mcp_server(text, token_env=options.get("mcp_token_env")), lambda name: "${" + name + "}",
                             "--mcp-server", fresh=fresh))
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


def read_replay(options: Mapping[str, Any], variables: Callable[[str], str | None] | None = None) -> Recording:
    """The recording of ``--replay``, read and checked against the run's MCP servers (each must have
    its tools recorded): what a run checks before it makes its run folder."""
    rec = read_recording(options["replay"])
    missing = [s.name for s in mcp_sources(options, variables) if s.name not in rec.tools]
    if missing:
        raise ValueError(f"--replay {options['replay']}: no recorded tools of MCP server(s) {', '.join(missing)} "
                         f"(it has: {', '.join(rec.tools) or 'none'})")
    return rec


def open_tools(options: Mapping[str, Any], stack: contextlib.ExitStack | contextlib.AsyncExitStack,
               variables: Callable[[str], str | None] | None = None, *, replay: Recording | None = None) -> list[ToolSpec]:
    """Every tool of the run's sources, opened on ``stack`` (MCP servers started, the KG built);
    ``replay``: the ``--replay`` recording when :func:`read_replay` has read it already."""
    found: list[tuple[str, ToolSpec]] = [(f"--tools-dir {options['tools_dir']}", s) for s in spec_file_tools(options)]
    if options.get("kg"):
        found += [(f"--kg {options['kg']}", s) for s in _kg(options["kg"], options.get("kg_search", "greedy"), stack)]
    sources = mcp_sources(options, variables)
    if options.get("replay"):
        rec = replay or read_replay(options, variables)
        wanted = [s.name for s in sources] or None
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
