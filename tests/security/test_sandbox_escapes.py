"""Attacks on the sandbox by a hostile tool author (issue: "a sandbox that holds").

Each test runs real tool code in real sandbox workers and checks the outcome from the host's side
(files on the host, processes in the host's /proc), so a check inside the sandbox cannot be fooled.
The tool code first defeats the audit hook (a path object that names a harmless file when the hook
looks and another one when the kernel opens it, relative opens through ``dir_fd``), because the
hook is only a tripwire: what must hold is the kernel boundary behind it.
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tool_specs.sandbox import NamespaceSupport, SandboxError, SandboxLimits, SandboxPool, namespace_support

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the sandbox needs Linux")
LIMITS = SandboxLimits(wall_s=4.0, cpu_s=4.0, memory_mb=256)

# Tool-side helpers, prepended to every attack. ``blind_hook`` defeats the audit hook (it looks
# ``tuple`` up in its module's globals, which tool code can reach through the worker's frames: every open
# then looks like a read of a scratch file); ``read_any`` also opens relative to a ``dir_fd``.
BYPASS = textwrap.dedent('''
    import os, sys

    def blind_hook():
        frame = sys._getframe(1)
        while frame is not None:
            audit = frame.f_globals.get("audit")  # the worker's handle on the hook's module
            if hasattr(audit, "make_hook"):
                vars(audit)["tuple"] = lambda args: ("decoy.txt", "r", 0)
                return True
            frame = frame.f_back
        return False

    def read_any(path):
        out = []
        try:
            root = os.open("/", os.O_RDONLY)
            try:
                fd = os.open(path.lstrip("/"), os.O_RDONLY, dir_fd=root)
                try:
                    out.append(os.read(fd, 1 << 16))
                finally:
                    os.close(fd)
            finally:
                os.close(root)
        except Exception as exc:
            out.append(repr(exc).encode())
        try:
            blind_hook()
            with open(path, "rb") as fh:
                out.append(fh.read(1 << 16))
        except Exception as exc:
            out.append(repr(exc).encode())
        return b"\\n".join(out).decode("latin-1")

    def write_any(path, data):
        try:
            blind_hook()
            with open(path, "wb") as fh:
                fh.write(data)
            return "written"
        except Exception as exc:
            return repr(exc)
''')


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every live process on the host."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if fields[0] != "Z":
            out[int(entry)] = (int(fields[1]), cmd)
    return out


def _user_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/user")
    except OSError:
        return None


@pytest.fixture
def pool():
    with SandboxPool(2, limits=LIMITS) as p:
        yield p


def test_a_new_session_and_a_double_fork_do_not_outlive_the_call(pool):
    """setsid + double fork (the grandchild would outlive the call and read later calls' files)."""
    marker = f"escape-{uuid.uuid4().hex}"
    code = BYPASS + textwrap.dedent(f'''
        def f():
            tried = []
            for how in ("os", "posix"):
                try:
                    mod = __import__(how)
                    mod.setsid()
                    if mod.fork() == 0:
                        if mod.fork() == 0:
                            import time
                            while True:
                                open("/tmp/{marker}", "w").write("alive")
                                time.sleep(0.05)
                        os._exit(0)
                    tried.append(how + ": forked")
                except BaseException as exc:
                    tried.append(how + ": " + repr(exc))
            return tried
    ''')
    first = pool.run(code, "f")
    assert first.status in ("ok", "exception"), first
    time.sleep(0.3)
    workers = set(pool.worker_pids())
    table = _proc_table()
    # a process escaped from this pool's calls would still be in its workers' user namespace (the
    # workers of other pools, e.g. other tests running beside this one, each have their own)
    ours = {_user_ns(pid) for pid in workers} - {None}
    strays = [pid for pid, (ppid, cmd) in table.items()
              if "_sandbox_worker.py" in cmd and pid not in workers and ppid not in workers and _user_ns(pid) in ours]
    assert not strays, (strays, first)
    assert not [pid for pid, (ppid, _) in table.items() if ppid in workers]  # no call child left
    later = pool.run(f"import os\ndef f():\n    return os.path.exists('/tmp/{marker}')\n", "f")
    assert later.ok and later.value is False, later


def test_tool_code_cannot_read_another_processs_command_line(tmp_path):
    """/proc listing + dir_fd open: the server's --token was readable from its command line."""
    secret = f"tok-{uuid.uuid4().hex}"
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--token", secret])
    try:
        code = BYPASS + textwrap.dedent('''
            def f(victim):
                found = []
                pids = []
                try:
                    pids = [p for p in os.listdir("/proc") if p.isdigit()]
                except Exception as exc:
                    found.append(repr(exc))
                for pid in sorted(set(pids) | {str(victim)}):
                    found.append(read_any(f"/proc/{pid}/cmdline"))
                return found
        ''')
        with SandboxPool(1, limits=LIMITS) as pool:
            reply = pool.run(code, "f", {"victim": victim.pid})
        assert secret not in str(reply.value) and secret not in str(reply.error), reply
    finally:
        victim.kill()
        victim.wait()


def test_tool_code_cannot_write_to_the_hosts_tmp_or_dev_shm(pool):
    marker = f"pwned-{uuid.uuid4().hex}"
    targets = [f"/tmp/{marker}", f"/dev/shm/{marker}"]
    code = BYPASS + "def f(targets):\n    return [write_any(t, b'x' * (1 << 20)) for t in targets]\n"
    try:
        reply = pool.run(code, "f", {"targets": targets})
        assert reply.status in ("ok", "exception"), reply
        assert not any(Path(t).exists() for t in targets), reply
    finally:
        for t in targets:
            Path(t).unlink(missing_ok=True)


def test_the_scratch_space_of_a_call_is_size_limited():
    """Hundreds of MB written by a call would fill the host's disk or memory."""
    code = textwrap.dedent('''
        import os
        def f():
            written = 0
            try:
                for i in range(24):
                    with open(f"blob{i}", "wb") as fh:
                        fh.write(b"x" * (4 << 20))
                    written += 4 << 20
            except OSError as exc:
                return {"written": written, "stopped": repr(exc)}
            return {"written": written}
    ''')
    with SandboxPool(1, limits=SandboxLimits(wall_s=8.0, cpu_s=8.0, scratch_mb=32)) as pool:
        reply = pool.run(code, "f")
    assert reply.ok, reply
    assert reply.value["written"] <= 32 << 20 and "stopped" in reply.value, reply.value


def test_two_concurrent_calls_cannot_read_each_others_scratch(pool):
    secret = f"scratch-secret-{uuid.uuid4().hex}"
    holder = f"import time\ndef f():\n    open('note.txt', 'w').write('{secret}')\n    time.sleep(2.0)\n    return 'held'\n"
    snoop = BYPASS + textwrap.dedent('''
        def f():
            seen = []
            here = os.getcwd()
            for top in {os.path.dirname(here), os.path.dirname(os.path.dirname(here)), "/tmp"}:
                for root, dirs, files in os.walk(top):
                    if root.count("/") - top.rstrip("/").count("/") >= 2:
                        dirs[:] = []
                    if "note.txt" in files:
                        seen.append(read_any(os.path.join(root, "note.txt")))
            parent, ppid = os.path.dirname(here), os.getppid()
            for pid in range(max(1, ppid - 300), ppid + 300):  # sibling scratch directories named by pid
                for name in (f"w{pid}", str(pid)):
                    if os.path.exists(os.path.join(parent, name, "note.txt")):
                        seen.append(read_any(os.path.join(parent, name, "note.txt")))
            try:
                for pid in os.listdir("/proc"):
                    if pid.isdigit():
                        seen.append(read_any(f"/proc/{pid}/cwd/note.txt"))
            except Exception as exc:
                seen.append(repr(exc))
            return seen
    ''')
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        held = ex.submit(pool.run, holder, "f")
        time.sleep(0.5)
        snooped = pool.run(snoop, "f")
        assert held.result().value == "held"
    assert snooped.status in ("ok", "exception"), snooped
    assert secret not in str(snooped.value), snooped.value


SERVER = textwrap.dedent('''
    import sys, threading, time
    sys.path.insert(0, sys.argv[1])
    from tool_specs import sandbox
    if sys.argv[2] == "unsafe":  # as on a host without namespaces, run with the explicit unsafe flag
        sandbox._SUPPORT[sys.executable] = sandbox.NamespaceSupport(False, "test: no namespaces")
    pool = sandbox.SandboxPool(2, allow_unsafe=True)
    code = "import time\\ndef f(n):\\n    open('kept.txt', 'w').write('x' * n)\\n    time.sleep(n and 30)\\n    return 1\\n"
    assert pool.run(code, "f", {"n": 0}).ok
    threading.Thread(target=pool.run, args=(code, "f", {"n": 1000}), daemon=True).start()
    time.sleep(0.5)
    print("ready", *pool.worker_pids(), flush=True)
    time.sleep(60)
''')


@pytest.mark.parametrize("isolation", ["namespaces", "unsafe"])
def test_sigterm_to_the_server_leaves_no_scratch_directory_and_no_process(tmp_path, isolation):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(REPO), isolation], stdout=subprocess.PIPE, env=env,
                            text=True)
    try:
        line = proc.stdout.readline().split() if proc.stdout else []
        assert line[:1] == ["ready"], line
        workers = [int(p) for p in line[1:]]
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{w}").exists() for w in workers)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("tool-sandbox-")]


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as fh:
        return dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)


