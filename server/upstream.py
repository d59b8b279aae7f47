"""Tools of another MCP server, served through ours: a stdio command or a streamable-HTTP URL.

A :class:`~server.mcp_sources.McpSource` names a server the user already has. :class:`UpstreamConnection` starts it (or
connects to it), lists its tools, and answers calls; :func:`upstream_specs` turns the listing into
:class:`~tool_specs.ToolSpec` values whose executor (:class:`ProxyExecutor`) forwards each call, so
every call is validated against the tool's schema, limited, traced and scored by our server exactly
as our own tools are.

A server is untrusted: its listing follows the rules of a spec file (:func:`listed_specs`: tool
names, valid schemas, local ``$ref`` only; a schema is never fetched), a result larger than
:data:`tool_specs.MAX_RESULT_BYTES` is an error result, and its stderr is kept to its last
:data:`STDERR_TAIL_BYTES`.

The connection lives on an event loop of its own in a daemon thread: the server may call it from
any loop (the run's, a worker's, the HTTP server's) and a synchronous caller (``mounts``) can list
the tools before serving starts. A server that cannot be started is a :class:`McpSourceError` (a
``ValueError``: ``evals`` exits 2 naming the server and the last lines it wrote on stderr). A server
that dies mid-run answers every later call with an error result whose text starts with
:data:`UPSTREAM_UNAVAILABLE`, which an episode turns into :class:`UpstreamUnavailable` (a
connection error: the episode is recorded as errored and retryable, so rerunning the command
resumes it).

Sources are described in :mod:`server.mcp_sources` (a command line or URL, or the ``mcpServers``
file assistants use). Secrets stay in the environment: a bearer token is
read from the variable a source names, at connect time, and never written anywhere.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from mcp import types
from pydantic import ValidationError

from tool_specs import (
    CallContext,
    ToolLike,
    ToolResult,
    ToolSpec,
    listed_tool_problems,
    redact_urls,
)

from .mcp_sources import McpSource, McpSourceError

if TYPE_CHECKING:
    from mcp import Client

__all__ = [
    "UPSTREAM_UNAVAILABLE",
    "EpisodeServers",
    "ProxyExecutor",
    "UpstreamConnection",
    "UpstreamUnavailable",
    "list_all_tools",
    "listed_specs",
    "open_sources",
    "result_from_mcp",
    "tool_spec_of",
    "upstream_specs",
]

UPSTREAM_UNAVAILABLE = "MCP server unavailable:"
"""How the text of a call's result starts when the server behind the tool is gone."""
STDERR_TAIL_BYTES = 64 * 1024  # of a stdio server's stderr, kept for error messages
_MAX_ERROR_TEXT = 2000  # of an error a server answers a call with
_MAX_PROBLEMS_SHOWN = 10


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


