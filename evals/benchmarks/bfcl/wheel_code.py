"""BFCL's own Python modules (its stateful backends, its constants), imported from the pinned wheel.

The multi-turn and memory categories run BFCL's backend classes (a file system, messaging, trading,
...). Their code is not copied into this repository: it is imported at run time straight out of the
pinned ``bfcl-eval`` wheel in the data directory, after the wheel's sha256 is checked
(:func:`.data.verified_wheel`). The wheel is pinned and checksummed, so its code is trusted as a
dependency is; the model's calls reach it only as method calls with JSON arguments, never as code.

Only the top-level package ``bfcl_eval`` is served by :class:`_WheelFinder` (first on
``sys.meta_path``, so an installed ``bfcl-eval`` of another version is never picked up); its
sub-packages are found by the standard zip importer through the package's ``__path__``. Nothing is
unpacked. The wheel stays importable for the rest of the process once a module has been imported
(Python caches modules); a second, different wheel path in one process is refused.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import shutil
import sys
import tempfile
import threading
import zipimport
from pathlib import Path
from types import ModuleType

from .data import verified_wheel

__all__ = ["PACKAGE", "WheelCodeError", "import_module", "import_with_project_root"]

PACKAGE = "bfcl_eval"
_lock = threading.Lock()


class WheelCodeError(ImportError):
    """A module of the wheel could not be imported; the message names it and why."""


class _WheelFinder(importlib.abc.MetaPathFinder):
    """Finds the top-level ``bfcl_eval`` package in one wheel, and nothing else."""

    def __init__(self, wheel: Path) -> None:
        self.wheel = wheel
        self.importer = zipimport.zipimporter(str(wheel))

    def find_spec(self, fullname: str, path: object = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != PACKAGE:
            return None
        return self.importer.find_spec(fullname)


def _finder() -> _WheelFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, _WheelFinder)), None)


def _install(wheel: Path) -> None:
    with _lock:
        current = _finder()
        if current is not None:
            if current.wheel != wheel:
                raise WheelCodeError(f"BFCL's code is already imported from {current.wheel}; "
                                     f"{wheel} cannot be used in the same process")
            return
        loaded = sys.modules.get(PACKAGE)
        if loaded is not None:
            raise WheelCodeError(f"a {PACKAGE} package is already imported from {getattr(loaded, '__file__', '?')}; "
                                 "BFCL's backends are read only from the pinned wheel")
        sys.meta_path.insert(0, _WheelFinder(wheel))


def import_module(name: str, wheel: Path | None = None) -> ModuleType:
    """The module ``name`` (``bfcl_eval.…``) imported out of the pinned wheel (default: the data
    directory's), the wheel checked against its sha256 first."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        raise WheelCodeError(f"{name!r} is not a module of {PACKAGE}")
    _install(verified_wheel(wheel).resolve())
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise WheelCodeError(f"BFCL's module {name} could not be imported from the wheel: {exc}") from exc


_root_lock = threading.Lock()


def import_with_project_root(name: str, wheel: Path | None = None) -> ModuleType:
    """:func:`import_module` for a module that imports BFCL's ``constants.eval_config``, which makes
    ``result/``, ``score/`` and ``.file_locks/`` under ``BFCL_PROJECT_ROOT`` (default: beside the package,
    here inside the wheel, which fails): they are made in a temporary folder, removed after the import."""
    with _root_lock:
        root = tempfile.mkdtemp(prefix="bfcl-project-")
        before = os.environ.get("BFCL_PROJECT_ROOT")
        os.environ["BFCL_PROJECT_ROOT"] = root
        try:
            return import_module(name, wheel)
        finally:
            if before is None:
                os.environ.pop("BFCL_PROJECT_ROOT", None)
            else:
                os.environ["BFCL_PROJECT_ROOT"] = before
            shutil.rmtree(root, ignore_errors=True)
