"""What a model sees of a ToolHop tool's run: returned errors, and the paper's two feedback levels.

ToolHop's tools answer bad input in two ways: they raise, or they *return* an error
(``{"error": "..."}``, ``"Error: ..."``). :func:`tool_result` is the sandbox executor's
``to_result`` hook for them: a returned error is an error result too. :func:`shown` applies the
feedback level to a tool's result: ``detailed`` (the paper's default) shows the tool's own output or
error, ``minimal`` (the paper's "no detailed feedback" ablation) replaces every failure by
:data:`GENERIC_ERROR`. The server's schema warnings are never shown (invocation errors are scored
from the traces).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from tool_specs.results import ToolResult
from tool_specs.sandbox import SandboxReply, reply_to_result, value_to_result

__all__ = ["FEEDBACK_LEVELS", "GENERIC_ERROR", "Feedback", "shown", "tool_reported_error", "tool_result", "value_text"]

Feedback = Literal["detailed", "minimal"]
FEEDBACK_LEVELS: tuple[Feedback, ...] = ("detailed", "minimal")
GENERIC_ERROR = "Error: the tool call failed."

_ERROR_TEXT = re.compile(r"\s*(error|exception)\b", re.IGNORECASE)


def tool_reported_error(value: Any) -> bool:
    """Did the tool *return* an error rather than raise one? A dict whose ``error`` entry is set
    (with at most one other key), or a string starting with ``Error``/``Exception``."""
    if isinstance(value, dict):
        return bool(value.get("error")) and len(value) <= 2
    if isinstance(value, str):
        return bool(_ERROR_TEXT.match(value))
    return False


def value_text(value: Any) -> str:
    """How a tool's return value reads to the model (the sandbox's rendering: a string as is,
    anything else as JSON)."""
    return value_to_result(value).text


def tool_result(reply: SandboxReply) -> ToolResult:
    """The sandbox executor's ``to_result`` hook for ToolHop's tools: the sandbox's own reading of
    the reply (:func:`tool_specs.sandbox.reply_to_result`), except that a returned error
    (:func:`tool_reported_error`) is an error result with the tool's text."""
    if reply.ok and tool_reported_error(reply.value):
        return ToolResult.error(value_text(reply.value))
    return reply_to_result(reply)


def shown(result: ToolResult, feedback: Feedback) -> ToolResult:
    """The result as the model sees it: without the server's warnings; with ``minimal`` feedback,
    every failure reads :data:`GENERIC_ERROR`."""
    if result.is_error and feedback == "minimal":
        return ToolResult.error(GENERIC_ERROR)
    return ToolResult(is_error=result.is_error, text=result.text, structured=result.structured)
