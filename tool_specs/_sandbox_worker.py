"""The sandbox worker ("zygote"): runs untrusted tool code, one forked child per call.

This file is run as a script by :mod:`tool_specs.sandbox` (``python -I _sandbox_worker.py``),
usually inside a fresh network namespace (``unshare --net``), with a minimal environment, its cwd
in a scratch directory, and stdin/stdout as the request/reply pipes. It imports only the standard
library and never runs tool code itself: for every request it forks a child which

1. closes every inherited descriptor, sends stdin/stdout/stderr to ``/dev/null`` and asks the
   kernel to kill it when this process dies (``PR_SET_PDEATHSIG``);
2. drops to ``nobody`` (uid/gid 65534) when this process is root, so the kernel refuses writes
   outside its own scratch directory and reads of other users' files (``/proc/<pid>/environ``
   of the server included);
3. sets rlimits (soft = hard, so they cannot be raised again): ``RLIMIT_CPU``, ``RLIMIT_AS``
   (the preloaded interpreter's size plus the memory budget), ``RLIMIT_NPROC`` = 0 (no fork, no
   threads), ``RLIMIT_FSIZE``, ``RLIMIT_NOFILE``, ``RLIMIT_CORE`` = 0;
4. changes into the worker's scratch directory (emptied after every call), empties ``os.environ`` (only ``TMPDIR``
   pointing at the scratch directory is set) and installs an audit hook (:func:`sys.addaudithook`,
   which Python code cannot remove) that refuses sockets, processes (``os.system``, ``subprocess``,
   ``fork``, ``exec``, ``posix_spawn``), threads, ``ctypes``, signals to other processes, rlimit
   changes, frame/GC introspection, writes outside the scratch directory and reads under
   ``/proc`` other than the process's own entries;
5. compiles and runs the tool's code, calls the function with the arguments and writes one JSON
   reply to a private pipe, then ``os._exit``.

The worker waits for the reply with a wall-clock deadline and SIGKILLs the child when it passes.
A fresh child per call means no state leaks from one call (or one task) to the next while a call
still costs only a ``fork`` (about a millisecond): the interpreter start-up and the imports are
paid once per worker.

What the audit hook does not cover: code in C extensions that makes system calls directly (none
is importable that is not already loaded, and ``ctypes`` is blocked), and determined attacks on
the interpreter itself; the hard boundaries are the separate process, the kernel limits, the
network namespace and (when started as root) the unprivileged uid.

Protocol (one JSON object per line). Request: ``{"id", "code", "function", "arguments"
(or ``"batch"``: a list of argument objects, run one after the other in one child; the reply's
``value`` is then a list of ``{"ok", "value"|"error"}``), "limits": {"wall_s", "cpu_s", "memory_mb", "fsize_mb", "nofile", "max_result_bytes"}}``. Reply:
``{"id", "status": "ok"|"exception"|"timeout"|"killed"|"crashed"|"too_large"|"bad_request",
"value"?, "error"?, "wall_s", "cpu_s"}``. The first line the worker writes is a hello:
``{"ready": true, "pid", "uid", "drops_to", "preloaded", "failed_preloads"}``.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only (they are not evaluated: see the __future__ import)
    import resource
    from collections.abc import Callable

NOBODY = 65534
PR_SET_PDEATHSIG = 1

# Imported before any untrusted code runs, so that a child (which may be unable to read the
# interpreter's files once it is ``nobody``) finds them in ``sys.modules``.
PRELOAD = (
    "_strptime", "abc", "array", "ast", "base64", "binascii", "bisect", "calendar", "cmath",
    "codecs", "collections", "collections.abc", "contextlib", "copy", "csv", "dataclasses",
    "datetime", "decimal", "difflib", "enum", "fractions", "functools", "hashlib", "heapq",
    "html", "io", "itertools", "json", "keyword", "locale", "math", "numbers", "operator",
    "pprint", "random", "re", "statistics", "string", "struct", "textwrap", "time", "traceback",
    "typing", "unicodedata", "urllib.parse", "uuid", "warnings", "xml.dom.minidom",
    "xml.etree.ElementTree", "zoneinfo", "encodings.idna", "encodings.utf_16", "encodings.latin_1",
)
# Third-party modules some benchmark tools import; preloaded when installed, skipped otherwise.
OPTIONAL_PRELOAD = ("pytz", "dateutil", "dateutil.parser", "roman", "dicttoxml", "holidays", "babel")

BLOCKED_MODULES = frozenset({
    "ctypes", "_ctypes", "cffi", "subprocess", "_posixsubprocess", "socket", "_socket", "ssl",
    "_ssl", "multiprocessing", "_multiprocessing", "pty", "signal", "_signal", "resource",
    "asyncio", "concurrent", "threading", "_thread", "mmap", "fcntl", "termios", "select",
    "selectors", "http", "urllib.request", "ftplib", "smtplib", "telnetlib", "imaplib",
    "poplib", "nntplib", "xmlrpc", "webbrowser", "sqlite3", "_sqlite3", "gc",
})


class Blocked(PermissionError):
    """An operation the sandbox does not allow (the message names it)."""


def _preload() -> tuple[list[str], list[str]]:
    import importlib

    done, failed = [], []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
            done.append(name)
        except Exception:  # noqa: BLE001 - a missing optional stdlib part is not fatal
            failed.append(name)
    for name in OPTIONAL_PRELOAD:
        try:
            importlib.import_module(name)
            done.append(name)
        except Exception:  # noqa: BLE001
            pass
    return done, failed


def _make_hook(scratch: str, own_pid: int) -> Callable[[str, tuple[Any, ...]], None]:
    """The audit hook of one child. Everything it needs is bound here, as immutable values or
    references taken before the tool code runs (so patching ``os.path`` cannot fool it)."""
    realpath = os.path.realpath
    fspath = os.fspath
    join = os.path.join
    scratch_real = realpath(scratch)
    scratch_prefix = scratch_real.rstrip("/") + "/"
    proc_self = ("/proc/self", "/proc/thread-self", f"/proc/{own_pid}")
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    blocked_prefixes = (
        "socket.", "subprocess.", "ctypes.", "os.fork", "os.exec", "os.spawn", "os.posix_spawn",
        "os.kill", "os.killpg", "os.system", "os.startfile", "os.setuid", "os.setgid", "os.setreuid",
        "os.setregid", "os.setresuid", "os.setresgid", "os.setgroups", "os.setsid", "os.setpgid",
        "os.putenv", "os.unsetenv", "os.chroot", "os.mkfifo", "os.mknod", "pty.", "resource.",
        "_thread.", "signal.", "gc.", "sys._current_frames", "sys.settrace", "os.chdir",
        "sys.setprofile", "sys.addaudithook", "sys.monitoring",
        "code.__new__", "function.__new__", "mmap.", "winreg.", "msvcrt.", "marshal.load",
        "cpython.remote_debugger", "cpython._PySys_ClearAuditHooks", "webbrowser.", "urllib.Request",
        "ftplib.", "smtplib.", "telnetlib.", "http.client.", "imaplib.", "poplib.", "nntplib.",
        "sqlite3.", "shutil.chown", "os.chflags", "os.lchflags", "os.listxattr",
    )
    path_write_events = {
        "os.remove": 1, "os.rmdir": 1, "os.mkdir": 1, "os.chmod": 1, "os.chown": 1,
        "os.truncate": 1, "os.utime": 1, "os.setxattr": 1, "os.removexattr": 1,
        "os.rename": 2, "os.link": 2, "os.symlink": 2, "shutil.copyfile": 2, "shutil.copymode": 2,
        "shutil.copystat": 2, "shutil.copytree": 2, "shutil.move": 2, "shutil.rmtree": 1,
        "shutil.make_archive": 1, "shutil.unpack_archive": 2,
    }
    blocked_modules = BLOCKED_MODULES
    err = Blocked

    def resolved(path: Any) -> str | None:
        """The real absolute path (relative to the scratch directory), or None when it has none."""
        try:
            text = fspath(path)
            if isinstance(text, bytes):
                text = text.decode("utf-8", "surrogateescape")
            return realpath(join(scratch_real, text))
        except Exception:  # noqa: BLE001
            return None

    def inside(path: object) -> bool:
        if isinstance(path, int):
            return True  # an already open descriptor: opening it was checked
        full = resolved(path)
        return full is not None and (full == scratch_real or full.startswith(scratch_prefix))

    def readable(path: object) -> bool:
        if isinstance(path, int):
            return True
        full = resolved(path)
        if full is None:
            return False
        if full == "/proc" or full.startswith("/proc/"):
            return any(full == p or full.startswith(p + "/") for p in proc_self)
        return True

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & write_flags
            )
            if writing and mode is None and not (isinstance(path, str | bytes) and path[:1] in ("/", b"/")):
                raise err(f"sandbox: os.open for writing needs an absolute path ({path!r})")  # dir_fd escapes
            if writing and not inside(path):
                raise err(f"sandbox: writing outside the scratch directory is not allowed ({path!r})")
            if not writing and not readable(path):
                raise err(f"sandbox: reading {path!r} is not allowed")
            return
        if event == "import":
            name = args[0] if args else ""
            if isinstance(name, str) and (name in blocked_modules or name.split(".")[0] in blocked_modules):
                raise err(f"sandbox: importing {name!r} is not allowed")
            return
        if event in path_write_events:
            for path in tuple(args)[: path_write_events[event]]:
                if not inside(path):
                    raise err(f"sandbox: {event} outside the scratch directory is not allowed ({path!r})")
            return
        if event == "object.__setattr__" and len(args) > 1 and args[1] in ("__code__", "__defaults__", "__kwdefaults__", "__closure__"):
            raise err(f"sandbox: setting {args[1]} is not allowed")
        if event.startswith(blocked_prefixes):
            raise err(f"sandbox: {event} is not allowed")

    return hook


def _set_limits(limits: dict[str, Any], drop_to: int | None) -> None:
    import resource

    def hard(which: int, value: int) -> None:
        resource.setrlimit(which, (value, value))

    if drop_to is not None:
        os.setgroups([])
        os.setgid(drop_to)
        os.setuid(drop_to)
    cpu = max(1, int(round(float(limits.get("cpu_s", 5)))))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    with open("/proc/self/statm") as fh:  # address space already mapped (the preloaded interpreter)
        pages = int(fh.read().split()[0])
    base = pages * os.sysconf("SC_PAGE_SIZE")
    hard(resource.RLIMIT_AS, base + int(limits.get("memory_mb", 512)) * 1024 * 1024)
    hard(resource.RLIMIT_FSIZE, int(limits.get("fsize_mb", 8)) * 1024 * 1024)
    hard(resource.RLIMIT_NOFILE, int(limits.get("nofile", 32)))
    hard(resource.RLIMIT_NPROC, 0)
    hard(resource.RLIMIT_CORE, 0)


def _strip_traceback_lines(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _child(request: dict[str, Any], scratch: str, wfd: int, drop_to: int | None) -> None:
    """Runs in the forked child; never returns."""
    payload: dict[str, Any]
    status, payload = "crashed", {"error": "the child did not finish"}
    # the reply path keeps its own references: tool code may overwrite json.dumps, os.write...
    dumps, write, exit_, memview = json.dumps, os.write, os._exit, memoryview
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        for name in os.listdir("/proc/self/fd"):  # every inherited descriptor but the reply pipe
            fd = int(name)
            if fd > 2 and fd != wfd:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if _LIBC is not None:
            try:
                _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            except Exception:  # noqa: BLE001 - without it the wall-clock kill still applies
                pass
        for name in [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]:
            del sys.modules[name]  # a later ``import ctypes`` raises the (blocked) import event
        if os.getppid() == 1:
            os._exit(1)
        os.chdir(scratch)
        _set_limits(request.get("limits") or {}, drop_to)
        os.environ.clear()
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = scratch
        os.umask(0o077)
        code = request["code"]
        function = request["function"]
        arguments = request.get("arguments") or {}
        sys.addaudithook(_make_hook(scratch, os.getpid()))
        namespace: dict[str, Any] = {"__name__": "__tool__", "__builtins__": __builtins__}
        try:
            compiled = compile(code, f"<tool {function}>", "exec")
            exec(compiled, namespace)  # noqa: S102 - this is the sandbox
            fn = namespace.get(function)
            if not callable(fn):
                defined = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("__"))
                raise NameError(f"the tool code defines no function {function!r} (it defines: {', '.join(defined) or 'nothing'})")
            if isinstance(request.get("batch"), list):  # many calls of one tool in one child
                values = []
                for args in request["batch"]:
                    try:
                        values.append({"ok": True, "value": fn(**args)})
                    except Exception as exc:  # noqa: BLE001
                        values.append({"ok": False, "error": _strip_traceback_lines(exc)})
                status, payload = "ok", {"value": values}
            else:
                value = fn(**arguments)
                status, payload = "ok", {"value": value}
        except BaseException as exc:  # noqa: BLE001 - every failure is a reply
            status, payload = "exception", {"error": _strip_traceback_lines(exc), "error_type": type(exc).__name__}
    except BaseException as exc:  # noqa: BLE001 - set-up failed
        status, payload = "crashed", {"error": f"sandbox set-up failed: {type(exc).__name__}: {exc}"}
    try:
        try:
            data = dumps({"status": status, **payload}, ensure_ascii=False, default=repr, allow_nan=True)
        except BaseException as exc:  # noqa: BLE001 - e.g. a recursive structure
            data = dumps({"status": "exception", "error": f"the result could not be serialised: {type(exc).__name__}: {exc}"})
        view = memview(data.encode("utf-8", "surrogatepass"))
        while view:
            n = write(wfd, view)
            view = view[n:]
    finally:
        exit_(0)


def _cpu_of(rusage: resource.struct_rusage) -> float:
    return round(rusage.ru_utime + rusage.ru_stime, 4)


def _scratch_dir(scratch_root: str, drop_to: int | None) -> str:
    """This worker's scratch directory (owned by the child's uid), emptied after every call so
    that nothing one call writes is seen by the next."""
    path = os.path.join(scratch_root, f"w{os.getpid()}")
    if not os.path.isdir(path):
        os.mkdir(path, 0o700)
        if drop_to is not None:
            os.chown(path, drop_to, drop_to)
    return path


def _empty(path: str) -> None:
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass


def _run(request: dict[str, Any], scratch_root: str, drop_to: int | None) -> dict[str, Any]:
    limits = request.get("limits") or {}
    wall = float(limits.get("wall_s", 5.0))
    max_bytes = int(limits.get("max_result_bytes", 1 << 20))
    scratch = _scratch_dir(scratch_root, drop_to)
    rfd, wfd = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(rfd)
        _child(request, scratch, wfd, drop_to)
    os.close(wfd)
    chunks, size, outcome = [], 0, None
    deadline = t0 + wall
    try:
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                outcome = "timeout"
                break
            ready, _, _ = select.select([rfd], [], [], left)
            if not ready:
                continue
            chunk = os.read(rfd, 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                outcome = "too_large"
                break
            chunks.append(chunk)
    finally:
        os.close(rfd)
        if outcome is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status, rusage = os.wait4(pid, 0)
        _empty(scratch)
    elapsed = round(time.perf_counter() - t0, 6)
    base = {"id": request.get("id"), "wall_s": elapsed, "cpu_s": _cpu_of(rusage)}
    if outcome == "timeout":
        return {**base, "status": "timeout", "error": f"the tool call ran longer than {wall:g} s (wall clock) and was stopped"}
    if outcome == "too_large":
        return {**base, "status": "too_large", "error": f"the tool's result is larger than {max_bytes} bytes"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        causes: dict[int, str] = {signal.SIGXCPU: "its CPU time limit", signal.SIGKILL: "a limit (CPU time or memory)",
                                  signal.SIGXFSZ: "its file-size limit", signal.SIGSEGV: "a crash (segmentation fault)"}
        what = causes.get(sig, "a signal")
        return {**base, "status": "killed", "error": f"the tool call was stopped by {what} ({signal.Signals(sig).name})"}
    try:
        reply = json.loads(b"".join(chunks).decode("utf-8", "surrogatepass"))
    except ValueError:
        return {**base, "status": "crashed", "error": "the tool call ended without a result"}
    return {**base, **reply}


_LIBC = None


def main() -> int:
    global _LIBC
    try:
        import ctypes

        _LIBC = ctypes.CDLL(None, use_errno=True)
    except Exception:  # noqa: BLE001 - no PR_SET_PDEATHSIG then
        _LIBC = None
    scratch_root = os.getcwd()
    drop_to = NOBODY if "--drop-to-nobody" in sys.argv[1:] else None
    done, failed = _preload()
    import gc
    import resource  # noqa: F401 - used by every child; imported once here

    gc.freeze()  # the preloaded objects are never collected, so children do not copy their pages
    out = sys.stdout.buffer
    inp = sys.stdin.buffer

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj, ensure_ascii=False, default=repr).encode("utf-8", "surrogatepass") + b"\n")
        out.flush()

    send({"ready": True, "pid": os.getpid(), "uid": os.getuid(), "drops_to": drop_to,
          "preloaded": len(done), "failed_preloads": failed})
    while True:
        line = inp.readline()
        if not line:
            return 0  # the server closed the pipe (or died): leave
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("code"), str) or not isinstance(request.get("function"), str):
                raise ValueError("a request needs 'code' and 'function' strings")
            if not isinstance(request.get("arguments", {}), dict):
                raise ValueError("'arguments' must be an object")
            batch = request.get("batch")
            if batch is not None and not (isinstance(batch, list) and all(isinstance(b, dict) for b in batch)):
                raise ValueError("'batch' must be a list of argument objects")
        except ValueError as exc:
            send({"id": None, "status": "bad_request", "error": str(exc)})
            continue
        try:
            reply = _run(request, scratch_root, drop_to)
        except Exception as exc:  # noqa: BLE001 - keep serving
            reply = {"id": request.get("id"), "status": "crashed", "error": f"sandbox worker error: {type(exc).__name__}: {exc}"}
        send(reply)


if __name__ == "__main__":
    sys.exit(main())
