"""``tools.jsonl``: each tool list a run offered a model, kept once per run instead of once per trace.

A ``model_request`` event carries the ``tools_hash`` of the tool list it was sent. In a trace of
schema 1 the first request of an episode (and each request whose list changed) also held the list
itself; a benchmark whose tasks share their tools (most do: one benchmark's entries reuse a few hundred
functions) repeated the same definitions in every trace. A run directory now keeps them in
``tools.jsonl``, two kinds of line:

* ``{"tool": "<id>", "spec": {...}}``: one tool's definition, once per distinct definition (``id``:
  the first 16 hex digits of the sha256 of its canonical JSON);
* ``{"tools_hash": "<hash>", "tools": ["<id>", ...]}``: a tool list by its ``tools_hash``, once per
  distinct list, written after the tools it names.

A trace's ``model_request`` whose list changed (``tools_hash`` other than the previous request's)
and that holds no ``tools`` refers to this file; :func:`resolve_tools` puts the list back into the
event. The file is append-only like ``traces.jsonl``: each list's new lines go in one ``os.write``,
fsync-ed before any trace line that refers to them is (so a trace never outlives its tools), and a
torn last line is cut off (and kept in ``tools.torn.jsonl``) before a run appends again. A line that
is torn or not one of the two kinds is skipped by readers; a trace whose list is missing keeps
``"tools": null`` with ``"tools_missing": true`` (scoring reads no tool list; the viewer shows the rest).
A file deleted or replaced while a run writes it is written again by the run (``RunDir._check_tools``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from tool_specs.bounded_read import read_lines

from .jsonutil import canonical_json, dumps_line

__all__ = ["TOOLS_FILE", "TOOLS_TORN_FILE", "ToolLists", "ToolStore", "resolve_tools", "tool_id"]

TOOLS_FILE = "tools.jsonl"
TOOLS_TORN_FILE = "tools.torn.jsonl"


def tool_id(spec: Any) -> str:
    """A tool definition's id in ``tools.jsonl``: 16 hex digits of the sha256 of its canonical JSON."""
    return hashlib.sha256(canonical_json(spec).encode("utf-8", errors="surrogatepass")).hexdigest()[:16]


