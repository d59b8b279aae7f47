"""Append-only JSONL files after a crash: torn-line repair and scanning.

Every line is written with a single ``os.write`` on an ``O_APPEND`` descriptor (:func:`write_all`),
so a crash leaves at most a torn *last* line. Readers (:func:`scan_jsonl`) skip it and report it; a
writer calls :func:`repair_torn_tail` before appending, which keeps a copy of what it cuts.

``write_all``, ``repair_torn_tail`` and ``scan_jsonl`` are helpers of
:class:`~client.runs.RunDir`, not part of the public API.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tool_specs import bounded_read as lines
from tool_specs.bounded_read import LineTooLong, line_at, read_lines, read_text_lines

from .jsonutil import dumps_line, now_iso
from .nofollow import open_run_file
from .records import RecordView
from .toolstore import ToolLists, resolve_tools

__all__ = ["RunDiskFull", "TraceScan", "iter_jsonl", "utf8_lines"]

log = logging.getLogger(__name__)


class RunDiskFull(OSError):
    """A run directory's file could not be written: the disk (or the user's quota) is full.

    Nothing half-written is left behind (a partly written line is cut off again, a temporary file
    removed); once there is space, the same command resumes the run.
    """


_FULL = (errno.ENOSPC, errno.EDQUOT)


def iter_jsonl(path: Path, *, label: str = "") -> Iterator[tuple[int, Any]]:
    """``(line number, JSON value)`` of each non-blank line of ``path``; a line that is not JSON (or
    not UTF-8) is a :class:`ValueError` naming the file (after ``label``, e.g. ``"replay file "``) and
    the line, and so is one nested past :data:`~tool_specs.MAX_FILE_DEPTH` levels or longer than
    :data:`MAX_LINE_BYTES`."""
    from tool_specs import (  # here: importing client.runs loads no SDK (tool_specs does)
        DocumentError,
        load_json,
    )

    for n, line in read_text_lines(path, label=label):
        try:
            value = load_json(line, allow_nan=True, allow_duplicates=True)
        except DocumentError as exc:
            raise ValueError(f"{label}{path}: line {n} is not JSON: {exc.problem}") from None
        yield n, value


def disk_full(exc: OSError, path: Path | str) -> OSError:
    """``exc`` as a :class:`RunDiskFull` that names ``path`` and what to do, or ``exc`` itself for other errors."""
    if isinstance(exc, RunDiskFull) or exc.errno not in _FULL:
        return exc
    return RunDiskFull(
        exc.errno,
        f"no space left on the device (or quota) while writing {str(path)!r}: nothing half-written was kept; "
        "free some space, then run the same command again to resume the run (finished episodes are kept)",
    )


def utf8_lines(text: str) -> bytes:
    """``text`` (whole JSON lines) as UTF-8. A lone surrogate (``"\\ud800"`` that reached a string
    unchecked) cannot be encoded: it is written as U+FFFD instead of failing the write, so one odd
    character never costs an episode its trace (model replies are cleaned before this, with a note)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        from client.messages import replace_surrogates

        return str(replace_surrogates(text)[0]).encode("utf-8")


def append_line(fd: int, data: bytes, path: Path | str) -> None:
    """:func:`write_all` at the end of an ``O_APPEND`` file; on a full disk the partial line is cut off
    again and :class:`RunDiskFull` raised (the file is as it was before the call)."""
    try:
        size = os.fstat(fd).st_size
    except OSError as exc:
        raise disk_full(exc, path) from exc
    try:
        write_all(fd, data)
    except OSError as exc:
        with contextlib.suppress(OSError):  # if this fails too, the next writer repairs the torn tail
            os.ftruncate(fd, size)
        raise disk_full(exc, path) from exc


