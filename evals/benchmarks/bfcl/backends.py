"""BFCL's stateful backend classes (a file system, messaging, trading, ...) behind MCP tools.

Shared by the multi-turn and memory categories. The calls themselves (instances, one call's
result as BFCL shows it, the states the checker compares, the bounds) are :mod:`.backend_calls`,
re-exported here; this module serves them:

* :func:`backend_tool` — a function doc as an MCP tool whose executor runs the method on the MCP
  session's own instances (made on the session's first call from :func:`make_op`);
* :func:`session_holder` / :func:`host_call` — the session's holder and one call through it.

Where they run: in a process of their own per MCP session (:mod:`.backend_host`), each call under
a deadline, after the bounds of :func:`argument_bound_error` (numbers whose cost BFCL does not
bound: ``MathAPI``'s precisions, ``power``'s result size), checked here before BFCL's code sees
them. The backends are pure in-memory Python objects and their code is the pinned, checksummed
wheel's (:mod:`.wheel_code`), trusted as a dependency is: the model reaches it only as method
calls with JSON arguments, never as code; but what a call computes is the model's to choose, so
no call runs in the server's event loop.

No state leaks: each MCP session holds its own instances' holder in its ``CallContext.state`` (the
server gives every session a dict of its own), keyed by task id, so two episodes of one run,
concurrent or not, and two tasks served by one ``evals serve`` never share an instance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tool_specs.results import ToolResult

from . import backend_host
from .backend_calls import (
    ERROR_PREFIX,
    MAX_PRECISION,
    MAX_RESULT_BITS,
    BackendError,
    Instances,
    argument_bound_error,
    call_text,
    execute,
    execute_text,
    fresh_instances,
    host_operation,
    make_op,
    method_table,
    precheck_text,
    preload,
    public_state,
    state_differences,
    stateless_classes,
)
from .backend_host import Holder, HostError
from .files import NAME
from .tools import to_schema

if TYPE_CHECKING:
    from tool_specs import CallContext, ToolLike, ToolSpec

__all__ = ["ERROR_PREFIX", "MAX_PRECISION", "MAX_RESULT_BITS", "BackendError", "Instances", "argument_bound_error",
           "backend_tool", "call_text", "execute", "execute_text", "fresh_instances", "host_call", "host_operation",
           "make_op", "method_table", "precheck_text", "preload", "public_state", "session_holder",
           "state_differences", "stateless_classes", "stopped_text"]

_STATE_KEY = "bfcl_backends"


def session_holder(ctx: CallContext, key: str, *, memory: bool = False) -> Holder:
    """The MCP session's holder for ``key`` (a task id; the memory tools use a name of their own, and
    ``memory=True``: their process forked from a zygote with BFCL's memory backends imported)."""
    held: dict[str, Holder] = ctx.state.setdefault(_STATE_KEY, {})
    holder = held.get(key)
    if holder is None:
        holder = held[key] = Holder(memory=memory)
    return holder


def stopped_text(exc: HostError, lost: str = "") -> str:
    """The error result of a call the holder could not do."""
    return (f"{ERROR_PREFIX}the call did not complete: {exc}; it changed nothing: this session's backends are "
            f"as they were before it{f' ({lost})' if lost else ''}")


async def host_call(holder: Holder, make: Mapping[str, Any], name: str, arguments: Mapping[str, Any]) -> str:
    """One (name, JSON arguments) call on the holder's instances (made by ``make`` on first use), as
    BFCL runs a decoded FC call (:func:`call_text`): BFCL's result string, or an error result (a
    call past a bound runs nowhere; one past the deadline is stopped)."""
    refused = argument_bound_error(name, (), arguments)
    if refused is not None:
        return refused
    text = call_text(name, arguments)
    try:
        for _ in range(2):
            if not holder.log:
                answer = await holder.arequest(dict(make, key="i"), deadline=backend_host.MAKE_DEADLINE_S, log=True)
                if answer.get("error"):
                    return f"{ERROR_PREFIX}the backends could not be loaded: {answer['error']}"
            answer = await holder.arequest({"op": "call", "key": "i", "text": text}, log=True)
            if not (answer.get("error") and not holder.log):
                break  # else the state was lost while rebuilding it: made anew, the call once more
    except HostError as exc:
        return stopped_text(exc, holder.take_lost())
    lost = holder.take_lost()
    if answer.get("error"):
        return f"{ERROR_PREFIX}{answer['error']}"
    result = str(answer.get("text", ""))
    return result if not lost else f"{result}\n(note: this session's backends were reset: {lost})"


def backend_tool(doc: Mapping[str, Any], task_id: str, make: Mapping[str, Any], *,
                 annotations: Mapping[str, Any] | None = None) -> ToolSpec:
    """A function doc (named as the backend's method) as an MCP tool: schema mapped as
    :func:`.tools.to_schema` maps it; each call runs the method on the session's own instances
    (``make``: :func:`make_op`, done on the session's first call) in the session's holder process
    and answers BFCL's result string. A result that is an exception's text is flagged ``isError``
    (the text is what BFCL shows)."""
    name = str(doc.get("name", ""))

    async def run(spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        text = await host_call(session_holder(ctx, task_id), make, name, arguments)
        return ToolResult(text=text, is_error=text.startswith(ERROR_PREFIX))

    return _template(doc, run).model_copy(update={
        "executor": run,
        "annotations": {"benchmark": NAME, "task_id": task_id, "bfcl_name": name, **(annotations or {})}})


def _template(doc: Mapping[str, Any], run: Any) -> ToolSpec:
    """The doc's tool (its executor and annotations to be replaced), its schema normalised once per doc:
    every entry of a class offers the same docs (the same objects, :func:`.multi_turn.read_multi_turn`:
    found by identity, without writing the doc as JSON; else by its JSON)."""
    seen = _by_identity.get(id(doc))
    if seen is not None and seen[0] is doc:
        return seen[1]
    try:
        key: str | None = json.dumps(doc, sort_keys=True)
    except (TypeError, ValueError):
        key = None
    template = _templates.get(key) if key is not None else None
    if template is None:
        from tool_specs.spec import ToolSpec  # on use: scoring imports no pydantic

        template = ToolSpec(name=str(doc.get("name", "")), description=str(doc.get("description", "")),
                            input_schema=to_schema(doc.get("parameters") or {}), executor=run, validation="warn")
        if key is not None and len(_templates) < _MAX_TEMPLATES:
            _templates[key] = template
    if len(_by_identity) < _MAX_TEMPLATES:
        _by_identity[id(doc)] = (doc, template)  # the doc kept: its id names no other doc meanwhile
    return template


_MAX_TEMPLATES = 4096  # BFCL's backends have a few hundred function docs
_templates: dict[str, ToolSpec] = {}  # by the doc's JSON
_by_identity: dict[int, tuple[Mapping[str, Any], ToolSpec]] = {}
