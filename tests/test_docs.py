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
    """docs/data.md (the one page about data) states what first use downloads for every benchmark: the
    pinned lists' count and size."""
    from evals.core.fetch import needed_files
    from evals.core.registry import all_benchmarks

    files = {f.dest: f.size for name in all_benchmarks() for _, f in needed_files(name, tmp_path)}
    stated = f"{len(files)} files, {sum(files.values()) / 1e6:.1f} MB"
    assert stated in (ROOT / "docs" / "data.md").read_text(encoding="utf-8"), stated


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


def _fenced_after(page: Path, heading: str, lang: str) -> str:
    """The first ```lang block after ``heading`` in ``page``."""
    text = page.read_text(encoding="utf-8")
    assert heading in text, f"{page.name}: no heading {heading!r}"
    m = re.search(rf"```{lang}\n(.*?)```", text.split(heading, 1)[1], flags=re.S)
    assert m, f"{page.name}: no ```{lang} block after {heading!r}"
    return m.group(1)


def test_the_python_sdk_client_example_of_the_server_page_runs(data_dir, tmp_path):
    """Issue 37 item 10: docs/server.md's MCP SDK 2.x client, run as written against `evals serve`
    (only the port is changed)."""
    import os
    import socket
    import time

    import httpx2 as httpx

    code = _fenced_after(ROOT / "docs" / "server.md", "### Python: the MCP SDK 2.x", "python")
    assert "http://127.0.0.1:8765/mcp/familytool-b" in code
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "evals.cli", "serve", "--port", str(port), "--benchmarks",
                               "familytool-b"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "EVALS_DATA_DIR": str(data_dir)})
    try:
        deadline = time.monotonic() + 300
        while True:
            assert server.poll() is None, server.communicate(timeout=30)[1][-3000:]
            assert time.monotonic() < deadline, "evals serve did not answer /health"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        (tmp_path / "example.py").write_text(code.replace("127.0.0.1:8765", f"127.0.0.1:{port}"), encoding="utf-8")
        done = subprocess.run([sys.executable, str(tmp_path / "example.py")], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
    finally:
        server.terminate()
        try:
            server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate(timeout=30)
    assert done.returncode == 0, done.stderr[-3000:]
    tools, facts = done.stdout.strip().splitlines()[-2:]
    assert "'kg_neighbors'" in tools and "'kg_search_path'" in tools
    assert facts.startswith("{'entity': 'Bob', 'out': [")


def test_the_quick_starts_of_the_readme_and_the_docs_site_are_the_same():
    """Issue 37 item 10: README.md and docs/index.md gave two different quick starts. Both say that
    step 1 (the server) holds the terminal and step 2 does not need it."""
    readme = _fenced_after(ROOT / "README.md", "## Quick start", "bash")
    index = _fenced_after(ROOT / "docs" / "index.md", "## Quick start", "bash")
    assert readme == index
    assert "(foreground)" in readme.splitlines()[0] and "./test.sh --quick" in readme
    for page in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        text = " ".join(page.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0].split())
        assert "holds the terminal until Ctrl-C; step 2 does not need it" in text, page.name
