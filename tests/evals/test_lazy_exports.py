"""Exports listed once (issue 41 item 5): ``evals.core`` and ``evals.view`` export every public name
of their modules, read from each module's own ``__all__`` (no hand-kept table to fall out of step),
and still import a module only when one of its names is used."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: each lazily exporting package -> the modules whose names it exports
PACKAGES = {
    "evals.core": ("anomalies", "context", "data", "metrics", "options", "plugin", "registry"),
    "evals.view": ("app", "cli", "compare", "export", "index", "jsonsafe", "leaderboard", "runs", "site", "transcript"),
}


def module_all(path: Path) -> list[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return [str(v) for v in ast.literal_eval(node.value)]
    raise AssertionError(f"{path} has no __all__")


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_package_exports_every_public_name_of_its_modules(package: str) -> None:
    pkg = importlib.import_module(package)
    folder = ROOT.joinpath(*package.split("."))
    for module in PACKAGES[package]:
        names = module_all(folder / f"{module}.py")
        missing = sorted(set(names) - set(pkg.__all__))
        assert not missing, f"{package}.__all__ lacks {missing} from .{module}"
        sub = importlib.import_module(f"{package}.{module}")
        for name in names:
            if name in PACKAGES[package]:  # `leaderboard`: once its module is imported, Python binds the module
                continue
            assert getattr(pkg, name) is getattr(sub, name), f"{package}.{name}"
    assert len(pkg.__all__) == len(set(pkg.__all__))
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = pkg.no_such_name


def test_a_name_is_imported_with_its_module_only() -> None:
    code = ("import sys, evals.core, evals.view\n"
            "assert 'evals.view.app' not in sys.modules and 'evals.core.registry' not in sys.modules\n"
            "evals.view.dumps_finite, evals.core.get_benchmark\n"
            "print('evals.view.app' in sys.modules, 'evals.view.jsonsafe' in sys.modules, 'evals.core.registry' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True"]
