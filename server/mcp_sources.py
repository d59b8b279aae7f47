"""MCP servers as the user names them: a stdio command or a streamable-HTTP URL (:class:`McpSource`),
from ``--mcp-server`` (:func:`parse_mcp_server`) or from the ``mcpServers`` file assistants use
(:func:`load_mcp_config`). Only the description: starting and connecting is :mod:`server.upstream`'s.

A source badly described is a :class:`McpSourceError` (a ``ValueError``: ``evals`` exits 2 naming it).
Secrets stay in the environment: a bearer token is named by the variable that holds it, never held here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tool_specs import load_json, redact_urls
from tool_specs.bounded_read import bounded_text

__all__ = ["McpSource", "McpSourceError", "load_mcp_config", "parse_mcp_server", "parse_mcp_servers"]

_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class McpSourceError(ValueError):
    """A tool source that is badly described or cannot be started; the message names it."""


@dataclass(frozen=True)


class McpSource:
    """An MCP server: ``command`` (+ ``args``, ``env``, ``cwd``) over stdio, or ``url`` (+ ``headers``
    and a bearer token read from the variable ``token_env``) over streamable HTTP.

    A stdio server inherits only the MCP SDK's safe subset of this process's environment (``PATH``,
    ``HOME``...) plus ``env``, as assistant clients start them. ``per_episode``: a stdio server
    started afresh for every episode (:class:`server.upstream.EpisodeServers`); ``folder_mark`` is
    the text in its command line, ``cwd`` and ``env`` that stands for the episode's folder."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    token_env: str | None = None
    timeout: float = 60.0
    per_episode: bool = False
    folder_mark: str | None = None

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise McpSourceError(f"MCP server name {self.name!r}: use 1-64 letters, digits, '_', '.' or '-'")
        if (self.command is None) == (self.url is None):
            raise McpSourceError(f"MCP server {self.name!r}: give exactly one of a command or a url")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise McpSourceError(f"MCP server {self.name!r}: url must start with http:// or https://, got {redact_urls(self.url)!r}")
        if self.timeout <= 0:
            raise McpSourceError(f"MCP server {self.name!r}: timeout must be positive")
        if self.per_episode and self.command is None:
            raise McpSourceError(f"MCP server {self.name!r}: only a stdio server (a command) can be started per "
                                 "episode; a remote server cannot be reset by the run")

    def in_folder(self, folder: str) -> McpSource:
        """The source with its folder mark replaced by ``folder`` (in the command, args, cwd and env)."""
        mark = self.folder_mark
        if not mark:
            return self

        def fill(text: str) -> str:
            return text.replace(mark, folder)

        return McpSource(self.name, command=None if self.command is None else fill(self.command),
                         args=tuple(fill(a) for a in self.args), env={k: fill(v) for k, v in self.env.items()},
                         cwd=None if self.cwd is None else fill(self.cwd), timeout=self.timeout)

    def describe(self) -> str:
        """The server as a user would recognise it (no secrets: headers and tokens are left out)."""
        if self.url is not None:
            return f"{self.name} ({redact_urls(self.url)})"
        text = shlex.join([str(self.command), *self.args])
        return f"{self.name} ({text.replace(self.folder_mark, '<episode folder>') if self.folder_mark else text})"


def parse_mcp_server(text: str, *, token_env: str | None = None, name: str | None = None) -> McpSource:
    """``--mcp-server``: an ``http(s)://`` URL, or a command line (``uvx mcp-server-time``); an
    optional ``NAME=`` prefix names the source (default: the URL's host or the command's name)."""
    text = text.strip()
    m = re.match(r"^([A-Za-z0-9_.-]{1,64})=(.+)$", text)
    if m and not re.match(r"^https?://", text):
        name, text = m.group(1), m.group(2).strip()
    if re.match(r"^https?://", text):
        host = re.sub(r"^https?://", "", text).split("/")[0].split(":")[0]
        return McpSource(name or re.sub(r"[^A-Za-z0-9_.-]", "_", host) or "remote", url=text, token_env=token_env)
    try:
        parts = shlex.split(text)
    except ValueError as exc:
        raise McpSourceError(f"--mcp-server {text!r}: {exc}") from None
    if not parts:
        raise McpSourceError("--mcp-server is empty: give a command line or an http(s) URL")
    if token_env:
        raise McpSourceError("--mcp-token-env goes with an http(s) --mcp-server URL, not a command")
    default = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(parts[0]).name)[:64] or "stdio"
    return McpSource(name or default, command=parts[0], args=tuple(parts[1:]))


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise McpSourceError(f"{what} must be a mapping of strings to strings")
    return dict(value)


def load_mcp_config(path: str | Path) -> list[McpSource]:
    """The servers of an ``mcpServers`` JSON file (the format assistant clients use; ``per_episode``:
    start this stdio server afresh for every episode)::

        {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
                        "mine": {"url": "https://host/mcp", "headers": {"X-Team": "a"},
                                 "bearer_token_env": "MY_TOKEN"}}}
    """
    p = Path(path)
    try:
        data = load_json(bounded_text(p), p)  # untrusted: no more than MAX_LINE_BYTES read
    except OSError as exc:
        raise McpSourceError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:  # past the bound (LineTooLong), not UTF-8, invalid JSON, a key twice, too deep: FILE:LINE
        raise McpSourceError(str(exc)) from None
    servers = data.get("mcpServers") if isinstance(data, Mapping) else None
    if not isinstance(servers, Mapping) or not servers:
        raise McpSourceError(f"{p}: expected {{\"mcpServers\": {{NAME: {{command|url, ...}}}}}} with at least one server")
    return parse_mcp_servers(servers, f"{p}: mcpServers")


def parse_mcp_servers(servers: Mapping[str, Any], where_all: str) -> list[McpSource]:
    """The servers of an ``mcpServers`` mapping (``where_all`` names it in errors: ``FILE: mcpServers``)."""
    out: list[McpSource] = []
    allowed = {"command", "args", "env", "cwd", "url", "headers", "bearer_token_env", "timeout", "type", "per_episode"}
    for name, entry in servers.items():
        where = f"{where_all}.{name}"
        if not isinstance(entry, Mapping):
            raise McpSourceError(f"{where}: must be an object")
        unknown = sorted(set(entry) - allowed)
        if unknown:
            raise McpSourceError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise McpSourceError(f"{where}.args must be a list of strings")
        if not isinstance(entry.get("per_episode", False), bool):
            raise McpSourceError(f"{where}.per_episode must be true or false")
        timeout = entry.get("timeout", 60.0)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise McpSourceError(f"{where}.timeout must be a number of seconds")
        try:
            out.append(McpSource(
                str(name), command=entry.get("command"), args=tuple(args), env=_strings(entry.get("env"), f"{where}.env"),
                cwd=entry.get("cwd"), url=entry.get("url"), headers=_strings(entry.get("headers"), f"{where}.headers"),
                token_env=entry.get("bearer_token_env"), timeout=float(timeout), per_episode=bool(entry.get("per_episode")),
            ))
        except McpSourceError as exc:
            raise McpSourceError(f"{where_all.rsplit(': ', 1)[0]}: {exc}") from None
    return out
