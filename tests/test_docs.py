"""The documentation cannot drift: the site builds in strict mode, every ``evals`` command in a fenced
block of README.md and docs/ parses with today's command line, and the numbers the docs state about
first use are the pinned download list's."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from evals.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PREFIXES = ("evals ", "./run.sh", ".venv/bin/evals ")
FENCE = re.compile(r"^```(\w*)\s*$")


def fenced_commands(text: str) -> list[tuple[int, str]]:
    """``(line, command)`` for each ``evals``/``./run.sh`` command in a fenced shell block: comments
    and ``VAR=value`` prefixes dropped, ``\\`` continuations joined, ``[optional parts]`` removed."""
    out: list[tuple[int, str]] = []
    lang = None
    pending = ""
    start = 0
    for i, line in enumerate(text.splitlines(), start=1):
        m = FENCE.match(line.strip())
        if m:
            lang = None if lang is not None else (m.group(1) or "text")
            continue
        if lang not in ("bash", "sh", "shell", "console"):
            continue
        line = line.strip().removeprefix("$ ")
        if pending:
            line = pending + " " + line
        else:
            start = i
        if line.endswith("\\"):
            pending = line[:-1].strip()
            continue
        pending = ""
        command = re.split(r"\s+#\s|\s+#$|^#", line, maxsplit=1)[0].strip()
        command = re.sub(r"^(\w+=\S*\s+)+", "", command)  # VAR=value prefixes
        if command.startswith(PREFIXES):
            out.append((start, command))
    return out


def _argv(command: str) -> list[str]:
    command = re.split(r"\s(?:\||>|2>|&&|;)\s", command)[0]  # the evals part of a pipeline
    command = re.sub(r"\s\[[^\[\]]*\]", "", command)  # [--optional parts]
    words = [w for w in shlex.split(command) if w != "..."]  # "..." stands for more flags
    if words[0] == "./run.sh":
        return words[1:] or ["serve"]
    return words[1:]


# the example benchmark docs/adding-a-benchmark.md builds: its commands run in
# tests/evals/test_adding_a_benchmark.py, with the benchmark installed
EXAMPLE_BENCHMARK = "arith"


def _every_command() -> list[tuple[str, str]]:
    return [(f"{page.relative_to(ROOT)}:{line}", command)
            for page in PAGES for line, command in fenced_commands(page.read_text(encoding="utf-8"))
            if EXAMPLE_BENCHMARK not in shlex.split(command)]


def test_the_extractor_finds_commands_and_skips_what_is_not_one():
    text = ("```bash\nEVALS_X=1 evals run toolhop --model oracle   # a comment\n./test.sh\nevals serve \\\n  --port 1\n```\n"
            "```yaml\nevals: not a command\n```\n")
    assert fenced_commands(text) == [(2, "evals run toolhop --model oracle"), (4, "evals serve --port 1")]
    assert _argv("evals run familytool-b --model M [--kg-model M2] --limit 3 | tail -1") == [
        "run", "familytool-b", "--model", "M", "--limit", "3"]


def test_the_docs_hold_commands():
    commands = _every_command()
    assert len(commands) >= 30
    assert {where.split(":")[0] for where, _ in commands} >= {"docs/index.md", "docs/benchmarks/toolhop.md"}


@pytest.mark.parametrize("where,command", _every_command(), ids=[where for where, _ in _every_command()])
def test_every_evals_command_in_the_docs_parses(where, command, capsys):
    """Each command parses with today's flags (a removed or renamed flag, sub-command or choice fails)."""
    argv = _argv(command)
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:  # --help / --version exit 0; a usage error exits 2
        message = capsys.readouterr().err.strip()
        # a file the page names as an example of your own (my_tasks.jsonl) parses; only the file is missing
        placeholder_file = exc.code == 2 and "no such file" in message.splitlines()[-1]
        assert exc.code == 0 or placeholder_file, f"{where}: `{command}` does not parse: {message[-400:]}"


def test_first_use_download_numbers_in_the_docs_are_the_pinned_lists(tmp_path):
    """docs/index.md states what first use downloads for every benchmark: the pinned lists' count and size."""
    from evals.core.fetch import needed_files
    from evals.core.registry import all_benchmarks

    files = {f.dest: f.size for name in all_benchmarks() for _, f in needed_files(name, tmp_path)}
    stated = f"{len(files)} files, {sum(files.values()) / 1e6:.1f} MB"
    assert stated in (ROOT / "docs" / "index.md").read_text(encoding="utf-8"), stated


def test_the_docs_site_builds_in_strict_mode(tmp_path):
    """``mkdocs build --strict``: a broken link, a missing page or anchor fails (mkdocs.yml: strict, validation)."""
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(tmp_path / "site")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "benchmarks" / "toolhop" / "index.html").is_file()
    # a broken link fails the build
    broken = tmp_path / "docs"
    broken.mkdir()
    (broken / "index.md").write_text("# x\n\n[missing](nowhere.md)\n", encoding="utf-8")
    cfg = tmp_path / "mkdocs.yml"
    cfg.write_text((ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("docs_dir: docs", f"docs_dir: {broken}"),
                   encoding="utf-8")
    bad = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(cfg),
                          "--site-dir", str(tmp_path / "site2")], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "nowhere.md" in bad.stderr
