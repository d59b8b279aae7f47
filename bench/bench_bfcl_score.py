"""Scoring a full BFCL result folder: ``evals score --format bfcl-official`` beside ``bfcl evaluate`` on the same files.

Two folders, every entry of BFCL's single-turn categories (the oracle's calls, one line in three made wrong:
a text reply), in BFCL's layout: an FC model's (``gpt-4o-2024-11-20-FC``: arguments as JSON text, and the
four multi-turn categories, each turn's gold calls, one entry in three a turn short) and a prompting model's (``Qwen/Qwen3-8B``: Python call syntax as text, and format_sensitivity's
5,200 entries). Each is scored by ``evals score`` (a fresh process, as a user runs it) and by BFCL's own
``bfcl evaluate`` (``eval_runner.main`` in .ci/bfcl-venv, through tests/evals/benchmarks/bfcl/bfcl_evaluate_driver.py),
``--runs`` times each, alternating; the table gives the median wall seconds and their ratio. With
``--compare-ref REF`` the code of commit REF (a temporary git worktree) scores the same folders in the same
rounds. CPU is user + system time of the command and of every process it left behind (BFCL's backend
holders: this script is their subreaper and waits for them). Each code tree's modules are compiled to bytecode
first (``compileall``, into its git-ignored ``__pycache__``), as an installed package has them and as
``bfcl evaluate``'s installed package has its own: with ``PYTHONDONTWRITEBYTECODE`` set (as in this project's
shells) every ``evals score`` would otherwise compile its ~150 modules from source, about 0.2 s of each run.
BFCL's own modules that ``evals`` runs are compiled from the verified wheel's bytes on every run either way.

    EVALS_DATA_DIR=... PYTHONPATH=. python bench/bench_bfcl_score.py [--runs 3] [--compare-ref main]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, ref_worktree  # bench/ is on sys.path when run as a script

from evals.benchmarks.bfcl.data import load_entries
from evals.benchmarks.bfcl.files import MULTI_TURN, SINGLE_TURN
from evals.benchmarks.bfcl.format_sensitivity import load_format_sensitivity
from evals.benchmarks.bfcl.multi_turn import gold_steps, read_multi_turn
from evals.benchmarks.bfcl.prompting import entry_format, oracle_text
from evals.benchmarks.bfcl.single_turn import gold_calls

VENV = ROOT / ".ci" / "bfcl-venv" / "bin" / "python"
DRIVER = ROOT / "tests" / "evals" / "benchmarks" / "bfcl" / "bfcl_evaluate_driver.py"
MODELS = {"gpt-4o-2024-11-20-FC": False, "Qwen/Qwen3-8B": True}  # model -> prompting
PACKAGES = ("kg_store", "tool_specs", "server", "client", "evals")


def _write(root: Path, model: str, prompting: bool) -> list[str]:
    folder = root / model.replace("/", "_")
    categories = [c for c in SINGLE_TURN if not (prompting and c in ("simple_java", "simple_javascript"))]
    entries = list(load_entries(tuple(categories)))
    if prompting:
        entries += load_format_sensitivity()
    files: dict[Path, list[str]] = {}
    for n, entry in enumerate(entries):
        gold = gold_calls(entry, served=not prompting)
        if n % 3 == 2 or not gold:
            result: object = "I cannot help with that."
        elif prompting:
            result = oracle_text(gold, *entry_format(entry))
        else:
            result = [{c["name"]: json.dumps(c["arguments"])} for c in gold]
        group = entry.category if entry.category == "format_sensitivity" else \
            "live" if entry.category.startswith("live_") else "non_live"
        path = folder / group / f"BFCL_v4_{entry.category}_result.json"
        files.setdefault(path, []).append(json.dumps({"id": entry.id, "result": result}))
    written = {e.category for e in entries}
    if not prompting:  # BFCL's multi-turn categories: each turn's gold calls, one entry in three a turn short
        for category in MULTI_TURN:
            for n, multi in enumerate(read_multi_turn(category)):
                turns = [[[{c["name"]: json.dumps(c["arguments"])} for c in step]] for step in gold_steps(multi)]
                path = folder / "multi_turn" / f"BFCL_v4_{category}_result.json"
                files.setdefault(path, []).append(json.dumps({"id": multi.id, "result": turns[:-1] if n % 3 == 2
                                                              else turns}))
            written.add(category)
    for path, lines in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    return sorted(written)


def _compiled(code: Path) -> None:
    """The code tree's packages compiled to bytecode (see the module docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    packages = [str(code / p) for p in PACKAGES if (code / p).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], env=env, cwd=code, check=True,
                   stdout=subprocess.DEVNULL)


def _timed(command: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the process and of every process it started, those
    it left running too: they are reparented to this one, a subreaper, and waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    elapsed = time.perf_counter() - start
    with contextlib.suppress(ChildProcessError):
        while True:
            os.wait()  # the command's orphans (a backend zygote and its holders) as they end
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed:\n{done.stderr[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare-ref", metavar="REF", help="also score with the code of this git commit, interleaved")
    args = parser.parse_args()
    if not VENV.is_file():
        raise SystemExit(f"{VENV} is missing: run scripts/bfcl_env.sh")
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: the commands' orphans come here
    rows: list[tuple[str, int, str, float, float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-bfcl-") as tmp, contextlib.ExitStack() as stack:
        codes = {"this tree": ROOT}
        if args.compare_ref:
            codes[args.compare_ref] = stack.enter_context(ref_worktree(args.compare_ref))
        for code in codes.values():
            _compiled(code)
        for model, prompting in MODELS.items():
            root = Path(tmp) / model.replace("/", "_") / "result"
            categories = _write(root, model, prompting)
            lines = sum(len(p.read_text().splitlines()) for p in root.rglob("*.json"))
            ours: dict[str, list[tuple[float, float]]] = {name: [] for name in codes}
            theirs = []
            for run in range(args.runs):
                for name, code in codes.items():
                    out = Path(tmp) / f"run-{run}-{len(rows)}"
                    ours[name].append(_timed([sys.executable, "-m", "evals.cli", "score",
                                              str(root / model.replace("/", "_")), "--format", "bfcl-official",
                                              "--benchmark", "bfcl", "--out", str(out)],
                                             {**os.environ, "PYTHONPATH": str(code)}, cwd=code))  # -m: cwd first
                    shutil.rmtree(out, ignore_errors=True)
                score = Path(tmp) / f"score-{run}-{len(rows)}"
                theirs.append(_timed([str(VENV), str(DRIVER), str(root), str(score), model, *categories],
                                     {**os.environ, "PYTHONPATH": str(ROOT)}))
                shutil.rmtree(score, ignore_errors=True)
            their_wall, their_cpu = (statistics.median(t[i] for t in theirs) for i in (0, 1))
            for name in codes:
                wall, cpu = (statistics.median(t[i] for t in ours[name]) for i in (0, 1))
                rows.append((model, lines, name, wall, cpu, their_wall, their_cpu))
    print("| result folder | lines | code | evals score wall / CPU (s) | bfcl evaluate wall / CPU (s) | ratio wall / CPU |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    for model, lines, name, wall, cpu, their_wall, their_cpu in rows:
        print(f"| {model} | {lines:,} | {name} | {wall:.2f} / {cpu:.2f} | {their_wall:.2f} / {their_cpu:.2f} "
              f"| {their_wall / wall:.2f}x / {their_cpu / cpu:.2f}x |")
    print(f"(medians of {args.runs} runs each, interleaved; ratio: bfcl evaluate's time over evals score's)")


if __name__ == "__main__":
    main()
