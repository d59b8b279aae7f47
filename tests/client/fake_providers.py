"""Local HTTP servers that play the provider's side for tests: OpenAI Chat Completions and Anthropic Messages.

A :class:`FakeProviderServer` runs a small ASGI app under uvicorn on ``127.0.0.1`` (ephemeral port)
in a background thread, so the *real* ``openai`` / ``anthropic`` SDKs can talk to it::

    with FakeProviderServer() as server:
        server.openai.script(
            openai_error(429, "slow down", headers={"retry-after": "0.2"}),
            openai_chat(tool_calls=[tool_call("date of journey", {"city": "Paris"})]),
            openai_chat("It is on Monday."),
        )
        adapter = OpenAIAdapter("gpt-4o-mini", base_url=server.openai_base_url)
        ...
        assert server.openai.bodies[0]["tools"][0]["function"]["name"] == "date_of_journey"

Each endpoint (``server.openai`` for ``POST /v1/chat/completions``, ``server.anthropic`` for
``POST /v1/messages``) answers from a *script*: a FIFO queue of steps. A step is

* a ``dict``: a 200 JSON response body (build one with :func:`openai_chat` / :func:`anthropic_message`);
* :class:`Reply`: any status, body and headers (see :func:`openai_error` / :func:`anthropic_error`);
* :class:`Delay`: wait, then perform another step; if the client hangs up first (its timeout), stop;
* :class:`Drop`: send the status line and headers, then close the connection mid-body;
* a callable ``(request_json) -> step`` (sync or async) for models that react to the request.

When the queue is empty the endpoint's ``handler`` (a callable as above) answers; without one the
server answers 500 "script exhausted". Every request is recorded (``endpoint.requests`` /
``endpoint.bodies``) before it is answered.

With ``strict=True`` (the default) the server also checks the request the way the real API would
(tool-name patterns, tool calls answered by tool results, thinking blocks sent back unchanged with
their signatures, tool_choice consistent with tools and thinking, ...) and answers 400 with the real
API's error shape, without consuming a script step, when a rule is broken; ``endpoint.violations``
lists what was rejected.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import itertools
import json
import logging
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import uvicorn

__all__ = [
    "Delay",
    "Drop",
    "FakeEndpoint",
    "FakeProviderServer",
    "FakeToolCall",
    "RecordedRequest",
    "Reply",
    "Step",
    "anthropic_error",
    "anthropic_message",
    "openai_chat",
    "openai_error",
    "tool_call",
    "validate_anthropic_request",
    "validate_openai_request",
]

# --------------------------------------------------------------------------------------------------
# Script steps
# --------------------------------------------------------------------------------------------------


@dataclass
class Reply:
    """An HTTP response: ``body`` is JSON-encoded unless it is ``str``/``bytes``."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Delay:
    """Wait ``seconds`` (or until the client disconnects), then perform ``then``."""

    seconds: float
    then: Step | None = None


@dataclass
class Drop:
    """Send the status line and headers, then close the connection before the body is complete."""

    status: int = 200


Step: TypeAlias = "Reply | Delay | Drop | dict[str, Any] | Callable[[dict[str, Any]], Any]"


@dataclass
class FakeToolCall:
    """A tool call for :func:`openai_chat` / :func:`anthropic_message`.

    ``arguments`` may be a dict, or (OpenAI only) the exact string the model "generated", which may be
    malformed JSON on purpose.
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


def tool_call(
    name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None
) -> FakeToolCall:
    """Shorthand for :class:`FakeToolCall`."""
    return FakeToolCall(name=name, arguments={} if arguments is None else arguments, id=id)


_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):06d}"


def _as_tool_calls(calls: Iterable[FakeToolCall | tuple[str, Any]]) -> list[FakeToolCall]:
    out = []
    for c in calls:
        if isinstance(c, FakeToolCall):
            out.append(c)
        else:
            name, args = c
            out.append(FakeToolCall(name, args))
    return out


def openai_chat(
    text: str | None = None,
    tool_calls: Iterable[FakeToolCall | tuple[str, Any]] = (),
    *,
    reasoning_content: str | None = None,
    usage: dict[str, Any] | tuple[int, int] | None = None,
    reasoning_tokens: int | None = None,
    cached_tokens: int | None = None,
    finish_reason: str | None = None,
    model: str = "fake-openai-model",
    message_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Chat Completions response body. ``tool_calls`` with two or more items = parallel tool calls.

    ``usage`` is a full usage dict or ``(prompt_tokens, completion_tokens)``; default ``(11, 7)``.
    """
    calls = _as_tool_calls(tool_calls)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id or _next_id("call_"),
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments),
                },
            }
            for c in calls
        ]
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    if message_extra:
        message.update(message_extra)
    if usage is None or isinstance(usage, tuple):
        prompt, completion = usage or (11, 7)
        usage_dict: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if reasoning_tokens is not None:
            usage_dict["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
        if cached_tokens is not None:
            usage_dict["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    else:
        usage_dict = usage
    return {
        "id": _next_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
                "logprobs": None,
            }
        ],
        "usage": usage_dict,
    }


