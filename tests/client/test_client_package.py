"""The client package's public names: every module declares ``__all__``, a package face exports nothing
(names are imported from their modules), and ``import client.runs`` stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[2] / "client"
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


@pytest.mark.parametrize("package", ["client", "evals.core", "evals.view"])
def test_a_package_face_exports_nothing_and_imports_none_of_its_modules(package: str) -> None:
    """Issue 45, item 3: no lazy package faces; names are imported from their modules."""
    code = (f"import sys, {package} as p\n"
            f"print(p.__all__, sorted(m for m in sys.modules if m.startswith('{package}.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=CLIENT.parent)
    assert out.stdout.split() == ["[]", "[]"], out.stdout


def test_the_adapter_registry_loads_a_provider_only_when_one_is_built() -> None:
    code = ("import sys\nfrom client.adapters import make_adapter\n"
            "before = 'client.adapters.openai_adapter' in sys.modules or 'openai' in sys.modules\n"
            "make_adapter('openai:m', base_url='http://127.0.0.1:9/v1')\n"
            "print(before, 'client.adapters.openai_adapter' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=CLIENT.parent)
    assert out.stdout.split() == ["False", "True"]


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
