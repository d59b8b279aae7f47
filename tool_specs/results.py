"""The result of one tool call, and the context a call runs in."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mcp.types

__all__ = ["MAX_RESULT_BYTES", "MAX_RESULT_DEPTH", "CallContext", "ToolResult", "to_json_text", "unsendable"]

#: Largest result a tool from outside may hand the model, in bytes of UTF-8 (its text, and its
#: structured content as JSON, each): a sandboxed tool's limit, and an MCP server's or a recording's.
MAX_RESULT_BYTES = 1 << 20

#: Deepest nesting of a structured result sent over MCP (the SDK's serialiser gives up past about
#: 250 levels, envelope included, and then the whole reply fails).
MAX_RESULT_DEPTH = 128


@dataclass
class CallContext:
    """Who is calling: passed to every executor so that it can look up per-episode state.

    All fields are optional; ``extra`` carries anything else a server or benchmark wants to pass
    through (for example a KG handle or the session's gold answers). ``state`` belongs to the MCP
    session: the server hands every call of one session the same dict and another session a dict
    of its own, so executors keep per-session state there (a handle counter, the gold calls already
    replayed) under keys of their own. Outside a server each context has a fresh one. ``client``
    names who opened the session, across its sessions (over HTTP the peer's address and the caller's
    token or MCP client name; ``None`` outside HTTP): the sandbox's fair queue shares by it.
    """

    episode_id: str | None = None
    task_id: str | None = None
    benchmark: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    client: str | None = None


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
    #: ``text`` is the JSON of ``structured`` (set by :meth:`from_value`): :func:`unsendable` then
    #: checks the text, which holds every key and string of the result, instead of walking the result.
    text_is_json: bool = field(default=False, repr=False, compare=False, kw_only=True)

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
            return cls(text=_dump(value), structured=value, text_is_json=True)
        structured = {"result": value}
        return cls(text=_dump(value), structured=structured)

    def sendable(self, tool: str) -> ToolResult:
        """This result, or, when it cannot be sent as JSON over MCP (:func:`unsendable` says why),
        an error result that names the problem: a tool's output never breaks the protocol."""
        problem = unsendable(self)
        if problem is None:
            return self
        name = tool.encode("utf-8", "backslashreplace").decode("utf-8")
        return ToolResult.error(f"Error: the result of tool {name!r} cannot be sent: {problem}")

    def bounded(self, tool: str, limit: int = MAX_RESULT_BYTES) -> ToolResult:
        """This result, or, when its text or its structured content (as JSON) is larger than ``limit``
        bytes, an error result that says so (a tool's output never reaches the model unbounded)."""
        size = _utf8_size(self.text, limit)
        if size <= limit and self.structured is not None and not self.text_is_json:
            try:
                size = _utf8_size(json.dumps(self.structured, ensure_ascii=False, default=str), limit)
            except (ValueError, RecursionError):  # unsendable: left to :meth:`sendable`
                size = 0
        if size <= limit:
            return self
        return ToolResult.error(f"{tool} failed: the tool's result is larger than {limit} bytes; it was not passed on")

    def to_mcp(self) -> mcp.types.CallToolResult:
        """Convert to the MCP ``CallToolResult``: one text content block, ``structured_content`` when
        there is a structured result, ``is_error``, and any warnings under ``_meta["warnings"]``.

        Warnings also go into a second text block, so that a model reading the result learns that
        its call did not fit the schema even though it ran (the ``warn`` policy)."""
        import mcp.types  # on use: what only serves MCP (importing the SDK's models costs ~0.5 s)

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


def unsendable(result: ToolResult) -> str | None:
    """Why ``result`` cannot be sent as JSON over MCP, or ``None`` when it can.

    Checked: every string and object key of the structured result, the text and the warnings is
    valid UTF-8 (no lone surrogate, which Python strings may hold and JSON decoders produce from
    ``"\\ud800"``), object keys are strings (or numbers, booleans, null: sent as their text), and
    the structured result nests at most :data:`MAX_RESULT_DEPTH` levels. Other values are left to
    the SDK's serialiser, which knows more types than JSON (dates, decimals). One pass over the structured result,
    without serialising it (a second one, with paths, only to describe a problem found); none when ``text`` is
    the result's JSON (``text_is_json``) and shows it sendable: a string of JSON holds every key and string of
    the value unescaped (``ensure_ascii=False``), and it has at least as many ``[``/``{`` as the value nests.
    """
    structured = result.structured
    if structured is not None and not (
        result.text_is_json and result.text.count("[") + result.text.count("{") <= MAX_RESULT_DEPTH
        and _surrogate(result.text) is None
    ) and _structure_problem(structured, False) is not None:
        return _structure_problem(structured, True)
    for where, text in (("its text", result.text), *((f"warning {i}", w) for i, w in enumerate(result.warnings))):
        bad = _surrogate(text)
        if bad is not None:
            return f"{where} holds a lone surrogate ({bad}), which UTF-8 cannot encode"
    return None


def _structure_problem(structured: object, paths: bool) -> str | None:
    stack: list[tuple[object, str, int]] = [(structured, "$", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            bad = _surrogate(value)
            if bad is not None:
                return f"the string at {_cut(path)} holds a lone surrogate ({bad}), which UTF-8 cannot encode"
        elif isinstance(value, dict | list | tuple):
            if depth >= MAX_RESULT_DEPTH:
                return f"its structured result nests deeper than {MAX_RESULT_DEPTH} levels (at {_cut(path)})"
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        if key is None or isinstance(key, bool | int | float):
                            continue  # sent as its text, as JSON encoders do
                        return f"the object at {_cut(path)} has a key that is not a string ({type(key).__name__})"
                    bad = _surrogate(key)
                    if bad is not None:
                        return (f"a key of the object at {_cut(path)} ({_escaped(key)[:80]!r}) holds a lone surrogate "
                                f"({bad}), which UTF-8 cannot encode")
                    stack.append((item, f"{path}.{_escaped(key)[:40]}" if paths else path, depth + 1))
            else:
                stack.extend((item, f"{path}[{i}]" if paths else path, depth + 1) for i, item in enumerate(value))
    return None


def _utf8_size(text: str, limit: int) -> int:
    """The UTF-8 size of ``text``, or its length when that shows it within ``limit`` (4 bytes a character at most)."""
    if len(text) * 4 <= limit:
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _cut(path: str) -> str:
    return path if len(path) <= 120 else path[:120] + "..."


def _surrogate(text: str) -> str | None:
    """The first lone surrogate of ``text`` as ``U+XXXX``, or ``None``."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"U+{ord(text[exc.start]):04X} at character {exc.start}"
    return None


def _escaped(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
