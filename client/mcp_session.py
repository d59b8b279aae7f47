"""Open an MCP client session to the tool server: by URL (streamable HTTP), stdio, or in-process."""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client

from server.upstream import list_all_tools  # one paging loop for the tool server's proxy and this client

__all__ = [
    "HTTPClientPool",
    "connect",
    "list_all_tools",
    "make_http_client",
    "share_output_validators",
    "shared_output_validator",
]


@contextlib.asynccontextmanager
async def connect(
    target: str | StdioServerParameters | Any,
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
    max_sse_event_size: int | None = None,
    http_client: httpx2.AsyncClient | None = None,
    discovery_key: str | None = None,
    discoveries: dict[str, tuple[str, types.DiscoverResult]] | None = None,
    client_name: str | None = None,
) -> AsyncIterator[Client]:
    """Connect to an MCP server.

    ``target`` is an ``http(s)://`` URL of an endpoint (``.../mcp/<benchmark>[/<task_id>]``), a
    :class:`mcp.StdioServerParameters`, or an in-process low-level ``Server``. ``token`` adds an
    ``Authorization: Bearer`` header for servers bound to a public address.

    Many sessions should share one ``http_client`` (see :func:`make_http_client`): building an HTTP
    client loads the TLS trust store, which costs tens of milliseconds each time. Such a client
    carries its own token and headers; passing ``token`` or ``headers`` beside it is an error.

    ``discovery_key`` (with a shared ``http_client``) names the *server* behind ``target``, e.g. its
    base URL: the first session to that key asks the server for its ``server/discover`` result, and
    later sessions through the same HTTP client adopt that result (the MCP SDK's ``prior_discover``)
    instead of sending one more request each. Use it only for URLs served by one server, such as
    the endpoints of this project's tool server. A session that fails to open forgets the result.

    For an in-process ``Server`` (or another transport), ``discoveries`` is where the result is kept
    under ``discovery_key``: sessions given the same dict and key adopt the first one's result, so
    give it only to sessions whose servers answer ``server/discover`` alike (the low-level servers
    of one :class:`server.ToolServer`, which differ only in their endpoint).

    ``client_name`` is the MCP client's name (``clientInfo``; the SDK's default is ``mcp``). The tool
    server's fair queue groups a client's sessions by it: ``evals run`` sends one drawn per run.
    """
    if http_client is not None and (token or headers):
        # a shared client carries its own headers: silently sending none of these would be worse
        raise ValueError("connect(): token and headers go to make_http_client() when an http_client is given")
    if isinstance(target, str):
        async with contextlib.AsyncExitStack() as stack:
            if http_client is None:
                http_client = await stack.enter_async_context(make_http_client(token=token, headers=headers, timeout=timeout))
                discovery_key = None  # nothing to share it with
            transport = streamable_http_client(target, http_client=http_client, max_sse_event_size=max_sse_event_size)
            yield await _enter_client(stack, transport, timeout, _discovery_cache(http_client, discovery_key), discovery_key,
                                      client_name)
    else:
        async with contextlib.AsyncExitStack() as stack:
            yield await _enter_client(stack, target, timeout, discoveries, discovery_key, client_name)


async def _enter_client(
    stack: contextlib.AsyncExitStack,
    target: Any,
    timeout: float | None,
    known: dict[str, tuple[str, types.DiscoverResult]] | None,
    key: str | None,
    client_name: str | None = None,
) -> Client:
    """A connected client on ``stack``; it adopts ``known[key]`` (a ``server/discover`` result) when
    there is one, and stores its own there when there is none."""
    if key is None:
        known = None
    prior = known.get(key) if known is not None and key is not None else None
    pin: dict[str, Any] = {"mode": prior[0], "prior_discover": prior[1]} if prior is not None else {}
    if client_name is not None:
        pin["client_info"] = types.Implementation(name=client_name, version="0")
    try:
        # cache=None: the SDK's response cache would keep a listing for the life of one session, which
        # lists once (an episode's), so it only costs (cache keys, a checkpoint, copies) per request
        client = await stack.enter_async_context(Client(target, read_timeout_seconds=timeout, cache=None, **pin))
    except BaseException:
        if known is not None and key is not None:
            known.pop(key, None)
        raise
    if known is not None and key is not None and prior is None:
        _remember_discovery(known, key, client)
    share_output_validators(client)
    return client


# ---- server/discover results shared across sessions of one HTTP client ---------------------------

_discoveries: weakref.WeakKeyDictionary[Any, dict[str, tuple[str, types.DiscoverResult]]] = weakref.WeakKeyDictionary()


def _discovery_cache(http_client: Any, key: str | None) -> dict[str, tuple[str, types.DiscoverResult]] | None:
    if key is None:
        return None
    try:
        return _discoveries.setdefault(http_client, {})
    except TypeError:  # not weak-referenceable
        return None


def _remember_discovery(known: dict[str, tuple[str, types.DiscoverResult]], key: str, client: Client) -> None:
    """Keep the session's discover result and negotiated version (modern servers only)."""
    session = client.session
    result = getattr(session, "discover_result", None)
    version = getattr(session, "protocol_version", None)
    if isinstance(result, types.DiscoverResult) and isinstance(version, str):
        known[key] = (version, result)


