"""The sandbox worker ("zygote"): runs untrusted tool code, one fresh child per call.

This file is run as a script by :mod:`tool_specs.sandbox` (``python -I _sandbox_worker.py``) with
a minimal environment and stdin/stdout as the request/reply pipes. It imports only the standard
library and two modules of its folder, loaded from their files: ``_sandbox_isolation`` (the
namespaces, root, capabilities and seccomp filter below) and ``_sandbox_audit`` (the audit hook). It
never runs tool code itself.

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
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only (they are not evaluated: see the __future__ import)
    import resource


def _sibling(name: str) -> ModuleType:
    """A module of this folder, loaded from its file: under ``python -I`` neither this folder nor the
    checkout is on ``sys.path``, and importing the ``tool_specs`` package would import far more
    than the standard library."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from tool_specs import _sandbox_audit as audit
    from tool_specs import _sandbox_isolation as kernel
else:
    kernel = _sibling("_sandbox_isolation")  # the namespaces, root, capabilities, seccomp
    audit = _sibling("_sandbox_audit")  # the audit hook (a tripwire)

NOBODY = kernel.NOBODY
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


def _child(request: dict[str, Any], scratch: str, wfd: int, drop_to: int | None, iso: kernel.Isolation | None) -> None:
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
        sys.addaudithook(audit.make_hook(scratch, os.getpid()))
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


def _run(request: dict[str, Any], scratch_root: str | None, drop_to: int | None, iso: kernel.Isolation | None) -> dict[str, Any]:
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
            probe = kernel.Isolation()
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

    iso: kernel.Isolation | None = None
    scratch_root: str | None = None
    if isolation == "namespaces":
        try:
            iso = kernel.Isolation()
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
