"""The kernel isolation of the sandbox worker: its namespaces, read-only root, capabilities and
seccomp filter (the worker's half, once at start-up, and each call's child's half).

Loaded by ``tool_specs/_sandbox_worker.py`` from its file (the worker runs as a script under
``python -I``); it imports only the standard library (``ctypes`` when an :class:`Isolation` is made).
What each step does and why is described in the worker's docstring.
"""

from __future__ import annotations

import os
import select
import signal
import sys
from typing import Any

NOBODY = 65534

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


class Isolation:
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

