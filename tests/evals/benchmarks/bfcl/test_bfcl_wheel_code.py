"""BFCL's backend modules come out of the pinned wheel only (each check in a fresh interpreter: the
import hook is process-wide)."""

from __future__ import annotations

import os
import subprocess
import sys
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
    assert where.startswith(str(bfcl_data / "bfcl")) and ".whl/bfcl_eval/" in where
    assert name == "TwitterAPI"


def test_other_modules_and_a_wrong_wheel_are_refused(bfcl_data: Path, tmp_path: Path) -> None:
    done = _python("from evals.benchmarks.bfcl.wheel_code import import_module\nimport_module('json')", bfcl_data)
    assert done.returncode != 0 and "'json' is not a module of bfcl_eval" in done.stderr
    wheel = bfcl_data.joinpath(*WHEEL)
    (tmp_path / WHEEL[0]).mkdir()
    tmp_path.joinpath(*WHEEL).write_bytes(wheel.read_bytes() + b"\0")  # a damaged copy, in a data dir of its own
    done = _python("from evals.benchmarks.bfcl.wheel_code import import_module\n"
                   "import_module('bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api')", tmp_path)
    assert done.returncode != 0 and "is not the pinned bfcl-eval wheel's" in done.stderr
