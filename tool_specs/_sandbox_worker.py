"""The sandbox worker ("zygote"): runs untrusted tool code, one fresh child per call.

This file is run as a script by :mod:`tool_specs.sandbox` (``python -I _sandbox_worker.py``) with
a minimal environment and stdin/stdout as the request/reply pipes. It imports only the standard
library and never runs tool code itself.

**Isolation "namespaces"** (the default; the kernel is the boundary). At start-up, after
preloading the standard library, the worker

1. enters a new user, mount, network, IPC and UTS namespace (``unshare(2)``); its uid inside is 0
   and maps to ``nobody`` (65534) on the host when the server runs as root (a short-lived helper
   process outside writes the map), else to the server's own uid;
2. builds a new root on a small tmpfs: ``/usr``, the interpreter's prefix and the ``sys.path``
   directories bound read-only at their own paths, ``/dev/{null,zero,random,urandom}``, an empty
   ``/tmp`` mount point; no ``/proc``, ``/sys``, ``/home``, ``/dev/shm``, no checkout (only the
   virtual environment's ``site-packages``, read-only); ``pivot_root`` into it, detaches the old
   root and remounts the new one read-only. The network namespace has only a down loopback.

For every request it then clones a child (``clone(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC)``), which

1. is process 1 of its own PID namespace: when it exits, the kernel kills every process left in
   the namespace, so nothing a call starts outlives it (and it sees no other process); it leaves
   the worker's session (``setsid``), so it cannot signal the worker's process group either. Its
   own IPC namespace goes with it, and with it any System V or POSIX IPC object (shared memory,
   message queue, semaphore) the call made: the next call cannot find one, and no shared memory
   outlives the call;
2. mounts a private tmpfs of ``scratch_mb`` on ``/tmp`` (its cwd and ``TMPDIR``) in its own mount
   namespace: no other call can see it, and it vanishes with the call (nothing on the host's disk);
3. sets rlimits (soft = hard; for ``RLIMIT_CPU`` the hard limit is 1 s higher, and as a PID
   namespace's init ignores the soft limit's ``SIGXCPU``, the hard limit's SIGKILL ends it): ``RLIMIT_CPU``, ``RLIMIT_AS`` (the preloaded interpreter's size
   plus the memory budget), ``RLIMIT_NPROC`` = 0, ``RLIMIT_FSIZE``, ``RLIMIT_NOFILE``,
   ``RLIMIT_CORE`` = 0;
4. drops every capability (effective, permitted, inheritable; the worker already emptied the
   bounding and ambient sets and locked the securebits), sets ``no_new_privs`` and
   ``PR_SET_PDEATHSIG``, and loads a seccomp filter
   (generated once per worker by libseccomp, when installed) that refuses ``socket``,
   ``ptrace``, ``mount``, ``unshare``, ``setns``, ``clone``/``fork``, ``execve``, ``bpf``,
   ``keyctl``, ``io_uring``, the System V and POSIX IPC calls (``shmget``, ``msgget``, ``semget``,
   ``mq_open``...) and other kernel attack surface;
5. installs the audit hook below (a tripwire, not the boundary), runs the tool's code and writes
   one JSON reply to a private pipe, then ``os._exit``.

**Isolation "none"** (only when the user explicitly allowed it: no namespaces on this host). The
worker makes its own scratch directory (removed when it leaves, also when the server is killed:
the worker sees the request pipe close), forks a plain child per call, drops it to ``nobody`` when
root, and relies on rlimits and the audit hook, which native code can bypass.

The worker waits for the reply with a wall-clock deadline and SIGKILLs the child when it passes;
when its request pipe closes during a call (the server is gone) it kills the call and leaves.
A fresh child per call means no state leaks from one call (or one task) to the next while a call
still costs only a ``clone`` (about a millisecond): the interpreter start-up and the imports are
paid once per worker.

Protocol (one JSON object per line). Request: ``{"id", "code", "function", "arguments"
(or ``"batch"``: a list of argument objects, run one after the other in one child; the reply's
``value`` is then a list of ``{"ok", "value"|"error"}``), "limits": {"wall_s", "cpu_s", "memory_mb", "fsize_mb", "scratch_mb", "nofile", "max_result_bytes"}}``. Reply:
``{"id", "status": "ok"|"exception"|"timeout"|"killed"|"crashed"|"too_large"|"bad_request",
"value"?, "error"?, "wall_s", "cpu_s"}``. The first line the worker writes is a hello:
``{"ready": true, "pid", "uid", "isolation", "preloaded", "failed_preloads"}`` (or ``{"ready":
false, "error"}`` when the isolation could not be set up). ``--probe`` sets the isolation up
without preloading, answers one such line and exits.
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


# ---- kernel isolation ---------------------------------------------------------------------------

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT = 38, 22, 24, 28, 47
PR_CAP_AMBIENT_CLEAR_ALL, SECCOMP_MODE_FILTER = 4, 2
# NOROOT, NO_SETUID_FIXUP, KEEP_CAPS (locked off), NO_CAP_AMBIENT_RAISE; each with its lock bit
SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYSCALLS = {"x86_64": {"clone": 56, "pivot_root": 155}, "aarch64": {"clone": 220, "pivot_root": 41}}
# Refused by the per-call seccomp filter (EPERM; clone3 ENOSYS). Names libseccomp does not know on
# this architecture are skipped.
SECCOMP_DENY = (
    "socket", "socketpair", "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
    "pivot_root", "chroot", "unshare", "setns", "clone", "fork", "vfork", "execve", "execveat",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "reboot", "swapon", "swapoff", "syslog", "acct",
    "open_by_handle_at", "name_to_handle_at", "fsopen", "fsconfig", "fsmount", "fspick", "open_tree",
    "move_mount", "mount_setattr", "quotactl", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "sethostname", "setdomainname", "vhangup", "iopl", "ioperm", "uselib", "personality",
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "kcmp", "mbind", "migrate_pages", "move_pages",
    "set_mempolicy", "fanotify_init", "memfd_secret", "modify_ldt", "lookup_dcookie",
    # System V and POSIX IPC: no tool needs them (each call also has its own IPC namespace)
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
    "semtimedop", "semctl", "ipc", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr",
)


class IsolationError(OSError):
    """The kernel refused a step of the namespace set-up (the message names it)."""


class _Isolation:
    """The namespaces of one worker and what each call's child needs to enter its own."""

    def __init__(self) -> None:
        import ctypes
        import platform

        self.ctypes = ctypes
        machine = platform.machine()
        if machine not in SYSCALLS or not sys.platform.startswith("linux"):
            raise IsolationError(f"namespace isolation supports Linux on {', '.join(SYSCALLS)}, not {sys.platform}/{machine}")
        self.nr = SYSCALLS[machine]
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.pylibc = ctypes.PyDLL(None, use_errno=True)  # keeps the GIL: used for clone()
        self.api = ctypes.pythonapi
        for fn in (self.libc.mount, self.libc.umount2, self.libc.unshare, self.libc.prctl, self.libc.capset):
            fn.restype = ctypes.c_int
        self.pylibc.syscall.restype = ctypes.c_long
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            self.cap_last = int(fh.read())
        self.seccomp: bytes | None = None
        self.seccomp_error: str | None = None
        self._statm = -1
        self._life_r = self._life_w = -1
        self.host_uid = os.geteuid()
        self.maps_to = NOBODY if self.host_uid == 0 else self.host_uid

    # -- helpers --
    def _check(self, ret: int, what: str) -> None:
        if ret != 0:
            err = self.ctypes.get_errno()
            raise IsolationError(err, f"{what}: {os.strerror(err)}")

    def _mount(self, src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None) -> None:
        c = self.ctypes
        ret = self.libc.mount(src and src.encode(), dst.encode(), fstype and fstype.encode(), c.c_ulong(flags),
                              data and data.encode())
        self._check(ret, f"mount {src or fstype or ''} on {dst}")

    def _prctl(self, option: int, arg: int = 0, what: str = "prctl") -> None:
        c = self.ctypes
        self._check(self.libc.prctl(c.c_int(option), c.c_ulong(arg), c.c_ulong(0), c.c_ulong(0), c.c_ulong(0)), what)

    # -- worker set-up (once) --
    def setup(self) -> None:
        """Enter the worker's namespaces and pivot into the read-only root."""
        # what the new root shows, read-only; opened before the uid changes (the interpreter may
        # live under a directory only root can traverse)
        binds = ["/usr", os.path.realpath(sys.base_prefix)]
        checkout = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for entry in sys.path:  # the checkout itself (or a directory holding it) is never shown
            path = os.path.realpath(entry) if entry else ""
            if not path or not os.path.isdir(path) or path == "/":
                continue
            if (checkout == path or checkout.startswith(path.rstrip("/") + "/")
                    or (path.startswith(checkout + "/") and "site-packages" not in path)):
                continue
            binds.append(path)
        keep: list[str] = []
        for path in sorted(set(binds)):
            if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in keep):
                keep.append(path)
        self._statm = os.open("/proc/self/statm", os.O_RDONLY)  # VM size, read later without /proc
        self._seccomp_filter()
        r, w = os.pipe()
        helper = os.fork() if self.host_uid == 0 else 0
        if self.host_uid == 0 and helper == 0:  # outside the new namespace: writes the uid map
            code = 1
            try:
                os.close(w)
                if os.read(r, 1) == b"u":
                    ppid = os.getppid()
                    for name in ("uid_map", "gid_map"):
                        with open(f"/proc/{ppid}/{name}", "w") as fh:
                            fh.write(f"0 {NOBODY} 1\n")
                    code = 0
            finally:
                os._exit(code)
        os.close(r)
        try:
            self._check(self.libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
                        "unshare(user, mount, net, ipc, uts namespaces)")
            fds = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in keep}
            dev = {name: os.open(f"/dev/{name}", os.O_PATH) for name in ("null", "zero", "random", "urandom")
                   if os.path.exists(f"/dev/{name}")}
            if self.host_uid == 0:
                os.write(w, b"u")
                os.close(w)
                w = -1
                _, status = os.waitpid(helper, 0)
                if status != 0:
                    raise IsolationError("could not map the sandbox's uid to nobody (writing uid_map failed)")
                os.setresgid(0, 0, 0)
                os.setgroups([])
                os.setresuid(0, 0, 0)  # now host uid 65534, with capabilities in the new namespaces only
            else:
                for name, text in (("setgroups", "deny"), ("uid_map", f"0 {self.host_uid} 1\n"),
                                   ("gid_map", f"0 {os.getegid()} 1\n")):
                    with open(f"/proc/self/{name}", "w") as fh:
                        fh.write(text)
            self._build_root(fds, dev)
            for fd in (*fds.values(), *dev.values()):
                os.close(fd)
        finally:
            if w >= 0:
                os.close(w)
        self._life_r, self._life_w = os.pipe()  # a child sees EOF on _life_r once the worker is gone
        self.keep = keep
        # Once for the worker and every child it clones (they only matter at execve, which the
        # worker never calls): no root privileges on exec, no capability in the bounding or
        # ambient set. Each child then clears its own effective/permitted set (lock_down).
        self._prctl(PR_SET_SECUREBITS, SECUREBITS, "PR_SET_SECUREBITS")
        for cap in range(self.cap_last + 1):
            self._prctl(PR_CAPBSET_DROP, cap, "PR_CAPBSET_DROP")
        self._prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, "PR_CAP_AMBIENT_CLEAR_ALL")
        c = self.ctypes
        self._cap_header = (c.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)  # capset(): all sets empty
        self._cap_data = (c.c_uint32 * 6)()

    def _build_root(self, fds: dict[str, int], dev: dict[str, int]) -> None:
        new = "/tmp"  # the mount point of the new root (shadowed in this mount namespace only)
        self._mount(None, "/", None, MS_REC | MS_PRIVATE)
        self._mount("sandbox-root", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=256k,nr_inodes=512,mode=0755")
        for path, fd in fds.items():
            os.makedirs(new + path, mode=0o755, exist_ok=True)
            self._mount(f"/proc/self/fd/{fd}", new + path, None, MS_BIND | MS_REC)
            self._mount(None, new + path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            if os.path.islink("/" + name) and not os.path.lexists(new + "/" + name):
                os.symlink(os.readlink("/" + name), new + "/" + name)
        os.makedirs(new + "/etc", mode=0o755, exist_ok=True)
        if os.path.islink("/etc/localtime"):
            os.symlink(os.readlink("/etc/localtime"), new + "/etc/localtime")
        os.makedirs(new + "/dev", mode=0o755, exist_ok=True)
        for name, fd in dev.items():
            open(new + "/dev/" + name, "w").close()
            self._mount(f"/proc/self/fd/{fd}", new + "/dev/" + name, None, MS_BIND)
        for d in ("tmp", ".old"):
            os.makedirs(new + "/" + d, mode=0o755, exist_ok=True)
        os.chdir(new)
        c = self.ctypes
        self._check(int(self.libc.syscall(c.c_long(self.nr["pivot_root"]), b".", b".old")), "pivot_root")
        os.chdir("/")
        self._check(self.libc.umount2(b"/.old", c.c_int(MNT_DETACH)), "umount the old root")
        os.rmdir("/.old")
        self._mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)

    def _seccomp_filter(self) -> None:
        """The per-call filter as BPF, generated once by libseccomp (no filter when it is absent)."""
        import ctypes as c
        try:
            lib = c.CDLL("libseccomp.so.2", use_errno=True)
        except OSError as exc:
            self.seccomp_error = f"libseccomp is not installed ({exc})"
            return
        lib.seccomp_init.restype = c.c_void_p
        lib.seccomp_init.argtypes = [c.c_uint32]
        lib.seccomp_rule_add.argtypes = [c.c_void_p, c.c_uint32, c.c_int, c.c_uint]
        lib.seccomp_syscall_resolve_name.argtypes = [c.c_char_p]
        lib.seccomp_export_bpf.argtypes = [c.c_void_p, c.c_int]
        lib.seccomp_release.argtypes = [c.c_void_p]
        allow, errno_action = 0x7FFF0000, 0x00050000
        ctx = lib.seccomp_init(allow)
        if not ctx:
            self.seccomp_error = "seccomp_init failed"
            return
        try:
            import errno

            for name in (*SECCOMP_DENY, "clone3"):
                nr = lib.seccomp_syscall_resolve_name(name.encode())
                if nr < 0:
                    continue
                code = errno.ENOSYS if name == "clone3" else errno.EPERM
                if lib.seccomp_rule_add(ctx, errno_action | code, nr, 0) != 0:
                    self.seccomp_error = f"seccomp_rule_add({name}) failed"
                    return
            r, w = os.pipe()
            try:
                ret = lib.seccomp_export_bpf(ctx, w)
            finally:
                os.close(w)
            data = b""
            while chunk := os.read(r, 65536):
                data += chunk
            os.close(r)
            if ret != 0 or not data or len(data) % 8:
                self.seccomp_error = f"seccomp_export_bpf failed ({ret})"
                return
            self.seccomp = data
            # the sock_fprog the child hands to prctl, built now
            self._bpf_buf = c.create_string_buffer(data, len(data))

            class SockFprog(c.Structure):
                _fields_ = [("len", c.c_ushort), ("filter", c.c_void_p)]

            self._fprog = SockFprog(len(data) // 8, c.cast(self._bpf_buf, c.c_void_p))
        finally:
            lib.seccomp_release(ctx)

    def vm_bytes(self) -> int:
        """The worker's mapped address space now (its children start with the same)."""
        pages = int(os.pread(self._statm, 64, 0).split()[0])
        return pages * os.sysconf("SC_PAGE_SIZE")

    def describe(self) -> dict[str, Any]:
        return {"kind": "namespaces", "namespaces": ["user", "mount", "pid (per call)", "net", "ipc (per call)", "uts"],
                "uid": f"0 inside, {self.maps_to} on the host", "read_only": self.keep,
                "seccomp": "libseccomp deny-list" if self.seccomp else f"none: {self.seccomp_error}",
                "capabilities": "none", "no_new_privs": True}

    # -- per call --
    def clone(self) -> int:
        """fork() into a new PID, mount and IPC namespace: 0 in the child, its pid in the worker."""
        c = self.ctypes
        self.api.PyOS_BeforeFork()
        flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | signal.SIGCHLD
        pid = int(self.pylibc.syscall(c.c_long(self.nr["clone"]), c.c_ulong(flags),
                                      c.c_ulong(0), c.c_ulong(0), c.c_ulong(0), c.c_ulong(0)))
        if pid == 0:
            self.api.PyOS_AfterFork_Child()
            return 0
        err = c.get_errno()
        self.api.PyOS_AfterFork_Parent()
        if pid < 0:
            raise IsolationError(err, f"clone(new PID, mount and IPC namespace): {os.strerror(err)}")
        return pid

    def enter_call(self, scratch_mb: int) -> None:
        """In the child: the private scratch tmpfs, and the end of the worker's lifeline."""
        self._prctl(1, signal.SIGKILL, "PR_SET_PDEATHSIG")  # 1 = PR_SET_PDEATHSIG
        os.close(self._life_w)
        ready, _, _ = select.select([self._life_r], [], [], 0)
        if ready:  # the worker died before PR_SET_PDEATHSIG took effect
            os._exit(1)
        os.setsid()  # out of the worker's process group: kill(0, ...) reaches no process but its own
        self._mount("scratch", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
                    f"size={max(1, int(scratch_mb))}m,nr_inodes=4096,mode=0700")
        os.chdir("/tmp")

    def lock_down(self) -> None:
        """In the child, after the rlimits: no capability left (the bounding and ambient sets are
        already empty, the securebits locked: see :meth:`setup`), no new privileges, the seccomp
        filter."""
        c = self.ctypes
        self._check(self.libc.capset(self._cap_header, self._cap_data), "capset")
        self._prctl(PR_SET_NO_NEW_PRIVS, 1, "PR_SET_NO_NEW_PRIVS")
        if self.seccomp is not None:
            self._check(self.libc.prctl(c.c_int(PR_SET_SECCOMP), c.c_ulong(SECCOMP_MODE_FILTER),
                                        c.byref(self._fprog), c.c_ulong(0), c.c_ulong(0)), "seccomp")


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


def _set_limits(limits: dict[str, Any], drop_to: int | None, base_vm: int) -> None:
    import resource

    def hard(which: int, value: int) -> None:
        resource.setrlimit(which, (value, value))

    if drop_to is not None:
        os.setgroups([])
        os.setgid(drop_to)
        os.setuid(drop_to)
    cpu = max(1, int(round(float(limits.get("cpu_s", 5)))))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    hard(resource.RLIMIT_AS, base_vm + int(limits.get("memory_mb", 512)) * 1024 * 1024)
    hard(resource.RLIMIT_FSIZE, int(limits.get("fsize_mb", 8)) * 1024 * 1024)
    hard(resource.RLIMIT_NOFILE, int(limits.get("nofile", 32)))
    hard(resource.RLIMIT_NPROC, 0)
    hard(resource.RLIMIT_CORE, 0)


def _vm_bytes_from_proc() -> int:
    with open("/proc/self/statm") as fh:  # address space already mapped (the preloaded interpreter)
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _strip_traceback_lines(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _child(request: dict[str, Any], scratch: str, wfd: int, drop_to: int | None, iso: _Isolation | None) -> None:
    """Runs in the forked (or cloned) child; never returns."""
    payload: dict[str, Any]
    status, payload = "crashed", {"error": "the child did not finish"}
    # the reply path keeps its own references: tool code may overwrite json.dumps, os.write...
    dumps, write, exit_, memview = json.dumps, os.write, os._exit, memoryview
    try:
        limits = request.get("limits") or {}
        if iso is not None:
            base_vm = iso.vm_bytes()
            iso.enter_call(int(limits.get("scratch_mb", 32)))
        else:
            base_vm = _vm_bytes_from_proc()
            if _LIBC is not None:
                try:
                    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                except Exception:  # noqa: BLE001 - without it the wall-clock kill still applies
                    pass
            if os.getppid() == 1:
                os._exit(1)
            os.chdir(scratch)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, wfd)  # every inherited descriptor but the reply pipe
        os.closerange(wfd + 1, 1 << 20)
        _set_limits(limits, drop_to, base_vm)
        if iso is not None:
            iso.lock_down()
        for name in [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]:
            del sys.modules[name]  # a later ``import ctypes`` raises the (blocked) import event
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


def _run(request: dict[str, Any], scratch_root: str | None, drop_to: int | None, iso: _Isolation | None) -> dict[str, Any]:
    limits = request.get("limits") or {}
    wall = float(limits.get("wall_s", 5.0))
    max_bytes = int(limits.get("max_result_bytes", 1 << 20))
    scratch = "/tmp" if scratch_root is None else _scratch_dir(scratch_root, drop_to)
    rfd, wfd = os.pipe()
    t0 = time.perf_counter()
    pid = iso.clone() if iso is not None else os.fork()
    if pid == 0:  # the child
        os.close(rfd)
        _child(request, scratch, wfd, drop_to, iso)
    os.close(wfd)
    chunks, size, outcome = [], 0, None
    deadline = t0 + wall
    try:
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                outcome = "timeout"
                break
            ready, _, _ = select.select([rfd, 0], [], [], left)
            if 0 in ready:  # no request comes during a call: the server closed the pipe (it is gone)
                outcome = "server_gone"
                break
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
        if scratch_root is not None:
            _empty(scratch)
    if outcome == "server_gone":
        raise SystemExit(0)  # the child is gone; main() removes what this worker made
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


def _hello_error(exc: BaseException) -> dict[str, Any]:
    return {"ready": False, "error": f"{type(exc).__name__}: {exc}"}


def main() -> int:
    global _LIBC
    argv = sys.argv[1:]
    isolation = argv[argv.index("--isolation") + 1] if "--isolation" in argv else "namespaces"
    out = sys.stdout.buffer

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj, ensure_ascii=False, default=repr).encode("utf-8", "surrogatepass") + b"\n")
        out.flush()

    if "--probe" in argv:  # can this host isolate? (no preloads: quick)
        try:
            probe = _Isolation()
            probe.setup()
            send({"ready": True, "isolation": probe.describe()})
            return 0
        except Exception as exc:  # noqa: BLE001 - the answer is the error
            send(_hello_error(exc))
            return 1
    try:
        import ctypes

        _LIBC = ctypes.CDLL(None, use_errno=True)
    except Exception:  # noqa: BLE001 - no PR_SET_PDEATHSIG then
        _LIBC = None
    drop_to = NOBODY if "--drop-to-nobody" in argv and isolation == "none" else None
    done, failed = _preload()
    import gc
    import resource  # noqa: F401 - used by every child; imported once here

    iso: _Isolation | None = None
    scratch_root: str | None = None
    if isolation == "namespaces":
        try:
            iso = _Isolation()
            iso.setup()
        except Exception as exc:  # noqa: BLE001 - the pool reports it
            send(_hello_error(exc))
            return 1
        described: Any = iso.describe()
    else:
        scratch_root = tempfile.mkdtemp(prefix="tool-sandbox-")
        os.chmod(scratch_root, 0o711)  # the unprivileged child must reach its own sub-directory
        described = "none"
    gc.freeze()  # the preloaded objects are never collected, so children do not copy their pages
    inp = sys.stdin.buffer
    try:
        send({"ready": True, "pid": os.getpid(), "uid": os.getuid(), "isolation": described, "drops_to": drop_to,
              "preloaded": len(done), "failed_preloads": failed, "scratch_root": scratch_root})
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
                reply = _run(request, scratch_root, drop_to, iso)
            except Exception as exc:  # noqa: BLE001 - keep serving
                reply = {"id": request.get("id"), "status": "crashed", "error": f"sandbox worker error: {type(exc).__name__}: {exc}"}
            send(reply)
    finally:
        if scratch_root is not None:  # isolation "none": the scratch directory is this worker's
            shutil.rmtree(scratch_root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
