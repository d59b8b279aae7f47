"""One sandbox worker process as the server sees it: its start (the hello), the JSON-lines
request/reply pipes and its end; what a call may use and what it produced (:class:`SandboxLimits`,
:class:`SandboxReply`); and whether this host lets a worker set up its namespaces
(:func:`namespace_support`). The pool that shares the workers between calls is
:class:`tool_specs.sandbox.SandboxPool`; the worker itself is ``tool_specs/_sandbox_worker.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tool_specs.results import MAX_RESULT_BYTES

__all__ = [
    "NamespaceSupport",
    "SandboxError",
    "SandboxLimits",
    "SandboxReply",
    "WORKER_SCRIPT",
    "WorkerProcess",
    "namespace_support",
]

WORKER_SCRIPT = Path(__file__).with_name("_sandbox_worker.py")
START_TIMEOUT_S = 30.0


class SandboxError(RuntimeError):
    """The sandbox itself could not do its job (a worker would not start, a required isolation
    feature is unavailable). A failing *tool* is never a SandboxError: it is a reply."""


@dataclass(frozen=True)
class SandboxLimits:
    """Per-call limits. ``memory_mb`` is address space on top of the preloaded interpreter."""

    wall_s: float = 5.0
    cpu_s: float = 5.0
    memory_mb: int = 512
    fsize_mb: int = 8
    scratch_mb: int = 32  # the call's private tmpfs (/tmp, its cwd); isolation "namespaces" only
    nofile: int = 32
    max_result_bytes: int = MAX_RESULT_BYTES

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_mb", "fsize_mb", "scratch_mb", "nofile", "max_result_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"sandbox limit {name} must be a positive number, got {value!r}")


@dataclass
class SandboxReply:
    """What one call produced. ``status``: ``ok`` (``value`` holds the function's return value,
    JSON-converted; anything not JSON becomes its ``repr``), ``exception`` (the tool raised;
    ``error`` is ``"<Type>: <message>"``), ``timeout``, ``killed`` (a CPU/memory/file-size limit),
    ``too_large``, ``crashed`` (no result, e.g. the worker died) or ``bad_request``."""

    status: str
    value: Any = None
    error: str | None = None
    error_type: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    worker_pid: int | None = None
    cold: bool = False  # this call started its worker

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class NamespaceSupport:
    """Whether this host lets a sandbox worker set up its namespaces (``ok``); else ``reason``.
    ``isolation`` is what a worker reported (namespaces, uid map, read-only paths, seccomp)."""

    ok: bool
    reason: str = ""
    isolation: dict[str, Any] = field(default_factory=dict)


_SUPPORT: dict[str, NamespaceSupport] = {}
_SUPPORT_LOCK = threading.Lock()


def namespace_support(python: str | None = None) -> NamespaceSupport:
    """Try the worker's namespace set-up once per interpreter and process (``--probe``: no
    preloads, about 50 ms) and say whether it works on this host, and why not."""
    exe = python or sys.executable
    with _SUPPORT_LOCK:
        if exe not in _SUPPORT:
            if not sys.platform.startswith("linux"):
                _SUPPORT[exe] = NamespaceSupport(False, f"kernel namespaces need Linux, not {sys.platform}")
            else:
                try:
                    proc = subprocess.run(
                        [exe, "-I", str(WORKER_SCRIPT), "--probe"], capture_output=True, timeout=START_TIMEOUT_S,
                        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}, cwd="/",
                    )
                    line = proc.stdout.decode("utf-8", "replace").strip().splitlines()
                    hello = json.loads(line[-1]) if line else {}
                except (OSError, subprocess.SubprocessError, ValueError) as exc:
                    hello = {"error": f"the probe did not run: {exc}"}
                if hello.get("ready"):
                    _SUPPORT[exe] = NamespaceSupport(True, isolation=dict(hello.get("isolation") or {}))
                else:
                    _SUPPORT[exe] = NamespaceSupport(False, str(hello.get("error") or "the probe gave no answer"))
        return _SUPPORT[exe]


class WorkerProcess:
    """One worker process and its pipes (used by one thread at a time)."""

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=cwd, env=env, start_new_session=True, close_fds=True, bufsize=0,
        )
        self.pid = self.proc.pid
        self._buf = b""
        self.calls = 0
        try:
            hello = self._read_line(time.monotonic() + START_TIMEOUT_S)
        except SandboxError:
            self.kill()
            raise
        if not hello.get("ready"):
            self.kill()
            if hello.get("error"):
                raise SandboxError(f"the sandbox worker could not isolate itself: {hello['error']}")
            raise SandboxError(f"sandbox worker sent an unexpected greeting: {hello!r}")
        self.hello = hello
        scratch = hello.get("scratch_root")  # isolation "none": the worker's own scratch directory
        self.scratch_root = scratch if isinstance(scratch, str) and os.path.basename(scratch).startswith("tool-sandbox-") else None

    def _read_line(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SandboxError("the sandbox worker did not answer in time")
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise SandboxError(f"the sandbox worker exited (code {self.proc.poll()})")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError as exc:
            raise SandboxError(f"the sandbox worker sent a malformed reply: {exc}") from exc
        if not isinstance(reply, dict):
            raise SandboxError(f"the sandbox worker sent a reply that is not a JSON object: {line[:200]!r}")
        return reply

    def request(self, req: dict[str, Any], deadline: float) -> dict[str, Any]:
        assert self.proc.stdin is not None
        data = json.dumps(req, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"
        try:
            self.proc.stdin.write(data)
        except OSError as exc:
            raise SandboxError(f"the sandbox worker is gone ({exc})") from exc
        self.calls += 1
        return self._read_line(deadline)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (the worker and any child it forked)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        if getattr(self, "scratch_root", None):  # a worker killed before it could remove it
            shutil.rmtree(str(self.scratch_root), ignore_errors=True)

    def stop(self) -> None:
        """Close the request pipe (the worker leaves on EOF), then make sure the group is gone."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        self.kill()

