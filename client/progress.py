"""The runner's progress bar: done/total, ETA, tokens, cost, errors and a running score (on stderr)."""

from __future__ import annotations

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

__all__ = ["RunProgress", "format_tokens"]


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
        self.tokens = 0
        self.cost_usd = 0.0
        self.errored = 0
        self.in_flight = 0
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
            self._refresh()

    def start(self) -> None:
        """Start drawing."""
        if self._progress is not None:
            self._progress.start()
            self._refresh()

    def add_usage(self, tokens: int, cost_usd: float) -> None:
        """Add live token and cost increments."""
        self.tokens += tokens
        self.cost_usd += cost_usd
        self._refresh()

    def episode_started(self) -> None:
        """One more episode in flight."""
        self.in_flight += 1
        self._refresh()

    def episode_finished(self, *, errored: bool, score: float | None = None, counted: bool = True) -> None:
        """An episode ended; ``counted`` false for a cancelled one (not done, no trace)."""
        self.in_flight = max(0, self.in_flight - 1)
        if errored:
            self.errored += 1
        if counted and self._progress is not None and self._task is not None:
            self._progress.advance(self._task)
        if score is not None:
            self.add_score(score)
        else:
            self._refresh()

    def set_status(self, text: str) -> None:
        """Show a status word after the stats (e.g. "budget reached, finishing in-flight")."""
        self._status = text
        self._refresh()

    def log(self, message: str, **kwargs: Any) -> None:
        """Print a line above the bar (nothing when the bar is off)."""
        if self._progress is not None:
            self._progress.console.print(message, **kwargs)

    def stop(self) -> None:
        """Draw the final state and stop."""
        if self._progress is not None:
            self._refresh()
            self._progress.stop()

    def _refresh(self) -> None:
        if self._progress is None or self._task is None:
            return
        parts = [f"{format_tokens(self.tokens)} tok", f"${self.cost_usd:.4f}"]
        if self.score is not None:
            parts.append(f"score {self.score:.3f}")
        if self.errored:
            parts.append(f"[red]{self.errored} err[/red]")
        if self.in_flight:
            parts.append(f"{self.in_flight} running")
        if self._status:
            parts.append(f"[yellow]{self._status}[/yellow]")
        self._progress.update(self._task, stats=" · ".join(parts))