def write_all(fd: int, data: bytes) -> None:
    """One ``os.write`` (regular files write everything at once); loop only on a short write."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def repair_torn_tail(path: Path, torn_path: Path) -> bytes | None:
    """Make ``path`` end with a newline again after a crash; return the bytes that were cut, if any.

    A tail that is a whole JSON object (only the newline was lost) is kept by appending ``\\n``.
    Anything else is copied to ``torn_path`` (fsync-ed) *before* it is truncated away.
    """
    try:
        f = os.fdopen(open_run_file(path, os.O_RDWR), "r+b")
    except FileNotFoundError:
        return None
    with f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return None
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return None
        cut, pos = 0, size
        while pos > 0:  # find the last newline, scanning backwards in chunks
            start = max(0, pos - 65536)
            f.seek(start)
            i = f.read(pos - start).rfind(b"\n")
            if i >= 0:
                cut = start + i + 1
                break
            pos = start
            if size - pos > lines.MAX_LINE_BYTES:  # a tail longer than a line may be: refused, not read
                raise LineTooLong(path, line_at(f, pos), lines.MAX_LINE_BYTES)
        if size - cut > lines.MAX_LINE_BYTES:
            raise LineTooLong(path, line_at(f, cut), lines.MAX_LINE_BYTES)
        f.seek(cut)
        tail = f.read()
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            if isinstance(json.loads(tail), dict):
                f.seek(0, os.SEEK_END)
                f.write(b"\n")
                f.flush()
                os.fsync(f.fileno())
                log.warning("%s: the last line lacked its newline; added it (record kept)", path)
                return None
        entry = {
            "source": path.name,
            "offset": cut,
            "length": len(tail),
            "repaired_at": now_iso(),
            "text": tail.decode("utf-8", errors="backslashreplace"),
            "bytes_b64": base64.b64encode(tail).decode("ascii"),
        }
        fd = open_run_file(torn_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            write_all(fd, utf8_lines(dumps_line(entry) + "\n"))
            os.fsync(fd)
        finally:
            os.close(fd)
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())
    log.warning("%s: cut a torn last line of %d bytes (copy kept in %s)", path, len(tail), torn_path.name)
    return tail


EVENTS_MARK = b',"events":['
"""How :meth:`~client.runs.EpisodeRecorder.build_record` splices a record's events after its header."""
EVENTS_KEPT = 16
"""Records of one scan whose parsed events are kept (the ones read last): reading a run holds its
headers and at most this many records' events in memory, however many episodes it has."""


class _EventsCache:
    """The parsed events of the records read last (a bounded LRU shared by one scan's records)."""

    def __init__(self, size: int = EVENTS_KEPT) -> None:
        self.size = size
        self._kept: OrderedDict[int, list[Any]] = OrderedDict()

    def get(self, key: int) -> list[Any] | None:
        events = self._kept.get(key)
        if events is not None:
            self._kept.move_to_end(key)
        return events

    def put(self, key: int, events: list[Any]) -> None:
        self._kept[key] = events
        if len(self._kept) > self.size:
            self._kept.popitem(last=False)


class StoredRecord(RecordView):
    """A record of ``traces.jsonl``: its header in memory, its events read from the file when asked for
    (and kept while they are among the scan's :data:`EVENTS_KEPT` last read), their tool lists put back."""

    def __init__(self, head: dict[str, Any], where: tuple[Path, int, int, int, int], tools: Any,
                 cache: _EventsCache) -> None:
        super().__init__(head, (), tools)
        self._where = where  # (path, inode, line number, offset of the events' "[", their length)
        self._cache = cache

    def events_bytes(self) -> bytes:
        """The JSON text of the events, as the file holds it."""
        path, ino, lineno, offset, length = self._where
        try:
            with open(path, "rb") as f:
                if os.fstat(f.fileno()).st_ino != ino:
                    raise ValueError("the file was replaced since it was read")
                f.seek(offset)
                data = f.read(length)
        except OSError as exc:
            raise ValueError(f"{path}:{lineno}: the trace's events cannot be read again ({exc})") from exc
        if len(data) != length or not data.startswith(b"[") or not data.endswith(b"]"):
            raise ValueError(f"{path}:{lineno}: the trace line changed since it was read")
        return data

    def __getitem__(self, key: str) -> Any:
        if key != "events":
            return self._head[key]
        events = self._cache.get(self._where[3])
        if events is None:
            path, _, lineno, _, _ = self._where
            try:
                events = json.loads(self.events_bytes())
            except ValueError as exc:
                raise ValueError(f"{path}:{lineno}: the trace's events are not JSON ({exc})") from None
            if not isinstance(events, list):
                raise ValueError(f"{path}:{lineno}: the trace's events are not a list")
            resolve_tools(events, self._tools)
            self._cache.put(self._where[3], events)
        return events


def _split_record(raw: bytes) -> tuple[dict[str, Any], int, int] | None:
    """A recorder-written line's header (parsed) and where its events are (offset in the line, length);
    ``None`` for a line of another shape (read whole)."""
    cut = raw.find(EVENTS_MARK)
    end = len(raw.rstrip())
    if cut <= 0 or not raw.endswith(b"}", 0, end) or raw[end - 2:end - 1] != b"]":
        return None
    try:
        head = json.loads(raw[:cut] + b"}")
    except ValueError:
        return None
    if not isinstance(head, dict) or "events" in head:
        return None
    start = cut + len(EVENTS_MARK) - 1
    return head, start, end - 1 - start