def make_http_client(
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
    max_connections: int = 256,
    verify: ssl.SSLContext | bool = True,
) -> httpx2.AsyncClient:
    """An HTTP client for MCP sessions (bearer token and headers applied to every request).

    For many concurrent sessions use :class:`HTTPClientPool`.
    """
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(
        headers=all_headers,
        verify=verify,
        timeout=httpx2.Timeout(timeout, read=timeout),
        limits=httpx2.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
    )


class HTTPClientPool:
    """HTTP clients for many concurrent MCP sessions: each session borrows one for its lifetime.

    One ``httpx2.AsyncClient`` shared by 64 concurrent sessions ends up with ~64 pooled connections,
    and httpcore checks every pooled connection (a ``poll()`` and several attribute lookups each)
    on every request and every response close: at concurrency 64 that was a quarter of the
    client's CPU. Sessions here borrow a client with a few connections of its own instead, so a
    request looks at those only. Clients are made on demand (as many as sessions are open at
    once) and kept for reuse; they share one TLS context (loading the trust store costs tens of
    milliseconds) and one ``server/discover`` cache (see :func:`connect`'s ``discovery_key``).
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 60.0,
        connections_per_client: int = 4,
    ):
        self._kw: dict[str, Any] = {"token": token, "headers": headers, "timeout": timeout,
                                    "max_connections": connections_per_client}
        self._verify: ssl.SSLContext | None = None
        self._idle: list[httpx2.AsyncClient] = []
        self._clients: list[httpx2.AsyncClient] = []
        self._discoveries: dict[str, tuple[str, types.DiscoverResult]] = {}
        self._closed = False

    @property
    def size(self) -> int:
        """How many clients have been made (the most sessions that were open at once)."""
        return len(self._clients)

    @contextlib.asynccontextmanager
    async def borrow(self) -> AsyncIterator[httpx2.AsyncClient]:
        """An HTTP client for one session; returned to the pool on exit."""
        if self._closed:
            raise RuntimeError("HTTPClientPool is closed")
        client = self._idle.pop() if self._idle else self._new()
        try:
            yield client
        finally:
            if not self._closed:  # a closed pool has closed all its clients, this one included
                self._idle.append(client)

    def _new(self) -> httpx2.AsyncClient:
        if self._verify is None:
            self._verify = ssl.create_default_context()
        client = make_http_client(**self._kw, verify=self._verify)
        _discoveries[client] = self._discoveries  # one discover cache for the whole pool
        self._clients.append(client)
        return client

    async def aclose(self) -> None:
        self._closed = True
        clients, self._clients, self._idle = self._clients, [], []
        for client in clients:
            await client.aclose()

    async def __aenter__(self) -> HTTPClientPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# ---- output-schema validators shared across sessions --------------------------------------------

_validators: dict[str, Any] = {}
_validators_lock = threading.Lock()
_MAX_SHARED_VALIDATORS = 4096


def shared_output_validator(name: str, output_schema: dict[str, Any]) -> Any:
    """The compiled validator for a tool's output schema, built once per process and schema.

    Built as the MCP SDK's ``ClientSession._output_schema_validator`` builds it: the schema's own
    draft, checked against its meta-schema (``RuntimeError`` if invalid, never cached; draft 2020-12
    with :func:`tool_specs.validation.check_schema`, which accepts the same schemas faster),
    ``$ref``s resolved within the schema document only. Validators are immutable, so any
    number of sessions can share one.
    """
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for
    from referencing import Registry

    key = json.dumps(output_schema, ensure_ascii=False)
    validator = _validators.get(key)
    if validator is not None:
        return validator
    schema = json.loads(key)  # a private copy: the session's dict may be mutated later
    cls = validator_for(schema)
    try:
        _check_schema(cls, schema)
    except SchemaError as e:
        raise RuntimeError(f"Invalid schema for tool {name}: {e}") from e
    validator = cls(schema, registry=Registry())
    with _validators_lock:
        if len(_validators) >= _MAX_SHARED_VALIDATORS:
            _validators.clear()
        _validators[key] = validator
    return validator


def _check_schema(cls: Any, schema: Any) -> None:
    """``cls.check_schema(schema)``; for draft 2020-12 the project's faster equivalent check."""
    from jsonschema import Draft202012Validator

    if cls is Draft202012Validator:
        try:
            from tool_specs.validation import check_schema
        except ImportError:  # pragma: no cover - the client used without the server package
            pass
        else:
            check_schema(schema)
            return
    cls.check_schema(schema)


def share_output_validators(client: Client) -> None:
    """Make ``client``'s session use this process's compiled output-schema validators.

    The SDK checks every structured tool result against the tool's output schema and compiles the
    validator (a meta-schema check, several milliseconds) once per *session*; with one session per
    episode that cost recurs in every episode. The results are still validated by the SDK, in the
    same place and with the same errors; only compiling is shared. Does nothing if the SDK has no
    such hook (a different SDK version).
    """
    try:
        session = client.session
    except RuntimeError:
        return
    if callable(getattr(type(session), "_output_schema_validator", None)):
        session._output_schema_validator = shared_output_validator  # type: ignore[method-assign]
