"""The runner's progress bar: done/total, ETA, tokens, cost, errors and a running score (on stderr),
and the run's tally the bar shows (:class:`RunTally`: the runner counts, the bar reads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["RunProgress", "RunTally", "format_tokens"]


@dataclass
class RunTally:
    """What a run has counted so far (the runner updates it; the bar and the run's result read it)."""

    tokens: int = 0
    cost_usd: float = 0.0
    completed: int = 0
    errored: int = 0
    cancelled: int = 0
    in_flight: int = 0
    max_in_flight: int = 0


def format_tokens(n: int) -> str:
    """``1234567`` -> ``"1.23M"``, ``12345`` -> ``"12.3k"``."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(n)


class RunProgress:
    """A rich progress bar for a run; every method is a no-op when ``enabled`` is false.

    Args:
        total: tasks in the run (skipped ones included).
        done: tasks already finished before this call (resume).
        enabled: draw anything at all.
        console: where to draw (default: a stderr console).
        description: text left of the bar.
    """

    def __init__(
        self,
        total: int,
        *,
        done: int = 0,
        enabled: bool = True,
        console: Console | None = None,
        description: str = "episodes",
    ) -> None:
        self.enabled = enabled
        self.tally = RunTally()  # the runner counts into it
        self._score_sum = 0.0
        self._score_n = 0
        self._status = ""
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if not enabled:
            return
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[stats]}"),
            console=self.console,
            transient=False,
        )
        self._task = self._progress.add_task(description, total=total, completed=done, stats="")

    @property
    def score(self) -> float | None:
        """Mean of the scores added so far (``None`` before the first)."""
        return self._score_sum / self._score_n if self._score_n else None

    def add_score(self, score: float | None) -> None:
        """Count one episode's score into the running mean (``None`` is ignored)."""
        if score is not None:
            self._score_sum += float(score)
            self._score_n += 1
            self.refresh()

    def start(self) -> None:
        """Start drawing."""
        if self._progress is not None:
            self._progress.start()
            self.refresh()

    def episode_finished(self, *, score: float | None = None, counted: bool = True) -> None:
        """An episode ended (the tally counted it); ``counted`` false for a cancelled one (not done, no trace)."""
        if counted and self._progress is not None and self._task is not None:
            self._progress.advance(self._task)
        if score is not None:
            self.add_score(score)
        else:
            self.refresh()

    def set_status(self, text: str) -> None:
        """Show a status word after the stats (e.g. "budget reached, finishing in-flight")."""
        self._status = text
        self.refresh()

    def log(self, message: str, **kwargs: Any) -> None:
        """Print a line above the bar (nothing when the bar is off)."""
        if self._progress is not None:
            self._progress.console.print(message, **kwargs)

    def stop(self) -> None:
        """Draw the final state and stop."""
        if self._progress is not None:
            self.refresh()
            self._progress.stop()

    def refresh(self) -> None:
        """Draw the tally's counts now (after the runner changed them)."""
        if self._progress is None or self._task is None:
            return
        tally = self.tally
        parts = [f"{format_tokens(tally.tokens)} tok", f"${tally.cost_usd:.4f}"]
        if self.score is not None:
            parts.append(f"score {self.score:.3f}")
        if tally.errored:
            parts.append(f"[red]{tally.errored} err[/red]")
        if tally.in_flight:
            parts.append(f"{tally.in_flight} running")
        if self._status:
            parts.append(f"[yellow]{self._status}[/yellow]")
        self._progress.update(self._task, stats=" · ".join(parts))
