"""The HTTP entry for requests of the current MCP protocol (2026-07-28): one POST, one answer.

The SDK's entry (``StreamableHTTPSessionManager.handle_request`` for a modern protocol version) runs
each request's handler as a sibling task in a task group, with a second task that waits for the
client to disconnect, a memory stream between them and a timer scope, and answers through a
Starlette ``Response``: most of what a tool call costs the server beyond the tool itself. This
entry makes the same checks, in the same order, with the SDK's own functions (the transport's
Host/Origin check, ``Accept``, the JSON-RPC envelope, duplicated routing headers, the request
envelope's classification, ``Mcp-Param-*`` headers against the tool's input schema) and serves the
request through the SDK's ``ServerRunner`` as its ``serve_one`` does, but in the request's own task:

* a notification the handler emits (a log message, progress) commits the response to
  ``text/event-stream`` and is written at once; a handler that emits nothing is answered with
  ``application/json`` and the status the SDK maps its error code to;
* a handler silent for 15 s commits the stream and pings every 15 s (as the SDK does);
* the client closing the connection cancels the handler (as the SDK does), watched by one small task.

Whatever it does not serve itself it hands to the SDK's entry with the body replayed, so the SDK
writes its own answer: a notification, a body that is not one JSON-RPC request, a request that
fails a check (the SDK repeats the check and writes its rejection), ``subscriptions/listen``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any, cast

import anyio
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner, aclose_shielded, modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    X_MCP_HEADER_KEY,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, RequestId
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

__all__ = ["ModernEntry"]

SSE_PING_INTERVAL = 15.0  # seconds of silence before the stream is committed, and between pings (the SDK's)
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]
_PARAM_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()
_SCHEMAS_KEPT = 4096  # input schemas whose x-mcp-header answer is remembered


def _dumps(msg: JSONRPCResponse | JSONRPCError | JSONRPCNotification | tuple[RequestId, dict[str, Any]]) -> str:
    """A JSON-RPC message as the SDK writes it; ``(id, result)`` is a response not yet made a model.

    A result from the SDK's runner is already in its wire form (dumped in JSON mode), which the
    response model would validate and dump again unchanged; it is written as it is unless plain
    JSON cannot carry it, when the model does the conversion as the SDK's entry would."""
    if isinstance(msg, tuple):
        try:
            return json.dumps({"jsonrpc": "2.0", "id": msg[0], "result": msg[1]}, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            msg = JSONRPCResponse(jsonrpc="2.0", id=msg[0], result=msg[1])
    return json.dumps(msg.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))


class _Reply:
    """One request's response: JSON unless the handler emits (or stays silent 15 s), then an SSE stream."""

    def __init__(self, send: Send, sse: bool):
        self.send = send
        self.sse = sse  # may the answer become a stream (the SDK's SSE mode)
        self.committed = False
        self.lock = asyncio.Lock()

    async def event(self, data: bytes | None) -> None:
        """Write one SSE event (a ping when ``data`` is None), committing the stream first."""
        async with self.lock:
            if not self.committed:
                self.committed = True
                await self.send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
            await self.send({"type": "http.response.body", "body": data or b": ping\r\n\r\n", "more_body": True})

    async def finish(self, msg: JSONRPCError | tuple[RequestId, dict[str, Any]]) -> None:
        async with self.lock:
            if self.committed:
                body = f"event: message\r\ndata: {_dumps(msg)}\r\n\r\n".encode()
                await self.send({"type": "http.response.body", "body": body, "more_body": False})
                return
            self.committed = True
            status = ERROR_CODE_HTTP_STATUS.get(msg.error.code, 200) if isinstance(msg, JSONRPCError) else 200
            body = _dumps(msg).encode()
            await self.send({"type": "http.response.start", "status": status, "headers": [
                (b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]})
            await self.send({"type": "http.response.body", "body": body, "more_body": False})

    async def ping(self) -> None:
        while True:
            await self.event(None)
            await asyncio.sleep(SSE_PING_INTERVAL)


class _DispatchContext:
    """The SDK's ``DispatchContext`` for one request (no back-channel: a modern server sends no requests)."""

    can_send_request = False

    def __init__(self, transport: TransportContext, request_id: RequestId, metadata: MessageMetadata,
                 progress_token: Any, reply: _Reply):
        self.transport = transport
        self.request_id = request_id
        self.message_metadata = metadata
        self.progress_token = progress_token
        self._reply = reply
        self._cancel_requested: anyio.Event | None = None

    @property
    def cancel_requested(self) -> anyio.Event:
        if self._cancel_requested is None:
            self._cancel_requested = anyio.Event()
        return self._cancel_requested

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None,
                               opts: CallOptions | None = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        if not self._reply.sse:
            return
        note = JSONRPCNotification(jsonrpc="2.0", method=method, params=dict(params) if params is not None else None)
        try:
            await self._reply.event(f"event: message\r\ndata: {_dumps(note)}\r\n\r\n".encode())
        except OSError:  # the client went away; the disconnect watch cancels the handler
            pass

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)


