"""`python -m bench.fuzz --bench NAME [--files N] [--seed S] [--work DIR] [--keep DIR]`: the table."""

from __future__ import annotations

import argparse
import collections
import importlib
import random
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from .ours import score_outcome
from .outcome import Outcome, compare


def run_ours(target: ModuleType, case: Path) -> Outcome:
    """The target's own `run_ours`, else `evals score CASE --format NAME-official --benchmark NAME`
    with every summary metric compared at the target's DIGITS decimals (see `outcome.Target`)."""
    if hasattr(target, "run_ours"):
        got: Outcome = target.run_ours(case)
        return got
    return score_outcome(case, f"{target.NAME}-official", target.NAME, target.DIGITS, target.SAME)


def _fuzz(name: str, a: argparse.Namespace, counts: collections.Counter[str]) -> None:
    target = importlib.import_module(f"bench.fuzz.{name}")
    work = a.work / name
    work.mkdir(parents=True, exist_ok=True)
    target.prepare(work)
    rng = random.Random(f"{a.seed}:{name}")
    for i in range(a.files):
        with tempfile.TemporaryDirectory() as tmp:
            case = target.generate(rng, Path(tmp))
            off, ours = target.run_official(work, case), run_ours(target, case)
            n = max(1, len(off.numbers))
            verdict = compare(off, ours)
            counts[verdict] += n
            counts["files"] += 1
            if (i + 1) % 25 == 0:  # progress on stderr: the table comes at the end
                print(f"{name}: {i + 1} files: " + ", ".join(f"{k} {counts[k]}" for k in
                      ("equal", "loud", "silent", "crashed")), file=sys.stderr, flush=True)
            if verdict != "equal" and a.keep:
                dest = a.keep / name / f"{a.seed}-{i}-{verdict}"
                dest.mkdir(parents=True, exist_ok=True)
                (shutil.copytree if case.is_dir() else shutil.copy)(case, dest / case.name)
                (dest / "outcomes.txt").write_text(f"official: {off}\nours: {ours}\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__)
    p.add_argument("--bench", action="append", required=True, help="a module of bench/fuzz (repeatable)")
    p.add_argument("--files", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "evals-fuzz",
                   help="where the official code and its venv are kept between runs")
    p.add_argument("--keep", type=Path, help="copy every non-equal case here, with both outcomes")
    a = p.parse_args(argv)
    try:  # our side runs `evals` in a child of this Python: without the project's packages every file "crashes"
        import evals.cli  # noqa: F401
    except ImportError as exc:
        p.error(f"the project cannot be imported ({exc}): run .venv/bin/python -m bench.fuzz from the checkout")
    # SIGINT or SIGTERM (a background job ignores SIGINT): stop and print the table of the files done
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    rows = []
    try:
        for name in a.bench:
            counts: collections.Counter[str] = collections.Counter()
            rows.append((name, counts))
            _fuzz(name, a, counts)
    except KeyboardInterrupt:  # Ctrl-C, SIGINT or SIGTERM: the table of the files done so far
        print("interrupted: the table counts the files done", file=sys.stderr)
    print(f"| benchmark | files | numbers equal | loud | silent | crashed |   (seed {a.seed})")
    print("|---|---|---|---|---|---|")
    for name, c in rows:
        print(f"| {name} | {c['files']} | {c['equal']} | {c['loud']} | {c['silent']} | {c['crashed']} |")
    return 1 if any(c["silent"] or c["crashed"] for _, c in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
