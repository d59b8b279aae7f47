"""Middleware of the low-level MCP server: what must be looked at before the SDK validates a request."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from mcp import types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

__all__ = ["NonObjectArgumentsMiddleware", "NullInputResponsesMiddleware", "RequestChecksMiddleware"]

_UNSET: Any = object()
_raw_arguments: ContextVar[Any] = ContextVar("raw_tool_arguments", default=_UNSET)


class NonObjectArgumentsMiddleware:
    """Lets ``tools/call`` with non-object ``arguments`` reach the tool handler.

    The SDK validates request params against the spec before any handler runs and would answer a
    list or a string as ``arguments`` with a bare JSON-RPC "Invalid request parameters". This
    middleware (which runs before that validation) swaps such arguments for ``{}`` and keeps the
    original in a context variable, so the handler can answer with a tool result that has
    ``is_error`` set and says what was wrong: something a model can act on.
    """

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        return await _with_object_arguments(ctx, call_next)


async def _with_object_arguments(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
    params = ctx.params
    if ctx.method == "tools/call" and isinstance(params, Mapping):
        args = params.get("arguments")
        if args is not None and not isinstance(args, Mapping):
            token = _raw_arguments.set(args)
            try:
                return await call_next(replace(ctx, params={**params, "arguments": {}}))
            finally:
                _raw_arguments.reset(token)
    return await call_next(ctx)


_OBJECT_PARAMS = ("inputResponses", "requestState")  # present in a request => an object / a string, never null


class NullInputResponsesMiddleware:
    """Refuses ``inputResponses: null`` (and ``requestState: null``) in a request's params.

    The SDK's models read an explicit ``null`` as "absent", but the protocol's schema (2026-07-28)
    types ``inputResponses`` as an object and ``requestState`` as a string: a request carrying
    ``null`` there is invalid and gets a JSON-RPC invalid-params error that names the field.
    """

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        _refuse_null_params(ctx)
        return await call_next(ctx)


def _refuse_null_params(ctx: ServerRequestContext[Any, Any]) -> None:
    params = ctx.params
    if ctx.request_id is not None and isinstance(params, Mapping):
        for key in _OBJECT_PARAMS:
            if key in params and params[key] is None:
                kind = "an object (InputResponses)" if key == "inputResponses" else "a string"
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message=f"{ctx.method}: params.{key} is null; when present it must be {kind}",
                )


class RequestChecksMiddleware:
    """:class:`NullInputResponsesMiddleware` then :class:`NonObjectArgumentsMiddleware`, as one layer of
    the SDK's middleware chain (each layer costs every request a call and a coroutine)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        _refuse_null_params(ctx)
        return await _with_object_arguments(ctx, call_next)


