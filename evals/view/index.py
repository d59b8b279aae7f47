"""Reading a run directory fast: ``traces.jsonl`` indexed by byte offset, ``scores.jsonl``, the config.

A trace line is ``{header..., "events": [...]}`` with the events last (see
:meth:`client.runs.EpisodeRecorder.build_record`), and its events are most of it (a long episode is
tens of kilobytes). The index keeps, per task, the byte offset and length of its newest line and the
header alone (status, totals, error, final answer, duration), read without parsing the events; a
transcript (and the first user message, the task's query as the model saw it) is read on demand
from its offset. The index grows incrementally: a run in progress is
re-read only from where the last read stopped (:meth:`RunIndex.refresh`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from tool_specs.bounded_read import LineTooLong, bounded_text

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: a run in progress is not detected
    fcntl = None  # type: ignore[assignment]

__all__ = ["TraceEntry", "RunIndex", "is_run_dir", "find_run_dirs"]

CONFIG_FILE = "config.json"
TRACES_FILE = "traces.jsonl"
SCORES_FILE = "scores.jsonl"
TOOLS_FILE = "tools.jsonl"
LOCK_FILE = ".lock"
_EVENTS_MARK = b',"events":['  # how the recorder splices the events after the header


def is_run_dir(path: Path) -> bool:
    return (path / CONFIG_FILE).is_file() or (path / TRACES_FILE).is_file()


def find_run_dirs(root: Path) -> list[Path]:
    """``root`` itself when it is a run directory, else every run directory under it (sorted)."""
    if is_run_dir(root):
        return [root]
    found = {p.parent for name in (CONFIG_FILE, TRACES_FILE) for p in root.rglob(name)}
    return sorted(p for p in found if not any(parent in found for parent in p.parents))


@dataclass
class TraceEntry:
    """The newest trace line of one task: where it is and its header (no events)."""

    task_id: str
    offset: int
    length: int
    head: dict[str, Any]
    line_no: int
    query: str | None = None  # the first user message the model was sent ("" none; None: not read yet)
    events_at: int | None = None  # where the events start in the line (to read the query from)


def parse_head(line: bytes) -> tuple[dict[str, Any], str | None, int | None]:
    """The header fields of a trace line without parsing its events when the line allows it, and
    either its first user message (a line read in full) or where its events start (read later)."""
    cut = line.find(_EVENTS_MARK)
    if cut > 0:
        try:
            head = json.loads(line[:cut] + b"}")
        except ValueError:
            head = None
        if isinstance(head, dict) and "task_id" in head:
            return head, None, cut + len(_EVENTS_MARK)
    record = json.loads(line)
    if not isinstance(record, dict):
        raise ValueError("a trace line is not a JSON object")
    events = record.pop("events", None) or []
    requests = (e for e in events if isinstance(e, Mapping) and e.get("kind") == "model_request")
    return record, _user_message_of(requests) or "", None


_REQUEST = b'"kind": "model_request"'
_MESSAGES = b'"messages": ['
_WINDOW = 1 << 16


def _first_user_message(line: bytes, start: int) -> str | None:
    """The first user message of the first ``model_request`` event, from its ``messages`` list only."""
    at = line.find(_REQUEST, start, start + _WINDOW)
    if at < 0:
        return None
    at = line.find(_MESSAGES, at, at + _WINDOW)
    if at < 0:
        return None
    at += len(_MESSAGES) - 1
    decoder = json.JSONDecoder()
    for size in (4096, _WINDOW, len(line)):
        try:
            messages, _ = decoder.raw_decode(line[at:at + size].decode("utf-8", errors="replace"))
        except ValueError:
            continue
        return _user_message_of([{"messages": messages}])
    return None


def _user_message_of(requests: Any) -> str | None:
    for event in requests:
        for m in event.get("messages") or []:
            if isinstance(m, Mapping) and m.get("role") == "user":
                return message_text(m.get("content") if "content" in m else m.get("text"))
    return None


@dataclass
class RunIndex:
    """One run directory, read for viewing (never written)."""

    path: Path
    config: dict[str, Any] = field(default_factory=dict)
    traces: dict[str, TraceEntry] = field(default_factory=dict)  # newest line per task, first-seen order
    bad_lines: list[str] = field(default_factory=list)  # "traces.jsonl:LINE: why"
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)  # task id -> scores.jsonl record
    scores_mtime: float | None = None
    _read_to: int = 0
    _lines: int = 0
    _traces_key: tuple[int, int] | None = None
    _tools: Any = None  # the run's tools.jsonl (client.runs.ToolLists), read on the first transcript

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunIndex:
        p = Path(path)
        if not p.is_dir() or not is_run_dir(p):
            raise FileNotFoundError(f"{p}: not a run directory (no {CONFIG_FILE} or {TRACES_FILE} in it)")
        index = cls(p)
        index.refresh()
        return index

    @property
    def traces_path(self) -> Path:
        return self.path / TRACES_FILE

    def refresh(self) -> bool:
        """Read what changed since the last call (new trace lines, a rewritten scores file);
        returns whether anything did."""
        changed = False
        cfg = self.path / CONFIG_FILE
        if not self.config and cfg.is_file():
            try:
                config = json.loads(bounded_text(cfg))  # untrusted: past MAX_LINE_BYTES, LineTooLong (FILE:LINE)
            except LineTooLong:
                raise
            except ValueError as exc:  # not UTF-8 too
                raise ValueError(f"{cfg}: not valid JSON ({exc})") from exc
            if not isinstance(config, dict):
                raise ValueError(f"{cfg}: not a JSON object")
            self.config = config
            changed = True
        changed |= self._read_traces()
        changed |= self._read_scores()
        return changed

    def _read_traces(self) -> bool:
        try:
            st = self.traces_path.stat()
        except FileNotFoundError:
            return False
        if st.st_size < self._read_to or (self._traces_key and st.st_ino != self._traces_key[0]):
            self.traces.clear()  # rewritten (a torn tail repaired, a new file): read it again
            self._read_to = self._lines = 0
        self._traces_key = (st.st_ino, st.st_size)
        if st.st_size == self._read_to:
            return False
        from client.runs import read_lines  # bounded: a line past MAX_LINE_BYTES is LineTooLong, FILE:LINE

        with open(self.traces_path, "rb") as f:
            f.seek(self._read_to)
            offset = self._read_to
            for _, line in read_lines(f, self.traces_path, first=self._lines + 1):
                if not line.endswith(b"\n"):  # a line being written (or a torn tail): read it next time
                    break
                self._lines += 1
                length = len(line)
                stripped = line.strip()
                if stripped:
                    try:
                        head, query, events_at = parse_head(stripped)
                        tid = str(head["task_id"])
                    except (ValueError, KeyError) as exc:
                        self.bad_lines.append(f"{self.traces_path}:{self._lines}: {exc}")
                    else:
                        self.traces.pop(tid, None)  # the newest line of a task wins, listed at its place
                        self.traces[tid] = TraceEntry(tid, offset, length, head, self._lines, query, events_at)
                offset += length
            self._read_to = offset
        return True

    def _read_scores(self) -> bool:
        path = self.path / SCORES_FILE
        try:
            mtime = path.stat().st_mtime_ns
        except FileNotFoundError:
            changed = self.scores_mtime is not None
            self.scores, self.scores_mtime = {}, None
            return changed
        if mtime == self.scores_mtime:
            return False
        from client.runs import read_text_lines  # bounded, as every reader of a run's files

        scores: dict[str, dict[str, Any]] = {}
        for n, line in read_text_lines(path):
            record = _scores_record(line, f"{path}:{n}")
            scores[str(record["task_id"])] = record
        self.scores, self.scores_mtime = scores, mtime
        return True

    def queries(self) -> dict[str, str | None]:
        """Every task's first user message (read from the first request of each trace on first use)."""
        pending = sorted((e for e in self.traces.values() if e.query is None), key=lambda e: e.offset)
        if pending:
            with open(self.traces_path, "rb") as f:
                for e in pending:
                    _read_query(f, e)
        return {t: e.query or None for t, e in self.traces.items()}

    def query(self, task_id: str) -> str | None:
        """One task's first user message."""
        e = self.traces.get(task_id)
        if e is None:
            return None
        if e.query is None:
            with open(self.traces_path, "rb") as f:
                _read_query(f, e)
        return e.query or None

    def trace(self, task_id: str) -> dict[str, Any] | None:
        """The full newest trace record of a task, read from its offset."""
        entry = self.traces.get(task_id)
        if entry is None:
            return None
        with open(self.traces_path, "rb") as f:
            f.seek(entry.offset)
            data = f.read(entry.length)
        record = json.loads(data)
        if not isinstance(record, dict):
            return None
        if isinstance(record.get("events"), list):
            from client.runs import ToolLists, resolve_tools

            if self._tools is None:
                self._tools = ToolLists(self.path / TOOLS_FILE)
            resolve_tools(record["events"], self._tools)  # the tool lists the trace refers to
        return record

    def in_progress(self) -> bool:
        """Whether a process holds the run's write lock now (``evals run`` is writing to it)."""
        lock = self.path / LOCK_FILE
        if fcntl is None or not lock.is_file():
            return False
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing releases a shared lock we took
        return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise ValueError(f"{text} is out of range")
    return value


