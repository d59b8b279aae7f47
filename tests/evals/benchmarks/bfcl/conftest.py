"""BFCL's pinned wheel and a venv with its own checker, made by ``scripts/bfcl_env.sh`` (``.ci/run`` runs it).

Without them these tests are skipped, saying why, unless ``EVALS_REQUIRE_BFCL=1`` (set by ``.ci/run``)
makes that a failure. The tests never download: the wheel comes from ``.ci/bfcl-wheel/`` (or the data
directory's ``bfcl/``), and each test gets a data directory of its own holding it, as ``evals data
fetch bfcl`` would leave it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.benchmarks.bfcl.files import WHEEL
from evals.core.data import DATA_ENV, data_dir

ROOT = Path(__file__).resolve().parents[4]
CI_WHEEL = ROOT / ".ci" / "bfcl-wheel" / WHEEL[1]
VENV_PYTHON = ROOT / ".ci" / "bfcl-venv" / "bin" / "python"


def _missing(what: str) -> None:
    if os.environ.get("EVALS_REQUIRE_BFCL") == "1":
        pytest.fail(f"{what} is missing: .ci/run makes it (scripts/bfcl_env.sh)")
    pytest.skip(f"{what} not found: run scripts/bfcl_env.sh (pip download of bfcl-eval==2026.3.23)")


def wheel_path() -> Path:
    """The pinned wheel here, or a skip (a failure under ``EVALS_REQUIRE_BFCL=1``)."""
    for candidate in (CI_WHEEL, data_dir().joinpath(*WHEEL)):
        if candidate.is_file():
            return candidate
    _missing(f"the bfcl-eval wheel ({CI_WHEEL})")
    raise AssertionError  # not reached


@pytest.fixture(scope="session")
def bfcl_wheel() -> Path:
    return wheel_path()


@pytest.fixture(scope="session")
def _bfcl_data_root(bfcl_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bfcl-data")
    (root / WHEEL[0]).mkdir(parents=True)
    shutil.copyfile(bfcl_wheel, root.joinpath(*WHEEL))
    return root


@pytest.fixture
def bfcl_data(_bfcl_data_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A data directory holding only the wheel (where ``evals data fetch bfcl`` puts it), in use. One
    directory for the whole session: BFCL's backends are imported from one wheel path per process
    (:mod:`evals.benchmarks.bfcl.wheel_code`); a test that damages a wheel makes a directory of its own."""
    monkeypatch.setenv(DATA_ENV, str(_bfcl_data_root))
    yield _bfcl_data_root


@pytest.fixture(scope="session")
def bfcl_python() -> Path:
    """The python of the venv that has BFCL's own checker."""
    if not VENV_PYTHON.is_file():
        _missing(f"the venv with BFCL's checker ({VENV_PYTHON.parent.parent})")
    return VENV_PYTHON


@pytest.fixture
def bfcl_code_data(bfcl_data: Path) -> Path:
    """``bfcl_data``, named for the tests that run BFCL's backends (imported from one wheel path per process)."""
    return bfcl_data