async def list_all_tools(client: Client) -> list[types.Tool]:
    """Every tool of an MCP client session, following ``next_cursor`` pages (also the evaluation
    client's, :mod:`client.mcp_session`)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


class UpstreamUnavailable(ConnectionRefusedError):
    """The MCP server behind a tool went away during the run (a connection error: retryable)."""


def find_command(source: McpSource) -> str:
    """The program a stdio source runs: a path as given; a bare name found on ``PATH`` (the source's
    own ``env`` PATH when it sets one) as given; else the same name beside the running interpreter,
    where ``pip install`` puts a server's script (``.venv/bin`` when the environment is not
    activated, as after ``./run.sh``). :class:`McpSourceError` when neither has it."""
    command = str(source.command)
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        return command
    path = source.env.get("PATH", os.environ.get("PATH", os.defpath))
    if shutil.which(command, path=path) is not None:
        return command
    beside = os.path.dirname(sys.executable)
    found = shutil.which(command, path=beside)
    if found is None:
        raise McpSourceError(
            f"MCP server {source.describe()}: command {command!r} not found on PATH or in {beside}; "
            f"install it into this environment (e.g. {os.path.join(beside, 'pip')} install PACKAGE) or give its full path")
    return found


def result_from_mcp(result: types.CallToolResult) -> ToolResult:
    """Our :class:`ToolResult` of an MCP result: its text blocks joined, its structured content, its error flag."""
    text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
    structured = result.structured_content if isinstance(result.structured_content, dict) else None
    return ToolResult(is_error=bool(result.is_error), text=text, structured=structured)


def _connection_lost(exc: BaseException) -> bool:
    """Is ``exc`` the connection going away (rather than the server refusing one call)?"""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    names = {c.__name__ for c in type(exc).__mro__}
    return bool(names & {"ClosedResourceError", "BrokenResourceError", "EndOfStream", "OSError",
                         "TransportError", "ConnectError", "RemoteProtocolError"})


class _StderrTail:
    """A stdio server's stderr, bounded: a pipe the connection's event loop drains as the server writes,
    keeping only the last :data:`STDERR_TAIL_BYTES` (a server that logs without end holds no disk and
    at most a few times that in memory, and never blocks on a full pipe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept = bytearray()
        self._read_fd = -1
        self._writer: TextIO | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _pipe(self) -> TextIO:
        with self._lock:
            if self._writer is None:
                read_fd, write_fd = os.pipe()
                os.set_blocking(read_fd, False)
                self._read_fd = read_fd
                self._writer = open(write_fd, "w", encoding="utf-8", errors="replace")  # noqa: SIM115
            return self._writer

    def start(self, loop: asyncio.AbstractEventLoop) -> TextIO:
        """The writing end to give the server as its stderr; ``loop`` (running, in this thread) drains the pipe."""
        writer = self._pipe()
        if self._loop is None:
            self._loop = loop
            loop.add_reader(self._read_fd, self._on_readable)
        return writer

    def fileno(self) -> int:
        """The writing end's descriptor (what the server writes to)."""
        return self._pipe().fileno()

    def _drain(self) -> bool:
        """Read what the pipe holds now (at most 4 MiB: a writer that never stops cannot hold a reader
        here), keeping the tail; ``False`` at its end (the lock is held)."""
        for _ in range(64):
            if self._read_fd < 0:
                return False
            try:
                chunk = os.read(self._read_fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self._kept += chunk
            if len(self._kept) > 2 * STDERR_TAIL_BYTES:
                del self._kept[:-STDERR_TAIL_BYTES]
        return True

    def _on_readable(self) -> None:
        with self._lock:
            more = self._drain()
        if not more and self._loop is not None:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_reader(self._read_fd)

    def tail(self, lines: int = 5) -> str:
        """The last ``lines`` non-blank lines written, joined with ``" | "`` (what is written before
        this call, even if the loop has not drained it yet)."""
        with self._lock:
            self._drain()
            text = bytes(self._kept[-STDERR_TAIL_BYTES:]).decode("utf-8", errors="replace")
        tail = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail)

    def close(self) -> None:
        """Keep what was written, close the pipe (the loop is stopped first)."""
        with self._lock:
            self._drain()
            if self._loop is not None and not self._loop.is_closed():
                with contextlib.suppress(ValueError, OSError, RuntimeError):
                    self._loop.remove_reader(self._read_fd)
            if self._read_fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(self._read_fd)
                self._read_fd = -1
            if self._writer is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._writer.close()


class UpstreamConnection:
    """One connection to one :class:`McpSource`, on an event loop of its own (see the module doc)."""

    def __init__(self, source: McpSource):
        self.source = source
        self._command: str | None = None  # the program a stdio source runs (find_command), set by open()
        self.dead: str | None = None  # why the connection is gone, once it is
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{source.name}", daemon=True)
        self._closing: asyncio.Event | None = None
        self._client: Any = None
        self._owner: concurrent.futures.Future[None] | None = None
        self._stderr = _StderrTail()

    def stderr_tail(self, lines: int = 5) -> str:
        """The last lines the server wrote on stderr (stdio servers), for error messages."""
        return self._stderr.tail(lines)

    def _why(self, exc: BaseException | str) -> str:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        text = exc if isinstance(exc, str) else (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        tail = self.stderr_tail()
        return redact_urls(f"{text}" + (f"; its stderr ends: {tail}" if tail else ""))

    def open(self) -> list[types.Tool]:
        """Start (or connect to) the server and list its tools; :class:`McpSourceError` when it cannot."""
        self._command = find_command(self.source) if self.source.command is not None else None
        self._thread.start()
        ready: concurrent.futures.Future[list[types.Tool]] = concurrent.futures.Future()
        self._owner = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
        try:
            return ready.result(timeout=self.source.timeout + 5)
        except concurrent.futures.TimeoutError:
            self.close()
            raise McpSourceError(f"MCP server {self.source.describe()} did not answer within {self.source.timeout:g} s"
                                 + (f"; its stderr ends: {self.stderr_tail()}" if self.stderr_tail() else "")) from None
        except Exception as exc:
            why = self._why(exc)
            self.close()
            raise McpSourceError(f"MCP server {self.source.describe()} failed to start: {why}") from None

    def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        src = self.source
        if src.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = dict(src.headers)
            if src.token_env:
                token = os.environ.get(src.token_env)
                if not token:
                    raise McpSourceError(f"the bearer token variable ${src.token_env} is not set")
                headers["Authorization"] = f"Bearer {token}"
            http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(src.timeout, read=src.timeout))
            stack.push_async_callback(http.aclose)
            return streamable_http_client(src.url, http_client=http)
        from mcp import StdioServerParameters
        from mcp.client.stdio import get_default_environment, stdio_client

        # the SDK's safe subset of this process's environment (PATH, HOME, ...), plus the source's own
        env = {**get_default_environment(), **src.env} if src.env else None
        params = StdioServerParameters(command=str(self._command), args=list(src.args), env=env, cwd=src.cwd)
        return stdio_client(params, errlog=self._stderr.start(self._loop))

    async def _hold(self, ready: concurrent.futures.Future[list[types.Tool]]) -> None:
        """The owner task: enters the client, lists the tools, holds the connection until closed."""
        from mcp import Client

        self._closing = asyncio.Event()
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    Client(self._transport(stack), read_timeout_seconds=self.source.timeout, cache=None))
                tools = await list_all_tools(client)
                self._client = client
                ready.set_result(tools)
                await self._closing.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller or kept as the reason
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            elif self.dead is None:
                self.dead = self._why(exc)
        finally:
            self._client = None
            if self.dead is None and not (self._closing is not None and self._closing.is_set()):
                self.dead = self._why("the connection ended")

    async def _call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        client = self._client
        if client is None:
            raise UpstreamUnavailable(self.dead or "not connected")
        try:
            result = await client.call_tool(name, arguments)
        except Exception as exc:
            if _connection_lost(exc):
                self.dead = self.dead or self._why(exc)
                raise UpstreamUnavailable(self.dead) from None
            return ToolResult.error(f"{name} failed: {_cut(str(exc), _MAX_ERROR_TEXT)}")
        return result_from_mcp(result).bounded(name)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool of the server from any event loop; :class:`UpstreamUnavailable` once it is gone."""
        if self.dead is not None:
            raise UpstreamUnavailable(self.dead)
        future = asyncio.run_coroutine_threadsafe(self._call(name, arguments), self._loop)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """End the connection (stops a stdio server) and the thread; safe to call twice."""
        if self._thread.is_alive():
            if self._closing is not None:
                self._loop.call_soon_threadsafe(self._closing.set)
            if self._owner is not None:
                with contextlib.suppress(Exception):
                    self._owner.result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()
        if self.dead is None:
            self.dead = "closed"
        self._stderr.close()


CallRecorder = Callable[[str, str | None, str, dict[str, Any], ToolResult, str | None], None]
"""``(source, task id, tool, arguments, result, session key)``: told of every answered call (``--record``)."""


class ProxyExecutor:
    """Forwards a call to the tool of the same name on an :class:`UpstreamConnection`."""

    kind = "mcp"

    def __init__(self, connection: UpstreamConnection, record: CallRecorder | None = None):
        self.connection = connection
        self.record = record

    def __repr__(self) -> str:
        return f"ProxyExecutor({self.connection.source.describe()})"

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.connection.source.name}

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        try:
            result = await self.connection.call(spec.name, arguments)
        except UpstreamUnavailable as exc:
            return ToolResult.error(redact_urls(f"{UPSTREAM_UNAVAILABLE} {self.connection.source.describe()}: {exc}"))
        if self.record is not None:
            self.record(self.connection.source.name, ctx.task_id, spec.name, arguments, result, ctx.episode_id)
        return result


class EpisodeServers:
    """A stdio server started afresh for every episode (``per_episode``), and the executor of its tools.

    :meth:`start` opens the episode's own server (the source's folder mark replaced by the episode's
    folder) under the episode's task id; a call is forwarded to the server of the task it comes
    from (:attr:`CallContext.task_id`), and answered with an error when that episode has none.
    :meth:`stop` closes it: its process, and whatever it held in memory, are gone.
    """

    kind = "mcp"

    def __init__(self, source: McpSource, record: CallRecorder | None = None):
        self.source = source
        self.record = record
        self._connections: dict[str, UpstreamConnection] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EpisodeServers({self.source.describe()})"

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source.name, "per_episode": True}

    def start(self, key: str, folder: str) -> None:
        """Start the server of episode ``key`` with ``folder`` as its folder (blocking: call it in a thread)."""
        conn = UpstreamConnection(self.source.in_folder(folder))
        conn.open()
        with self._lock:
            old = self._connections.pop(key, None)
            self._connections[key] = conn
        if old is not None:
            old.close()

    def stop(self, key: str) -> None:
        """Close the server of episode ``key`` (blocking; nothing when it has none)."""
        with self._lock:
            conn = self._connections.pop(key, None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        with self._lock:
            conns, self._connections = list(self._connections.values()), {}
        for conn in conns:
            conn.close()

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        with self._lock:
            conn = self._connections.get(str(ctx.task_id))
        if conn is None:
            return ToolResult.error(f"{UPSTREAM_UNAVAILABLE} {self.source.describe()}: it is started per episode, and "
                                    f"task {ctx.task_id!r} has no episode running")
        return await ProxyExecutor(conn, self.record)(spec, arguments, ctx)


def tool_spec_of(tool: types.Tool, executor: Any, source: str) -> ToolSpec:
    """A listed MCP tool as our :class:`ToolSpec` with ``executor`` (unchecked: see :func:`listed_specs`)."""
    return ToolSpec(
        name=tool.name, description=tool.description or "", input_schema=dict(tool.input_schema or {}),
        output_schema=dict(tool.output_schema) if tool.output_schema else None, executor=executor,
        annotations={"kind": "mcp", "source": source},
    )


def listed_specs(tools: Sequence[types.Tool], executor_of: Callable[[types.Tool], Any], source: str, where: str) -> list[ToolSpec]:
    """The tools an MCP server listed (or a recording of one holds) as specs, each held to the rules
    of a spec file: its name follows MCP's tool-name rules (no ``/``, spaces, ``<`` or look-alike
    letters), its input and output schemas are valid JSON Schema with local ``$ref`` only, no name
    twice (:func:`tool_specs.listed_tool_problems`).

    Raises:
        McpSourceError: ``where``, then every problem found (the first ten, and how many more).
    """
    specs: list[ToolSpec] = []
    problems: list[str] = []
    seen: set[str] = set()
    for tool in tools:
        found = listed_tool_problems(tool.name, tool.input_schema, tool.output_schema)
        if tool.name in seen:
            found.append("the name is listed twice")
        seen.add(tool.name)
        if not found:
            try:
                specs.append(tool_spec_of(tool, executor_of(tool), source))
            except ValidationError as exc:
                found += [str(e.get("msg", "")).removeprefix("Value error, ") for e in exc.errors()]
        problems += [f"tool {_cut(tool.name, 80)!r}: {_cut(p, 300)}" for p in found]
    if problems:
        shown = "; ".join(problems[:_MAX_PROBLEMS_SHOWN])
        more = f"; and {len(problems) - _MAX_PROBLEMS_SHOWN} more" if len(problems) > _MAX_PROBLEMS_SHOWN else ""
        raise McpSourceError(f"{where}: its tools break the rules every tool source follows ({len(problems)} "
                             f"problem(s)): {shown}{more}")
    return specs


def upstream_specs(tools: Sequence[types.Tool], connection: UpstreamConnection, record: CallRecorder | None = None) -> list[ToolSpec]:
    """The listed tools of ``connection`` as specs that forward their calls to it, checked by
    :func:`listed_specs` (:class:`McpSourceError` names each tool it refuses)."""
    executor = ProxyExecutor(connection, record)
    return listed_specs(tools, lambda _: executor, connection.source.name, f"MCP server {connection.source.describe()}")


def _constant(executor: Any) -> Callable[[types.Tool], Any]:
    return lambda _tool: executor


def open_sources(
    sources: Sequence[McpSource], stack: contextlib.ExitStack | contextlib.AsyncExitStack, *,
    record: CallRecorder | None = None, on_listed: Callable[[McpSource, list[types.Tool]], None] | None = None,
) -> list[tuple[McpSource, list[ToolSpec]]]:
    """Start every source (closed with ``stack``) and list its tools as proxied specs.

    ``record`` is told of every answered call, ``on_listed`` of every listing (``--record``).

    Raises:
        McpSourceError: a server that cannot be started (the ones started before it are closed
            with ``stack``).
    """
    import tempfile

    out = []
    for source in sources:
        if source.per_episode:  # listed by a server started in an empty folder, then closed
            with tempfile.TemporaryDirectory(prefix="evals-listing-") as folder:
                conn = UpstreamConnection(source.in_folder(folder))
                try:
                    tools = conn.open()
                finally:
                    conn.close()
            servers = EpisodeServers(source, record)
            stack.callback(servers.close)
            specs = listed_specs(tools, _constant(servers), source.name, f"MCP server {source.describe()}")
        else:
            conn = UpstreamConnection(source)
            tools = conn.open()
            stack.callback(conn.close)
            specs = upstream_specs(tools, conn, record)  # checked before anything of it is recorded
        if on_listed is not None:
            on_listed(source, tools)
        out.append((source, specs))
    return out
