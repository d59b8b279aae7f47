"""The result of one tool call, and the context a call runs in."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import mcp.types

__all__ = ["CallContext", "ToolResult", "to_json_text"]


@dataclass
class CallContext:
    """Who is calling: passed to every executor so that it can look up per-episode state.

    All fields are optional; ``extra`` carries anything else a server or benchmark wants to pass
    through (for example a KG handle or the session's gold answers). ``state`` belongs to the MCP
    session: the server hands every call of one session the same dict and another session a dict
    of its own, so executors keep per-session state there (a handle counter, the gold calls already
    replayed) under keys of their own. Outside a server each context has a fresh one.
    """

    episode_id: str | None = None
    task_id: str | None = None
    benchmark: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)


def to_json_text(value: object) -> str:
    """Serialise a JSON value the way results are shown to a model (UTF-8, no NaN/Infinity).

    Raises:
        TypeError, ValueError: ``value`` is not JSON-serialisable.
    """
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


@dataclass
class ToolResult:
    """What one tool call produced.

    ``text`` is what a model reads. ``structured`` is the JSON-object result when there is one
    (then ``text`` is its JSON serialisation unless an executor chose otherwise). ``warnings``
    are non-fatal problems (for example schema violations under the ``"warn"`` policy); they are
    not shown to the model in ``text`` but travel in the MCP result's ``_meta``.
    """

    is_error: bool = False
    text: str = ""
    structured: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def error(cls, text: str, *, warnings: list[str] | None = None) -> ToolResult:
        """An error result with the given model-facing text."""
        return cls(is_error=True, text=text, warnings=list(warnings or []))

    @classmethod
    def from_value(cls, value: object) -> ToolResult:
        """Wrap what an executor returned.

        * a :class:`ToolResult` is returned unchanged;
        * a ``dict`` becomes ``structured`` (keys must be strings), with its JSON as ``text``;
        * a ``str`` becomes ``text`` with no structured part;
        * any other JSON value (list, number, bool, ``None``) becomes ``structured={"result": value}``.

        Raises:
            TypeError: the value (or something inside it) is not JSON-serialisable.
        """
        if isinstance(value, ToolResult):
            return value
        if isinstance(value, str):
            return cls(text=value)
        if isinstance(value, dict):
            bad = [k for k in value if not isinstance(k, str)]
            if bad:
                raise TypeError(f"result object has non-string key(s): {bad[:5]!r}")
            return cls(text=_dump(value), structured=value)
        structured = {"result": value}
        return cls(text=_dump(value), structured=structured)

    def to_mcp(self) -> mcp.types.CallToolResult:
        """Convert to the MCP ``CallToolResult``: one text content block, ``structured_content`` when
        there is a structured result, ``is_error``, and any warnings under ``_meta["warnings"]``.

        Warnings also go into a second text block, so that a model reading the result learns that
        its call did not fit the schema even though it ran (the ``warn`` policy)."""
        content: list[mcp.types.ContentBlock] = [mcp.types.TextContent(type="text", text=self.text)]
        if self.warnings:
            listed = "\n".join(f"- {w}" for w in self.warnings)
            content.append(mcp.types.TextContent(type="text", text=f"Warnings (the call was still run):\n{listed}"))
        return mcp.types.CallToolResult(
            content=content,
            structured_content=self.structured,
            is_error=self.is_error,
            _meta={"warnings": list(self.warnings)} if self.warnings else None,
        )


def _dump(value: object) -> str:
    try:
        return to_json_text(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"result of type {type(value).__name__} is not JSON-serialisable: {exc}") from exc