class ToolLists:
    """The tool lists of ``tools.jsonl`` by ``tools_hash`` (read when first asked, again when the file grew)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._specs: dict[str, Any] = {}  # tool id -> its definition (a _Raw line until asked for)
        self._lists: dict[str, Any] = {}  # tools_hash -> tool ids (a _Raw line until asked for)
        self._built: dict[str, list[Any]] = {}
        self._read_to = 0
        self._lines = 0  # lines read so far (so that an error names its line)
        self._ino: int | None = None

    def get(self, tools_hash: str) -> list[Any] | None:
        """The tool list of ``tools_hash`` (shared between callers: do not change it), or ``None``."""
        built = self._built.get(tools_hash)
        if built is None:
            if tools_hash not in self._lists:
                self._read_more()
            ids = self._list(tools_hash)
            if ids is None or any(i not in self._specs for i in ids):
                return None
            specs = [self._spec(i) for i in ids]
            if any(s is None for s in specs):  # a damaged tool line
                return None
            built = self._built[tools_hash] = specs
        return built

    def _read_more(self) -> None:
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            return
        with f:
            st = os.fstat(f.fileno())
            if st.st_ino != self._ino or st.st_size < self._read_to:  # a new file: read it all
                self._ino, self._read_to, self._lines = st.st_ino, 0, 0
                self._specs.clear()
                self._lists.clear()
            f.seek(self._read_to)
            for _, raw in read_lines(f, self.path, first=self._lines + 1):  # a line past the bound: LineTooLong
                if not raw.endswith(b"\n"):  # torn (or being written): read it next time
                    break
                self._read_to += len(raw)
                self._lines += 1
                self._take(raw)

    def _take(self, raw: bytes) -> None:
        if raw.startswith(_TOOL_PREFIX) and raw[_ID_END:_SPEC_AT] == _SPEC_KEY:  # as the writer spells it:
            self._specs[raw[len(_TOOL_PREFIX):_ID_END].decode("ascii", "replace")] = _Raw(raw)  # parsed when used
        elif raw.startswith(_LIST_PREFIX) and raw[_HASH_END:_LIST_AT] == _LIST_KEY:
            self._lists[raw[len(_LIST_PREFIX):_HASH_END].decode("ascii", "replace")] = _Raw(raw)
        elif (parsed := _parse(raw)) is not None:
            kind, key, value = parsed
            (self._specs if kind == "tool" else self._lists)[key] = value

    def _list(self, tools_hash: str) -> list[str] | None:
        return self._resolved(self._lists, "list", tools_hash)  # type: ignore[no-any-return]

    def _spec(self, tid: str) -> Any:
        return self._resolved(self._specs, "tool", tid)

    @staticmethod
    def _resolved(table: dict[str, Any], kind: str, key: str) -> Any:
        """``table[key]``, parsed now if it is a :class:`_Raw` line (``None`` when that line is damaged)."""
        value = table.get(key)
        if isinstance(value, _Raw):
            parsed = _parse(value.raw)
            value = table[key] = parsed[2] if parsed is not None and parsed[:2] == (kind, key) else None
        return value


def _parse(raw: bytes) -> tuple[str, str, Any] | None:
    """``("tool", id, spec)`` or ``("list", tools_hash, ids)`` of a line of ``tools.jsonl``; ``None``
    for a line that is neither (not JSON, torn, another shape: skipped)."""
    try:
        line = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(line, dict):
        return None
    if isinstance(line.get("tool"), str) and "spec" in line:
        return "tool", line["tool"], line["spec"]
    ids = line.get("tools")
    if isinstance(line.get("tools_hash"), str) and isinstance(ids, list) and all(isinstance(i, str) for i in ids):
        return "list", line["tools_hash"], ids
    return None


class _Raw:
    """A tool line not parsed yet (most of a run's tools are never asked for by one reader)."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw


_TOOL_PREFIX = b'{"tool": "'
_ID_END = len(_TOOL_PREFIX) + 16
_SPEC_KEY = b'", "spec": '
_SPEC_AT = _ID_END + len(_SPEC_KEY)
_LIST_PREFIX = b'{"tools_hash": "'
_HASH_END = len(_LIST_PREFIX) + 16
_LIST_KEY = b'", "tools": ['
_LIST_AT = _HASH_END + len(_LIST_KEY)


class ToolStore:
    """The writer's side of ``tools.jsonl``: which lists and tools the file holds, and the lines a new list adds."""

    def __init__(self, lists: ToolLists) -> None:
        self.lists = lists
        self._hashes: set[str] = set()
        self._tools: set[str] = set()
        self.dirty = False  # lines written since the last fsync

    def load(self) -> None:
        """Take in what the file holds already (a resumed run adds only new lists)."""
        self.lists._read_more()
        self._hashes.update(self.lists._lists)
        self._tools.update(self.lists._specs)

    def has(self, tools_hash: str) -> bool:
        """Whether the file holds this list (or its lines are being written)."""
        return tools_hash in self._hashes

    def lines_for(self, tools_hash: str, specs: Sequence[Any]) -> str | None:
        """The lines that add this list (its new tools first), or ``None`` when the file has it; the
        list counts as stored from now on (the caller writes the lines before anything refers to them)."""
        if tools_hash in self._hashes:
            return None
        ids, out = [], []
        for spec in specs:
            tid = tool_id(spec)
            ids.append(tid)
            if tid not in self._tools:
                self._tools.add(tid)
                out.append(dumps_line({"tool": tid, "spec": spec}))
        out.append(dumps_line({"tools_hash": tools_hash, "tools": ids}))
        self._hashes.add(tools_hash)
        self.dirty = True
        return "\n".join(out) + "\n"

    def forget(self, tools_hash: str, specs: Sequence[Any]) -> None:
        """Undo :meth:`lines_for` after its lines could not be written."""
        self._hashes.discard(tools_hash)
        self._tools.difference_update(tool_id(s) for s in specs)


def resolve_tools(events: Iterable[Any], lists: ToolLists | Mapping[str, list[Any]] | None) -> None:
    """Put each referred tool list back into its ``model_request`` event (see the module docstring)."""
    previous: Any = None
    for event in events:
        if not isinstance(event, MutableMapping) or event.get("kind") != "model_request" or "tools_hash" not in event:
            continue
        tools_hash = event["tools_hash"]
        if tools_hash != previous and "tools" not in event:
            found = None if lists is None else lists.get(tools_hash)
            event["tools"] = found
            if found is None:
                event["tools_missing"] = True
        previous = tools_hash
