"""What code made a run's numbers: the project's version, the commit it runs from, the benchmark's
scorer version (``config.json``'s ``versions``), and the warning when a run is scored by another
scorer version than the one that made it."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plugin import Benchmark

__all__ = ["scorer_change", "source_commit", "versions"]


def source_commit(start: Path | None = None) -> str | None:
    """The git commit of the checkout this code runs from (read from ``.git``, no ``git`` process), or
    None for an installed copy."""
    here = (start or Path(__file__)).resolve()
    for folder in here.parents:
        dot_git = folder / ".git"
        if dot_git.is_file():  # a worktree: "gitdir: PATH"
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            dot_git = (folder / text.removeprefix("gitdir:").strip()).resolve()
        if not dot_git.is_dir():
            continue
        try:
            head = (dot_git / "HEAD").read_text(encoding="utf-8").strip()
            if not head.startswith("ref:"):
                return head or None
            ref = head.removeprefix("ref:").strip()
            common = dot_git
            if (dot_git / "commondir").is_file():
                common = (dot_git / (dot_git / "commondir").read_text(encoding="utf-8").strip()).resolve()
            for base in (dot_git, common):
                if (base / ref).is_file():
                    return (base / ref).read_text(encoding="utf-8").strip() or None
            packed = common / "packed-refs"
            if packed.is_file():
                for line in packed.read_text(encoding="utf-8").splitlines():
                    sha, _, name = line.partition(" ")
                    if name == ref:
                        return sha
        except OSError:
            return None
        return None
    return None


def versions(bench: Benchmark | None = None) -> dict[str, Any]:
    """The versions of the project (its version, the commit it runs from, the benchmark's scorer
    version) and of what can change its numbers (recorded, not matched on resume)."""
    from importlib.metadata import PackageNotFoundError, version

    def v(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    from kg_store.engine import engine_name

    out: dict[str, Any] = {"project": v("mcp-multihop-evals"), "commit": source_commit(), "python": platform.python_version(),
           "mcp": v("mcp"), "kg_engine": engine_name(), "jsonschema": v("jsonschema")}
    if bench is not None:
        out["scorer"] = {bench.info.name: bench.info.scorer_version}
    return out


def scorer_change(config: Mapping[str, Any], bench: Benchmark) -> str | None:
    """A warning when the run's numbers were made by another version of the benchmark's scorer than
    this one (``versions.scorer`` of its ``config.json``), else None."""
    name, now = bench.info.name, bench.info.scorer_version
    made = ((config.get("versions") or {}).get("scorer") or {}).get(name)
    if made == now:
        return None
    was = f"version {made}" if made is not None else "an unrecorded version (a run made before 0.6.0)"
    return (f"the {name} scorer changed since this run was made ({was}, now version {now}): its numbers may "
            "differ from the ones it first reported; CHANGELOG.md says what changed")
