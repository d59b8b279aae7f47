"""Which of a benchmark's tasks a run covers: ``--task-ids``, ``--sample N --sample-seed S``, ``--limit N``.

Applied in that order to the benchmark's task ids (its own order): the named tasks (or all), then a
seeded random sample of N of them (kept in the benchmark's order), then the first N. The run's
``config.json`` records the three settings (under ``run``), so ``evals score`` and a resumed run
select the same tasks. A run over fewer tasks than the benchmark has is a *subset*: its numbers are
never set beside a paper's without saying so (:func:`coverage`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["coverage", "parse_task_ids", "select_tasks", "selection_of"]


def parse_task_ids(text: str) -> list[str]:
    """``"a,b,c"`` or ``"@FILE"`` (one id per line; blank lines and ``#`` comments skipped) -> ids."""
    if text.startswith("@"):
        path = Path(text[1:]).expanduser()
        from tool_specs.bounded_read import read_text_lines

        try:  # untrusted: no line read past MAX_LINE_BYTES (LineTooLong, FILE:LINE; not UTF-8: FILE:LINE too)
            ids = [line.split("#", 1)[0].strip() for _, line in read_text_lines(path)]
        except OSError as exc:
            raise ValueError(f"--task-ids {text}: cannot read {path}: {exc.strerror or exc}") from None
    else:
        ids = [part.strip() for part in text.split(",")]
    ids = list(dict.fromkeys(i for i in ids if i))
    if not ids:
        raise ValueError(f"--task-ids {text!r} names no task")
    return ids


def select_tasks(
    all_ids: Sequence[str],
    *,
    limit: int | None = None,
    task_ids: Sequence[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> list[str]:
    """The tasks a run covers, in the benchmark's order (see the module docstring).

    ``ValueError`` names task ids the benchmark does not have, and a sample or limit below 1.
    """
    ids = list(all_ids)
    if task_ids:
        known = set(ids)
        unknown = [t for t in task_ids if t not in known]
        if unknown:
            shown = ", ".join(repr(t) for t in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            raise ValueError(f"--task-ids: no such task(s): {shown} (`evals list BENCHMARK` lists the task ids)")
        wanted = set(task_ids)
        ids = [t for t in ids if t in wanted]
    if sample is not None:
        if sample < 1:
            raise ValueError(f"--sample must be at least 1, got {sample}")
        if sample < len(ids):
            chosen = set(random.Random(seed).sample(ids, sample))
            ids = [t for t in ids if t in chosen]
    if limit is not None:
        if limit < 1:
            raise ValueError(f"--limit must be at least 1, got {limit}")
        ids = ids[:limit]
    return ids


def selection_of(run: Mapping[str, Any]) -> dict[str, Any]:
    """The selection settings of a run config's ``run`` entry (for :func:`select_tasks`)."""
    return {"limit": run.get("limit"), "task_ids": run.get("task_ids"), "sample": run.get("sample"),
            "seed": int(run.get("sample_seed") or 0)}


def coverage(selected: int, total: int) -> dict[str, Any]:
    """The summary's account of how much of the benchmark a run covers: ``benchmark_tasks`` (how
    many the benchmark has) and, for a subset, ``subset_note`` ("N of M tasks: not comparable")."""
    out: dict[str, Any] = {"benchmark_tasks": total}
    if selected < total:
        out["subset_note"] = f"{selected} of {total} tasks: not comparable with the papers' numbers (over every task)"
    return out
