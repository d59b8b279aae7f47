"""A run names the code that made its numbers (issue 45, item 7): the project's version, the commit it
ran from and the benchmark's scorer version in ``config.json``; `evals score` says when the scorer
changed since the run was made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evals.core.registry import all_benchmarks, get_benchmark
from evals.core.versions import source_commit

REPO = Path(__file__).resolve().parents[2]


def _evals(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=600)


def test_a_run_config_names_the_version_the_commit_and_the_scorer(data_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "r"
    made = _evals("run", "familytool-b", "--model", "oracle", "--limit", "2", "--run-dir", str(run), "--no-progress")
    assert made.returncode == 0, made.stderr[-3000:]
    got = json.loads((run / "config.json").read_text())["versions"]
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'version = "{got["project"]}"' in pyproject and got["project"] != "0.1.0"
    assert got["commit"] == source_commit() and got["commit"] is not None and len(got["commit"]) == 40
    assert got["scorer"] == {"familytool-b": get_benchmark("familytool-b").scorer_version}

    same = _evals("score", str(run), "--json")
    assert same.returncode == 0, same.stderr[-3000:]
    summary = json.loads(same.stdout.strip().splitlines()[-1])
    assert summary["scorer_version"] == get_benchmark("familytool-b").scorer_version
    assert not any("scorer changed" in w for w in summary["warnings"])

    # the run as an older scorer left it: evals score says the scorer changed since
    config = json.loads((run / "config.json").read_text())
    config["versions"]["scorer"] = {"familytool-b": 0}
    (run / "config.json").write_text(json.dumps(config))
    older = _evals("score", str(run), "--json")
    assert older.returncode == 0, older.stderr[-3000:]
    warned = [w for w in json.loads(older.stdout.strip().splitlines()[-1])["warnings"] if "scorer changed" in w]
    assert warned and "version 0, now version" in warned[0] and "CHANGELOG.md" in warned[0]
    assert "scorer changed" in older.stderr


def test_every_scorer_version_has_a_changelog_line() -> None:
    """CHANGELOG.md names every benchmark's current scorer version: a raised version comes with the
    line that says what changed in its numbers."""
    changelog = (REPO / "CHANGELOG.md").read_text()
    for name in all_benchmarks():
        info = get_benchmark(name)
        assert f"`{info.package.rsplit('.', 1)[-1]}` scorer {info.scorer_version}" in changelog, name


def test_the_commit_is_read_from_a_worktree_too(tmp_path: Path) -> None:
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "init", "-q", str(tmp_path / "repo")], check=True)
    (tmp_path / "repo" / "f").write_text("x")
    subprocess.run([*git, "-C", str(tmp_path / "repo"), "add", "f"], check=True)
    subprocess.run([*git, "-C", str(tmp_path / "repo"), "commit", "-qm", "c"], check=True)
    subprocess.run([*git, "-C", str(tmp_path / "repo"), "pack-refs", "--all"], check=True)
    subprocess.run([*git, "-C", str(tmp_path / "repo"), "worktree", "add", "-q", str(tmp_path / "wt")], check=True)
    head = subprocess.run(["git", "-C", str(tmp_path / "repo"), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    (tmp_path / "wt" / "pkg").mkdir()
    assert source_commit(tmp_path / "repo" / "f") == head
    assert source_commit(tmp_path / "wt" / "pkg" / "m.py") == head
    assert source_commit(tmp_path / "elsewhere" / "m.py") is None
