"""BFCL's memory backends (``memory_kv``, ``memory_rec_sum``) behind MCP tools, a fresh instance per session.

Each memory endpoint (a question, or a prerequisite conversation) serves the backend's function docs
(``multi_turn_func_doc/memory_<backend>.json``, mapped as :mod:`.tools` maps every BFCL doc) and
runs a call on the session's own instance of BFCL's backend class (``MemoryAPI_kv``: core and
archival key-value memory with BM25+ key search from ``rank_bm25``; ``MemoryAPI_rec_sum``: one text),
imported out of the pinned wheel (:mod:`.wheel_code`). The instance lives in the MCP session's
``ctx.state`` (its process: :mod:`.backend_host`, each call under a deadline): two episodes never
share one, whatever the transport. A result reads as BFCL's
``execute_multi_turn_func_call`` renders it (a dict as ``json.dumps``, anything else as ``str``; an
exception as ``Error during execution: ...``, here also flagged ``isError``).

Two harness tools, hidden from models (:data:`HIDDEN_TOOLS`), carry BFCL's memory snapshot across
sessions (BFCL writes it to ``<scenario>_final.json`` after each prerequisite conversation and loads
it before the next entry): ``bfcl_memory_load`` puts a snapshot (``None``: empty, as for a
scenario's first conversation) into a fresh instance and answers what BFCL puts in the system prompt
(``_dump_core_memory_to_context``); ``bfcl_memory_snapshot`` answers the instance's memory as BFCL's
``_flush_memory_to_local_file`` writes it. The snapshot files themselves are not written: the
instance is loaded as ``_load_scenario`` loads it (deep copies of the snapshot's keys).

``memory_vector`` runs here too, its operations done by :mod:`.memory_vector` (its module loads an
embedding model: from a local folder, named by the operation). This is the smallest per-session backend holder that
memory needs, written here because the multi-turn module (branch b-mt) was not there to reuse yet.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tool_specs.results import ToolResult

from .backend_calls import ERROR_PREFIX, SNAPSHOT_KEYS, backend_class, memory_operation
from .backend_host import MAKE_DEADLINE_S, Holder, HostError
from .backends import session_holder, stopped_text
from .data import read_func_docs
from .files import served_name
from .memory_vector import MODEL_ENV
from .tools import to_tool

if TYPE_CHECKING:
    from tool_specs import CallContext, ToolLike, ToolSpec

__all__ = ["HIDDEN_TOOLS", "LOAD_TOOL", "SNAPSHOT_KEYS", "SNAPSHOT_TOOL", "backend_class",
           "memory_operation", "memory_tools", "read_docs"]

LOAD_TOOL = "bfcl_memory_load"
SNAPSHOT_TOOL = "bfcl_memory_snapshot"
HIDDEN_TOOLS = frozenset({LOAD_TOOL, SNAPSHOT_TOOL})


def _deadline(op: Mapping[str, Any]) -> float | None:
    """The vector backend's first operation in a holder may load its embedding model (.memory_vector)."""
    return MAKE_DEADLINE_S if op.get("backend") == "vector" else None


async def _request(holder: Holder, op: dict[str, Any], *, log: bool = True) -> Any:
    try:
        answer = await holder.arequest(op, log=log, deadline=_deadline(op))
    except HostError as exc:
        raise ValueError(stopped_text(exc, holder.take_lost())) from None
    if answer.get("error"):
        raise ValueError(f"the memory backend failed: {answer['error']}")
    return answer


def memory_tools(backend: str, docs: Sequence[Mapping[str, Any]], task_id: str = "") -> list[ToolSpec]:
    """The backend's functions as tools, and the two hidden harness tools, for one endpoint. The
    instance lives in the session's holder process (:mod:`.backend_host`: each call under its deadline)."""
    from tool_specs.spec import ToolSpec  # on use: scoring imports no pydantic

    key = f"bfcl_memory:{backend}"
    # the vector backend's model folder, for a holder that loads BFCL's module itself (.memory_vector)
    extra = {"model": os.environ.get(MODEL_ENV, "")} if backend == "vector" else {}
    names = {served_name(str(d.get("name", ""))): str(d.get("name", "")) for d in docs}

    async def call(spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        holder = session_holder(ctx, key, memory=True)
        op = {"op": "memory_call", "key": key, "backend": backend, "name": names.get(spec.name, ""),
              "served": spec.name, "arguments": arguments, **extra}
        try:
            answer = await holder.arequest(op, log=True, deadline=_deadline(op))
        except HostError as exc:
            return ToolResult.error(stopped_text(exc, holder.take_lost()))
        if answer.get("error"):
            return ToolResult.error(f"{ERROR_PREFIX}{answer['error']}")
        text = str(answer.get("text", ""))
        return ToolResult.error(text) if answer.get("is_error") else ToolResult(text=text)

    async def load(spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        snapshot = arguments.get("snapshot")
        if snapshot is not None and not (isinstance(snapshot, dict) and set(SNAPSHOT_KEYS[backend]) <= set(snapshot)):
            raise ValueError(f"a {backend} snapshot needs the keys {', '.join(SNAPSHOT_KEYS[backend])}")
        holder = session_holder(ctx, key, memory=True)
        holder.log = []  # a load replaces the state: nothing before it needs replaying
        answer = await _request(holder, {"op": "memory_load", "key": key, "backend": backend, "snapshot": snapshot,
                                               **extra})
        return {"context": answer["context"]}

    async def snapshot(spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        answer = await _request(session_holder(ctx, key, memory=True), {"op": "memory_snapshot", "key": key, "backend": backend, **extra},
                                log=False)
        return {"snapshot": answer["snapshot"]}

    # as BFCL's loader shows them (its Python hint added to each description), answered by the backend
    out = [to_tool(d, task_id, f"memory_{backend}").model_copy(update={"executor": call}) for d in docs]
    out.append(ToolSpec(name=LOAD_TOOL, description="Harness tool (not shown to models): a fresh memory backend "
                        "holding the snapshot (null: empty); answers the memory text BFCL puts in the system prompt.",
                        input_schema={"type": "object", "properties": {"snapshot": {"type": ["object", "null"]}}},
                        executor=load))
    out.append(ToolSpec(name=SNAPSHOT_TOOL, description="Harness tool (not shown to models): the session's memory "
                        "as BFCL's snapshot file holds it.", input_schema={"type": "object", "properties": {}},
                        executor=snapshot))
    return out


def read_docs(backend: str, wheel: Path | None = None) -> list[dict[str, Any]]:
    """BFCL's function docs of a memory backend (``multi_turn_func_doc/memory_<backend>.json``)."""
    return read_func_docs(f"memory_{backend}.json", wheel)
