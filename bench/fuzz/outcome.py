"""What one side (the official code, or ours) made of one generated file, and how two are compared."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

Verdict = Literal["equal", "loud", "silent", "crashed"]


@dataclass
class Outcome:
    """numbers: metric name -> the text printed (compared as text, to the last printed digit).

    stopped: the official code stopped on the file (an exception, a non-zero exit), or ours refused it
    (exit 2 with a one-line error). warned: ours scored it and printed a warning that names the lines and
    the reason. crashed: ours ended in a traceback (never allowed). note: one line, for the table's log.
    """

    numbers: dict[str, str] = field(default_factory=dict)
    stopped: bool = False
    warned: bool = False
    crashed: bool = False
    note: str = ""


def compare(official: Outcome, ours: Outcome) -> Verdict:
    """equal: same numbers (or both stopped); loud: ours refused or warned where they differ or the
    official code stopped; silent: different numbers (or official stopped) with no word from ours."""
    if ours.crashed:
        return "crashed"
    if official.stopped:
        return "equal" if ours.stopped else ("loud" if ours.warned else "silent")
    if ours.stopped:
        return "loud"
    same = all(ours.numbers.get(k) == v for k, v in official.numbers.items())
    if same:
        return "equal"
    return "loud" if ours.warned else "silent"


class Target(Protocol):
    """One benchmark's fuzzing: a module `bench/fuzz/<name>.py` exposing these as module attributes.

    Our side is the driver's (`__main__.run_ours`): `evals score CASE --format NAME-official --benchmark
    NAME --json`, every metric of the summary compared at DIGITS decimals, a warning holding one of SAME
    (phrases of warnings that say the number is the official one) not counted as a warning. A target
    whose numbers come otherwise defines `run_ours(case) -> Outcome` instead (with `ours.evals_score`).
    """

    NAME: str
    DIGITS: int
    SAME: tuple[str, ...]

    def prepare(self, work: Path) -> None:
        """Fetch / set up the official code (pinned commit, its own venv) under `work`, once."""

    def generate(self, rng: random.Random, case_dir: Path) -> Path:
        """Write one unusual input file (or folder) under case_dir; return the path to score."""

    def run_official(self, work: Path, case: Path) -> Outcome: ...
