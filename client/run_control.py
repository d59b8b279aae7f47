"""What one :func:`client.runner.run_episodes` call is given and gives back: its spending caps
(:class:`Budget`), the handle that interrupts it (:class:`RunControl`, also from SIGINT/SIGTERM) and
its outcome (:class:`RunResult`, with the :data:`StopReason`). :mod:`client.runner` re-exports them."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from client.progress import format_tokens

__all__ = ["Budget", "RunControl", "RunResult", "StopReason"]

log = logging.getLogger("client.runner")  # the run's logger, as before this module was split off

StopReason = Literal["done", "budget", "interrupted", "circuit_breaker"]


@dataclass(frozen=True)
class Budget:
    """Spending caps for one :func:`run_episodes` call (``None`` = no cap).

    Attributes:
        max_tokens: input plus output tokens over all model responses of this call.
        max_cost_usd: estimated cost in USD (responses without a cost estimate count as 0).
    """

    max_tokens: int | None = None
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ValueError(f"Budget.max_tokens must be a positive number of tokens, got {self.max_tokens}")
        if self.max_cost_usd is not None and self.max_cost_usd <= 0:
            raise ValueError(f"Budget.max_cost_usd must be a positive amount of USD, got {self.max_cost_usd}")

    def exceeded(self, tokens: int, cost_usd: float) -> str | None:
        """A message saying which cap ``tokens``/``cost_usd`` reached, or ``None`` while within budget."""
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return f"token budget reached: {tokens} >= max_tokens {self.max_tokens}"
        if self.max_cost_usd is not None and cost_usd >= self.max_cost_usd:
            return f"cost budget reached: ${cost_usd:.4f} >= max_cost_usd ${self.max_cost_usd:.4f}"
        return None


@dataclass
class RunResult:
    """What one :func:`run_episodes` call did.

    Attributes:
        tasks: task ids passed in.
        completed / errored: episodes of this call that finished with that status (and got a trace).
        skipped: tasks already finished in the run before this call.
        cancelled: episodes in flight when interrupted (no trace; they run again on resume).
        not_started: tasks left untouched because the run stopped early.
        stopped_reason: ``"done"``, ``"budget"``, ``"interrupted"`` or ``"circuit_breaker"``.
        tokens / cost_usd: spent by this call (input+output tokens; known cost estimates).
        wall_s: wall-clock seconds of this call.
        score: mean ``score_fn`` over the run's newest traces of these tasks (``None`` without scores).
        message: why the run stopped early, when it did.
        max_in_flight: the most episodes that ran at the same time.
    """

    tasks: int
    completed: int
    errored: int
    skipped: int
    cancelled: int
    not_started: int
    stopped_reason: StopReason
    tokens: int
    cost_usd: float
    wall_s: float
    score: float | None = None
    message: str | None = None
    max_in_flight: int = 0

    @property
    def remaining(self) -> int:
        """Tasks that still need an episode (cancelled + not started)."""
        return self.cancelled + self.not_started

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)

    def describe(self) -> str:
        """One line for people, e.g. for the CLI."""
        parts = [
            f"stopped_reason={self.stopped_reason}",
            f"{self.completed} completed",
            f"{self.errored} errored",
            f"{self.skipped} skipped",
        ]
        if self.remaining:
            parts.append(f"{self.remaining} remaining (resume to run them)")
        parts += [f"{format_tokens(self.tokens)} tokens", f"${self.cost_usd:.4f}", f"{self.wall_s:.1f}s"]
        if self.score is not None:
            parts.append(f"score {self.score:.4f}")
        text = ", ".join(parts)
        return f"{text} ({self.message})" if self.message else text


class RunControl:
    """Lets a caller (or a signal handler) interrupt a running :func:`run_episodes` cleanly."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: str | None = None

    @property
    def interrupted(self) -> bool:
        """Whether :meth:`interrupt` was called."""
        return self._event.is_set()

    def interrupt(self, reason: str = "interrupted") -> None:
        """Stop the run: cancel in-flight episodes (no trace for them), start no new ones."""
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    async def wait(self) -> None:
        """Return once interrupted."""
        await self._event.wait()

    def install_signal_handlers(
        self, signals: Iterable[signal.Signals] = (signal.SIGINT, signal.SIGTERM)
    ) -> Callable[[], None]:
        """Make ``signals`` call :meth:`interrupt` on the running loop; return a function that undoes it.

        The first signal interrupts and puts the previous handlers back, so a second one acts as it
        did before (under ``asyncio.run``: Ctrl-C aborts at once). Where the loop cannot take signal
        handlers (not the main thread, Windows) this logs a warning and does nothing.
        """
        loop = asyncio.get_running_loop()
        previous: dict[signal.Signals, Any] = {}

        def restore() -> None:
            for sig, handler in previous.items():
                loop.remove_signal_handler(sig)
                if handler is not None:
                    signal.signal(sig, handler)
            previous.clear()

        def on_signal(sig: signal.Signals) -> None:
            self.interrupt(f"received {sig.name}")
            restore()

        for sig in signals:
            try:
                before = signal.getsignal(sig)
                loop.add_signal_handler(sig, on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError) as exc:
                log.warning(
                    "cannot handle %s on this event loop (%s); Ctrl-C will abort the run", sig.name, exc
                )
                continue
            previous[sig] = before
        return restore
