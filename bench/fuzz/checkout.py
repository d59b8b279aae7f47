"""The official code for a benchmark's fuzzing: its files at a pinned commit, and a venv of its own.

`prepare_official(work, repo, commit, paths, packages)` puts `paths` of `repo` at `commit` under
`work/code` (a `git archive` of the snapshot the `fetch` tool keeps under /work/.mirror, else of a
fresh clone) and, unless ``packages`` is None (the code runs with the system Python's standard library),
a venv with `packages` at `work/venv`, once; later calls find them there. It returns `work/code`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["prepare_official"]


def prepare_official(work: Path, repo: str, commit: str, paths: list[str], packages: list[str] | None) -> Path:
    code = work / "code"
    if not all((code / p).exists() for p in paths):
        code.mkdir(parents=True, exist_ok=True)
        mirror = Path("/work/.mirror") / repo.replace("/", "+") / "repo"
        if not mirror.is_dir():
            mirror = work / "clone" / ".git"
            if not mirror.is_dir():
                subprocess.run(["git", "clone", "-q", f"https://github.com/{repo}", str(work / "clone")], check=True)
        archive = subprocess.run(["git", f"--git-dir={mirror}", "archive", commit, *paths], check=True,
                                 capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive.stdout, check=True)
    venv = work / "venv"
    if packages is not None and not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *packages], check=True)
    return code
