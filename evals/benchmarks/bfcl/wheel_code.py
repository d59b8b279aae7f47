"""BFCL's own Python modules (its stateful backends, its constants), imported from the pinned wheel.

The multi-turn and memory categories run BFCL's backend classes (a file system, messaging, trading,
...). Their code is not copied into this repository: it is imported at run time straight out of the
pinned ``bfcl-eval`` wheel in the data directory, after the wheel's sha256 is checked
(:func:`.data.verified_wheel`). The wheel is pinned and checksummed, so its code is trusted as a
dependency is; the model's calls reach it only as method calls with JSON arguments, never as code.

Only the package ``bfcl_eval`` and its modules are served by :class:`_WheelFinder` (first on
``sys.meta_path``, so an installed ``bfcl-eval`` of another version is never picked up), each module
found in its package's folder of the wheel (``__path__``) by the standard zip importer, which
compiles it once (:class:`_Importer`). Nothing is unpacked. The wheel stays importable for the rest
of the process once a module has been imported (Python caches modules); a second, different wheel
path in one process is refused.

Code is imported only from bytes that were verified: the wheel is read once into memory, its sha256
checked on those bytes, and those bytes written to a private copy (a folder of this process's own,
mode 0700, removed at exit) that the importer reads. A wheel changed in place later (even with its
mtime set back) is never imported from.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import os
import shutil
import stat
import sys
import tempfile
import threading
import zipimport
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from .data import WheelError, pinned_sha256, wheel_path

__all__ = ["PACKAGE", "WheelCodeError", "import_module", "import_with_project_root"]

PACKAGE = "bfcl_eval"
_lock = threading.Lock()
MAX_WHEEL_BYTES = 64 * 1024 * 1024  # the pinned wheel is 1.9 MB


class WheelCodeError(ImportError):
    """A module of the wheel could not be imported; the message names it and why."""


class _Importer(zipimport.zipimporter):
    """The standard zip importer, but for the file name it gives a module's spec: zipimport's own
    ``get_filename`` (CPython 3.11) compiles the module's source only to name its file, and the import
    then compiles it again; here the name comes from the archive's table (a source, no bytecode), so
    each of BFCL's modules is compiled once (importing the backend modules: 0.13 -> 0.09 s of CPU)."""

    def get_filename(self, fullname: str) -> str:
        files = getattr(self, "_files", None)  # zipimport's table of the archive, by path inside it
        name = self.prefix + fullname.rpartition(".")[2]
        if isinstance(files, dict) and not any(name + end in files for end in ("/__init__.pyc", ".pyc")):
            for end in ("/__init__.py", ".py"):  # zipimport's order of search, without the bytecode it lacks
                if name + end in files:
                    return f"{self.archive}{os.sep}{name}{end}"
        return str(super().get_filename(fullname))


class _WheelFinder(importlib.abc.MetaPathFinder):
    """Finds the ``bfcl_eval`` package and its modules in one wheel, and nothing else."""

    def __init__(self, wheel: Path, copy: Path) -> None:
        self.wheel = wheel  # the data directory's wheel (its identity)
        self.copy = copy  # the private copy of its verified bytes (what is imported)
        self.importers = {str(copy): _Importer(str(copy))}  # by folder of the archive (a package's __path__)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == PACKAGE:
            folder = str(self.copy)
        elif fullname.startswith(PACKAGE + ".") and path and str(path[0]).startswith(str(self.copy) + os.sep):
            folder = str(path[0])  # a module of a package of the wheel: in that package's folder
        else:
            return None
        importer = self.importers.get(folder)
        if importer is None:
            importer = self.importers[folder] = _Importer(folder)
        return importer.find_spec(fullname)


def _finder() -> _WheelFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, _WheelFinder)), None)


def verified_bytes(wheel: Path) -> bytes:
    """The wheel's bytes, read once (a regular file of bounded size, links not followed at the
    last step) and checked against the pinned sha256."""
    try:
        fd = os.open(wheel, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise WheelError(f"{wheel}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_WHEEL_BYTES:
            raise WheelError(f"{wheel}: not a regular file of at most {MAX_WHEEL_BYTES} bytes")
        data = f.read(MAX_WHEEL_BYTES + 1)
    got, expected = hashlib.sha256(data).hexdigest(), pinned_sha256()
    if got != expected:
        raise WheelError(f"{wheel}: sha256 {got} is not the pinned bfcl-eval wheel's ({expected}); "
                         f"remove it and fetch it again (`evals data fetch bfcl`)")
    return data


def _private_copy(wheel: Path) -> Path:
    data = verified_bytes(wheel)
    folder = Path(tempfile.mkdtemp(prefix="bfcl-wheel-"))  # mode 0700, this process's own
    atexit.register(shutil.rmtree, folder, True)
    copy = folder / wheel.name
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o400)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return copy


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
        sys.meta_path.insert(0, _WheelFinder(wheel, _private_copy(wheel)))


def import_module(name: str, wheel: Path | None = None) -> ModuleType:
    """The module ``name`` (``bfcl_eval.…``) imported out of the pinned wheel (default: the data
    directory's): out of a private copy of its bytes, checked against the sha256 when first used."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        raise WheelCodeError(f"{name!r} is not a module of {PACKAGE}")
    _install(wheel_path(wheel).resolve())
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