def openai_error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An OpenAI-style error response: ``{"error": {"message", "type", "param", "code"}}``."""
    default_type = {400: "invalid_request_error", 401: "invalid_request_error", 429: "requests"}.get(
        status, "server_error"
    )
    body = {"error": {"message": message, "type": type or default_type, "param": None, "code": code}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


def anthropic_message(
    text: str | None = None,
    tool_uses: Iterable[FakeToolCall | tuple[str, Any]] = (),
    *,
    thinking: str | Iterable[str | tuple[str, str]] | None = None,
    redacted_thinking: str | Iterable[str] | None = None,
    usage: dict[str, Any] | tuple[int, int] | None = None,
    stop_reason: str | None = None,
    model: str = "fake-claude",
    content: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Messages API response body.

    Blocks come in the order the API uses: thinking, redacted_thinking, text, tool_use. ``thinking``
    items are texts (a signature is made up) or ``(text, signature)`` pairs. ``content`` overrides all
    of that with an explicit block list. ``usage`` is a dict or ``(input_tokens, output_tokens)``.
    """
    calls = _as_tool_calls(tool_uses)
    if content is None:
        content = []
        if thinking is not None:
            for item in [thinking] if isinstance(thinking, str) else thinking:
                thought, signature = (item, None) if isinstance(item, str) else item
                signature = signature or "sig_" + hashlib.sha256(thought.encode()).hexdigest()[:24]
                content.append({"type": "thinking", "thinking": thought, "signature": signature})
        if redacted_thinking is not None:
            for data in [redacted_thinking] if isinstance(redacted_thinking, str) else redacted_thinking:
                content.append({"type": "redacted_thinking", "data": data})
        if text is not None:
            content.append({"type": "text", "text": text})
        for c in calls:
            if isinstance(c.arguments, str):
                raise ValueError("Anthropic tool_use input is always a JSON object; pass a dict")
            content.append(
                {"type": "tool_use", "id": c.id or _next_id("toolu_"), "name": c.name, "input": c.arguments}
            )
    has_tool_use = any(b.get("type") == "tool_use" for b in content)
    if usage is None or isinstance(usage, tuple):
        inp, out = usage or (13, 9)
        usage_dict: dict[str, Any] = {"input_tokens": inp, "output_tokens": out}
    else:
        usage_dict = usage
    return {
        "id": _next_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if has_tool_use else "end_turn"),
        "stop_sequence": None,
        "usage": usage_dict,
    }


