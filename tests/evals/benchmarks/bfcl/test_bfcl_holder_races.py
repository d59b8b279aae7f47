"""Issue 50 follow-up: a progress verdict of an oracle run, under load, failed with ``BFCL entry
multi_turn_base_22: its backends could not be loaded: stopped after 60 s`` although the run took
seconds. Two races of :mod:`evals.benchmarks.bfcl.backend_host`, each forced here by the order its
threads take (events, a stopped process), never by timing:

* the progress record a holder process writes as each unit of a replay starts was read mid-write:
  ``Struct.pack_into`` clears the record before writing its fields, and a reader in between (the
  writer descheduled there) read unit 0 started at time 0.0, twice alike, and stopped the replay at
  once as past unit 0's 60 s;
* a holder chosen to end its process to make room (idle when chosen) could turn busy before its
  process was ended: its request then ran on a socket closed under it ("process died", or a wait
  for the whole deadline and "stopped after N s").
"""

from __future__ import annotations

import asyncio
import mmap
import os
import signal
import threading
from collections import OrderedDict
from typing import Any

import pytest

from evals.benchmarks.bfcl import backend_host
from evals.benchmarks.bfcl.multi_turn import gold_steps, read_multi_turn
from evals.benchmarks.bfcl.multi_turn_checker import MultiTurnVerdict, _replay_batch, decode_steps

ENTRY = "multi_turn_base_22"


def _entry() -> Any:
    return next(e for e in read_multi_turn("multi_turn_base") if e.id == ENTRY)


def test_a_progress_record_read_mid_write_is_never_taken_for_another() -> None:
    """Whatever mix of the record before a write, the record after it and the zeros ``pack_into``
    clears it to, a read gives the record before, the one after, or nothing (read again)."""
    page = mmap.mmap(-1, mmap.PAGESIZE)
    size = backend_host._PROGRESS.size
    backend_host._write_progress(page, 3)
    before = page[:size]
    backend_host._write_progress(page, 4)
    after = page[:size]
    wholes = {backend_host._progress_now(page)}
    page[:size] = before
    wholes.add(backend_host._progress_now(page))
    assert {w[0] for w in wholes if w is not None} == {3, 4}
    for cut in range(size + 1):
        for old in (before, bytes(size)):
            page[:size] = after[:cut] + old[cut:]
            assert backend_host._progress_now(page) in wholes | {None}, cut
    page[:size] = bytes(size)
    assert backend_host._progress_now(page) is None  # a page just made, or cleared by pack_into


