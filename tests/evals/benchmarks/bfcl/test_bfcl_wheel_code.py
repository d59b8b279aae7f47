"""BFCL's backend modules come out of the pinned wheel only (each check in a fresh interpreter: the
import hook is process-wide)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from evals.benchmarks.bfcl.files import WHEEL

ROOT = Path(__file__).resolve().parents[4]


def _python(code: str, data: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALS_DATA_DIR": str(data)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_a_backend_class_is_imported_from_the_data_directorys_wheel(bfcl_data: Path) -> None:
    done = _python("from evals.benchmarks.bfcl.wheel_code import import_module\n"
                   "m = import_module('bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api')\n"
                   "print(m.__file__)\nprint(m.TwitterAPI().__class__.__name__)", bfcl_data)
    assert done.returncode == 0, done.stderr
    where, name = done.stdout.split()
    # imported from the private copy of the verified bytes (issue 46 item 3), named as the wheel
    assert "/bfcl-wheel-" in where and f"{WHEEL[1]}/bfcl_eval/" in where and not where.startswith(str(bfcl_data))
    assert name == "TwitterAPI"


def test_each_module_of_the_wheel_is_compiled_once(bfcl_data: Path) -> None:
    """zipimport's ``get_filename`` (CPython 3.11) compiled a module's source to name its file, and the
    import compiled it again: BFCL's modules (long_context.py is 190 kB) cost the zygote's start twice."""
    done = _python("import builtins, collections, sys\n"
                   "from evals.benchmarks.bfcl.wheel_code import import_module\n"
                   "seen = collections.Counter()\n"
                   "real = builtins.compile\n"
                   "def counted(source, filename, *args, **kwargs):\n"
                   "    seen[str(filename)] += 1\n"
                   "    return real(source, filename, *args, **kwargs)\n"
                   "builtins.compile = counted\n"
                   "m = import_module('bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api')\n"
                   "print(m.TwitterAPI.__name__, sys.modules['bfcl_eval.eval_checker'].__file__)\n"
                   "print(sorted((n, f) for f, n in seen.items() if '/bfcl_eval/' in f)[-1][0],"
                   " sum('/bfcl_eval/' in f for f in seen))\n", bfcl_data)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("TwitterAPI ") and first.endswith("/bfcl_eval/eval_checker/__init__.py")
    most, modules = second.split()
    assert most == "1" and int(modules) >= 3  # posting_api, long_context, the packages between: once each


def test_other_modules_and_a_wrong_wheel_are_refused(bfcl_data: Path, tmp_path: Path) -> None:
    done = _python("from evals.benchmarks.bfcl.wheel_code import import_module\nimport_module('json')", bfcl_data)
    assert done.returncode != 0 and "'json' is not a module of bfcl_eval" in done.stderr
    wheel = bfcl_data.joinpath(*WHEEL)
    (tmp_path / WHEEL[0]).mkdir()
    tmp_path.joinpath(*WHEEL).write_bytes(wheel.read_bytes() + b"\0")  # a damaged copy, in a data dir of its own
    done = _python("from evals.benchmarks.bfcl.wheel_code import import_module\n"
                   "import_module('bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api')", tmp_path)
    assert done.returncode != 0 and "is not the pinned bfcl-eval wheel's" in done.stderr


_MODULE = "bfcl_eval/eval_checker/multi_turn_eval/func_source_code/ticket_api.py"


def test_bytes_changed_in_place_after_the_check_are_never_imported(bfcl_data: Path, tmp_path: Path) -> None:
    """Issue 46 item 3: the check was remembered per (path, size, mtime) and modules were imported
    from the file later, so a wheel rewritten in place with its mtime set back ran its new code.
    Code now comes only from the bytes that were checked."""
    import shutil

    (tmp_path / WHEEL[0]).mkdir()
    wheel = tmp_path.joinpath(*WHEEL)
    shutil.copyfile(bfcl_data.joinpath(*WHEEL), wheel)
    hostile = tmp_path / "hostile.whl"
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(hostile, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == _MODULE:
                data = b"print('INJECTED')\n" + data
            dst.writestr(info, data)
    code = ("import os, sys\n"
            "from evals.benchmarks.bfcl.wheel_code import import_module\n"
            "base = 'bfcl_eval.eval_checker.multi_turn_eval.func_source_code.'\n"
            "import_module(base + 'posting_api')\n"  # the wheel is checked, BFCL's package imported
            f"wheel, hostile = {str(wheel)!r}, {str(hostile)!r}\n"
            "st = os.stat(wheel)\n"
            "with open(hostile, 'rb') as f: data = f.read()\n"
            "with open(wheel, 'r+b') as f: f.write(data); f.truncate()\n"  # in place: same inode
            "os.utime(wheel, ns=(st.st_atime_ns, st.st_mtime_ns))\n"  # mtime set back
            "m = import_module(base + 'ticket_api')\n"
            "print(m.TicketAPI.__name__)\n")
    done = _python(code, tmp_path)
    assert "INJECTED" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "TicketAPI"


_SERVE = """
import asyncio, contextlib, json, sys
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from evals.core.registry import load_benchmark
from server import ToolServer, create_app, serve_in_background

async def main():
    bench = load_benchmark("bfcl", {"category": ["memory_kv", "multi_turn_base"]})
    server = ToolServer(bench.mounts(contextlib.ExitStack()))
    out = {}
    async with serve_in_background(create_app(server, json_response=True)) as url:
        with open(sys.argv[1], "r+b") as f:  # damaged in place once the server runs
            f.seek(100)
            f.write(b"\\0\\0\\0\\0")
        async with httpx2.AsyncClient(timeout=60) as http:
            for ep, name in [("memory_kv_0-customer-0", "core_memory_list_keys"), ("multi_turn_base_0", "ls")]:
                async with Client(streamable_http_client(f"{url}/mcp/bfcl/{ep}?session=s", http_client=http)) as c:
                    listed = name in [t.name for t in (await c.list_tools()).tools]
                    got = await c.call_tool(name, {})
                    out[ep] = [listed, got.is_error, got.content[0].text]
    print(json.dumps(out))

asyncio.run(main())
"""


def test_a_wheel_that_fails_the_check_while_serving_is_an_error_result(bfcl_data: Path, tmp_path: Path) -> None:
    """Issue 46 item 3: a wheel damaged under a running server gave a bare HTTP 500; now the
    listing is served (read at start, from checked bytes) and a call is an error result naming it."""
    import json
    import shutil

    (tmp_path / WHEEL[0]).mkdir()
    wheel = tmp_path.joinpath(*WHEEL)
    shutil.copyfile(bfcl_data.joinpath(*WHEEL), wheel)
    script = tmp_path / "serve.py"
    script.write_text(_SERVE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALS_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(script), str(wheel)], env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    for listed, is_error, text in json.loads(done.stdout.splitlines()[-1]).values():
        assert listed and is_error and "is not the pinned bfcl-eval wheel's" in text