class ModernEntry:
    """ASGI app serving modern-protocol requests for ``manager`` (its server, settings and body limit)."""

    def __init__(self, manager: StreamableHTTPSessionManager):
        self.manager = manager
        self.app: Server[Any] = manager.app
        self.security = TransportSecurityMiddleware(manager.security_settings)
        self.json_response = manager.json_response
        self.asgi = RequestBodyLimitMiddleware(self._handle, manager.max_request_body_size)
        self._declares: dict[int, tuple[Any, bool]] = {}  # id(input schema) -> (schema, declares x-mcp-header)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.asgi(scope, receive, send)

    async def _to_sdk(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """The SDK's own entry answers, with the body already read handed to it again."""
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.manager.handle_request(scope, replay, send)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.method != "POST" or cast("Any", self.manager)._task_group is None:  # 405 / not running: the SDK's answer
            await self.manager.handle_request(scope, receive, send)
            return
        if await self.security.validate_request(request, is_post=True) is not None:
            await self.manager.handle_request(scope, receive, send)
            return
        has_json, has_sse = check_accept_headers(request)
        body = await request.body()
        if not has_json or not (self.json_response or has_sse):
            await self._to_sdk(scope, body, receive, send)
            return
        try:
            decoded = json.loads(body)
            if not isinstance(decoded, dict) or "id" not in decoded:
                raise ValueError("not a request")
            req = JSONRPCRequest.model_validate(decoded)
        except (ValueError, RecursionError, ValidationError):  # parse error, notification, batch, bad envelope
            await self._to_sdk(scope, body, receive, send)
            return
        headers = request.headers
        verdict = None
        if req.method != "subscriptions/listen" and find_duplicated_routing_header(headers.items()) is None:
            verdict = classify_inbound_request(decoded, headers=dict(headers))
        if verdict is None or isinstance(verdict, InboundLadderRejection) or self._param_rejection(req, headers):
            await self._to_sdk(scope, body, receive, send)
            return

        connection = Connection.from_envelope(verdict.protocol_version, verdict.client_info, verdict.client_capabilities)
        reply = _Reply(send, sse=not self.json_response)
        dctx = _DispatchContext(
            TransportContext(kind="streamable-http", can_send_request=False, headers=headers), req.id,
            ServerMessageMetadata(request_context=request), progress_token_from_params(req.params), reply,
        )
        with anyio.CancelScope() as scope_:
            watch = asyncio.ensure_future(receive())  # http.disconnect once the client closes the connection

            def gone(task: asyncio.Future[Message]) -> None:
                if not task.cancelled() and task.exception() is None and task.result().get("type") == "http.disconnect":
                    scope_.cancel()

            watch.add_done_callback(gone)
            pinger: asyncio.Task[None] | None = None

            def start_pinging() -> None:
                nonlocal pinger
                pinger = asyncio.ensure_future(reply.ping())

            timer = asyncio.get_running_loop().call_later(SSE_PING_INTERVAL, start_pinging) if reply.sse else None
            try:
                try:
                    result = await self._serve_one(dctx, req, connection)
                    msg: JSONRPCError | tuple[RequestId, dict[str, Any]] = (req.id, result)
                except Exception as exc:
                    msg = JSONRPCError(jsonrpc="2.0", id=req.id, error=modern_error_data(exc))
                finally:
                    if timer is not None:
                        timer.cancel()
                    if pinger is not None:
                        pinger.cancel()
                await reply.finish(msg)
            finally:
                watch.cancel()

    async def _serve_one(self, dctx: _DispatchContext, req: JSONRPCRequest, connection: Connection) -> dict[str, Any]:
        """The SDK's ``serve_one``, whose shielded unwinding of the connection's exit stack is skipped
        when nothing was put on it (it closes nothing then; the timed, shielded scope alone costs)."""
        runner = ServerRunner(self.app, connection, self.manager._lifespan_state)
        try:
            return await runner.on_request(dctx, req.method, req.params)
        finally:
            if connection.exit_stack._exit_callbacks:  # type: ignore[attr-defined]
                await aclose_shielded(connection)

    def _declares_headers(self, schema: Any) -> bool:
        """Whether an input schema names ``x-mcp-header`` anywhere (without it, no header can disagree)."""
        hit = self._declares.get(id(schema))
        if hit is None or hit[0] is not schema:
            if len(self._declares) >= _SCHEMAS_KEPT:
                self._declares.clear()
            hit = (schema, X_MCP_HEADER_KEY in json.dumps(schema, default=str))
            self._declares[id(schema)] = hit
        return hit[1]

    def _param_rejection(self, req: JSONRPCRequest, headers: Mapping[str, str]) -> bool:
        """Whether a ``tools/call``'s ``Mcp-Param-*`` headers disagree with its arguments (the SDK's check)."""
        lookup = self.app.get_tool_input_schema
        if req.method != "tools/call":
            return False
        if lookup is None:  # the SDK reads the schema from a listing of the tools: let it
            return self.app.get_request_handler("tools/list") is not None
        params = req.params or {}
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or (arguments is not None and not isinstance(arguments, Mapping)):
            return False
        if not arguments and not any(h.startswith(_PARAM_PREFIX) for h in headers):
            return False
        try:
            schema = lookup(name)
        except Exception:
            return True  # the SDK logs it and serves the call: let it
        if schema is None or not self._declares_headers(schema):
            return False
        return validate_mcp_param_headers(schema, arguments or {}, headers) is not None
