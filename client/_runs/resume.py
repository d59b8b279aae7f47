"""Resume bookkeeping: which tasks a resumed run skips, and what a run has done so far.

A task counts as finished when its newest trace is ``completed``, or ``errored`` with a
deterministic error (``error.retryable`` false). Tasks whose newest trace is an errored one with a
transient error (rate limit after all retries, dropped connection, timeout) are run again;
``retry_errored=True`` re-runs every errored task. Several records for one task may then exist;
readers keep the newest (last in the file).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .jsonl import TraceScan
from .records import Totals

__all__ = ["RunSummary", "finished_task_ids", "summarize_traces"]


@dataclass
class RunSummary:
    """Counts and totals over a run's newest record per task.

    ``totals`` sums the newest record per task; ``spent`` sums every record, superseded ones (errored
    episodes that were re-run) included: what the run actually cost.
    """

    tasks: int
    completed: int
    errored: int
    totals: Totals
    spent: Totals
    records: int
    superseded: int
    torn_tail_bytes: int
    bad_lines: int
    errors_by_type: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        data = dataclasses.asdict(self)
        data["totals"] = self.totals.to_dict()
        data["spent"] = self.spent.to_dict()
        return data


def finished_task_ids(latest: Mapping[str, Mapping[str, Any]], *, retry_errored: bool = False) -> set[str]:
    """The tasks of ``latest`` (``{task_id: newest record}``) that a resumed run skips.

    Those whose newest record is ``completed``, or ``errored`` with a deterministic error
    (``error.retryable`` false); with ``retry_errored`` only the completed ones.
    """
    done: set[str] = set()
    for task_id, record in latest.items():
        if record.get("status") == "completed":
            done.add(task_id)
        elif not retry_errored and not (record.get("error") or {}).get("retryable", False):
            done.add(task_id)
    return done


def summarize_traces(scan: TraceScan) -> RunSummary:
    """Counts (completed/errored), token and cost totals over the newest record per task of ``scan``."""
    latest = scan.latest()
    totals, spent = Totals(), Totals()
    for record in scan.records:
        spent.add(record.get("totals") or {})
    completed = errored = 0
    errors: dict[str, int] = {}
    for record in latest.values():
        if record.get("status") == "completed":
            completed += 1
        else:
            errored += 1
            kind = str((record.get("error") or {}).get("type", "unknown"))
            errors[kind] = errors.get(kind, 0) + 1
        totals.add(record.get("totals") or {})
    return RunSummary(
        tasks=len(latest),
        completed=completed,
        errored=errored,
        totals=totals,
        spent=spent,
        records=len(scan.records),
        superseded=scan.superseded,
        torn_tail_bytes=len(scan.torn_tail or b""),
        bad_lines=len(scan.bad_lines),
        errors_by_type=dict(sorted(errors.items())),
    )
