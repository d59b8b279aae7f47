"""The sandbox: real worker processes, real rlimits, real MCP server over HTTP for hostile tools."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from client.agent import result_text
from client.mcp_session import connect
from server import BenchmarkMount, ToolServer, create_app, serve_in_background
from tool_specs import CallContext, ExecutorConfigError, StaticCatalog, ToolResult, ToolSpec, resolve_executor
from tool_specs.sandbox import (
    SandboxExecutor,
    SandboxLimits,
    SandboxPool,
    SandboxReply,
    reply_to_result,
    value_to_result,
)

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the sandbox needs Linux")

LIMITS = SandboxLimits(wall_s=2.0, cpu_s=2.0, memory_mb=256)
SECRET = "sk-test-secret-never-in-the-sandbox"
SERVER_PID = os.getpid()

HOSTILE = {
    "infinite_loop": "def f():\n    while True:\n        pass\n",
    "fork_bomb": "import os\ndef f():\n    while True:\n        os.fork()\n",
    "allocate_10gb": "def f():\n    block = bytearray(10 * 1024 ** 3)\n    return len(block)\n",
    "open_socket": "import socket\ndef f():\n    s = socket.socket()\n    s.connect(('1.1.1.1', 80))\n    return 'connected'\n",
    "write_outside": "def f(path):\n    open(path, 'w').write('pwned')\n    return 'written'\n",
    "read_env": "import os\ndef f():\n    return dict(os.environ)\n",
    "read_server_environ": f"def f():\n    return open('/proc/{SERVER_PID}/environ', 'rb').read().decode('latin-1')\n",
    "os_system": "import os\ndef f(path):\n    return os.system('touch ' + path)\n",
}


def _descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


@pytest.fixture(scope="module")
def pool():
    os.environ["EVALS_SANDBOX_TEST_SECRET"] = SECRET  # in the server's environment, never in a worker's
    with SandboxPool(2, limits=LIMITS) as p:
        yield p
    os.environ.pop("EVALS_SANDBOX_TEST_SECRET", None)


def test_a_call_runs_the_tools_code_and_reuses_a_warm_worker(pool):
    code = "import math\ndef area(r, digits=2):\n    return {'area': round(math.pi * r * r, digits)}\n"
    first = pool.run(code, "area", {"r": 2})
    assert first.ok and first.value == {"area": 12.57}
    warm = [pool.run(code, "area", {"r": 1, "digits": 3}) for _ in range(5)]
    assert all(r.ok and r.value == {"area": 3.142} for r in warm)
    assert not any(r.cold for r in warm)  # served by a worker already running
    assert {r.worker_pid for r in warm} <= set(pool.worker_pids())
    assert all(pid != os.getpid() for pid in pool.worker_pids())  # never in this process


def test_no_state_survives_from_one_call_to_the_next(pool):
    code = (
        "import json\nSEEN = []\n"
        "def f(x):\n    SEEN.append(x)\n    json.dumps = None\n    open('note.txt', 'a').write(str(x))\n"
        "    import os\n    return {'seen': SEEN, 'files': sorted(os.listdir('.'))}\n"
    )
    a = pool.run(code, "f", {"x": 1})
    b = pool.run(code, "f", {"x": 2})
    assert a.value == {"seen": [1], "files": ["note.txt"]}
    assert b.value == {"seen": [2], "files": ["note.txt"]}  # a fresh child and an emptied scratch dir


def test_the_tools_own_errors_come_back(pool):
    raised = pool.run("def f(n):\n    if n < 0:\n        raise ValueError('n must be >= 0, got %d' % n)\n", "f", {"n": -1})
    assert raised.status == "exception" and raised.error == "ValueError: n must be >= 0, got -1"
    wrong_kw = pool.run("def f(n):\n    return n\n", "f", {"m": 1})
    assert wrong_kw.status == "exception" and "unexpected keyword argument 'm'" in wrong_kw.error
    missing = pool.run("def g():\n    return 1\n", "f", {})
    assert missing.status == "exception" and "defines no function 'f'" in missing.error and "g" in missing.error
    returned = pool.run("def f():\n    return {'error': 'Invalid date format'}\n", "f", {})
    assert returned.ok and returned.value == {"error": "Invalid date format"}
    # the sandbox reads a returned value as a value, whatever it says (a caller's hook may not)
    assert not reply_to_result(returned).is_error and reply_to_result(returned).structured == returned.value
    assert reply_to_result(raised) == ToolResult.error("Error: ValueError: n must be >= 0, got -1")


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_code_is_contained_and_the_pool_keeps_serving(pool, case, tmp_path):
    target = tmp_path / "pwned.txt"
    args = {"path": str(target)} if case in ("write_outside", "os_system") else {}
    # processes this test process had before (e.g. BFCL's backend zygote, kept by an earlier test of this
    # pytest worker): only what the call made must be gone
    before = _descendants(os.getpid())
    t0 = time.monotonic()
    reply = pool.run(HOSTILE[case], "f", args)
    elapsed = time.monotonic() - t0
    result = reply_to_result(reply)
    if case == "read_env":  # allowed, but there is nothing of the server's environment to read
        assert reply.ok and SECRET not in str(reply.value) and "EVALS_SANDBOX_TEST_SECRET" not in str(reply.value)
        assert set(reply.value) <= {"TMPDIR", "PATH", "LANG", "LC_CTYPE"}
    else:
        assert not reply.ok, (case, reply)
        assert result.is_error and result.text.startswith(("Error: ", "Error"))
    assert SECRET not in result.text
    assert not target.exists()
    assert elapsed < LIMITS.wall_s + 15  # the wall-clock kill fired (slack for a busy machine)
    expected = {"infinite_loop": "timeout", "allocate_10gb": "exception"}
    if case in expected:
        assert reply.status in (expected[case], "killed"), reply
    if case == "allocate_10gb":
        assert "MemoryError" in (reply.error or "") or reply.status == "killed"
    # the pool still answers, and nothing but the workers is left running
    assert pool.run("def ok():\n    return 'still here'\n", "ok").value == "still here"
    workers = set(pool.worker_pids())
    leftovers = _descendants(os.getpid()) - before - workers - {d for w in workers for d in _descendants(w)}
    assert not leftovers, leftovers
    assert all(not _descendants(w) for w in workers)  # no call child outlives its call


def test_network_namespace_has_no_usable_interface(pool):
    if not pool.describe()["network"].startswith("namespace"):
        pytest.skip("this host cannot create network namespaces; only the audit hook blocks sockets")
    pool.warm()
    for pid in pool.worker_pids():  # read from the host: the sandbox itself has no /proc
        assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        with open(f"/proc/{pid}/net/dev") as fh:
            interfaces = {line.split(":")[0].strip() for line in fh.read().splitlines()[2:]}
        assert interfaces <= {"lo"}


def test_closing_the_pool_leaves_no_process_behind():
    p = SandboxPool(2, limits=LIMITS)
    p.warm()
    pids = p.worker_pids()
    assert len(pids) == 2 and all(Path(f"/proc/{pid}").exists() for pid in pids)
    p.close()
    assert not p.worker_pids()
    assert not (set(pids) & _descendants(os.getpid()))
    with pytest.raises(Exception, match="closed"):
        p.run("def f():\n    return 1\n", "f")


def test_value_to_result_renders_what_the_tool_returned():
    assert value_to_result("fine") == ToolResult(text="fine")
    assert value_to_result({"a": 1}) == ToolResult(text='{"a": 1}', structured={"a": 1})
    assert value_to_result([1, "é"]) == ToolResult(text='[1, "é"]')
    assert value_to_result(float("nan")).text == "nan"  # not JSON: its repr


async def test_a_result_hook_reads_the_reply_instead_of_the_default(pool):
    """A caller that reads results its own way (here: a returned ``{"error": ...}`` is a failure,
    and failures say nothing more) gives the executor a ``to_result`` hook."""
    seen: list[SandboxReply] = []

    def strict(reply: SandboxReply) -> ToolResult:
        seen.append(reply)
        if not reply.ok or (isinstance(reply.value, dict) and "error" in reply.value):
            return ToolResult.error("failed")
        return reply_to_result(reply)

    code = "def f(n):\n    if n < 0:\n        raise ValueError('secret')\n    return {'error': 'odd'} if n % 2 else n\n"
    executor = SandboxExecutor(code, "f", pool=pool, to_result=strict)
    spec = ToolSpec(name="f", input_schema={"type": "object", "properties": {"n": {"type": "integer"}}}, executor=executor)
    results = [await spec.call({"n": n}, CallContext()) for n in (2, 1, -1)]
    assert [(r.is_error, r.text) for r in results] == [(False, "2"), (True, "failed"), (True, "failed")]
    assert [r.status for r in seen] == ["ok", "ok", "exception"]
    assert executor.config()["to_result"].endswith("strict")
    plain = SandboxExecutor(code, "f", pool=pool)
    assert "to_result" not in plain.config() and (await plain(spec, {"n": 1}, CallContext())).text == '{"error": "odd"}'
    with pytest.raises(ExecutorConfigError, match="to_result"):
        SandboxExecutor(code, "f", to_result="not callable")  # type: ignore[arg-type]


def test_sandbox_executor_kind_from_a_spec_config(tmp_path):
    (tmp_path / "tool.py").write_text("def double(x):\n    return 2 * x\n")
    executor = resolve_executor({"kind": "sandbox", "function": "double", "file": "tool.py", "wall_s": 3}, base_dir=tmp_path)
    assert isinstance(executor, SandboxExecutor) and executor.limits.wall_s == 3
    with pytest.raises(ExecutorConfigError, match="exactly one of 'code' and 'file'"):
        resolve_executor({"kind": "sandbox", "function": "f"})
    with pytest.raises(ExecutorConfigError, match="unknown option"):
        resolve_executor({"kind": "sandbox", "function": "f", "code": "x", "network": True})
    with pytest.raises(ExecutorConfigError, match="unknown option"):  # no benchmark's feedback levels here
        resolve_executor({"kind": "sandbox", "function": "f", "code": "x", "feedback": "minimal"})
    with pytest.raises(ExecutorConfigError, match="Python identifier"):
        resolve_executor({"kind": "sandbox", "function": "not a name", "code": "x"})
    with pytest.raises(ValueError, match="wall_s"):
        SandboxLimits(wall_s=0)


async def test_hostile_tools_over_mcp_http_return_errors_and_the_server_keeps_serving(tmp_path):
    target = tmp_path / "pwned.txt"
    before = _descendants(os.getpid())  # e.g. the module's pool
    with SandboxPool(2, limits=LIMITS) as pool:
        specs = [
            ToolSpec(name=case, description=f"hostile: {case}",
                     input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
                     executor=SandboxExecutor(code, "f", pool=pool), validation="warn")
            for case, code in HOSTILE.items()
        ]
        specs.append(ToolSpec(name="echo", input_schema={"type": "object", "properties": {"x": {"type": "string"}}},
                              executor=SandboxExecutor("def f(x):\n    return 'echo ' + x\n", "f", pool=pool)))
        server = ToolServer([BenchmarkMount(StaticCatalog("hostile", {"t": specs}))])
        async with serve_in_background(create_app(server)) as url, connect(f"{url}/mcp/hostile/t") as client:
            for case in HOSTILE:
                args = {"path": str(target)} if case in ("write_outside", "os_system") else {}
                res = await client.call_tool(case, args)
                text = result_text(res)
                assert SECRET not in text
                if case != "read_env":
                    assert res.is_error, (case, text)
                ok = await client.call_tool("echo", {"x": case})
                assert not ok.is_error and result_text(ok) == f"echo {case}"
        assert not target.exists()
        used = set(pool.worker_pids())
        assert used
    assert not (_descendants(os.getpid()) - before)  # the pool's workers and their children are gone
    assert not any(Path(f"/proc/{pid}").exists() for pid in used)
