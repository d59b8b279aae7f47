"""The run directory: its files, the one-writer lock, durable trace appends, and reading it back.

A *run* is a directory::

    <run>/
      config.json          the run's config, written once (see :mod:`client._runs.config`)
      traces.jsonl         one JSON line per finished episode: the source of truth for resume/scoring
      tools.jsonl          each tool list (and tool) the episodes were offered, once (see :mod:`client._runs.toolstore`)
      events.jsonl         in-flight event log, one line per event as it happens (debugging aid)
      traces.torn.jsonl    torn tails cut from traces.jsonl after a crash (nothing is silently lost)
      tools.torn.jsonl     the same for tools.jsonl
      events.torn.jsonl    the same for events.jsonl
      config.history.jsonl configs that re-opened the run with ``force=True`` despite a mismatch
      .lock                held (``flock``) by the one process writing to the run
      traces.kept-*.jsonl  what a run held when its traces.jsonl was replaced under it (see below)

Durability: every trace line is written with a single ``os.write`` on an ``O_APPEND`` descriptor and
then ``fsync``-ed, so a ``SIGKILL`` (or power loss after the fsync) leaves at most a torn *last*
line. Readers skip a torn last line and report it; the next writer repairs the file before appending
(see :meth:`RunDir.open_for_writing` and :mod:`client._runs.jsonl`). Event lines are written the
same way but not fsync-ed one by one (they survive a process crash, which is what they are for).
A new tool list goes to ``tools.jsonl`` as the episode first offers it (before its trace line can be
written), and every fsync of the traces fsyncs ``tools.jsonl`` first.

The runner writes traces as :meth:`RunDir.append_trace_async` does: the line is written at once (from
then on a ``SIGKILL`` cannot lose it: it is in the kernel's page cache), then the episode waits for
an ``fsync`` that runs in a worker thread and is shared by every line written meanwhile (group
commit). So the event loop never blocks on the disk, a ``SIGKILL`` still loses at most the episodes
in flight, and an episode is reported finished once its line is fsync-ed (or, if the run is
interrupted during that wait, once :meth:`RunDir.close` has fsync-ed it).

Integrity: before each trace line is written (and when a run ends, :meth:`RunDir.verify_traces`) the
file at ``traces.jsonl`` is checked to be the one the writer opened (its ``st_dev``/``st_ino``). When it
was deleted or replaced meanwhile, every line the open descriptor holds (the episodes finished so
far, of this call and earlier ones) is written to a fresh file: a new ``traces.jsonl`` where the
path is free, else ``traces.kept-<time>.jsonl`` beside the file that took its place (which is left
as it is); then :class:`RunTracesLost` says what happened and where the episodes are. Nothing
finished is lost, and the run stops instead of writing on into a file nobody can read. A
``tools.jsonl`` deleted or replaced meanwhile (checked before each trace line and each new list) is
written again from its open descriptor and the run goes on (:meth:`RunDir._check_tools`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import CONFIG_FILE, read_config, settle_config
from .jsonl import (
    RunDiskFull,
    TraceScan,
    append_line,
    disk_full,
    repair_torn_tail,
    scan_jsonl,
    utf8_lines,
    write_all,
)
from .jsonutil import dumps_line, now_iso
from .nofollow import check_run_dir, open_run_file
from .recorder import EpisodeRecorder
from .resume import RunSummary, finished_task_ids, summarize_traces
from .toolstore import TOOLS_FILE, TOOLS_TORN_FILE, ToolLists, ToolStore

try:  # POSIX only; without it a run dir is not protected against two writers
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]  # no flock on this platform: the run is not locked

__all__ = ["RunDir", "RunDirClosed", "RunDiskFull", "RunLocked", "RunTracesLost", "TracesRead", "read_traces"]

TRACES_FILE = "traces.jsonl"
EVENTS_FILE = "events.jsonl"
TRACES_TORN_FILE = "traces.torn.jsonl"
EVENTS_TORN_FILE = "events.torn.jsonl"
LOCK_FILE = ".lock"

log = logging.getLogger(__name__)


def _stamp() -> str:
    """A file-name-safe UTC time stamp (``20260101T120000.123456Z``)."""
    return now_iso().replace(":", "").replace("-", "").replace("+0000", "Z")


class RunLocked(Exception):
    """Another process (or another :class:`RunDir` object) is already writing to this run directory.

    The message names the process that holds the lock (its pid, since when, and its command line
    while it runs).
    """


def _lock_holder(note: str) -> str:
    """Who holds the lock, from the note its holder wrote (``pid N since T``) and ``/proc``."""
    note = note.strip()
    if not note:
        return "a process that left no note"
    parts = note.split()
    if len(parts) >= 2 and parts[0] == "pid" and parts[1].isdigit():
        if int(parts[1]) == os.getpid():
            return f"this process ({note}), through another RunDir object"
        try:
            with open(f"/proc/{parts[1]}/cmdline", "rb") as f:
                argv = [a.decode("utf-8", errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            return note
        if argv:
            shown = " ".join(argv)
            return f"{note}: {shown[:200]}{'...' if len(shown) > 200 else ''}"
    return note


class RunTracesLost(RuntimeError):
    """``traces.jsonl`` was deleted or replaced while the run was writing it.

    The message says which, how many finished episodes the run held and which file now holds them
    (:attr:`kept_in`), and how to go on. See the module docstring.
    """

    def __init__(self, traces_path: Path, what: str, kept_in: Path, records: int, where: str) -> None:
        self.traces_path, self.what, self.kept_in, self.records, self.where = traces_path, what, kept_in, records, where
        super().__init__(self.describe(records))

    def describe(self, records: int) -> str:
        return (
            f"{str(self.traces_path)!r} was {self.what} while the run was writing it; the run stopped. "
            f"Nothing finished is lost: the {records} finished episode(s) the run held are kept, {self.where}"
        )

    def describe_now(self) -> str:
        """The message with the episodes :attr:`kept_in` holds now: once the run has stopped, also those
        that finished after the loss was noticed (they are written to the same file)."""
        try:
            records = Path(self.kept_in).read_bytes().count(b"\n")
        except OSError:
            records = self.records
        return self.describe(max(records, self.records))


class RunDirClosed(RuntimeError):
    """Trace lines could not be fsync-ed: the run directory was closed and its own fsync failed."""


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    """``(device, inode, size, mtime)`` of a file's status: a file read again only when it changed."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _file_key(path: Path) -> tuple[int, ...] | None:
    """:func:`_stat_key` of ``path``; ``None``: none."""
    try:
        return _stat_key(os.stat(path))
    except OSError:
        return None