def anthropic_error(
    status: int, message: str, *, type: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """An Anthropic-style error response: ``{"type": "error", "error": {"type", "message"}}``."""
    default_type = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")
    body = {"type": "error", "error": {"type": type or default_type, "message": message}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


# --------------------------------------------------------------------------------------------------
# Endpoints
# --------------------------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as the server received it (``time`` is ``time.monotonic()`` at arrival)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    time: float


class FakeEndpoint:
    """The scripted side of one API route; thread-safe (the server runs in another thread)."""

    def __init__(self, name: str, path: str) -> None:
        self.name = name
        self.path = path
        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        self.handler: Callable[[dict[str, Any]], Any] | None = None
        self._queue: deque[Any] = deque()
        self._lock = threading.Lock()

    def script(self, *steps: Any) -> FakeEndpoint:
        """Append steps to the script (answered in order, one per request)."""
        with self._lock:
            self._queue.extend(steps)
        return self

    def respond_with(self, handler: Callable[[dict[str, Any]], Any] | None) -> FakeEndpoint:
        """Answer with ``handler(request_json)`` whenever the script queue is empty."""
        self.handler = handler
        return self

    @property
    def pending(self) -> int:
        """Script steps not used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def bodies(self) -> list[Any]:
        """JSON bodies of all requests received so far."""
        with self._lock:
            return [r.body for r in self.requests]

    @property
    def last_body(self) -> Any:
        """JSON body of the latest request (``None`` if there was none)."""
        with self._lock:
            return self.requests[-1].body if self.requests else None

    def reset(self) -> None:
        """Forget the script, the handler, the recorded requests and the violations."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.violations.clear()
            self.handler = None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_step(self) -> Any:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.handler is not None:
            return self.handler
        return Reply(
            500, {"error": {"message": f"fake {self.name} server: script exhausted", "type": "server_error"}}
        )


# --------------------------------------------------------------------------------------------------
# Request validation (what the real APIs reject)
# --------------------------------------------------------------------------------------------------

_OPENAI_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ANTHROPIC_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def validate_openai_request(body: Any) -> str | None:
    """The error message the real API would give for ``body``, or ``None`` if it looks valid."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not body.get("model"):
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    tools = body.get("tools") or []
    names = set()
    for i, tool in enumerate(tools):
        name = (tool.get("function") or {}).get("name", "")
        if not _OPENAI_TOOL_NAME.match(name):
            return f"Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        names.add(name)
    choice = body.get("tool_choice")
    if choice is not None and not tools:
        return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
    if isinstance(choice, dict):
        forced = (choice.get("function") or {}).get("name")
        if forced not in names:
            return f"Invalid value for 'tool_choice': no function named '{forced}' was specified in the 'tools' parameter."
    elif choice is not None and choice not in ("auto", "required", "none"):
        return f"Invalid value for 'tool_choice': {choice!r}"
    open_ids: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if open_ids and role != "tool":
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(open_ids)}"
            )
        if role == "assistant":
            for tc in m.get("tool_calls") or []:
                name = (tc.get("function") or {}).get("name", "")
                if not _OPENAI_TOOL_NAME.match(name):
                    return f"Invalid 'messages[{i}].tool_calls.function.name': string does not match pattern."
                open_ids.append(tc.get("id"))
        elif role == "tool":
            tid = m.get("tool_call_id")
            if tid not in open_ids:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    f"with 'tool_calls' (messages[{i}].tool_call_id={tid!r})."
                )
            open_ids.remove(tid)
        elif role not in ("system", "developer", "user"):
            return f"Invalid value for 'messages[{i}].role': {role!r}"
    return None


class _AnthropicState:
    """Signatures the fake Anthropic server has issued, to check that thinking comes back unchanged."""

    def __init__(self) -> None:
        self.thinking: dict[str, str] = {}
        self.redacted: set[str] = set()
        self.lock = threading.Lock()

    def register(self, body: Any) -> None:
        if not isinstance(body, dict):
            return
        with self.lock:
            for block in body.get("content") or []:
                if block.get("type") == "thinking":
                    self.thinking[block.get("signature", "")] = block.get("thinking", "")
                elif block.get("type") == "redacted_thinking":
                    self.redacted.add(block.get("data", ""))


def validate_anthropic_request(body: Any, state: _AnthropicState | None = None) -> str | None:
    """The error message the real API would give for ``body``, or ``None`` if it looks valid."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not body.get("model"):
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return 'messages: first message must use the "user" role'
    tools = body.get("tools") or []
    names = set()
    for i, tool in enumerate(tools):
        name = tool.get("name", "")
        if not _ANTHROPIC_TOOL_NAME.match(name):
            return f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
        if not isinstance(tool.get("input_schema"), dict):
            return f"tools.{i}.custom.input_schema: Field required"
        names.add(name)
    thinking = body.get("thinking") or {}
    thinking_on = thinking.get("type") in ("enabled", "adaptive")
    choice = body.get("tool_choice")
    if choice is not None:
        if not tools:
            return "tool_choice may only be specified while providing tools."
        ctype = choice.get("type")
        if ctype not in ("auto", "any", "tool", "none"):
            return f"tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none', got {ctype!r}"
        if ctype == "tool" and choice.get("name") not in names:
            return f"tool_choice.name: tool {choice.get('name')!r} not found in tools"
        if thinking_on and ctype in ("any", "tool"):
            return "Thinking may not be enabled when tool_choice forces tool use."
    if thinking_on:
        budget = thinking.get("budget_tokens")
        if thinking.get("type") == "enabled" and (
            not isinstance(budget, int) or budget >= body["max_tokens"]
        ):
            return "`max_tokens` must be greater than `thinking.budget_tokens`."
        if body.get("temperature") not in (None, 1, 1.0):
            return "`temperature` may only be set to 1 when thinking is enabled."

    for i, m in enumerate(messages):
        role, content = m.get("role"), m.get("content")
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            return f"messages.{i}: all messages must have non-empty content"
        for j, block in enumerate(blocks):
            btype = block.get("type")
            if btype == "text" and not block.get("text"):
                return f"messages.{i}.content.{j}.text: text content blocks must be non-empty"
            if btype == "tool_use":
                if role != "assistant":
                    return f"messages.{i}.content.{j}: tool_use blocks are only allowed in assistant messages"
                if not _ANTHROPIC_ID.match(str(block.get("id", ""))):
                    return f"messages.{i}.content.{j}.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                if not _ANTHROPIC_TOOL_NAME.match(str(block.get("name", ""))):
                    return f"messages.{i}.content.{j}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
                if not isinstance(block.get("input"), dict):
                    return f"messages.{i}.content.{j}.input: Input should be a valid dictionary"
            if btype == "thinking" and state is not None:
                with state.lock:
                    issued = state.thinking.get(block.get("signature", ""))
                if issued is None or issued != block.get("thinking"):
                    return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
            if btype == "redacted_thinking" and state is not None:
                with state.lock:
                    known = block.get("data") in state.redacted
                if not known:
                    return f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
        # tool_use in an assistant turn must be answered first thing in the next user turn
        if role == "assistant":
            use_ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
            if use_ids:
                nxt = messages[i + 1] if i + 1 < len(messages) else None
                if nxt is None:
                    return f"messages.{i}: the final assistant message must not end with tool_use blocks"
                nblocks = nxt.get("content") if isinstance(nxt.get("content"), list) else []
                result_ids = [b.get("tool_use_id") for b in nblocks if b.get("type") == "tool_result"]
                missing = [u for u in use_ids if u not in result_ids]
                if missing:
                    return (
                        f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                        f"after: {', '.join(map(str, missing))}. Each `tool_use` block must have a corresponding "
                        "`tool_result` block in the next message."
                    )
                kinds = [b.get("type") for b in nblocks]
                first_other = next((k for k, t in enumerate(kinds) if t != "tool_result"), len(kinds))
                if "tool_result" in kinds[first_other:]:
                    return f"messages.{i + 1}: tool_result blocks must come before any other content"
            if thinking_on and use_ids and i == _last_assistant_index(messages):
                if blocks[0].get("type") not in ("thinking", "redacted_thinking"):
                    return (
                        f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                        f"`{blocks[0].get('type')}`. When `thinking` is enabled, a final `assistant` message "
                        "must start with a thinking block."
                    )
        if role == "user":
            for b in blocks:
                if b.get("type") == "tool_result":
                    prev = messages[i - 1] if i > 0 else {}
                    pblocks = prev.get("content") if isinstance(prev.get("content"), list) else []
                    if b.get("tool_use_id") not in [
                        p.get("id") for p in pblocks if p.get("type") == "tool_use"
                    ]:
                        return (
                            f"messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                            "`tool_use` block in the previous message."
                        )
    return None


def _last_assistant_index(messages: list[dict[str, Any]]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "assistant":
            return i
    return -1


# --------------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------------


class _DropConnection(Exception):
    """Raised inside the ASGI app to make uvicorn close the connection mid-response."""


class _QuietDrops(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, _DropConnection)


class FakeProviderServer:
    """uvicorn on 127.0.0.1:<ephemeral port> in a background thread, serving both fake APIs.

    Use as a context manager or call :meth:`start` / :meth:`stop`. Attributes ``openai`` and
    ``anthropic`` are the scripted :class:`FakeEndpoint` objects.
    """

    def __init__(self, *, strict: bool = True) -> None:
        self.strict = strict
        self.openai = FakeEndpoint("openai", "/v1/chat/completions")
        self.anthropic = FakeEndpoint("anthropic", "/v1/messages")
        self._anthropic_state = _AnthropicState()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.port: int | None = None

    # -- addresses ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self.port is None:
            raise RuntimeError("FakeProviderServer is not started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """What to pass as ``base_url`` to the OpenAI SDK / adapter."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """What to pass as ``base_url`` to the Anthropic SDK / adapter."""
        return self.url

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeProviderServer:
        """Start serving (returns once the server accepts connections)."""
        if self._server is not None:
            return self
        uvicorn_log = logging.getLogger("uvicorn.error")
        if not any(isinstance(f, _QuietDrops) for f in uvicorn_log.filters):
            uvicorn_log.addFilter(_QuietDrops())
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            log_level="warning",
            lifespan="off",
            interface="asgi3",
            access_log=False,
            timeout_graceful_shutdown=1,
            timeout_keep_alive=5,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="fake-provider-server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 60  # a loaded machine can take seconds to start a thread
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("fake provider server did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._server is None:
            return
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = None
        self._thread = None

    def reset(self) -> None:
        """Reset both endpoints (script, handler, recorded requests)."""
        self.openai.reset()
        self.anthropic.reset()

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- ASGI -----------------------------------------------------------------------------------

    async def _app(
        self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]], send: Any
    ) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        path = scope["path"]
        endpoint = {self.openai.path: self.openai, self.anthropic.path: self.anthropic}.get(path)
        if endpoint is None or scope["method"] != "POST":
            await self._send(send, Reply(404, {"error": {"message": f"no route {scope['method']} {path}"}}))
            return
        endpoint._record(RecordedRequest(scope["method"], path, headers, body, raw, time.monotonic()))

        if self.strict:
            if endpoint is self.openai:
                problem = validate_openai_request(body)
                rejection = openai_error(400, problem) if problem else None
            else:
                problem = validate_anthropic_request(body, self._anthropic_state)
                rejection = anthropic_error(400, problem) if problem else None
            if rejection is not None:
                with endpoint._lock:
                    endpoint.violations.append(str(problem))
                await self._send(send, rejection)
                return

        step = endpoint._next_step()
        await self._perform(step, body, endpoint, send, receive)

    async def _perform(self, step: Any, body: Any, endpoint: FakeEndpoint, send: Any, receive: Any) -> None:
        while callable(step) and not isinstance(step, Reply | Delay | Drop):
            step = step(body)
            if inspect.isawaitable(step):
                step = await step
        if isinstance(step, Delay):
            sleeper = asyncio.ensure_future(asyncio.sleep(step.seconds))
            hangup = asyncio.ensure_future(receive())
            done, _ = await asyncio.wait({sleeper, hangup}, return_when=asyncio.FIRST_COMPLETED)
            if hangup in done:  # the client gave up (timeout): nothing to answer
                sleeper.cancel()
                return
            hangup.cancel()
            await self._perform(
                step.then if step.then is not None else Reply(200, {}), body, endpoint, send, receive
            )
            return
        if isinstance(step, Drop):
            await send(
                {
                    "type": "http.response.start",
                    "status": step.status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"1000")],
                }
            )
            await send({"type": "http.response.body", "body": b'{"id": "partial', "more_body": True})
            raise _DropConnection()
        if isinstance(step, dict):
            step = Reply(200, step)
        if not isinstance(step, Reply):
            step = Reply(500, {"error": {"message": f"fake server: bad script step {step!r}"}})
        if endpoint is self.anthropic and step.status == 200:
            self._anthropic_state.register(step.body)
        await self._send(send, step)

    @staticmethod
    async def _send(send: Any, reply: Reply) -> None:
        if isinstance(reply.body, bytes):
            payload, ctype = reply.body, "application/octet-stream"
        elif isinstance(reply.body, str):
            payload, ctype = reply.body.encode(), "text/plain"
        else:
            payload, ctype = json.dumps(reply.body).encode(), "application/json"
        headers = {"content-type": ctype, **{k.lower(): v for k, v in reply.headers.items()}}
        headers["content-length"] = str(len(payload))
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            }
        )
        await send({"type": "http.response.body", "body": payload})
