"""BFCL's backend instances held in a process of their own per session, each call under a deadline.

BFCL's backends are the pinned wheel's code, but what they compute is driven by the model's (or a
recording's) arguments, and some of it has no bound: ``MathAPI.square_root(2, precision=3000000)``
runs 70-100 s in C, where no signal or thread can stop it. Numbers with a known cost are refused
before BFCL's code sees them (:mod:`.backend_bounds`); everything else runs here:

* **one process per holder** (a live MCP session's instances, or one scoring's model and gold
  instances). A stuck call holds only its own holder; the server's event loop only awaits a socket.
* **a deadline per call** (:data:`CALL_DEADLINE_S`, :data:`MAKE_DEADLINE_S` for loading an entry's
  initial config). Past it the process is killed (``SIGKILL``), the call answers an error, and the
  holder's state is what it was before the call: the holder keeps the log of the operations that
  succeeded and replays them in a fresh process on its next use (BFCL's backends are deterministic:
  their randomness is seeded by the scenario). A replay that fails leaves the holder empty, and the
  next call says so.
* **a memory cap** per process (:data:`MEMORY_LIMIT_BYTES`, ``RLIMIT_AS``): a call that would
  allocate more fails with ``MemoryError``, as an error result.
* **an operation made of units** (a scoring's replay of one entry: loading, each call, each
  comparison; :meth:`Holder.request_units`) holds each unit to its own deadline: the process marks
  the unit it starts in a page of memory it shares with the client (a ``memfd`` handed over with the
  first such operation), which the client reads only when the deadline of the unit in progress has
  passed; past it, :class:`UnitStopped` names the unit. One round trip per entry, not per call. The
  record (unit, start) is written as one copy with a check of its fields: a read that finds it
  mid-write (the writer descheduled on a loaded machine) is read again, never judged.
* **at most** :data:`MAX_LIVE_PROCESSES` processes at once: the least recently used idle holder's
  process is ended to make room (its log stays: it comes back by replay when used again). It is
  chosen and detached from its holder under one lock, the one under which a holder's user, once
  ``busy``, looks for its process: a holder never has its process ended under a call in progress.
* **one call at a time per holder**, blocking (:meth:`Holder.request`) or from an event loop
  (:meth:`Holder.arequest`): both take the holder's one lock.

Processes are forked from one *zygote* per client process, a ``python -m`` of this module that
imports BFCL's backend modules once (out of the verified wheel, :mod:`.wheel_code`; no MCP code:
:mod:`.backend_calls`) and forks a child per holder on request (``fork`` of a single-threaded
process: cheap, the modules shared copy-on-write). It is started (:func:`prestart`) when a catalog
that serves backends is made, so that its imports overlap the rest of a run's start, and reaps its
children itself (their CPU time counts in its own children's: :func:`host_cpu_seconds`). BFCL's memory
backends (numpy, through ``rank_bm25``) are imported only when asked for (``prestart(memory=True)``, a
holder made with ``memory=True``): without them a zygote holds about 11 MB less, and a fork of it, one
per MCP session, costs less (page tables, pages copied on write, the exit). The client hands the zygote one end of a socket pair (``SCM_RIGHTS``); the child
serves it, the zygote answers the child's pid (the client kills it by pid past a deadline).
Messages are length-prefixed JSON both ways, answers bounded (:data:`MAX_ANSWER_BYTES`). A child
ends when its socket closes; the zygote when the client's control socket closes.

The deadline and the bounds are constants of this code, not settings: a run's result depends on
them only for calls that would otherwise freeze the harness, and they are the same in every run.
"""

from __future__ import annotations

import contextlib
import gc
import json
import mmap
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the zygote (this module run as main) never uses it, and it costs
    import asyncio  # the zygote's start about 25 ms (asyncio with ssl)

__all__ = ["CALL_DEADLINE_S", "MAKE_DEADLINE_S", "MAX_LIVE_PROCESSES", "HostError", "Holder", "Op", "UnitStopped",
           "host_cpu_seconds", "prestart"]

CALL_DEADLINE_S = 10.0  # a BFCL call takes milliseconds; 10 s is far past any legitimate one on a loaded machine
MAKE_DEADLINE_S = 60.0  # loading an entry's initial config (the long-context file systems are large)
MEMORY_LIMIT_BYTES = 4 << 30  # address space of one holder's process
MAX_LIVE_PROCESSES = 128
MAX_ANSWER_BYTES = 64 << 20
_HEADER = struct.Struct("!I")
_PROGRESS = struct.Struct("=qdQ")  # the unit in progress (-1: none yet), when it started (time.monotonic), their check
_TORN_WAIT_S = 0.01  # how soon the progress record is read again when it was read mid-write

