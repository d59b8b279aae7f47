"""The client package's public names: every module declares ``__all__``, every package re-exports its
modules' names (lazily where the imports are heavy), and ``import client.runs`` stays light."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[2] / "client"
#: Each package or module that re-exports, with the folder whose modules' names it re-exports.
REEXPORTS = {"client": "client", "client.adapters": "client/adapters", "client.runs": "client/_runs"}


def declared_all(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return [str(v) for v in ast.literal_eval(node.value)]
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "__all__" and node.value:
            return [str(v) for v in ast.literal_eval(node.value)]
    return None


def assigns_all(path: Path) -> bool:
    """Whether the file assigns ``__all__`` at top level (a literal, or computed from a table)."""
    return any(
        (isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets))
        or (isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == "__all__")
        for n in ast.parse(path.read_text(encoding="utf-8")).body
    )


def public_modules(package_dir: Path) -> dict[str, Path]:
    """The folder's public modules and subpackages: ``{name: file declaring its __all__}``."""
    out = {p.stem: p for p in sorted(package_dir.glob("*.py")) if not p.name.startswith("_")}
    out.update(
        {p.parent.name: p for p in sorted(package_dir.glob("*/__init__.py")) if not p.parent.name.startswith("_")}
    )
    return out


def test_every_public_module_declares_all() -> None:
    missing = [
        str(path.relative_to(CLIENT.parent))
        for path in sorted(CLIENT.rglob("*.py"))
        if (path.name == "__init__.py" or not path.name.startswith("_")) and not assigns_all(path)
    ]
    assert not missing, f"modules without __all__: {missing}"


@pytest.mark.parametrize("package", sorted(REEXPORTS))
def test_package_reexports_the_public_names_of_its_modules(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(getattr(module, "__all__", None) or [])
    assert exported
    assert len(exported) == len(set(exported)), f"{package}.__all__ lists a name twice"
    folder = REEXPORTS[package]
    for name, path in public_modules(CLIENT.parent / folder).items():
        names = declared_all(path) or []
        missing = sorted(set(names) - set(exported))
        assert not missing, f"{package}.__all__ lacks {missing} from {folder}/{name}"
        submodule = importlib.import_module(f"{folder.replace('/', '.')}.{name}")
        for n in names:  # the package's name is the module's object, not a namesake
            assert getattr(module, n) is getattr(submodule, n), f"{package}.{n} is not {submodule.__name__}.{n}"
    absent = [n for n in exported if not hasattr(module, n)]
    assert not absent, f"{package}.__all__ lists names it does not define: {absent}"


def test_unknown_names_raise_attribute_error() -> None:
    import client
    import client.adapters

    for module in (client, client.adapters):
        with pytest.raises(AttributeError, match="no_such_name"):
            _ = module.no_such_name


def test_names_that_other_packages_import_from_client_runs() -> None:
    import client.runs

    for name in (
        "DEFAULT_HASH_KEYS", "SCHEMA_VERSION", "EpisodeOutcome", "EpisodeRecorder", "EpisodeStatus",
        "RunConfigMismatch", "RunDir", "RunDirClosed", "RunLocked", "RunSummary", "TraceScan", "Totals",
        "canonical_json", "config_hash", "error_info", "package_version", "request_history", "to_jsonable",
    ):  # fmt: skip
        assert name in client.runs.__all__ and hasattr(client.runs, name), name


def test_importing_client_runs_loads_no_sdk() -> None:
    code = (
        "import sys, client, client.runs, client.messages\n"
        "heavy = sorted(m for m in ('mcp', 'openai', 'anthropic', 'httpx2', 'rich') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=CLIENT.parent)
    assert out.stdout.strip() == ""


def test_lazy_exports_read_each_modules_own_all(tmp_path: Path) -> None:
    """Exports are listed once (issue 41 item 5): a package names its modules, and the names come from
    their ``__all__``, read without importing them; a module whose ``__all__`` is not a literal list is
    named with its line."""
    from client.lazy import LazyExports, declared_all

    package = tmp_path / "pkg_lazy_demo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "heavy.py").write_text('import sys\nsys.modules["heavy_loaded"] = sys\n__all__ = [\n    "A",  # comment\n    "B",\n]\nA, B = 1, 2\n')
    (package / "light.py").write_text("__all__ = ('B', 'C')\nB = C = 3\n")
    (package / "bad.py").write_text("x = 1\n__all__ = sorted(['a'])\n")
    sys.path.insert(0, str(tmp_path))
    try:
        exports = LazyExports("pkg_lazy_demo", ("heavy", "light"))
        assert exports.names == ["A", "B", "C"] and "heavy_loaded" not in sys.modules
        assert exports.attribute("C") == 3 and "heavy_loaded" not in sys.modules
        assert exports.attribute("B") == 2 and "heavy_loaded" in sys.modules  # B comes from the first module
        with pytest.raises(AttributeError, match="no attribute 'D'"):
            exports.attribute("D")
        with pytest.raises(ValueError, match=r"bad\.py:2: __all__ is not a literal list"):
            declared_all(package / "bad.py")
        # a name that is a module too: `from pkg import light` would give the function or the module,
        # whichever was imported first
        (package / "clash.py").write_text("__all__ = ['light']\ndef light(): pass\n")
        with pytest.raises(ValueError, match="light is both an exported name and a module"):
            LazyExports("pkg_lazy_demo", ("clash", "heavy"))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("heavy_loaded", None)