@dataclass(frozen=True)
class TracesRead:
    """A run's ``traces.jsonl`` read before the run is opened (:func:`read_traces`; ``--workers auto``
    counts the tasks left from it). A :class:`RunDir` of the same folder takes it (``traces_read=``):
    its :meth:`RunDir.scan_traces` returns this scan while the file is unchanged, so a resumed run
    reads the file once."""

    path: Path
    key: tuple[int, ...] | None  # the file as it was when read (see _file_key); None: not read
    scan: TraceScan
    tools: ToolLists  # the run's tool lists, which the scan's records read their tools from

    def pending(self, task_ids: Sequence[str], *, retry_errored: bool = False) -> list[str]:
        """The tasks of ``task_ids`` (in their order) that the run has not finished yet (see
        :func:`~client.runs.finished_task_ids`): all of them where there is no run."""
        latest = self.scan.latest()
        if not latest:
            return list(task_ids)
        finished = finished_task_ids(latest, retry_errored=retry_errored)
        return [t for t in task_ids if t not in finished]


def read_traces(path: str | os.PathLike[str]) -> TracesRead:
    """The traces of a run in ``path`` (none where there is no run), read-only: no lock is taken,
    nothing is created or repaired (a torn last line is skipped, as every reader does), so it may be
    called before the run is opened. A link in the run directory is refused here as the run refuses
    it (:class:`~client.runs.RunFileIsLink`); a ``traces.jsonl`` that is no regular file (a FIFO
    would block the read) is not read."""
    run = Path(path)
    traces = run / TRACES_FILE
    tools = ToolLists(run / TOOLS_FILE)
    try:
        check_run_dir(run)  # RunFileIsLink is a ValueError: it goes through
        st = os.stat(traces)  # before the read: a file that changes during it is read again by the run
        if not stat.S_ISREG(st.st_mode):
            return TracesRead(run, None, TraceScan(), tools)
        scan = scan_jsonl(traces, tools=tools)
    except OSError:  # none, not a directory, not readable: opening the run says what is wrong
        return TracesRead(run, None, TraceScan(), tools)
    return TracesRead(run, _stat_key(st), scan, tools)


