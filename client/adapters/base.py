"""The interface every model adapter implements, plus small helpers shared by the adapters."""

from __future__ import annotations

import os
from typing import Protocol, runtime_checkable

from client.adapters.errors import ModelError
from client.adapters.names import DEFAULT_MAX_LEN, ToolNameMap
from client.messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    ToolChoice,
    ToolDef,
    ToolResultMessage,
)

__all__ = [
    "LOCAL_PLACEHOLDER_API_KEY",
    "ModelAdapter",
    "resolve_api_key",
    "build_name_map",
    "tool_choice_name",
]

LOCAL_PLACEHOLDER_API_KEY = "sk-local-no-key"
"""Sent when a ``base_url`` is given but no API key: local servers (vLLM, llama.cpp, Ollama) ignore it."""


@runtime_checkable
class ModelAdapter(Protocol):
    """A chat model with native tool calling, driven one request at a time.

    ``complete`` sends the whole conversation and returns the model's next turn. It raises
    :class:`client.adapters.errors.ModelError` for every failure (the SDK's own retries are off, so
    the caller's retry layer sees every attempt). Tool names in ``messages``, ``tools``,
    ``tool_choice`` and the returned ``ModelResponse`` are always the original names.
    """

    name: str  # e.g. "openai:gpt-4o-mini"
    provider: str  # "openai" | "anthropic" | ...
    model: str

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ModelResponse:
        """Send the conversation and return the model's next turn."""
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...


def resolve_api_key(
    *,
    api_key: str | None,
    api_key_env: str,
    base_url: str | None,
    provider: str,
    allow_placeholder: bool = True,
) -> str:
    """The API key to use: explicit ``api_key``, else ``$api_key_env``, else a placeholder for a custom
    ``base_url`` (local servers need none). Raises ``ValueError`` naming the variable otherwise."""
    if api_key:
        return api_key
    from_env = os.environ.get(api_key_env)
    if from_env:
        return from_env
    if base_url and allow_placeholder:
        return LOCAL_PLACEHOLDER_API_KEY
    raise ValueError(
        f"no API key for {provider}: set the environment variable {api_key_env}, or put the key in another "
        f"variable and name it (evals run: --api-key-env VAR); a base_url for a local server needs no key"
    )


def tool_choice_name(tool_choice: ToolChoice, tools: list[ToolDef]) -> str | None:
    """Validate ``tool_choice``; return the forced tool's original name, or ``None`` for the modes."""
    if isinstance(tool_choice, dict):
        name = tool_choice.get("name")
        if not isinstance(name, str) or not name:
            raise ModelError(
                "bad_request",
                f"tool_choice must be 'auto', 'required', 'none' or {{'name': ...}}, got {tool_choice!r}",
            )
        if name not in {t.name for t in tools}:
            raise ModelError(
                "bad_request",
                f"tool_choice names tool {name!r}, which is not among the {len(tools)} tools offered",
            )
        return name
    if tool_choice not in ("auto", "required", "none"):
        raise ModelError(
            "bad_request",
            f"tool_choice must be 'auto', 'required', 'none' or {{'name': ...}}, got {tool_choice!r}",
        )
    if tool_choice == "required" and not tools:
        raise ModelError("bad_request", "tool_choice='required' but no tools were offered")
    return None


def build_name_map(
    tools: list[ToolDef], messages: list[Message], *, max_len: int = DEFAULT_MAX_LEN
) -> ToolNameMap:
    """Name map for one request: built from the offered tools (so their safe names depend only on the
    tool set), then extended with any other tool names found in the conversation history."""
    names = ToolNameMap((t.name for t in tools), max_len=max_len)
    for message in messages:
        if isinstance(message, AssistantMessage):
            for tc in message.tool_calls:
                names.add(tc.name)
        elif isinstance(message, ToolResultMessage) and message.name:
            names.add(message.name)
    return names