def test_a_replay_whose_progress_is_read_mid_write_goes_on(bfcl_data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported failure, forced: the client's first read of the progress page finds it as a
    writer stopped between clearing the record and writing its fields leaves it. Before the fix:
    ``its backends could not be loaded: stopped after 60 s`` at once; now the record is read again
    and the verdict comes."""
    entry = _entry()
    decoded = [decode_steps([step] if step else []) for step in gold_steps(entry)]
    read = backend_host._progress_now
    cleared: list[bool] = []

    def read_mid_write(progress: mmap.mmap) -> Any:
        if not cleared:
            cleared.append(True)
            progress[:backend_host._PROGRESS.size] = bytes(backend_host._PROGRESS.size)
        return read(progress)

    monkeypatch.setattr(backend_host, "_progress_now", read_mid_write)
    holder = backend_host.Holder()
    try:
        verdict = _replay_batch(holder, [(entry, decoded)])[0]
    finally:
        holder.close()
    assert cleared and isinstance(verdict, MultiTurnVerdict) and verdict.valid, verdict


def test_a_holder_chosen_to_make_room_that_turns_busy_keeps_its_request(bfcl_data: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A holder idle when another thread chose it to make room, asked for a call before its process
    was ended: the call is answered (by a process rebuilt from its log), never cut off with the
    process ended under it."""
    monkeypatch.setattr(backend_host, "_live", OrderedDict())
    monkeypatch.setattr(backend_host, "MAX_LIVE_PROCESSES", 1)  # the next process started makes room
    monkeypatch.setattr(backend_host, "CALL_DEADLINE_S", 5.0)  # how long a cut-off call would wait (before the fix)
    chosen, go, sending = threading.Event(), threading.Event(), threading.Event()
    kill, frame = backend_host._kill, backend_host._frame

    def kill_when_told(pid: int, sock: Any) -> None:  # each holder's finalizer: how its process is ended
        if threading.current_thread().name == "room":
            chosen.set()
            assert go.wait(60)
        kill(pid, sock)

    def frame_seen(message: Any) -> bytes:
        if threading.current_thread().name == "user":
            sending.set()
        return frame(message)

    monkeypatch.setattr(backend_host, "_kill", kill_when_told)
    make = dict(_entry().make_op(), key="i")
    idle, other = backend_host.Holder(), backend_host.Holder()
    outcomes: dict[str, Any] = {}

    def run(name: str, holder: backend_host.Holder, op: backend_host.Op) -> None:
        try:
            outcomes[name] = holder.request(op)
        except Exception as exc:  # noqa: BLE001 - the assertion below says what it was
            outcomes[name] = exc

    threads = [threading.Thread(target=run, args=("room", other, make), name="room"),
               threading.Thread(target=run, args=("user", idle, {"op": "call", "key": "i", "text": "ls()"}),
                                name="user")]
    try:
        assert idle.request(make, log=True) == {}
        assert "text" in idle.request({"op": "call", "key": "i", "text": "mkdir(dir_name='kept')"}, log=True)
        old = idle.pid
        threads[0].start()  # `other` starts its process: `idle`, least recently used and idle, is chosen
        assert chosen.wait(60)  # ... and its process not ended yet
        os.kill(old, signal.SIGSTOP)  # that process answers nothing from now on
        monkeypatch.setattr(backend_host, "_frame", frame_seen)
        threads[1].start()
        assert sending.wait(60)  # `idle`'s call holds a socket: the chosen process's, or (fixed) a new one's
        go.set()
        for thread in threads:
            thread.join(60)
        assert outcomes["room"] == {}
        assert isinstance(outcomes["user"], dict) and "kept" in outcomes["user"].get("text", ""), outcomes["user"]
        assert idle.pid not in (-1, old)
    finally:
        go.set()
        for holder in (idle, other):
            holder.close()


def test_the_progress_record_format_is_what_the_holder_process_writes() -> None:
    """The check covers the fields as packed: a record written by hand with another check is refused."""
    page = mmap.mmap(-1, mmap.PAGESIZE)
    page[:backend_host._PROGRESS.size] = backend_host._PROGRESS.pack(0, 123.5, 1 << 32)
    assert backend_host._progress_now(page) is None
    page[:backend_host._PROGRESS.size] = backend_host._PROGRESS.pack(
        0, 123.5, backend_host._progress_check(0, 123.5))
    assert backend_host._progress_now(page) == (0, 123.5)


class _WatchedLock:
    """A holder's lock that says when a caller found it taken."""

    def __init__(self, taken: threading.Event) -> None:
        self.lock, self.taken = threading.Lock(), taken

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self.lock.acquire(blocking, timeout)
        if not got:
            self.taken.set()
        return got

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> _WatchedLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


async def test_a_call_cancelled_while_its_process_is_rebuilt_holds_the_holder_until_it_is(
        bfcl_data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session's call whose holder's process is being rebuilt from its log (in a thread) is
    cancelled: the next call waits for the rebuild, instead of sending its operation to the process
    while the log's operations are replayed into it (answers taken by the other, or the state not
    there yet)."""
    holder = backend_host.Holder()
    make = dict(_entry().make_op(), key="i")
    ls = {"op": "call", "key": "i", "text": "ls()"}
    either, go = threading.Event(), threading.Event()
    replaying = threading.Event()
    roundtrip, frame = backend_host.Holder._roundtrip_sync, backend_host._frame
    loop_thread = threading.current_thread()

    def paused(self: backend_host.Holder, op: backend_host.Op, deadline: float) -> Any:  # the log's replay
        replaying.set()
        assert go.wait(60)
        return roundtrip(self, op, deadline)

    def frame_seen(message: Any) -> bytes:
        if threading.current_thread() is loop_thread and message is ls:
            either.set()  # the second call sends its operation (before the fix: during the replay)
        return frame(message)

    try:
        assert await holder.arequest(make, deadline=backend_host.MAKE_DEADLINE_S, log=True) == {}
        assert "text" in await holder.arequest({"op": "call", "key": "i", "text": "mkdir(dir_name='kept')"}, log=True)
        holder._drop()  # as past a deadline: the next call rebuilds the state from the log, in a thread
        holder._lock = _WatchedLock(either)  # type: ignore[assignment]
        monkeypatch.setattr(backend_host.Holder, "_roundtrip_sync", paused)
        monkeypatch.setattr(backend_host, "_frame", frame_seen)
        first = asyncio.ensure_future(holder.arequest(ls))
        assert await asyncio.to_thread(replaying.wait, 60)  # its process started, its log not replayed yet
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        second = asyncio.ensure_future(holder.arequest(ls))
        assert await asyncio.to_thread(either.wait, 60)  # it waits for the holder (fixed), or sent its call
        go.set()
        answer = await second
        assert "kept" in answer.get("text", ""), answer
        assert not holder.take_lost() and len(holder.log) == 2
    finally:
        go.set()
        holder.close()


async def test_a_blocking_call_from_the_loop_whose_call_is_in_flight_is_refused_not_hung(
        bfcl_data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocking and event-loop calls share the holder's lock: a blocking call made on the event
    loop's thread while that loop's call holds the lock would wait for ever; it is refused."""
    holder = backend_host.Holder()
    make = dict(_entry().make_op(), key="i")
    replaying, go = threading.Event(), threading.Event()
    roundtrip = backend_host.Holder._roundtrip_sync

    def paused(self: backend_host.Holder, op: backend_host.Op, deadline: float) -> Any:
        replaying.set()
        assert go.wait(60)
        return roundtrip(self, op, deadline)

    try:
        assert await holder.arequest(make, deadline=backend_host.MAKE_DEADLINE_S, log=True) == {}
        holder._drop()
        monkeypatch.setattr(backend_host.Holder, "_roundtrip_sync", paused)
        call = asyncio.ensure_future(holder.arequest({"op": "call", "key": "i", "text": "ls()"}))
        assert await asyncio.to_thread(replaying.wait, 60)  # the loop's call holds the holder
        with pytest.raises(RuntimeError, match="from the thread that has one in progress"):
            holder.request({"op": "call", "key": "i", "text": "pwd()"})
        go.set()
        assert "error" not in await call
    finally:
        go.set()
        holder.close()


def test_a_holder_serves_calls_from_a_second_event_loop(bfcl_data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A holder's event-loop calls queue on a lock of their loop's: one lock for every loop was bound to
    the first loop whose calls waited on it, and a second loop's waiting calls failed ("bound to a
    different event loop")."""
    holder = backend_host.Holder()
    make = dict(_entry().make_op(), key="i")
    read = backend_host._aread_frame

    async def yielding(loop: Any, sock: Any) -> Any:  # a call in flight yields to the loop (its answer not yet read)
        await asyncio.sleep(0)
        return await read(loop, sock)

    monkeypatch.setattr(backend_host, "_aread_frame", yielding)

    async def together(name: str) -> list[Any]:  # the second call waits on the loop's lock for the first
        if not holder.log:
            assert await holder.arequest(make, deadline=backend_host.MAKE_DEADLINE_S, log=True) == {}
        return list(await asyncio.gather(
            holder.arequest({"op": "call", "key": "i", "text": f"mkdir(dir_name='{name}')"}, log=True),
            holder.arequest({"op": "call", "key": "i", "text": "ls()"})))

    try:
        first = asyncio.run(together("one"))
        second = asyncio.run(together("two"))  # a new loop
        assert "error" not in first[0] and "error" not in second[0], (first, second)
        assert "one" in second[1]["text"] and "two" in second[1]["text"], second
    finally:
        holder.close()
