"""What an assistant client sees besides tools: resources, prompts, completions, logging, subscriptions.

:class:`Surface` holds the state these share across the sessions of one :class:`~server.core.ToolServer`
(the KG's name indexes, resource subscriptions, clients' log levels) and makes the low-level handlers
that :meth:`ToolServer.mcp_server <server.core.ToolServer.mcp_server>` registers:

- ``resources/list`` (paginated), ``resources/templates/list``, ``resources/read`` (see :mod:`server.resources`);
- change notifications after ``kg_add_fact`` / ``kg_remove_fact`` (``--allow-writes``): on the current
  protocol through ``subscriptions/listen`` streams, on handshake-era sessions through
  ``resources/subscribe`` (``notifications/resources/updated``) and ``notifications/resources/list_changed``;
- ``prompts/list`` and ``prompts/get`` (a benchmark's :class:`~server.prompts.PromptSpec` objects);
- ``completion/complete``: entity, relation and task names for resource-template variables and prompt arguments;
- logging: ``logging/setLevel`` on handshake-era sessions, the request's log level ``_meta`` on the
  current protocol; a tool call is logged at ``debug``, a failed one at ``warning``, a KG write at ``notice``.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from typing import Any, cast, get_args

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import allowed_log_levels
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tool_specs import ToolResult, shown_name

from .names import MAX_COMPLETIONS
from .prompts import PromptError, PromptSpec
from .resources import RESOURCE_NOT_FOUND, KGResources, ParsedURI, parse_uri

__all__ = [
    "KG_WRITE_TOOLS",
    "LOG_LEVELS",
    "MAX_SUBSCRIPTIONS_PER_SESSION",
    "MAX_SUBSCRIPTIONS_TOTAL",
    "MAX_SUBSCRIPTION_URI_CHARS",
    "Surface",
]

log = logging.getLogger(__name__)

KG_WRITE_TOOLS = ("kg_add_fact", "kg_remove_fact")
LOG_LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)  # ascending severity
_DEFAULT_LOG_LEVEL = "info"  # handshake-era sessions that never sent logging/setLevel
MAX_SUBSCRIPTION_URI_CHARS = 1024  # a resources/subscribe URI longer than this is refused
MAX_SUBSCRIPTIONS_PER_SESSION = 100  # resources/subscribe of one session, at most
MAX_SUBSCRIPTIONS_TOTAL = 10_000  # of all sessions together, at most (about 10 MB of URIs)


class Surface:
    """Resources, prompts, completions and logging for the mounts of one tool server.

    ``mounts`` maps a benchmark name to its mount (``catalog``, ``kg``, ``prompts``, ``task_query``);
    ``page_size`` pages listings. Handlers get the request's endpoint (``benchmark``, ``task_id``, ``path``).
    """

    def __init__(self, mounts: Mapping[str, Any], page_size: int):
        self._mounts = mounts
        self.page_size = page_size if page_size > 0 else 200
        self.resources = {
            name: KGResources(name, m.kg, m.task_query) for name, m in mounts.items()
        }
        self._buses = {name: InMemorySubscriptionBus() for name in mounts}
        self._listen = {name: ListenHandler(bus) for name, bus in self._buses.items()}
        # handshake-era sessions: by connection (the SDK's per-session object), weakly, and dropped
        # when the connection closes (its exit stack), whether or not something still holds it
        self._closing: weakref.WeakSet[Any] = weakref.WeakSet()  # connections whose close drops their entries
        self._subscribed: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        self._watching: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        self._levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def register(self, server: Server[Any], resolve: Callable[[ServerRequestContext[Any]], Any]) -> None:
        """Add the handlers to a low-level server (capabilities follow from them); ``resolve`` gives a
        request's endpoint."""

        def add(method: str, params_type: Any, fn: Callable[..., Any]) -> None:
            async def handler(ctx: ServerRequestContext[Any], params: Any) -> Any:
                return await fn(resolve(ctx), ctx, params)

            server.add_request_handler(method, params_type, handler)
        add("resources/list", types.PaginatedRequestParams, self.list_resources)
        add("resources/templates/list", types.PaginatedRequestParams, self.list_templates)
        add("resources/read", types.ReadResourceRequestParams, self.read_resource)
        add("resources/subscribe", types.SubscribeRequestParams, self.subscribe)
        add("resources/unsubscribe", types.UnsubscribeRequestParams, self.unsubscribe)
        add("subscriptions/listen", types.SubscriptionsListenRequestParams, self.listen)
        add("prompts/list", types.PaginatedRequestParams, self.list_prompts)
        add("prompts/get", types.GetPromptRequestParams, self.get_prompt)
        add("completion/complete", types.CompleteRequestParams, self.complete)
        add("logging/setLevel", types.SetLevelRequestParams, self.set_level)

    # ---- helpers ---------------------------------------------------------------------------------
    def _endpoint(self, ref: Any) -> tuple[Any, KGResources]:
        res = self.resources.get(ref.benchmark)
        if res is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown benchmark {shown_name(ref.benchmark)}")
        return ref, res

    def _page(self, params: types.PaginatedRequestParams | None, total: int | None = None) -> int:
        cursor = params.cursor if params else None
        if not cursor:
            return 0
        try:
            start = int(cursor)
            if start < 0 or (total is not None and start > total):
                raise ValueError
        except ValueError:
            raise MCPError(code=types.INVALID_PARAMS, message=f"invalid cursor {shown_name(cursor)}") from None
        return start

    @staticmethod
    def _connection(ctx: ServerRequestContext[Any]) -> Any:
        return getattr(ctx.session, "_connection", None)

    def _watch(self, ctx: ServerRequestContext[Any], benchmark: str) -> None:
        conn = self._connection(ctx)
        if conn is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._drop_on_close(conn)
            self._watching.setdefault(conn, set()).add(benchmark)

    def _drop_on_close(self, conn: Any) -> None:
        """Forget what a connection holds here (subscriptions, watched benchmarks, log level) when it
        closes: a closed session's entries must not wait for the connection object to be collected."""
        if conn in self._closing:
            return
        stack = getattr(conn, "exit_stack", None)
        if stack is None:  # not the SDK's Connection: the weak keys alone drop its entries
            return
        self._closing.add(conn)
        stack.callback(self.forget, conn)

    def forget(self, conn: Any) -> None:
        """Drop a connection's subscriptions, watched benchmarks and log level."""
        for table in (self._subscribed, self._watching, self._levels):
            table.pop(conn, None)

    def _parsed(self, ref: Any, uri: str) -> ParsedURI:
        """The parts of one of this endpoint's benchmark's resource URIs; an error naming them otherwise."""
        parsed = parse_uri(uri)
        if parsed is None or parsed.benchmark != ref.benchmark:
            raise MCPError(
                code=RESOURCE_NOT_FOUND,
                message=f"no resource {shown_name(uri)} on {ref.path}: its resources are kg://{ref.benchmark}/entity/<name>, "
                f"kg://{ref.benchmark}/relation/<name> and task://{ref.benchmark}/<task_id>",
            )
        return parsed

    # ---- resources -------------------------------------------------------------------------------
    async def list_resources(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        ref, res = self._endpoint(ref)
        self._watch(ctx, ref.benchmark)
        start = self._page(params)
        page, total = res.listing(ref.task_id, start, self.page_size)
        if start > total:
            raise MCPError(code=types.INVALID_PARAMS, message=f"invalid cursor {str(start)!r}")
        end = start + len(page)
        return types.ListResourcesResult(resources=page, next_cursor=str(end) if end < total else None)

    async def list_templates(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        ref, res = self._endpoint(ref)
        self._page(params, 0)
        return types.ListResourceTemplatesResult(resource_templates=res.templates(playground=ref.task_id is None))

    async def read_resource(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        ref, res = self._endpoint(ref)
        uri = str(params.uri)
        parsed = self._parsed(ref, uri)
        catalog = self._mounts[ref.benchmark].catalog
        return res.read(uri, parsed, catalog.task_tools, ref.task_id)

    async def subscribe(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        """Subscribe a handshake-era session to one resource this endpoint serves (an existing KG entity
        or relation, a task of the endpoint); at most :data:`MAX_SUBSCRIPTIONS_PER_SESSION` per session
        and :data:`MAX_SUBSCRIPTIONS_TOTAL` in all, dropped when the session closes."""
        ref, res = self._endpoint(ref)
        uri = str(params.uri)
        if len(uri) > MAX_SUBSCRIPTION_URI_CHARS:
            raise MCPError(code=types.INVALID_PARAMS, message=f"resource URI {shown_name(uri)} is too long to "
                           f"subscribe to: at most {MAX_SUBSCRIPTION_URI_CHARS} characters")
        parsed = self._parsed(ref, uri)
        if not res.serves(parsed, self._mounts[ref.benchmark].catalog.task_tools, ref.task_id):
            raise MCPError(code=RESOURCE_NOT_FOUND,
                           message=f"cannot subscribe to {shown_name(uri)}: {ref.path} serves no such resource")
        conn = self._connection(ctx)
        if conn is None:
            return types.EmptyResult()
        mine = self._subscribed.get(conn, set())
        if uri in mine:
            return types.EmptyResult()
        if len(mine) >= MAX_SUBSCRIPTIONS_PER_SESSION:
            raise MCPError(code=types.INVALID_PARAMS, message=f"this session has {len(mine)} resource subscriptions, "
                           f"the most one session may hold: unsubscribe from one first")
        if sum(map(len, self._subscribed.values())) >= MAX_SUBSCRIPTIONS_TOTAL:
            raise MCPError(code=types.INVALID_PARAMS, message=f"the server holds {MAX_SUBSCRIPTIONS_TOTAL} resource "
                           "subscriptions, its most: try again later")
        self._drop_on_close(conn)
        self._subscribed.setdefault(conn, mine).add(uri)
        return types.EmptyResult()

    async def unsubscribe(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        conn = self._connection(ctx)
        mine = self._subscribed.get(conn) if conn is not None else None
        if mine is not None:
            mine.discard(str(params.uri))
            if not mine:
                del self._subscribed[conn]
        return types.EmptyResult()

    async def listen(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        ref, _ = self._endpoint(ref)
        return await self._listen[ref.benchmark](ctx, params)

    # ---- prompts ---------------------------------------------------------------------------------
    def _prompts(self, benchmark: str) -> dict[str, PromptSpec]:
        return {p.name: p for p in self._mounts[benchmark].prompts}

    async def list_prompts(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        ref, _ = self._endpoint(ref)
        prompts = list(self._prompts(ref.benchmark).values())
        start = self._page(params, len(prompts))
        end = start + self.page_size
        return types.ListPromptsResult(
            prompts=[p.to_mcp() for p in prompts[start:end]], next_cursor=str(end) if end < len(prompts) else None
        )

    async def get_prompt(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
        ref, _ = self._endpoint(ref)
        prompts = self._prompts(ref.benchmark)
        spec = prompts.get(params.name)
        if spec is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown prompt {shown_name(params.name)}; prompts of {ref.benchmark}: {', '.join(prompts) or '(none)'}",
            )
        try:
            return spec.get(params.arguments, ref.task_id)
        except (PromptError, LookupError) as exc:
            plain_key = type(exc).__str__ is KeyError.__str__ and exc.args  # str() of a KeyError quotes its key
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc.args[0]) if plain_key else str(exc)) from None

    # ---- completion ------------------------------------------------------------------------------
    async def complete(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams) -> types.CompleteResult:
        ref, res = self._endpoint(ref)
        kind = self._completes(ref.benchmark, res, params)
        value = params.argument.value
        if kind == "entity":
            found = res.entities.complete(value) if res.kg else None
        elif kind == "relation":
            found = res.relations.complete(value) if res.kg else None
        elif kind == "task_id":
            ids = [ref.task_id] if ref.task_id else self._mounts[ref.benchmark].catalog.task_ids()
            hits = [t for t in ids if t.startswith(value)]
            return types.CompleteResult(completion=types.Completion(
                values=hits[:MAX_COMPLETIONS], total=len(hits), has_more=len(hits) > MAX_COMPLETIONS))
        else:
            found = None
        if found is None:
            return types.CompleteResult(completion=types.Completion(values=[]))
        return types.CompleteResult(completion=types.Completion(values=found.values, total=found.total,
                                                                has_more=found.has_more))

    def _completes(self, benchmark: str, res: KGResources, params: types.CompleteRequestParams) -> str | None:
        ref, arg = params.ref, params.argument.name
        if isinstance(ref, types.PromptReference):
            spec = self._prompts(benchmark).get(ref.name)
            if spec is None:
                raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt {shown_name(ref.name)}")
            return next((a.completes for a in spec.arguments if a.name == arg), None)
        uri = ref.uri
        if uri.startswith(f"kg://{benchmark}/entity/") and arg == "name":
            return "entity"
        if uri.startswith(f"kg://{benchmark}/relation/") and arg == "name":
            return "relation"
        if uri.startswith(f"task://{benchmark}/") and arg == "task_id":
            return "task_id"
        return None

    # ---- logging ---------------------------------------------------------------------------------
    async def set_level(
        self, ref: Any, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        conn = self._connection(ctx)
        if conn is not None:
            self._drop_on_close(conn)
            self._levels[conn] = params.level
        return types.EmptyResult()

    async def log(self, ctx: ServerRequestContext[Any], level: str, message: str) -> None:
        """Send ``message`` to the client if it asked for ``level`` or lower (request-scoped)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if level not in allowed_log_levels(ctx.protocol_version, cast("Mapping[str, Any] | None", ctx.meta)):
                return
        else:
            conn = self._connection(ctx)
            wanted = self._levels.get(conn, _DEFAULT_LOG_LEVEL) if conn is not None else _DEFAULT_LOG_LEVEL
            if LOG_LEVELS.index(level) < LOG_LEVELS.index(wanted):
                return
        note = types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(
            level=cast("types.LoggingLevel", level), logger="mcp-multihop-evals", data=message))
        try:
            await ctx.session.send_notification(note, related_request_id=ctx.request_id)
        except Exception:  # a client gone mid-request must not fail the call
            log.debug("could not send a log message", exc_info=True)

    # ---- after a tool call -----------------------------------------------------------------------
    async def after_call(self, ctx: ServerRequestContext[Any], ref: Any, name: str, result: ToolResult) -> None:
        """Log the call; after a KG write that changed something, notify subscribers."""
        if result.is_error:
            await self.log(ctx, "warning", f"{ref.path}: {name} failed: {result.text[:500]}")
            return
        await self.log(ctx, "debug", f"{ref.path}: {name} called")
        data = result.structured
        if name in KG_WRITE_TOOLS and isinstance(data, dict) and (data.get("added") or data.get("removed")):
            head, relation, tail = data["fact"]
            await self.log(ctx, "notice", f"{ref.benchmark}: fact {'added' if data.get('added') else 'removed'}: "
                                          f"[{head}, {relation}, {tail}]")
            await self.kg_changed(ref.benchmark, head, relation, tail)

    async def kg_changed(self, benchmark: str, head: str, relation: str, tail: str) -> None:
        res = self.resources[benchmark]
        res.changed()
        uris = [res.entity_uri(head), res.entity_uri(tail), res.relation_uri(relation)]
        bus = self._buses[benchmark]
        for uri in uris:
            await bus.publish(ResourceUpdated(uri))
        await bus.publish(ResourcesListChanged())
        for conn, subscribed in list(self._subscribed.items()):
            for uri in uris:
                if uri in subscribed:
                    await conn.send_resource_updated(uri)
        for conn, benchmarks in list(self._watching.items()):
            if benchmark in benchmarks:
                await conn.send_resource_list_changed()
