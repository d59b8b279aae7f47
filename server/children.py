"""Every child process's life, one way: it exits with its parent, and it is stopped by asking (its
stdin closed, or whatever the caller's ``ask`` does), then SIGTERM, then SIGKILL, with one timeout,
:data:`STOP_TIMEOUT_S`, between the steps.

Used by each starter of processes: ``evals run``'s worker zygote and its MCP server child
(:mod:`evals.core.workers`, :mod:`evals.core.server_process`), ``evals serve --workers N``
(:mod:`server.serve_workers`) and a benchmark's backend zygote. A child is whatever has a ``pid`` and
says when it has exited: an ``asyncio.subprocess.Process``, a :class:`ForkedChild` (a child made by
``os.fork`` here, waited for through its pidfd), a ``subprocess.Popen`` or a
``multiprocessing.Process``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = ["STOP_TIMEOUT_S", "AsyncChild", "ForkedChild", "exit_with_parent", "stop_child", "stop_children"]

STOP_TIMEOUT_S = 10.0
"""How long a child is given to stop by itself, then after SIGTERM, before SIGKILL (one for every
kind of child)."""

PR_SET_PDEATHSIG = 1


class AsyncChild(Protocol):
    """A child process awaited on an event loop (``asyncio.subprocess.Process`` has this shape)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...

    def send_signal(self, sig: int) -> None: ...


class ForkedChild:
    """A child this process made with ``os.fork``, awaited without a child watcher: its pidfd (Linux)
    says when it has exited, then it is reaped here; where there is no pidfd, a poll. Any number of
    callers may wait at once."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd: int | None = None
        self._watching: asyncio.AbstractEventLoop | None = None
        self._exited: asyncio.Future[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                self._pidfd = os.pidfd_open(pid)

    def poll(self) -> int | None:
        """The exit code once it has exited (reaping it; -1 if another reaped it), else ``None``."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -1
            else:
                if pid == 0:
                    return None
                self.returncode = os.waitstatus_to_exitcode(status)
            if self._pidfd is not None:
                if self._watching is not None:
                    self._watching.remove_reader(self._pidfd)
                os.close(self._pidfd)
                self._pidfd = None
            if self._exited is not None and not self._exited.done():
                self._exited.set_result(None)
        return self.returncode

    async def _poll(self) -> None:
        while self.poll() is None:
            await asyncio.sleep(0.05)

    async def wait(self) -> int:
        if self.poll() is None:
            if self._exited is None:
                loop = asyncio.get_running_loop()
                self._exited = loop.create_future()
                if self._pidfd is not None:  # readable once it has exited
                    self._watching = loop
                    loop.add_reader(self._pidfd, self.poll)
                else:
                    self._poller = asyncio.create_task(self._poll())
            await asyncio.shield(self._exited)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                if self._pidfd is not None:
                    signal.pidfd_send_signal(self._pidfd, sig)
                else:
                    os.kill(self.pid, sig)


async def stop_child(child: AsyncChild, ask: Callable[[], None] | None = None, *, timeout: float = STOP_TIMEOUT_S) -> None:
    """Stop ``child``: ``ask`` (e.g. close its stdin: it stops by itself), then SIGTERM, then SIGKILL,
    each step after ``timeout`` seconds without an exit. Returns once it has exited (or, in the
    unlikely case that even SIGKILL left it, after a last ``timeout``)."""
    steps: list[Callable[[], None] | None] = [ask] if ask is not None else []
    steps += [lambda: child.send_signal(signal.SIGTERM), lambda: child.send_signal(signal.SIGKILL)]
    for step in steps:
        if child.returncode is not None:
            return
        if step is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                step()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(child.wait()), timeout)


def _alive(child: Any) -> bool:
    if isinstance(child, subprocess.Popen):
        return child.poll() is None
    return bool(child.is_alive())


def _wait(child: Any, timeout: float) -> None:
    if isinstance(child, subprocess.Popen):
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout)
    else:
        child.join(timeout)


def stop_children(children: Sequence[Any], ask: Callable[[], None] | None = None, *,
                  timeout: float = STOP_TIMEOUT_S) -> None:
    """:func:`stop_child`, blocking, for ``subprocess.Popen`` and ``multiprocessing.Process`` children,
    all at once: ``ask`` (or nothing), SIGTERM to those left, SIGKILL to those left after
    ``timeout``; each step waits at most ``timeout`` for all of them together."""
    steps: list[Callable[[Any], None] | None] = [None] if ask is not None else []
    steps += [lambda c: c.send_signal(signal.SIGTERM) if isinstance(c, subprocess.Popen) else c.terminate(),
              lambda c: c.kill()]
    if ask is not None:
        with contextlib.suppress(OSError):
            ask()
    for step in steps:
        left = [c for c in children if _alive(c)]
        if not left:
            return
        if step is not None:
            for c in left:
                with contextlib.suppress(ProcessLookupError):
                    step(c)
        deadline = time.monotonic() + timeout
        for c in left:
            _wait(c, max(0.0, deadline - time.monotonic()))


def exit_with_parent(parent: int, sig: signal.Signals = signal.SIGTERM) -> None:
    """In a child: have the kernel send it ``sig`` when its parent dies (Linux ``PR_SET_PDEATHSIG``;
    a no-op elsewhere), and send it now if ``parent`` (the pid it was started by, read before the
    fork) is gone already. The death signal is cleared by ``fork``: each process calls this itself,
    and the parent's thread that started it must live as long as the process does (the main one)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)
