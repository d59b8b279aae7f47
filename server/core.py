"""The MCP tool server: benchmarks' catalogs (and KGs) served as live MCP tools.

One :class:`ToolServer` holds every mounted benchmark. An *endpoint* is a benchmark plus,
optionally, a task id: a task endpoint exposes exactly that task's candidate tools (plus the KG
tools when the benchmark has a KG); a benchmark endpoint without a task is the playground, the
union of the benchmark's tools. Over HTTP the endpoint comes from the URL
(``/mcp/<benchmark>[/<task_id>]``); over stdio and in-process it is fixed when the server starts.

The server imports no benchmark module: benchmarks hand it a :class:`tool_specs.Catalog`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import parse_qsl

from mcp import types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from tool_specs import (
    SHOWN_CHARS,
    CallContext,
    Catalog,
    TaskNotFound,
    ToolResult,
    ToolSpec,
    shown_name,
    suggest_names,
)

from .kg_tools import KGConfig, kg_tools
from .middleware import (
    _UNSET,
    NonObjectArgumentsMiddleware,
    NullInputResponsesMiddleware,
    RequestChecksMiddleware,
    _raw_arguments,
)
from .prompts import PromptSpec
from .surface import Surface

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_SESSION_STATES",
    "MAX_TOOL_NAME_LENGTH",
    "SERVER_NAME",
    "BenchmarkMount",
    "EndpointNotFound",
    "EndpointRef",
    "NonObjectArgumentsMiddleware",
    "NullInputResponsesMiddleware",
    "SessionLimits",
    "ToolServer",
    "current_endpoint",
    "named_session",
]

# What a types.ListToolsResult without tools dumps to (the protocol's default fields), for listings
# sent in wire form (ToolServer._list_tools).
_LIST_TOOLS_ENVELOPE: dict[str, Any] = {
    k: v for k, v in types.ListToolsResult(tools=[]).model_dump(by_alias=True, mode="json", exclude_none=True).items()
    if k != "tools"
}

log = logging.getLogger(__name__)

SERVER_NAME = "mcp-multihop-evals"
DEFAULT_PAGE_SIZE = 200
MAX_SESSION_STATES = 1024  # default cap on sessions kept over HTTP, in total (see SessionLimits)
MAX_TOOL_NAME_LENGTH = 128  # longer names of unknown tools get no "did you mean" (its cost grows with length)


@dataclass(frozen=True)
class SessionLimits:
    """How many sessions the HTTP server keeps, and for how long (operational: results do not depend on them).

    Applies to the named sessions of the current protocol (``?session=<id>``: executors' state) and
    to handshake-protocol sessions (``Mcp-Session-Id``). At a cap the least recently used session
    goes (within the endpoint when its per-endpoint cap is the one reached); a session unused for
    ``idle_timeout`` seconds expires. A request to a named session that went this way is refused
    with an error that says so, never answered from a fresh state.
    """

    max_sessions: int = MAX_SESSION_STATES
    max_sessions_per_endpoint: int = 256
    idle_timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.max_sessions < 1 or self.max_sessions_per_endpoint < 1:
            raise ValueError(
                f"session caps must be at least 1, got max_sessions={self.max_sessions}, "
                f"max_sessions_per_endpoint={self.max_sessions_per_endpoint}"
            )
        if not 0 < self.idle_timeout < float("inf"):
            raise ValueError(f"idle_timeout must be a positive, finite number of seconds, got {self.idle_timeout!r}")


def named_session(query_string: bytes | str) -> str | None:
    """The session a request's query names (``?session=<id>``): the one parse the router and the
    server share (Starlette's rules: latin-1, blank values kept, the last one wins; empty is none)."""
    if isinstance(query_string, bytes):
        if b"session" not in query_string and b"%" not in query_string:
            return None
        query_string = query_string.decode("latin-1")
    found = None
    for key, value in parse_qsl(query_string, keep_blank_values=True):
        if key == "session":
            found = value
    return found or None


class _SessionStates:
    """Executors' states of named HTTP sessions: capped per endpoint and in total, expiring when idle.

    Keys of sessions that went (expired, or closed to make room) are remembered, as many as the
    total cap, so a client that comes back to one gets an error rather than a silently fresh state.
    """

    def __init__(self, limits: SessionLimits, clock: Any = time.monotonic):
        self.limits = limits
        self.clock = clock
        self.states: OrderedDict[str, tuple[str, dict[str, Any], float]] = OrderedDict()  # key -> (path, state, used)
        self.per_endpoint: dict[str, OrderedDict[str, None]] = {}
        self.gone: OrderedDict[str, str] = OrderedDict()  # key -> why

    def __len__(self) -> int:
        return len(self.states)

    def get(self, key: str, path: str, *, named: bool = True) -> dict[str, Any]:
        """The state of session ``key`` on endpoint ``path``; a new one for a new key.

        Raises :class:`MCPError` for a named session that expired or was closed to make room (an
        unnamed one, the state of a connection's requests that name no session, just starts again).
        """
        now = self.clock()
        self._expire(now)
        entry = self.states.get(key)
        if entry is not None:
            self.states[key] = (path, entry[1], now)
            self.states.move_to_end(key)
            self.per_endpoint[path].move_to_end(key)
            return entry[1]
        why = self.gone.pop(key, None) if not named else self.gone.get(key)
        if why is not None and named:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"session {shown_name(key)} is closed ({why}); its state is gone: start a new session (a new ?session= id)",
            )
        same = self.per_endpoint.setdefault(path, OrderedDict())
        if len(same) >= self.limits.max_sessions_per_endpoint:
            self._drop(next(iter(same)), f"closed to admit a new one: {len(same)} sessions on its endpoint is the cap")
        if len(self.states) >= self.limits.max_sessions:
            self._drop(next(iter(self.states)), f"closed to admit a new one: {len(self.states)} sessions is the cap")
        state: dict[str, Any] = {}
        self.states[key] = (path, state, now)
        same[key] = None
        return state

    def _expire(self, now: float) -> None:
        limit = self.limits.idle_timeout
        while self.states:
            key, (_, _, used) = next(iter(self.states.items()))
            if now - used <= limit:
                return
            self._drop(key, f"idle for more than {limit:g} s")

    def _drop(self, key: str, why: str) -> None:
        path, _, _ = self.states.pop(key)
        same = self.per_endpoint[path]
        same.pop(key, None)
        if not same:
            del self.per_endpoint[path]
        self.gone[key] = why
        if len(self.gone) > self.limits.max_sessions:
            self.gone.popitem(last=False)
        log.info("session %s %s", key[:80], why)


class EndpointNotFound(LookupError):
    """An unknown benchmark or task id; the message lists what exists."""


@dataclass
class BenchmarkMount:
    """A benchmark as the server sees it: a catalog and, optionally, a KG served as tools.

    ``prompts`` are offered to clients as MCP prompts; ``task_query(task_id)`` gives a task's query
    (never its answer) for the task-description resource (``None``: no such resource).
    """

    catalog: Catalog
    kg: KGConfig | None = None
    prompts: Sequence[PromptSpec] = ()
    task_query: Callable[[str], str | None] | None = None
    _kg_tools: list[ToolSpec] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self._kg_tools = kg_tools(self.kg) if self.kg else []

    @property
    def name(self) -> str:
        return self.catalog.name


@dataclass(frozen=True)
class EndpointRef:
    """Which tools a session sees: a benchmark, and a task id (``None`` = the playground)."""

    benchmark: str
    task_id: str | None = None

    @property
    def path(self) -> str:
        return f"/mcp/{self.benchmark}" + (f"/{self.task_id}" if self.task_id else "")


current_endpoint: ContextVar[EndpointRef | None] = ContextVar("mcp_endpoint", default=None)
"""The endpoint of the HTTP request being handled (set by the HTTP transport before the MCP SDK runs)."""


class ToolServer:
    """Serves mounted benchmarks over MCP through the SDK's low-level :class:`mcp.server.Server`."""

    def __init__(
        self,
        mounts: list[BenchmarkMount],
        *,
        default: EndpointRef | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        cache_endpoints: int = 256,
        session_limits: SessionLimits | None = None,
    ):
        self.mounts: dict[str, BenchmarkMount] = {}
        for m in mounts:
            if m.name in self.mounts:
                raise ValueError(f"benchmark {m.name!r} is mounted twice")
            self.mounts[m.name] = m
        self.page_size = page_size
        self._cache: OrderedDict[EndpointRef, tuple[dict[str, ToolSpec], list[dict[str, Any]]]] = OrderedDict()
        self._cache_size = cache_endpoints
        self._tools_by_spec: dict[int, tuple[ToolSpec, dict[str, Any]]] = {}  # by id(input_schema)
        self.default = default
        self._session_states = _SessionStates(session_limits or SessionLimits())
        # called with a named session's id before its state is made (``--workers N``: may this process
        # hold it?); raises MCPError to refuse
        self.session_admission: Callable[[str], None] | None = None
        self.surface = Surface(self.mounts, page_size)
        self.server: Server[Any] = self.mcp_server(default)

    @property
    def session_limits(self) -> SessionLimits:
        """Caps and idle timeout of HTTP sessions (settable before the HTTP app is created)."""
        return self._session_states.limits

    @session_limits.setter
    def session_limits(self, limits: SessionLimits) -> None:
        self._session_states.limits = limits

    def mcp_server(self, default: EndpointRef | None = None) -> Server[Any]:
        """A low-level MCP server over these mounts.

        Over HTTP each request names its endpoint in the URL; ``default`` is the endpoint for
        connections that carry no URL (stdio, in-process clients).
        """
        if default is not None:
            self.check_endpoint(default)
        connection_state: dict[str, Any] = {}  # executors' state when this server serves one session

        async def on_list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return self._list_tools(self._ref_from_context(ctx, default), params)

        async def on_call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            ref = self._ref_from_context(ctx, default)
            raw = _raw_arguments.get()
            arguments = params.arguments if raw is _UNSET else raw
            session_key, state = self.session_state(ctx, ref, connection_state)
            call_ctx = CallContext(
                episode_id=session_key, task_id=ref.task_id, benchmark=ref.benchmark, extra={}, state=state,
                client=_client_of(ctx),
            )
            result = await self.call(ref, params.name, arguments, call_ctx)
            await self.surface.after_call(ctx, ref, params.name, result)
            return result.to_mcp()

        def tool_input_schema(name: str) -> Mapping[str, Any] | None:
            # The SDK checks ``Mcp-Param-*`` headers of every tools/call against the tool's input
            # schema; without this lookup it runs (and serialises) a whole tools/list per call.
            ref = current_endpoint.get() or default
            if ref is None:
                return None
            try:
                spec = self.endpoint_tools(ref).get(name)
            except EndpointNotFound:
                return None
            return None if spec is None else spec.input_schema

        server: Server[Any] = _Server(
            SERVER_NAME,
            version=_version(),
            instructions=(
                "Benchmark tools for multi-hop tool use. Each session is bound to one benchmark "
                "endpoint (a task's candidate tools, or a benchmark's playground)."
            ),
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
            get_tool_input_schema=tool_input_schema,
        )
        server.middleware.append(RequestChecksMiddleware())  # null params refused, non-object arguments kept
        self.surface.register(server, lambda ctx: self._ref_from_context(ctx, default))
        return server

    def session_state(
        self, ctx: ServerRequestContext[Any], ref: EndpointRef, connection_state: dict[str, Any]
    ) -> tuple[str | None, dict[str, Any]]:
        """The MCP session's key and its executors' state (see :class:`CallContext`).

        Over stdio and in-process the low-level server (one per :meth:`mcp_server` call) serves one
        session: its calls share ``connection_state``. Over HTTP the current MCP protocol
        keeps no session, so a client names its episode in the URL (``?session=<id>``, as
        ``evals run`` does; a legacy client's ``Mcp-Session-Id`` counts too); requests that name
        none share one state per endpoint and client connection (its peer address and port: a
        client that reconnects starts again, two clients never share one). How many are kept, and
        for how long, is
        :attr:`session_limits`.
        """
        request = ctx.request
        if request is None:  # stdio, in-process: the low-level server serves one session
            return None, connection_state
        # the SDK makes a ServerSession per request; a legacy client's connection has a session id
        connection = getattr(ctx.session, "_connection", None)
        # the one parse of the query (the router of ``--workers N`` uses it too)
        named = named_session(getattr(request, "scope", {}).get("query_string", b"")) or getattr(connection, "session_id", None)
        if named:
            key = f"{ref.path}?session={named}"
            if self.session_admission is not None and key not in self._session_states.states:
                self.session_admission(str(named))
        else:  # each client connection its own state: two clients never share one by naming nothing
            peer = getattr(request, "client", None)
            key = f"{ref.path}?connection={getattr(peer, 'host', '')}:{getattr(peer, 'port', '')}"
        return (str(named) if named else None), self._session_states.get(key, ref.path, named=bool(named))

    # ---- endpoints -------------------------------------------------------------------------
    def check_endpoint(self, ref: EndpointRef) -> None:
        """Raise :class:`EndpointNotFound` unless ``ref`` names a mounted benchmark (and task)."""
        if ref in self._cache:  # checked when it was cached (every HTTP request checks its endpoint)
            return
        mount = self.mounts.get(ref.benchmark)
        if mount is None:
            known = sorted(self.mounts)
            hint = _suggest(ref.benchmark, known)
            raise EndpointNotFound(
                f"unknown benchmark {shown_name(ref.benchmark)}; served benchmarks: {', '.join(known) or '(none)'}"
                + (f" (did you mean {', '.join(hint)}?)" if hint else "")
            )
        if ref.task_id is not None:
            try:
                mount.catalog.task_tools(ref.task_id)
            except TaskNotFound:
                hint = _suggest(ref.task_id, mount.catalog.task_ids())
                raise EndpointNotFound(
                    f"unknown task {shown_name(ref.task_id)} in benchmark {ref.benchmark!r}"
                    + (f"; did you mean {', '.join(hint)}?" if hint else "")
                ) from None

    def endpoint_tools(self, ref: EndpointRef) -> dict[str, ToolSpec]:
        """The tools of an endpoint, by name (candidate tools first, then KG tools)."""
        return self._endpoint(ref)[0]

    def _endpoint(self, ref: EndpointRef) -> tuple[dict[str, ToolSpec], list[dict[str, Any]]]:
        hit = self._cache.get(ref)
        if hit is not None:
            self._cache.move_to_end(ref)
            return hit
        self.check_endpoint(ref)
        mount = self.mounts[ref.benchmark]
        specs = mount.catalog.playground_tools() if ref.task_id is None else mount.catalog.task_tools(ref.task_id)
        tools: dict[str, ToolSpec] = {}
        for spec in [*specs, *mount._kg_tools]:
            if spec.name in tools:
                raise ValueError(f"endpoint {ref.path}: two tools are named {spec.name!r}")
            tools[spec.name] = spec
        entry = (tools, [self._mcp_tool(s) for s in tools.values()])
        self._cache[ref] = entry
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return entry

    def _mcp_tool(self, spec: ToolSpec) -> dict[str, Any]:
        """The listing entry of a spec in its wire form (what the SDK dumps a ``types.Tool`` to), built
        once per spec (tasks share most of their tools), and once for the copies of a spec that list
        the same (``model_copy`` with another executor or annotations, as a benchmark makes a tool per
        task out of one per function: they hold the very same schema object); never changed after, so
        listings share it."""
        hit = self._tools_by_spec.get(id(spec.input_schema))  # the spec held: the id names that schema
        if hit is None or not _same_listing(hit[0], spec):
            hit = (spec, spec.to_mcp_tool().model_dump(by_alias=True, mode="json", exclude_none=True))
            self._tools_by_spec[id(spec.input_schema)] = hit
        return hit[1]

    @staticmethod
    def _ref_from_context(ctx: ServerRequestContext[Any], default: EndpointRef | None) -> EndpointRef:
        request = ctx.request
        params = getattr(request, "path_params", None) or {}
        if params.get("benchmark"):
            return EndpointRef(params["benchmark"], params.get("task_id") or None)
        if default is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="this connection is not bound to a benchmark: connect to /mcp/<benchmark>[/<task_id>] "
                "or start the server with --benchmark",
            )
        return default

    # ---- MCP requests ----------------------------------------------------------------------
    def _list_tools(self, ref: EndpointRef, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        try:
            _, tools = self._endpoint(ref)
        except EndpointNotFound as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        start = 0
        cursor = params.cursor if params else None
        if cursor:
            try:
                start = int(cursor)
                if not 0 <= start <= len(tools):
                    raise ValueError
            except ValueError:
                raise MCPError(code=types.INVALID_PARAMS, message=f"invalid cursor {shown_name(cursor)}") from None
        # The wire form (a dict is a handler result the SDK takes as it is; it still checks the
        # result against the protocol's ListToolsResult before sending it): the entries are dumped
        # once per spec, not once per listing.
        page: dict[str, Any] = {**_LIST_TOOLS_ENVELOPE, "tools": list(tools)}
        if self.page_size > 0:
            end = start + self.page_size
            page["tools"] = tools[start:end]
            if end < len(tools):
                page["nextCursor"] = str(end)
        return cast("types.ListToolsResult", page)

    async def call(
        self, ref: EndpointRef, name: str, arguments: Any, ctx: CallContext | None = None
    ) -> ToolResult:
        """Call a tool of an endpoint; every failure is a result with ``is_error`` set, never an exception."""
        try:
            tools = self.endpoint_tools(ref)
        except EndpointNotFound as exc:
            return ToolResult(is_error=True, text=str(exc), structured=None, warnings=[])
        spec = tools.get(name) if isinstance(name, str) else None
        if spec is None:
            name = str(name)
            hint = _suggest(name, list(tools))
            return ToolResult(
                is_error=True,
                text=f"Unknown tool {shown_name(name)}."
                + (f" Did you mean: {', '.join(hint)}?" if hint else "")
                + f" Available tools: {', '.join(tools)}.",
                structured=None,
                warnings=[],
            )
        if arguments is None:
            arguments = {}
        ctx = ctx or CallContext(episode_id=None, task_id=ref.task_id, benchmark=ref.benchmark, extra={})
        try:
            result = await spec.call(arguments, ctx)
        except Exception as exc:  # ToolSpec.call never raises by contract; keep serving if it does
            log.exception("tool %s raised", name)
            result = ToolResult(is_error=True, text=f"{name} failed: {type(exc).__name__}: {exc}", structured=None, warnings=[])
        return result.sendable(name)  # output JSON cannot carry is an error result, not a broken reply

    def describe(self) -> dict[str, Any]:
        """What the server serves (for ``/health`` and ``/``)."""
        out: dict[str, Any] = {}
        for name, m in self.mounts.items():
            out[name] = {
                "tasks": len(m.catalog.task_ids()),
                "playground": f"/mcp/{name}",
                "task_endpoint": f"/mcp/{name}/<task_id>",
                "kg": None
                if m.kg is None
                else {"engine": m.kg.store.engine, "search_mode": m.kg.search_mode, "writes": m.kg.allow_writes},
            }
        return out


class _Server(Server[Any]):
    """The SDK's low-level server, announcing ``resources.listChanged`` to handshake-era clients too
    (they are told when ``--allow-writes`` changes the KG)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True), experimental_capabilities, extensions
        )


_UNGUESSABLE_NAME = re.compile(r"[0-9a-f]{32}\Z")  # ends in 128 random bits, as `evals run`'s per-run name


def _same_listing(listed: ToolSpec, spec: ToolSpec) -> bool:
    """Whether ``spec`` lists as ``listed`` does (:meth:`ToolSpec.to_mcp_tool` reads only these fields)."""
    return listed is spec or (
        listed.input_schema is spec.input_schema
        and listed.name == spec.name
        and listed.description == spec.description
        and listed.title == spec.title
        and listed.hints == spec.hints
        and listed.advertised_output_schema == spec.advertised_output_schema
    )


def _client_of(ctx: ServerRequestContext[Any]) -> str | None:
    """Who is calling, beyond the session, for the sandbox's fair queue: over HTTP the peer's address,
    with a digest of its ``Authorization`` header and the MCP client's name (``initialize``, or the
    request's envelope) when it sends them; ``None`` outside HTTP (stdio: one client).

    A name is self-declared: without a token (on loopback every client has the same address) anyone
    can take another client's name and share its place in the queue (make it slow, or take its
    light standing). So without a token a name counts only when it cannot be guessed (ends in 32
    hex digits: ``evals run`` draws one per run); otherwise the session is a client of its own."""
    request = ctx.request
    peer = getattr(request, "client", None)
    if request is None or peer is None:
        return None
    parts = [str(peer.host)]
    auth = request.headers.get("authorization")
    if auth:
        parts.append("token:" + hashlib.sha256(auth.encode("utf-8", "surrogateescape")).hexdigest()[:16])
    params = getattr(getattr(ctx.session, "_connection", None), "client_params", None)
    name = getattr(getattr(params, "client_info", None), "name", None)
    trusted = isinstance(name, str) and name and (auth or _UNGUESSABLE_NAME.search(name[:SHOWN_CHARS]))
    if not auth and not trusted:
        return None
    if trusted:
        parts.append("name:" + str(name)[:SHOWN_CHARS])
    return " ".join(parts)


def _suggest(name: str, known: Any) -> list[str]:
    """"Did you mean" names, or none for a name longer than :data:`MAX_TOOL_NAME_LENGTH`.

    Finding close names costs time that grows with the name's length times each candidate's; a
    client could make the server spend seconds of CPU per request with a long enough name.
    """
    return suggest_names(name, known) if len(name) <= MAX_TOOL_NAME_LENGTH else []


@functools.cache  # read once: a session's own server (``mcp_server``) is made per episode in-process
def _version() -> str:
    try:
        from importlib.metadata import version

        return version("mcp-multihop-evals")
    except Exception:
        return "0"