@dataclass
class TraceScan:
    """Everything read from ``traces.jsonl``, in file order.

    Attributes:
        records: every well-formed record (several per task are possible; see :meth:`latest`). A
            record written by the recorder holds its header; its ``events`` are read from the file
            when asked for (:class:`StoredRecord`), so a scan of a large run stays small.
        torn_tail: bytes after the last newline (an interrupted write), or ``None``.
        bad_lines: ``(line_number, first_200_chars)`` of complete lines that are not JSON objects.
    """

    records: list[Mapping[str, Any]] = field(default_factory=list)
    torn_tail: bytes | None = None
    bad_lines: list[tuple[int, str]] = field(default_factory=list)

    def latest(self) -> dict[str, Mapping[str, Any]]:
        """``{task_id: newest record}``, in order of each task's first appearance."""
        out: dict[str, Mapping[str, Any]] = {}
        for record in self.records:
            out[record["task_id"]] = record
        return out

    @property
    def superseded(self) -> int:
        """How many records were replaced by a newer record for the same task."""
        return len(self.records) - len({r["task_id"] for r in self.records})


_TRACE_STATUSES = ("completed", "errored")
_warned: set[tuple[str, int, str]] = set()  # bad lines already reported by this process


def _not_a_record(record: Any, raw: bytes) -> str:
    """Why a complete line (``raw``, parsed: ``record``, ``None`` when it is not JSON) is no trace record."""
    if record is None and raw.strip() != b"null":
        return "not JSON"
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    if not isinstance(record.get("task_id"), str):
        return "no task_id"
    shown = json.dumps(record.get("status"), ensure_ascii=False, default=str)[:40]
    return f"status {shown} is neither completed nor errored"


def scan_jsonl(path: Path, tools: ToolLists | None = None) -> TraceScan:
    """Read a traces file: its records, a torn last line, and complete lines that are not trace
    records (not JSON, not an object, no ``task_id``, no ``completed``/``errored`` status: such a
    line is skipped, never taken as a task's newest record, and reported once per process with its
    line number; its task runs again on resume unless another line records it).

    The file is read line by line and only each record's header is parsed and kept; its events are
    read again from the file when a reader asks for them (:class:`StoredRecord`), with the tool
    lists they refer to from ``tools`` (the run's ``tools.jsonl``; see :mod:`client._runs.toolstore`)."""
    scan = TraceScan()
    reasons: dict[int, str] = {}
    cache = _EventsCache()
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return scan
    with f:
        ino = os.fstat(f.fileno()).st_ino
        offset = 0
        for lineno, raw in read_lines(f, path):
            at, offset = offset, offset + len(raw)
            if not raw.endswith(b"\n"):
                scan.torn_tail = raw
                break
            if not raw.strip():
                continue
            split = _split_record(raw)
            record: Any
            if split is not None and isinstance(split[0].get("task_id"), str) \
                    and split[0].get("status") in _TRACE_STATUSES:
                header, start, length = split
                scan.records.append(StoredRecord(header, (path, ino, lineno, at + start, length), tools, cache))
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                record = None
            if isinstance(record, dict) and isinstance(record.get("events"), list):
                resolve_tools(record["events"], tools)
            if (
                not isinstance(record, dict)
                or not isinstance(record.get("task_id"), str)
                or record.get("status") not in _TRACE_STATUSES
            ):
                scan.bad_lines.append((lineno, raw[:200].decode("utf-8", errors="replace")))
                reasons[lineno] = _not_a_record(record, raw)
                continue
            scan.records.append(record)
    if scan.torn_tail is not None:
        log.warning(
            "%s: skipped a torn last line of %d bytes (an interrupted write; it is repaired when the run resumes)",
            path,
            len(scan.torn_tail),
        )
    for lineno, head in scan.bad_lines:
        key = (str(path), lineno, head)
        if key not in _warned:
            _warned.add(key)
            log.warning(
                "%s:%d: skipped a line that is not a trace record (%s): %s; its task runs again on resume "
                "unless another line records it",
                path,
                lineno,
                reasons[lineno],
                "".join(c if c.isprintable() else "\ufffd" for c in head[:80].strip()),
            )
    return scan