Op = dict[str, Any]


class HostError(RuntimeError):
    """An operation could not be done in the holder's process (past its deadline, the process died,
    or the zygote could not start); the message says which."""


class UnitStopped(HostError):
    """A unit of an operation made of units was stopped (past its deadline, or the process died):
    :attr:`unit` is its number; the process is gone, and with it the operation's state."""

    def __init__(self, unit: int, message: str) -> None:
        super().__init__(message)
        self.unit = unit


# ---- framing ---------------------------------------------------------------------------------

def _frame(message: Mapping[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, allow_nan=True, default=str).encode("utf-8", "surrogatepass")
    return _HEADER.pack(len(body)) + body


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the peer closed the socket")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(sock: socket.socket) -> Any:
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if size > MAX_ANSWER_BYTES:
        raise HostError(f"an answer of {size} bytes is over the bound of {MAX_ANSWER_BYTES}")
    return json.loads(_recv_exact(sock, size).decode("utf-8", "surrogatepass"))


async def _aread_exact(loop: asyncio.AbstractEventLoop, sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = await loop.sock_recv(sock, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the peer closed the socket")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


async def _aread_frame(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> Any:
    (size,) = _HEADER.unpack(await _aread_exact(loop, sock, _HEADER.size))
    if size > MAX_ANSWER_BYTES:
        raise HostError(f"an answer of {size} bytes is over the bound of {MAX_ANSWER_BYTES}")
    return json.loads((await _aread_exact(loop, sock, size)).decode("utf-8", "surrogatepass"))


# ---- the zygote (client side) ------------------------------------------------------------------

class _Zygote:
    """The client's zygote process: started on first use, started again if it died."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.ctl: socket.socket | None = None
        self.pid = -1  # the process that started it: a forked client starts its own
        self.ready = False
        self.memory = False  # the memory backends asked for: imported before the next fork (and by a new zygote)

    def _launch(self) -> None:
        """Start the zygote (it imports BFCL's modules meanwhile); its readiness is read on first use."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        root = str(Path(__file__).resolve().parents[3])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])}
        argv = [sys.executable, "-m", __name__, str(theirs.fileno()), *(["memory"] if self.memory else [])]
        proc = subprocess.Popen(argv, pass_fds=(theirs.fileno(),),
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,  # never a stdio server's
                                stderr=subprocess.PIPE)
        theirs.close()
        self.proc, self.ctl, self.pid, self.ready = proc, mine, os.getpid(), False

    def _await_ready(self) -> None:
        assert self.proc is not None and self.ctl is not None
        proc, mine = self.proc, self.ctl
        mine.settimeout(MAKE_DEADLINE_S)
        try:
            ready = _read_frame(mine)
        except (OSError, EOFError, ValueError) as exc:
            proc.kill()
            err = (proc.communicate(timeout=5)[1] or b"").decode("utf-8", "replace").strip().splitlines()
            self._close()
            raise HostError(f"BFCL's backend process did not start: {err[-1] if err else exc}") from None
        if not ready.get("ok"):
            self._close()
            raise HostError(f"BFCL's backend process did not start: {ready.get('error')}")
        if proc.stderr is not None:
            proc.stderr.close()
        mine.settimeout(None)
        self.ready = True

    def _current(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and self.pid == os.getpid()

    def prestart(self, memory: bool = False) -> None:
        """Start the zygote now, without waiting for it (a server that will serve BFCL's backends);
        ``memory``: with BFCL's memory backends imported too."""
        with self.lock:
            self._started(memory)

    def _started(self, memory: bool) -> None:
        """The zygote running (launched when it is not), with the memory backends when ``memory``
        (asked of a running one); under :attr:`lock`."""
        if memory and self._current():
            self._want_memory()
        if not self._current():
            self._close()
            self.memory |= memory
            self._launch()

    def _want_memory(self) -> None:
        """The running zygote imports the memory backends before its next fork (a message of the
        control socket: it reads them in order)."""
        if self.memory:
            return
        self.memory = True
        assert self.ctl is not None
        try:
            self.ctl.sendall(b"m")
        except OSError:
            self._close()  # started again on next use, with them

    def spawn(self, memory: bool = False) -> tuple[socket.socket, int]:
        """A fresh holder process: (the client's end of its socket, its pid); ``memory``: forked from
        a zygote that has imported BFCL's memory backends (a holder of another zygote would import them
        itself, on its first memory operation)."""
        with self.lock:
            for attempt in (0, 1):
                self._started(memory)
                if not self.ready:
                    self._await_ready()
                assert self.ctl is not None
                mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    socket.send_fds(self.ctl, [b"f"], [theirs.fileno()])
                    pid = struct.unpack("!q", _recv_exact(self.ctl, 8))[0]
                except (OSError, EOFError):
                    mine.close()
                    self._close()
                    if attempt:
                        raise HostError("BFCL's backend process could not be started") from None
                    continue
                finally:
                    theirs.close()
                return mine, int(pid)
        raise AssertionError  # not reached

    def _close(self) -> None:
        if self.ctl is not None:  # in a forked child: its own copy only
            self.ctl.close()
        if self.proc is not None and self.pid == os.getpid():
            # imported here: the zygote (this module run as main) imports no MCP code
            from server.children import stop_children

            stop_children([self.proc])
        self.proc, self.ctl, self.ready = None, None, False


_zygote = _Zygote()
prestart = _zygote.prestart


def host_cpu_seconds() -> float:
    """CPU seconds used so far by this process's zygote and its ended holder processes (Linux
    ``/proc``; 0 without a zygote): for the benches, which count the harness's whole cost."""
    proc = _zygote.proc
    if proc is None or proc.poll() is not None:
        return 0.0
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def _kill(pid: int, sock: socket.socket | None) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    if sock is not None:
        sock.close()


# ---- holders ----------------------------------------------------------------------------------

_live: OrderedDict[int, weakref.ref[Holder]] = OrderedDict()  # id -> holder with a process, least recent first
_live_lock = threading.Lock()


class Holder:
    """One holder's process (started on first use) and the log that rebuilds its state.

    ``request`` (blocking, for scoring) and ``arequest`` (for the server's event loop) do one
    operation; an operation marked ``log=True`` that succeeded is kept for replay. Calls of one
    holder run one at a time, blocking or not: each holds the holder's one lock, ``busy`` meanwhile,
    until its process is no longer in use (an ``arequest`` cancelled while its process starts in a
    thread keeps the lock until that start ends). ``memory``: its process is forked from a zygote
    that has imported BFCL's memory backends (:meth:`_Zygote.spawn`)."""

    def __init__(self, *, memory: bool = False) -> None:
        self.memory = memory
        self.sock: socket.socket | None = None
        self.pid = -1
        self.log: list[tuple[Op, float]] = []
        self.lost = ""  # why the state is gone (a replay failed), said once by the next call
        self._lock = threading.Lock()
        # per event loop (an asyncio.Lock belongs to the loop that first waits on it): its callers queue there
        self._alocks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._owner = 0  # the thread that holds the lock (an event loop's, for an arequest)
        self.busy = False
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._progress: mmap.mmap | None = None  # shared with the process of pid _progress_pid
        self._progress_pid = -1

    # -- process life
    def _alive(self) -> bool:
        """Whether the holder has a process (then marked the most recently used). Asked by its user,
        marked ``busy`` before: a process found here is not ended to make room (:func:`_make_room`
        decides under the same lock)."""
        with _live_lock:
            if self.sock is None:
                return False
            _live.move_to_end(id(self), last=True)
            return True

    def _ensure(self, loop: asyncio.AbstractEventLoop | None) -> None:
        if self._alive():
            return
        self._start(loop)
        log, self.log = self.log, []
        for op, deadline in log:  # replay: the state the holder had
            try:
                answer = self._roundtrip_sync(op, deadline)
                why = answer.get("error")
            except HostError as exc:
                why = str(exc)
            if why:  # the state cannot be rebuilt: a fresh, empty process
                self._drop()
                self._start(loop)
                self.log = []
                self.lost = f"its state could not be rebuilt ({why}): it starts again from nothing"
                return
            self.log.append((op, deadline))

    def _start(self, loop: asyncio.AbstractEventLoop | None) -> None:
        _make_room()
        sock, pid = _zygote.spawn(self.memory)
        sock.setblocking(loop is None)
        self.sock, self.pid = sock, pid
        self._finalizer = weakref.finalize(self, _kill, pid, sock)
        with _live_lock:
            _live[id(self)] = weakref.ref(self)

    def _drop(self) -> None:
        """End the process (the log is kept)."""
        with _live_lock:
            end = self._detach()
        if end is not None:
            end()

    def _detach(self) -> weakref.finalize[Any, Any] | None:
        """Forget the process, under ``_live_lock``: what ends it (to be called without the lock)."""
        end, self._finalizer = self._finalizer, None
        self.sock, self.pid = None, -1
        _live.pop(id(self), None)
        return end

    def close(self) -> None:
        """End the process and forget the state."""
        self._drop()
        self.log = []

    # -- one operation
    def _roundtrip_sync(self, op: Op, deadline: float) -> Any:
        assert self.sock is not None
        sock = self.sock
        end = time.monotonic() + deadline
        try:
            sock.setblocking(True)
            sock.settimeout(deadline)
            sock.sendall(_frame(op))
            sock.settimeout(max(0.0, end - time.monotonic()) or 1e-6)
            return _read_frame(sock)
        except TimeoutError:
            self._drop()
            raise HostError(f"stopped after {deadline:g} s (the deadline of one BFCL call)") from None
        except (OSError, EOFError, ValueError) as exc:
            self._drop()
            raise HostError(f"BFCL's backend process died ({type(exc).__name__})") from None

    def request(self, op: Op, *, deadline: float | None = None, log: bool = False) -> Any:
        """One operation, blocking; raises :class:`HostError` past the deadline (state as before it)."""
        limit = CALL_DEADLINE_S if deadline is None else deadline
        with self._claimed():
            self._ensure(None)
            answer = self._roundtrip_sync(op, limit)
            if log and not answer.get("error"):
                self.log.append((op, limit))
            return answer

    @contextlib.contextmanager
    def _claimed(self) -> Iterator[None]:
        """The holder's lock, blocking; refused (not waited for ever) to the thread that holds it: an
        event loop's thread whose ``arequest`` on this holder is in flight."""
        if not self._lock.acquire(blocking=False):
            if self._owner == threading.get_ident():
                raise RuntimeError("a blocking call of a BFCL holder from the thread that has one in progress")
            self._lock.acquire()
        self._owner, self.busy = threading.get_ident(), True
        try:
            yield
        finally:
            self._release()

    async def arequest(self, op: Op, *, deadline: float | None = None, log: bool = False) -> Any:
        """One operation from the event loop: waits on the socket, never blocks the loop past the
        process start (a fork of the zygote). Raises :class:`HostError` as :meth:`request` does."""
        import asyncio

        limit = CALL_DEADLINE_S if deadline is None else deadline
        loop = asyncio.get_running_loop()
        alock = self._alocks.get(loop)
        if alock is None:
            alock = self._alocks[loop] = asyncio.Lock()
        async with alock:  # this loop's callers queue here, not in threads waiting for the holder's lock
            await self._aclaim()
            claimed = True
            try:
                if not self._alive():  # a replay may take a while: off the loop
                    starting = asyncio.ensure_future(asyncio.to_thread(self._ensure, None))
                    try:
                        await asyncio.shield(starting)
                    except asyncio.CancelledError:  # the start goes on in its thread: the holder stays claimed
                        claimed = False
                        starting.add_done_callback(self._release_after)
                        raise
                assert self.sock is not None
                sock = self.sock
                sock.setblocking(False)
                try:
                    async with asyncio.timeout(limit):
                        await loop.sock_sendall(sock, _frame(op))
                        answer = await _aread_frame(loop, sock)
                except TimeoutError:
                    self._drop()
                    raise HostError(f"stopped after {limit:g} s (the deadline of one BFCL call)") from None
                except asyncio.CancelledError:
                    self._drop()  # the caller went away mid-call: its state is rebuilt from the log on next use
                    raise
                except (OSError, EOFError, ValueError) as exc:
                    self._drop()
                    raise HostError(f"BFCL's backend process died ({type(exc).__name__})") from None
            finally:
                if claimed:
                    self._release()
            if log and not answer.get("error"):
                self.log.append((op, limit))
            return answer

    async def _aclaim(self) -> None:
        """Take the holder's lock (the one its blocking calls take) from the event loop: at once when
        it is free, else waited for in a thread; then it is ``busy``."""
        import asyncio

        if not self._lock.acquire(blocking=False):
            taking = asyncio.ensure_future(asyncio.to_thread(self._lock.acquire))
            try:
                await asyncio.shield(taking)
            except asyncio.CancelledError:
                taking.add_done_callback(lambda _: self._lock.release())  # taken after all: given back
                raise
        self._owner, self.busy = threading.get_ident(), True

    def _release(self) -> None:
        self._owner, self.busy = 0, False
        self._lock.release()

    def _release_after(self, starting: asyncio.Future[None]) -> None:
        """Release the holder once a start its (cancelled) caller left running has ended."""
        if not starting.cancelled():
            starting.exception()  # a failed start is the next call's to find (no process, or ``lost``)
        self._release()

    def request_units(self, op: Op, limits: Sequence[float]) -> Any:
        """One operation made of units, blocking: unit ``n`` (marked by the process as it starts) is
        stopped once it has run ``limits[n]`` seconds (:class:`UnitStopped`; the process is ended,
        its state lost). Nothing is logged: the caller sends the operation again, with the stopped
        unit's result, to start over."""
        with self._claimed():
            self._ensure(None)
            return self._units_roundtrip(op, limits)

    def _units_roundtrip(self, op: Op, limits: Sequence[float]) -> Any:
        assert self.sock is not None
        sock, fds = self.sock, []
        if self._progress is None or self._progress_pid != self.pid:  # a new process: hand it the page
            if self._progress is not None:
                self._progress.close()
            fd = _page_fd()
            os.ftruncate(fd, mmap.PAGESIZE)
            self._progress, self._progress_pid, fds = mmap.mmap(fd, mmap.PAGESIZE), self.pid, [fd]
        progress = self._progress
        _write_progress(progress, -1)
        frame = _frame(op)
        unit = -1  # the unit last read in progress
        try:
            sock.setblocking(True)
            sock.settimeout(CALL_DEADLINE_S)
            sent = socket.send_fds(sock, [frame[:_HEADER.size]], fds) if fds else 0
            sock.sendall(frame[sent:])
            shortest = min(limits, default=CALL_DEADLINE_S)  # no later unit can end sooner than this from now
            while True:
                read = _progress_now(progress)
                if read is None:  # the process is writing it: no deadline is judged on what it holds meanwhile
                    wait = _TORN_WAIT_S
                else:
                    unit, started = read
                    limit = limits[unit] if 0 <= unit < len(limits) else CALL_DEADLINE_S if unit >= 0 or not limits \
                        else limits[0]  # -1: the operation is read, counted in its first unit
                    left = started + limit - time.monotonic()
                    if left <= 0:
                        self._drop()
                        raise UnitStopped(max(unit, 0), f"stopped after {limit:g} s (the deadline of one BFCL call)")
                    wait = min(left, shortest)
                if select.select([sock], [], [], wait)[0]:
                    break
            return _read_frame(sock)  # the operation is done: its answer is on the way
        except (OSError, EOFError, ValueError) as exc:
            read = _progress_now(progress)
            unit = read[0] if read is not None else unit
            self._drop()
            raise UnitStopped(max(unit, 0), f"BFCL's backend process died ({type(exc).__name__})") from None
        finally:
            for fd in fds:
                os.close(fd)

    def take_lost(self) -> str:
        lost, self.lost = self.lost, ""
        return lost


def _page_fd() -> int:
    """A file of no name for the progress page (``memfd``; an unlinked temporary file where there is none)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("bfcl-progress", os.MFD_CLOEXEC)
    import tempfile

    with tempfile.TemporaryFile() as f:
        return os.dup(f.fileno())


def _progress_check(unit: int, started: float) -> int:
    """What a whole progress record's check holds: never 0 (a page just made, or one that ``pack_into``
    has cleared before writing its fields, holds zeros)."""
    return zlib.crc32(struct.pack("=qd", unit, started)) | 1 << 32


def _write_progress(progress: mmap.mmap, unit: int) -> None:
    """Mark ``unit`` as started now, as one copy of the whole record (``Struct.pack_into`` clears the
    record before writing its fields: a reader in between would see unit 0 started at 0.0)."""
    started = time.monotonic()
    progress[:_PROGRESS.size] = _PROGRESS.pack(unit, started, _progress_check(unit, started))


def _progress_now(progress: mmap.mmap) -> tuple[int, float] | None:
    """The unit in progress and its start, or ``None`` while the process is writing them (the record's
    check does not match its fields: a reader cannot tell how long the process will take to finish
    the write, so no two reads agreeing prove it whole)."""
    unit, started, check = _PROGRESS.unpack_from(progress, 0)
    return (int(unit), float(started)) if check == _progress_check(unit, started) else None


def _make_room() -> None:
    """End the least recently used idle holders' processes while :data:`MAX_LIVE_PROCESSES` are live.
    A holder is chosen and detached from its process under ``_live_lock``, where its user, marked
    ``busy`` first, looks for its process (:meth:`Holder._alive`): a holder that became busy after
    it was chosen finds none and starts another, never one ended under its request."""
    ends = []
    with _live_lock:
        if len(_live) < MAX_LIVE_PROCESSES:
            return
        for key, ref in list(_live.items()):
            holder = ref()
            if holder is None:
                _live.pop(key, None)
            elif not holder.busy:
                ends.append(holder._detach())
            if len(_live) < MAX_LIVE_PROCESSES:
                break
    for end in ends:
        if end is not None:
            end()


# ---- the zygote and the holder processes (server side) ------------------------------------------

def _read_frame_and_fds(sock: socket.socket) -> tuple[Any, list[int]]:
    """A message and the file descriptors sent with its first bytes (``SCM_RIGHTS``)."""
    header = b""
    fds: list[int] = []
    while len(header) < _HEADER.size:
        chunk, got, _, _ = socket.recv_fds(sock, _HEADER.size - len(header), 1)
        if not chunk:
            for fd in got:
                os.close(fd)
            raise EOFError("the peer closed the socket")
        header, fds = header + chunk, fds + got
    (size,) = _HEADER.unpack(header)
    if size > MAX_ANSWER_BYTES:
        raise ValueError(f"a message of {size} bytes is over the bound of {MAX_ANSWER_BYTES}")
    return json.loads(_recv_exact(sock, size).decode("utf-8", "surrogatepass")), fds


def _serve_holder(sock: socket.socket) -> None:
    """A holder process: named instance sets, one operation per message; the units of an operation
    made of units marked in the page the client hands over with it."""
    from . import backend_calls as b  # imported before the fork: nothing is imported here
    from .multi_turn_replay import replay

    sets: dict[str, dict[str, Any]] = {}
    tables: dict[str, Any] = {}
    progress: mmap.mmap | None = None

    def mark(unit: int) -> None:
        if progress is not None:
            _write_progress(progress, unit)

    while True:
        try:
            op, fds = _read_frame_and_fds(sock)
        except (EOFError, OSError, ValueError):
            return
        for fd in fds:
            with contextlib.suppress(OSError, ValueError):
                progress = mmap.mmap(fd, mmap.PAGESIZE)
            os.close(fd)
        try:
            answer = replay(op, mark) if op.get("op") == "replay" else b.host_operation(op, sets, tables)
        except MemoryError:
            answer = {"error": "out of memory"}
        except Exception as exc:  # noqa: BLE001 - any failure is the operation's answer
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            sock.sendall(_frame(answer))
        except OSError:
            return


def _reap(*_: Any) -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _freeze() -> None:
    gc.collect()
    gc.freeze()  # what is imported stays out of the children's collections: fewer pages copied on write


def _zygote_main(fd: int, memory: bool) -> None:
    ctl = socket.socket(fileno=fd)
    try:
        import resource  # noqa: F401 - for the children, imported once here

        from . import backend_calls, multi_turn_replay  # noqa: F401 - the scoring's replay, for the children

        backend_calls.preload(memory=memory)
        backend_calls.warm_up()  # what each holder runs first, run here once
    except Exception as exc:  # noqa: BLE001 - told to the client, which raises it
        ctl.sendall(_frame({"ok": False, "error": f"{type(exc).__name__}: {exc}"}))
        return
    _freeze()
    signal.signal(signal.SIGCHLD, _reap)  # reaped here, so that their CPU time counts in the zygote's children's
    ctl.sendall(_frame({"ok": True}))
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # the client reads stderr only until this point (why a start failed)
    os.close(devnull)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(ctl, 1, 1)
        except OSError:
            return
        if message == b"m" and not memory:  # the memory backends, from now on (see _Zygote.spawn)
            memory = True
            with contextlib.suppress(Exception):  # else each holder's first memory operation says why
                backend_calls.preload_memory()
            _freeze()
        if message == b"m":
            continue
        if not fds:
            return  # the client closed the control socket
        pid = os.fork()
        if pid == 0:
            ctl.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            with contextlib.suppress(ValueError, OSError):
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
            child = socket.socket(fileno=fds[0])
            try:
                _serve_holder(child)
            finally:
                os._exit(0)
        os.close(fds[0])
        try:
            ctl.sendall(struct.pack("!q", pid))
        except OSError:
            return


def _main(argv: Sequence[str]) -> None:
    _zygote_main(int(argv[0]), memory="memory" in argv[1:])


if __name__ == "__main__":
    _main(sys.argv[1:])
