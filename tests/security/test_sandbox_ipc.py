"""One sandboxed call must not reach the next through System V or POSIX IPC (issue 26, item 1).

The tool code first gets raw system calls the way an attacker does once the audit hook is out of
the way: from a frame of the hook it edits the hook's own table of path events (a dict it reaches
through the frame's locals) so that ``ctypes.*`` events pass unchecked, then takes the worker's
already loaded libc from the call's stack. With that it leaves a shared-memory segment, a message
queue, a semaphore set and a POSIX message queue behind, each holding a secret; a second call on
the same worker (a pool of one) then looks for them. What is checked from the host: the second
call found nothing, and no shared memory is left anywhere once a call has ended.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import pytest

from tool_specs.sandbox import SandboxLimits, SandboxPool

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the sandbox needs Linux")
LIMITS = SandboxLimits(wall_s=4.0, cpu_s=4.0, memory_mb=256)

# Tool-side helpers: ``raw_libc`` defeats the audit hook and returns a usable libc handle (or the
# reason it could not), ``err`` the errno of the last failed call.
RAW = textwrap.dedent('''
    import sys

    def _open_the_hook():
        """Make the audit hook wave every ctypes event through: its table of path events is a dict
        in its closure; ``tuple`` (a global it calls on an open) hands us its frame."""
        seen = {}
        def spy(args):
            frame = sys._getframe(1)
            table = frame.f_locals.get("path_write_events")
            if isinstance(table, dict):
                for event in ("ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function", "ctypes.addressof",
                              "ctypes.cdata", "ctypes.string_at", "ctypes.create_string_buffer", "ctypes.get_errno",
                              "ctypes.set_errno", "ctypes.cdata/buffer", "ctypes.dlsym/handle"):
                    table[event] = 0
                seen["ok"] = True
            return ("decoy.txt", "r", 0)
        frame = sys._getframe(0)
        while frame is not None and not hasattr(frame.f_globals.get("audit"), "make_hook"):
            frame = frame.f_back
        if frame is None:
            return "no worker frame"
        g = vars(frame.f_globals["audit"])  # the hook's module's globals
        g["tuple"] = spy
        try:
            open("decoy.txt", "w").close()
        finally:
            del g["tuple"]
        return None if seen else "the hook's frame was not reached"

    def raw_libc():
        why = _open_the_hook()
        if why:
            return None, None, why
        frame = sys._getframe(0)
        while frame is not None:
            iso = frame.f_locals.get("iso")  # the worker's namespace handle, with its libc
            if iso is not None and hasattr(iso, "libc"):
                return iso.ctypes, iso.libc, None
            frame = frame.f_back
        return None, None, "no libc on the stack"
''')

ATTACK = RAW + textwrap.dedent('''
    IPC_CREAT, IPC_RMID, SETVAL, GETVAL = 0o1000, 0, 16, 12
    O_RDWR, O_CREAT = 2, 0o100

    def leave(key, name, secret):
        c, libc, why = raw_libc()
        if libc is None:
            return {"raw": why}
        out = {"raw": "ok"}
        e = lambda: c.get_errno()
        libc.shmat.restype = c.c_void_p
        shm = libc.shmget(c.c_int(key), c.c_size_t(4096), c.c_int(IPC_CREAT | 0o600))
        if shm >= 0:
            addr = libc.shmat(c.c_int(shm), None, c.c_int(0))
            if addr not in (None, c.c_void_p(-1).value):
                c.memmove(addr, secret.encode(), len(secret))
                libc.shmdt(c.c_void_p(addr))
                out["shm"] = "left"
            else:
                out["shm"] = f"shmat errno {e()}"
        else:
            out["shm"] = f"shmget errno {e()}"
        msq = libc.msgget(c.c_int(key), c.c_int(IPC_CREAT | 0o600))
        if msq >= 0:
            buf = c.create_string_buffer(8 + 64)
            c.memmove(c.addressof(buf), (1).to_bytes(8, "little") + secret.encode(), 8 + len(secret))
            ok = libc.msgsnd(c.c_int(msq), buf, c.c_size_t(len(secret)), c.c_int(0))
            out["msg"] = "left" if ok == 0 else f"msgsnd errno {e()}"
        else:
            out["msg"] = f"msgget errno {e()}"
        sem = libc.semget(c.c_int(key), c.c_int(1), c.c_int(IPC_CREAT | 0o600))
        if sem >= 0:
            ok = libc.semctl(c.c_int(sem), c.c_int(0), c.c_int(SETVAL), c.c_int(4242))
            out["sem"] = "left" if ok == 0 else f"semctl errno {e()}"
        else:
            out["sem"] = f"semget errno {e()}"
        mq = libc.mq_open(name.encode(), c.c_int(O_RDWR | O_CREAT), c.c_int(0o600), None)
        if mq >= 0:
            ok = libc.mq_send(c.c_int(mq), secret.encode(), c.c_size_t(len(secret)), c.c_uint(0))
            out["mq"] = "left" if ok == 0 else f"mq_send errno {e()}"
        else:
            out["mq"] = f"mq_open errno {e()}"
        return out

    def find(key, name):
        c, libc, why = raw_libc()
        if libc is None:
            return {"raw": why}
        out = {"raw": "ok"}
        libc.shmat.restype = c.c_void_p
        shm = libc.shmget(c.c_int(key), c.c_size_t(0), c.c_int(0))
        if shm >= 0:
            addr = libc.shmat(c.c_int(shm), None, c.c_int(0))
            out["shm"] = c.string_at(addr, 64).split(b"\\0")[0].decode() if addr not in (None, c.c_void_p(-1).value) else "found"
        msq = libc.msgget(c.c_int(key), c.c_int(0))
        if msq >= 0:
            buf = c.create_string_buffer(8 + 64)
            n = libc.msgrcv(c.c_int(msq), buf, c.c_size_t(64), c.c_long(0), c.c_int(0o4000))  # IPC_NOWAIT
            out["msg"] = buf.raw[8:8 + n].decode() if n > 0 else "found"
        sem = libc.semget(c.c_int(key), c.c_int(0), c.c_int(0))
        if sem >= 0:
            out["sem"] = libc.semctl(c.c_int(sem), c.c_int(0), c.c_int(GETVAL))
        mq = libc.mq_open(name.encode(), c.c_int(O_RDWR), c.c_int(0), None)
        if mq >= 0:
            buf = c.create_string_buffer(8192)
            n = libc.mq_receive(c.c_int(mq), buf, c.c_size_t(8192), None)
            out["mq"] = buf.raw[:n].decode() if n > 0 else "found"
        return out
''')


def test_a_call_finds_nothing_the_previous_call_left_in_ipc():
    secret = f"secret-{uuid.uuid4().hex[:12]}"
    key = int.from_bytes(os.urandom(3), "little") + 1
    name = f"/sandbox-{uuid.uuid4().hex[:8]}"
    with SandboxPool(1, limits=LIMITS) as pool:
        if pool.isolation != "namespaces":
            pytest.skip("this host has no namespaces (the pool runs only with allow_unsafe)")
        first = pool.run(ATTACK, "leave", {"key": key, "name": name, "secret": secret})
        second = pool.run(ATTACK, "find", {"key": key, "name": name})
    # the attack got its raw system calls (the hook was out of the way): what held is the kernel
    assert first.ok and first.value["raw"] == "ok", first
    assert second.ok and second.value == {"raw": "ok"}, (first.value, second.value)
    assert secret not in str(second.value)


def _shmem_kb() -> int:
    with open("/proc/meminfo") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("Shmem:"))


HOG = RAW + textwrap.dedent('''
    def hog(mb):
        c, libc, why = raw_libc()
        if libc is None:
            return why
        libc.shmat.restype = c.c_void_p
        made = 0
        for _ in range(mb // 32):
            shm = libc.shmget(c.c_int(0), c.c_size_t(32 << 20), c.c_int(0o1000 | 0o600))  # IPC_PRIVATE
            if shm < 0:
                return f"shmget errno {c.get_errno()} after {made} MB"
            addr = libc.shmat(c.c_int(shm), None, c.c_int(0))
            if addr in (None, c.c_void_p(-1).value):
                return f"shmat errno {c.get_errno()} after {made} MB"
            c.memset(c.c_void_p(addr), 1, 32 << 20)  # the pages now exist
            libc.shmdt(c.c_void_p(addr))
            made += 32
        return f"left {made} MB"
''')


def _worker_ipc(pid: int) -> str:
    """How many segments ``/proc/sysvipc/shm`` lists inside a worker's IPC namespace (a helper
    process joins it, as the owner of the worker's user namespace may)."""
    code = textwrap.dedent(f'''
        import ctypes, os, sys
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open("/proc/{pid}/ns/ipc", os.O_RDONLY)
        if libc.setns(fd, 0x08000000) != 0:  # CLONE_NEWIPC
            sys.exit("setns: " + os.strerror(ctypes.get_errno()))
        print(open("/proc/sysvipc/shm").read().count("\\n") - 1)
    ''')
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    return proc.stdout.strip() or proc.stderr.strip()


def test_host_shared_memory_is_back_to_its_start_after_each_call():
    """Three calls each leave 128 MB of System V shared memory (the issue saw 8.9 -> 205 MB that
    stayed until the pool closed). The host's Shmem (all of the machine's shared memory) must be
    back near where it was before each call (others on the machine may move it a little: the
    margin is half of what one call leaves), and the worker's IPC namespace must hold no segment."""
    with SandboxPool(1, limits=SandboxLimits(wall_s=10.0, cpu_s=8.0, memory_mb=256)) as pool:
        if pool.isolation != "namespaces":
            pytest.skip("this host has no namespaces (the pool runs only with allow_unsafe)")
        pool.warm()
        for _ in range(3):
            start = _shmem_kb()
            reply = pool.run(HOG, "hog", {"mb": 128})
            # the raw calls were made: they either left memory or the kernel refused them (EPERM)
            assert reply.ok and (str(reply.value).startswith("left") or "errno 1 " in str(reply.value)), reply
            assert _shmem_kb() - start < 64 * 1024, (reply.value, start, _shmem_kb())
            assert _worker_ipc(pool.worker_pids()[0]) == "0"
