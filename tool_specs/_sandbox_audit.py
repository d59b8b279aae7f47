"""The sandbox's audit hook: a tripwire in each call's child (not the boundary; the kernel is).

Loaded by ``tool_specs/_sandbox_worker.py`` from its file (the worker runs as a script under
``python -I``); it imports only the standard library.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only (they are not evaluated: see the __future__ import)
    from collections.abc import Callable

BLOCKED_MODULES = frozenset({
    "ctypes", "_ctypes", "cffi", "subprocess", "_posixsubprocess", "socket", "_socket", "ssl",
    "_ssl", "multiprocessing", "_multiprocessing", "pty", "signal", "_signal", "resource",
    "asyncio", "concurrent", "threading", "_thread", "mmap", "fcntl", "termios", "select",
    "selectors", "http", "urllib.request", "ftplib", "smtplib", "telnetlib", "imaplib",
    "poplib", "nntplib", "xmlrpc", "webbrowser", "sqlite3", "_sqlite3", "gc",
})


class Blocked(PermissionError):
    """An operation the sandbox does not allow (the message names it)."""



def make_hook(scratch: str, own_pid: int) -> Callable[[str, tuple[Any, ...]], None]:
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