def _scores_record(line: str, where: str) -> dict[str, Any]:
    """One line of ``scores.jsonl``, checked for what the viewer computes with: a JSON object with a
    ``task_id``, its ``score`` an object whose ``samples`` map names to pairs of finite numbers
    (``NaN`` and ``Infinity`` refused). Raises ValueError naming FILE:LINE."""
    try:
        record = json.loads(line, parse_constant=_no_constant, parse_float=_finite_float)
    except ValueError as exc:
        raise ValueError(f"{where}: not a scores record ({exc})") from exc
    if not isinstance(record, dict) or "task_id" not in record:
        raise ValueError(f"{where}: not a scores record (not a JSON object with a task_id)")
    score = record.get("score")
    if score is None:
        return record
    if not isinstance(score, dict):
        raise ValueError(f"{where}: its score is not a JSON object")
    samples = score.get("samples") or {}
    if not isinstance(samples, dict):
        raise ValueError(f"{where}: its samples are not a JSON object")
    for key, sample in samples.items():
        if not (isinstance(sample, list) and len(sample) >= 2
                and all(isinstance(x, int | float) and not isinstance(x, bool) for x in sample[:2])):
            raise ValueError(f"{where}: sample {key!r} is not a pair of numbers")
    for name in ("groups", "details"):
        if not isinstance(score.get(name) or {}, dict):
            raise ValueError(f"{where}: its {name} are not a JSON object")
    return record


def _read_query(f: BinaryIO, e: TraceEntry) -> None:
    """Set ``e.query`` from the first request of its line (``""`` when it has none)."""
    if e.events_at is None:
        e.query = e.query or ""
        return
    f.seek(e.offset + e.events_at)
    rest = e.length - e.events_at
    chunk = f.read(min(rest, 1 << 17))
    query = _first_user_message(chunk, 0)
    if query is None and len(chunk) < rest:
        chunk += f.read(rest - len(chunk))
        query = _first_user_message(chunk, 0)
    e.query = query or ""


def message_text(content: Any) -> str:
    """A message's content as plain text (a list of parts: their text parts joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                parts.append(text if isinstance(text, str) else json.dumps(part, ensure_ascii=False))
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)