def _plain_record(record: Any) -> bool:
    """Whether ``record`` is a trace record as :func:`~client._runs.jsonl.scan_jsonl` keeps it, with no events
    (whose tool lists a scan resolves)."""
    return (isinstance(record, dict) and isinstance(record.get("task_id"), str)
            and record.get("status") in ("completed", "errored") and not record.get("events"))


class RunDir:
    """A run directory: config, traces, in-flight events.

    Args:
        path: the directory (created with its parents when missing).
        config: the run's config (benchmark, model spec, strategy, options, concurrency, …). On first
            use it is written to ``config.json`` together with ``created_at``, ``package_version``,
            ``hash_keys`` and ``config_hash``. Re-opening a run with a config that differs in one of
            the hash keys raises :class:`~client.runs.RunConfigMismatch` naming the keys. ``None``
            opens the run as it is (reading, re-scoring).
        hash_keys: the config keys that change results (default :data:`~client.runs.DEFAULT_HASH_KEYS`);
            keys like concurrency or limit should not be among them. When re-opening, the given keys
            (or the stored ones) are compared.
        force: re-open despite a mismatch; ``config.json`` keeps the original and the new config is
            appended to ``config.history.jsonl``; new traces carry the new ``config_hash``.
        event_log: write ``events.jsonl`` while episodes run.
        max_value_bytes: cap on what a trace keeps of one string value (``None``: no cap); see
            :mod:`client._runs.sharing`. Record it in ``config`` when it can change results.
        traces_read: the run's traces as :func:`read_traces` read them before the run was opened
            (``--workers auto``): scanned again only if the file changed since.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: Mapping[str, Any] | None = None,
        *,
        hash_keys: Sequence[str] | None = None,
        force: bool = False,
        event_log: bool = True,
        max_value_bytes: int | None = None,
        traces_read: TracesRead | None = None,
    ) -> None:
        self.path = Path(path)
        self.event_log = event_log
        self.max_value_bytes = max_value_bytes or None
        self.path.mkdir(parents=True, exist_ok=True)
        check_run_dir(self.path)  # no file of the run is written through a symbolic link
        self._lock_fd: int | None = None
        self._traces_fd: int | None = None
        self._events_fd: int | None = None
        self._tools_fd: int | None = None
        self._tools_id: tuple[int, int] | None = None  # (st_dev, st_ino) of the tools.jsonl we opened
        self.tool_lists = ToolLists(self.path / TOOLS_FILE)  # the run's tool lists, read as needed
        self._tool_store: ToolStore | None = None  # the writer's bookkeeping of tools.jsonl
        # group commit of trace fsyncs (append_trace_async): lines written / known durable, the
        # fsync in flight, and a lock that keeps close() from closing the descriptor under it
        self._traces_written = 0
        self._traces_synced = 0
        self._sync_future: asyncio.Future[None] | None = None
        self._fd_lock = threading.Lock()
        self._traces_id: tuple[int, int] | None = None  # (st_dev, st_ino) of the traces.jsonl we opened
        self._scan_cache: tuple[tuple[int, ...], TraceScan] | None = None  # scan_traces of an unchanged file
        if traces_read is not None and traces_read.key is not None and traces_read.path == self.path:
            self.tool_lists = traces_read.tools  # the lists the scan's records read from
            self._scan_cache = (traces_read.key, traces_read.scan)
        self.config: dict[str, Any] | None = read_config(self.path)
        self.config_hash: str | None = (self.config or {}).get("config_hash")
        if config is not None:
            self.config, self.config_hash = settle_config(self.path, self.config, config, hash_keys, force)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunDir:
        """Open an existing run (for reading, re-scoring or resuming); raises if it is not one."""
        p = Path(path)
        if not (p / CONFIG_FILE).is_file() and not (p / TRACES_FILE).is_file():
            raise FileNotFoundError(
                f"{str(p)!r} is not a run directory (no {CONFIG_FILE} or {TRACES_FILE} in it)"
            )
        return cls(p)

    # ---- paths ---------------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        """``config.json``."""
        return self.path / CONFIG_FILE

    @property
    def traces_path(self) -> Path:
        """``traces.jsonl``."""
        return self.path / TRACES_FILE

    @property
    def events_path(self) -> Path:
        """``events.jsonl``."""
        return self.path / EVENTS_FILE

    @property
    def torn_path(self) -> Path:
        """``traces.torn.jsonl``."""
        return self.path / TRACES_TORN_FILE

    # ---- writing -------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether this object holds the run's write lock."""
        return self._traces_fd is not None

    def open_for_writing(self) -> None:
        """Take the run's write lock, repair torn last lines, open the append descriptors (idempotent).

        Raises :class:`RunLocked` when another process or ``RunDir`` object is writing to this run.
        """
        if self.is_open:
            return
        lock_fd = open_run_file(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT)
        if fcntl is not None:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _lock_holder(os.read(lock_fd, 200).decode("utf-8", errors="replace"))
                os.close(lock_fd)
                raise RunLocked(
                    f"run directory {str(self.path)!r} is being written by another process ({holder}); "
                    f"wait for it to finish or stop it first"
                ) from None
        with contextlib.suppress(OSError):  # the note is for people; a full disk must not stop the lock
            os.ftruncate(lock_fd, 0)
            os.write(lock_fd, f"pid {os.getpid()} since {now_iso()}\n".encode())
        self._lock_fd = lock_fd
        try:
            repair_torn_tail(self.traces_path, self.path / TRACES_TORN_FILE)
            repair_torn_tail(self.path / TOOLS_FILE, self.path / TOOLS_TORN_FILE)
            self.tool_lists = ToolLists(self.path / TOOLS_FILE)
            self._tool_store = ToolStore(self.tool_lists)
            with contextlib.suppress(FileNotFoundError):  # opened first: what load() reads, it holds
                self._open_tools(0)
            self._tool_store.load()
            if self._tools_fd is None and self._refers_to_lost_tool_lists():
                self._open_tools(os.O_CREAT)  # written again now: the check below each write covers it from here
                log.warning("%s is missing though the run's traces refer to its tool lists (it was deleted since the "
                            "run last wrote it): it is written again, with each list this run's episodes offer; a list "
                            "of an episode finished before is back when one of them offers the same list (a list is "
                            "known by its digest), the others are lost and read as missing (tools_missing)",
                            self.path / TOOLS_FILE)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
            # read-write: if the file is deleted or replaced under us, what it holds is read back from here
            self._traces_fd = open_run_file(self.traces_path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            st = os.fstat(self._traces_fd)
            self._traces_id = (st.st_dev, st.st_ino)
            if self.event_log:
                repair_torn_tail(self.events_path, self.path / EVENTS_TORN_FILE)
                self._events_fd = open_run_file(self.events_path, flags)
        except OSError as exc:
            self.close()
            raise disk_full(exc, self.path) from exc
        except BaseException:
            self.close()
            raise

    def append_trace(self, record: Mapping[str, Any] | str, *, fsync: bool = True) -> None:
        """Append one finished-episode record (a dict or a JSON line) and fsync it.

        ``fsync=False`` only writes it (it survives the process, not a power loss, until the next
        fsync): for :meth:`append_trace_async`, which then waits for a shared fsync.
        """
        self.append_traces([record])
        assert self._traces_fd is not None
        if fsync:
            try:
                self._fsync_tools()
                os.fsync(self._traces_fd)
            except OSError as exc:
                raise disk_full(exc, self.traces_path) from exc
            self._traces_synced = self._traces_written

    def append_traces(self, records: Iterable[Mapping[str, Any] | str], *,
                      read_back: Sequence[Mapping[str, Any] | None] | None = None) -> None:
        """Append finished-episode records (dicts or JSON lines) in one write, without an fsync (see
        :meth:`append_trace`): an import of predictions writes thousands at once.

        ``read_back``: for each record, what reading its line back gives (``None``: not known, its line is
        parsed here), given by a caller that has it. Into an empty file, the records then stand for the
        file's scan (:meth:`scan_traces`, while the file is unchanged): an import scored right after it is
        written does not read it again."""
        self.open_for_writing()
        assert self._traces_fd is not None
        lines = [record if isinstance(record, str) else dumps_line(record) for record in records]
        if any("\n" in line for line in lines):
            raise ValueError("a trace record must be a single line of JSON")
        encoded = [utf8_lines(line + "\n") for line in lines]
        data = b"".join(encoded)
        self._check_tools()  # the lists these traces refer to are in the file at tools.jsonl
        lost = self._traces_changed()
        if lost is not None:
            self._recover_traces(lost, data)
        empty = read_back is not None and len(read_back) == len(lines) and os.fstat(self._traces_fd).st_size == 0
        append_line(self._traces_fd, data, self.traces_path)
        self._traces_written += len(lines)
        if empty and read_back is not None:
            st = os.fstat(self._traces_fd)
            kept = [known if known is not None else json.loads(line) for known, line in zip(read_back, encoded,
                                                                                             strict=True)]
            if st.st_size == len(data) and all(_plain_record(r) for r in kept):  # these lines and nothing else
                self._scan_cache = (_stat_key(st), TraceScan(kept))

    def share_scan(self, other: RunDir) -> None:
        """Take ``other``'s scan of the traces file (another ``RunDir`` of the same run, e.g. the one that
        wrote it with ``read_back``): :meth:`scan_traces` uses it while the file is unchanged."""
        if other._scan_cache is not None and other.traces_path.resolve() == self.traces_path.resolve():
            self._scan_cache = other._scan_cache

    async def append_trace_async(self, record: Mapping[str, Any] | str) -> None:
        """:meth:`append_trace` for the event loop: same durability, without blocking the loop.

        The line is written before this first yields; it returns once an fsync that started after the
        write has finished. The fsync runs in a worker thread and is shared by all lines written
        while the previous one ran (group commit), so N episodes finishing together cost about two
        fsyncs, not N. Cancelling the wait does not undo the write (the line is in the file).
        """
        self.append_trace(record, fsync=False)
        await self.sync_traces()

    async def sync_traces(self) -> None:
        """Wait until every trace line written so far is fsync-ed (see :meth:`append_trace_async`)."""
        target = self._traces_written
        while self._traces_synced < target:
            if self._traces_fd is None:  # closed; close() fsync-ed unless that failed
                raise RunDirClosed(
                    f"run directory {str(self.path)!r} was closed before its traces were fsync-ed"
                )
            future = self._sync_future
            if future is None or future.done():
                future = self._sync_future = asyncio.ensure_future(self._fsync_traces())
            await asyncio.shield(future)

    async def _fsync_traces(self) -> None:
        covered = self._traces_written  # every line written before the fsync starts
        if await asyncio.to_thread(self._fsync_traces_fd):
            self._traces_synced = max(self._traces_synced, covered)

    def _fsync_traces_fd(self) -> bool:
        with self._fd_lock:  # close() waits for an fsync in flight instead of closing its descriptor
            if self._traces_fd is None:
                return False
            try:
                self._fsync_tools()
                os.fsync(self._traces_fd)
            except OSError as exc:
                raise disk_full(exc, self.traces_path) from exc
            return True

    def store_tools(self, tools_hash: str, tools_text: str) -> None:
        """Keep a tool list (``tools_text``: its JSON) in ``tools.jsonl`` unless the run has it already;
        written at once (fsync-ed with the next trace line), so a trace line never precedes its tools."""
        self.open_for_writing()
        store = self._tool_store
        assert store is not None
        if store.has(tools_hash):
            return
        specs = json.loads(tools_text)
        lines = store.lines_for(tools_hash, specs)
        if lines is None:
            return
        path = self.path / TOOLS_FILE
        try:
            if self._tools_fd is None:
                self._open_tools(os.O_CREAT)
            else:
                self._check_tools()
            assert self._tools_fd is not None
            append_line(self._tools_fd, utf8_lines(lines), path)
        except OSError as exc:
            store.forget(tools_hash, specs)
            raise disk_full(exc, path) from exc

    def _refers_to_lost_tool_lists(self) -> bool:
        """Whether a trace refers to a tool list that ``tools.jsonl`` does not hold (the file absent:
        deleted between two runs of the folder). Reads the events of the traces up to the first that
        offers a list (the first, unless episodes made no model request); traces of schema 1 hold
        their lists themselves."""
        for record in self.scan_traces().records:
            if record.get("schema_version", 1) >= 2 and any(
                    isinstance(e, Mapping) and e.get("kind") == "model_request" for e in record["events"]):
                return any(isinstance(e, Mapping) and e.get("tools_missing") for e in record["events"])
        return False

    def _open_tools(self, flags: int) -> None:
        """Open ``tools.jsonl`` for appending (read-write: if it is deleted or replaced, what it held
        is read back from here) and note which file it is."""
        fd = open_run_file(self.path / TOOLS_FILE, os.O_RDWR | os.O_APPEND | flags)
        st = os.fstat(fd)
        self._tools_fd, self._tools_id = fd, (st.st_dev, st.st_ino)

    def _check_tools(self) -> None:
        """Re-create ``tools.jsonl`` when it was deleted or replaced since this object opened it.

        Every line the open descriptor holds (each list and tool the run stored, so each list a trace
        of the run refers to) is copied, in chunks, to the file now at the path: a fresh one where it
        was deleted, else appended to the one that took its place (its own lines are kept; a list's
        ``tools_hash`` and a tool's id are digests of their content, so a reader finds the same list
        whichever line it takes), and fsync-ed. One ``stat`` per call; called before each new list's
        lines and each trace line are written."""
        if self._tools_fd is None or self._tools_id is None:
            return
        path = self.path / TOOLS_FILE
        try:
            st = os.stat(path)
        except FileNotFoundError:
            what = "deleted"
        except OSError:
            return  # cannot tell: go on writing
        else:
            if (st.st_dev, st.st_ino) == self._tools_id:
                return
            what = "replaced"
        old = self._tools_fd
        fd = open_run_file(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":  # the other file's last line stays its own
                write_all(fd, b"\n")
            offset = 0
            while chunk := os.pread(old, 1 << 20, offset):
                write_all(fd, chunk)
                offset += len(chunk)
            os.fsync(fd)
            st = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            raise disk_full(exc, path) from exc
        with self._fd_lock:  # an fsync in flight (a worker thread) finishes on the old descriptor
            self._tools_fd, self._tools_id = fd, (st.st_dev, st.st_ino)
            os.close(old)
        log.warning("%s was %s while the run was writing it: its %d bytes (every tool list the run's traces "
                    "refer to) were written %s", path, what, offset,
                    "to a fresh file" if what == "deleted" else "after the lines of the file that took its place")

    def _fsync_tools(self) -> None:
        """fsync ``tools.jsonl`` when lines were written to it since the last time."""
        store = self._tool_store
        if store is not None and store.dirty and self._tools_fd is not None:
            store.dirty = False
            try:
                os.fsync(self._tools_fd)
            except OSError:
                store.dirty = True
                raise

    def _traces_changed(self) -> str | None:
        """``"deleted"`` / ``"replaced"`` when the file at :attr:`traces_path` is no longer the one we
        write to; ``None`` while it is (or nothing is open)."""
        if self._traces_id is None:
            return None
        try:
            st = os.stat(self.traces_path)
        except FileNotFoundError:
            return "deleted"
        except OSError:
            return None  # cannot tell (e.g. a permission change): go on writing
        return None if (st.st_dev, st.st_ino) == self._traces_id else "replaced"

    def verify_traces(self) -> None:
        """Raise :class:`RunTracesLost` (after saving what the run holds) if ``traces.jsonl`` was deleted
        or replaced since this object opened it; a no-op while it is the same file."""
        lost = self._traces_changed()
        if lost is not None:
            self._recover_traces(lost, b"")

    def _recover_traces(self, what: str, pending: bytes) -> None:
        """Write every line of the open (deleted or replaced) traces file plus ``pending`` to a fresh
        file, write on into that one, and raise :class:`RunTracesLost` saying so."""
        assert self._traces_fd is not None
        held = bytearray()
        offset = 0
        while chunk := os.pread(self._traces_fd, 1 << 20, offset):
            held += chunk
            offset += len(chunk)
        if held and not held.endswith(b"\n"):  # a torn tail cannot be kept as a record
            held = held[: held.rfind(b"\n") + 1]
        data = bytes(held) + pending
        records = data.count(b"\n")
        fresh = self.traces_path if what == "deleted" else self.path / f"traces.kept-{_stamp()}.jsonl"
        try:
            fd = open_run_file(fresh, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL)
        except FileExistsError:  # traces.jsonl came back meanwhile: leave it, keep ours apart
            fresh = self.path / f"traces.kept-{_stamp()}.jsonl"
            fd = open_run_file(fresh, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL)
        try:
            write_all(fd, data)
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            raise disk_full(exc, fresh) from exc
        with self._fd_lock:  # from now on, lines (of episodes still finishing) go to the fresh file
            old, self._traces_fd = self._traces_fd, fd
            st = os.fstat(fd)
            self._traces_id = (st.st_dev, st.st_ino) if fresh == self.traces_path else None
            self._traces_written += 1 if pending else 0
            self._traces_synced = self._traces_written
            os.close(old)
        where = (
            f"they were written to a fresh {fresh.name}; run the same command again to resume"
            if fresh == self.traces_path
            else f"they were written to {fresh.name} (the new {TRACES_FILE} was left as it is); to resume, "
            f"move {fresh.name} back to {TRACES_FILE} and run the same command again"
        )
        raise RunTracesLost(self.traces_path, what, fresh, records, where)

    def append_event(self, line: Mapping[str, Any] | str) -> None:
        """Append one line to ``events.jsonl`` (no fsync; survives a process crash). No-op without event log."""
        if not self.event_log:
            return
        self.open_for_writing()
        if self._events_fd is None:
            return
        text = line if isinstance(line, str) else dumps_line(line)
        try:
            append_line(self._events_fd, utf8_lines(text + "\n"), self.events_path)
        except RunDiskFull as exc:
            # the event log is a debugging aid: a full disk stops it, not the episode (whose trace
            # line, the record that counts, raises RunDiskFull itself if it cannot be written)
            log.warning("%s; no more events are logged in this call", exc.strerror)
            self.event_log = False

    def mark(self, recorder: EpisodeRecorder, kind: str, **data: Any) -> None:
        """Append a lifecycle marker (``episode_started`` / ``episode_finished`` / ``episode_cancelled``)
        for ``recorder``'s episode to ``events.jsonl``."""
        if self.event_log:
            self.append_event(
                {
                    "episode_id": recorder.episode_id,
                    "task_id": recorder.task_id,
                    "ts": now_iso(),
                    "kind": kind,
                    **data,
                }
            )

    def new_recorder(
        self, task_id: str, *, run_attempt: int = 1, on_usage: Callable[[int, float], None] | None = None
    ) -> EpisodeRecorder:
        """A recorder whose events go to ``events.jsonl`` (when the event log is on)."""
        return EpisodeRecorder(
            task_id,
            run_attempt=run_attempt,
            config_hash=self.config_hash,
            sink=self.append_event if self.event_log else None,
            on_usage=on_usage,
            max_value_bytes=self.max_value_bytes,
            tool_store=self.store_tools,
            tool_lists=self.tool_lists,
        )

    def close(self) -> None:
        """fsync and close the descriptors and release the write lock (idempotent)."""
        with self._fd_lock:
            for name in ("_events_fd", "_tools_fd", "_traces_fd", "_lock_fd"):
                fd = getattr(self, name)
                if fd is None:
                    continue
                setattr(self, name, None)
                with contextlib.suppress(OSError):
                    if name != "_lock_fd":
                        os.fsync(fd)
                        if name == "_traces_fd":
                            self._traces_synced = self._traces_written
                            self._traces_id = None
                os.close(fd)  # closing the lock descriptor releases the flock
            self._tools_id = None

    def __enter__(self) -> RunDir:
        self.open_for_writing()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r}, config_hash={self.config_hash!r})"

    # ---- reading -------------------------------------------------------------------------------

    def scan_traces(self) -> TraceScan:
        """Read ``traces.jsonl``: every record in file order, plus a torn tail and bad lines (logged).

        The file is parsed again only when it changed since the last call (its inode, size or
        modification time), so reading a run for resuming, scoring and summing up parses it once;
        the records are shared between the calls: do not change them."""
        key = _file_key(self.traces_path)
        cached = self._scan_cache
        if key is not None and cached is not None and cached[0] == key:
            return cached[1]
        scan = scan_jsonl(self.traces_path, tools=self.tool_lists)
        self._scan_cache = None if key is None else (key, scan)
        return scan

    def iter_traces(self, *, dedupe: bool = True) -> Iterator[Mapping[str, Any]]:
        """The trace records; with ``dedupe`` only the newest per task (in order of first appearance)."""
        scan = self.scan_traces()
        yield from (scan.latest().values() if dedupe else scan.records)

    def latest_traces(self) -> dict[str, Mapping[str, Any]]:
        """``{task_id: newest record}``."""
        return self.scan_traces().latest()

    def finished_task_ids(self, *, retry_errored: bool = False) -> set[str]:
        """Tasks that a resumed run skips (see :func:`~client.runs.finished_task_ids`)."""
        return finished_task_ids(self.latest_traces(), retry_errored=retry_errored)

    def summary(self) -> RunSummary:
        """Counts (completed/errored), token and cost totals over the newest record per task."""
        return summarize_traces(self.scan_traces())