def test_a_call_runs_without_capabilities_under_seccomp_in_its_own_namespaces(pool):
    """Read from the host: the call's process while it runs."""
    if pool.isolation != "namespaces":
        pytest.skip("this host has no namespaces (the pool runs only with allow_unsafe)")
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        fut = ex.submit(pool.run, "import time\ndef f():\n    time.sleep(1.5)\n    return 1\n", "f")
        deadline, child = time.monotonic() + 5, None
        while child is None and time.monotonic() < deadline:
            workers = set(pool.worker_pids())
            child = next((pid for pid, (ppid, _) in _proc_table().items() if ppid in workers), None)
            time.sleep(0.05)
        assert child is not None
        status = _status(child)
        ns = {kind: (os.readlink(f"/proc/{child}/ns/{kind}"), os.readlink(f"/proc/self/ns/{kind}"))
              for kind in ("pid", "mnt", "net", "user", "ipc", "uts")}
        with open(f"/proc/{_proc_table()[child][0]}/net/dev") as fh:  # the worker's network namespace
            interfaces = {line.split(":")[0].strip() for line in fh.read().splitlines()[2:]}
        assert fut.result().ok
    assert status["CapEff"] == status["CapPrm"] == status["CapBnd"] == status["CapAmb"] == "0" * 16
    assert status["NoNewPrivs"] == "1"
    assert status["Seccomp"] == ("2" if "deny-list" in str(pool.describe()["seccomp"]) else "0")
    assert status["NSpid"].split()[-1] == "1"  # process 1 of its own PID namespace
    assert all(inside != outside for inside, outside in ns.values()), ns
    assert status["Uid"].split()[0] == str(65534 if os.geteuid() == 0 else os.geteuid())
    assert interfaces <= {"lo"}


def test_without_namespaces_the_pool_refuses_unless_told_it_is_unsafe(monkeypatch, caplog, tmp_path):
    from tool_specs import sandbox

    assert namespace_support().ok or namespace_support().reason  # a reason whenever it is refused
    monkeypatch.setitem(sandbox._SUPPORT, sys.executable, NamespaceSupport(False, "user namespaces are disabled"))
    with pytest.raises(SandboxError, match="refusing to run untrusted tool code.*user namespaces are disabled.*unsafe"):
        SandboxPool(1)
    with caplog.at_level("WARNING", logger="tool_specs.sandbox"), SandboxPool(1, allow_unsafe=True) as pool:
        reply = pool.run("def f():\n    return 2\n", "f")
        assert reply.ok and reply.value == 2
        assert pool.describe()["isolation"].startswith("NONE (unsafe")
    assert "UNSAFE" in caplog.text and "WITHOUT a kernel boundary" in caplog.text
    with pytest.raises(ValueError, match="allow_unsafe"):
        SandboxPool(1, isolation="none")
