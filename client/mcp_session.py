"""Open an MCP client session to the tool server: by URL (streamable HTTP), stdio, or in-process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client


@contextlib.asynccontextmanager
async def connect(
    target: str | StdioServerParameters | Any,
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
    max_sse_event_size: int | None = None,
    http_client: httpx2.AsyncClient | None = None,
) -> AsyncIterator[Client]:
    """Connect to an MCP server.

    ``target`` is an ``http(s)://`` URL of an endpoint (``.../mcp/<benchmark>[/<task_id>]``), a
    :class:`mcp.StdioServerParameters`, or an in-process low-level ``Server``. ``token`` adds an
    ``Authorization: Bearer`` header for servers bound to a public address.

    Many sessions should share one ``http_client`` (see :func:`http_client`): building an HTTP
    client loads the TLS trust store, which costs tens of milliseconds each time.
    """
    if isinstance(target, str):
        async with contextlib.AsyncExitStack() as stack:
            if http_client is None:
                http_client = await stack.enter_async_context(make_http_client(token=token, headers=headers, timeout=timeout))
            transport = streamable_http_client(target, http_client=http_client, max_sse_event_size=max_sse_event_size)
            async with Client(transport, read_timeout_seconds=timeout) as client:
                yield client
    else:
        async with Client(target, read_timeout_seconds=timeout) as client:
            yield client


def make_http_client(
    *, token: str | None = None, headers: dict[str, str] | None = None, timeout: float = 60.0, max_connections: int = 256
) -> httpx2.AsyncClient:
    """An HTTP client for MCP sessions (bearer token and headers applied to every request)."""
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(
        headers=all_headers,
        timeout=httpx2.Timeout(timeout, read=timeout),
        limits=httpx2.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
    )


async def list_all_tools(client: Client) -> list[types.Tool]:
    """Every tool of the session, following ``next_cursor`` pages."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
