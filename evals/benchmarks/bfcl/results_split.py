"""A large BFCL result folder's single-turn lines decoded in two processes (``evals score --format bfcl-official``).

Decoding a line (BFCL's decoder for a prompting model's text, the trace, its line of ``traces.jsonl``:
``.results._row``) is most of the work of reading a folder, one line at a time, each on its own. With many
lines (at least :data:`MIN_ROWS`) and a CPU to spare (:func:`spare_cpu`), the process forks once, after the
files are read and BFCL's code is imported: the child does every other line, this process the rest; then this
process takes the child's lines and checks every line in the files' order as before (``.results._read_lines``:
ids, repeats, FILE:LINE refusals, warnings). The child sends back only the lines whose trace reads back from its
JSON as it was (``.results._reads_back``: ``json.loads`` of the line gives the same value), the traces in
:mod:`marshal`'s format (cheaper to read than the lines' JSON), each with the trace's verdict
(``.single_turn.entry_verdict``), which the scoring of that trace object then takes (:func:`.checker.hand_over`); this process makes the verdicts of its own such lines too, while the child works.
Any other line, one whose work raised, or all of them when the child fails, are done here as before. Not with
a multi-turn file (its replays' threads are running: a fork copies only the forking thread), nor with any
other thread running.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import pickle
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .checker import Verdict
from .data import BfclEntry, load_entries
from .files import FORMAT_SENSITIVITY, SINGLE_TURN
from .format_sensitivity import load_format_sensitivity

if TYPE_CHECKING:
    from ...core.formats import OfficialLines
    from .handlers import Decoding

__all__ = ["MIN_ROWS", "Row", "VerdictOf", "spare_cpu", "split_rows"]

MIN_ROWS = 2000  # below this, a fork (about 10 ms) and the child's lines read back cost more than they save
Job = tuple[int, int, str, Any, str, str]  # (file, row index, entry id, result, FILE:LINE, source)
# a line's work (.results._row): (trace, status, line, reads back, holds a lone
# surrogate, holds an integer beyond a float, the trace's verdict or None)
Row = tuple[dict[str, Any], str, str, bool, bool, bool, Verdict | None]
RowOf = Callable[[str, str, Any, str, str, "Decoding"], Row]  # .results._row
# the child's traces go back in marshal's format 2, which shares no object between two places (as json.loads of the
# line gives none); reading them is about 0.6 of json.loads of their lines (4,345 traces: 0.024 s against 0.036 s)
_MARSHAL = 2
VerdictOf = Callable[[BfclEntry, Mapping[str, Any] | None], Verdict]  # .single_turn.entry_verdict


def split_rows(files: Sequence[Path], categories: Sequence[str], known: Mapping[str, str], decoding: Decoding,
               row_of: RowOf, verdict_of: VerdictOf | None) -> tuple[dict[int, OfficialLines], dict[int, dict[int, Row]]]:
    """The single-turn files as read (by file index; a file that is refused is left to be read again, in order)
    and, for a folder of at least :data:`MIN_ROWS` lines, the work of its lines (by file, then row index; ``row_of``:
    a line's, ``verdict_of``: a trace's verdict, none without it)."""
    from ...core.formats import official_jsonl

    parsed: dict[int, OfficialLines] = {}
    for n, (file, category) in enumerate(zip(files, categories, strict=True)):
        if category in SINGLE_TURN or category == FORMAT_SENSITIVITY:
            with contextlib.suppress(Exception):  # raised again where the file is read in order
                parsed[n] = official_jsonl(file)
    jobs: list[Job] = [(n, i, row["id"], row["result"], f"{files[n]}:{number}", str(files[n]))
                       for n, lines in parsed.items() for i, (number, row) in enumerate(lines.rows)
                       if isinstance(row, dict) and isinstance(row.get("id"), str) and "result" in row
                       and known.get(row["id"]) == categories[n]]
    if len(jobs) < MIN_ROWS or threading.active_count() > 1 or not hasattr(os, "fork") or not spare_cpu():
        return parsed, {}
    return parsed, _in_two(jobs[0::2], jobs[1::2], categories, decoding, row_of, verdict_of)


def spare_cpu() -> bool:
    """Whether a second process would have a CPU to itself: at least two CPUs for this process and fewer tasks
    running right now than CPUs (``/proc/loadavg``'s running count, this process included, where there is one).
    Not the load average: it counts this command's own earlier runs (scored one after the other, as a bench
    does, a quiet 2-CPU machine reads 1-2 and the fork, 0.09 s faster there, was never taken). On a busy machine
    the child waits for a CPU while this process waits for the child: measured 0.1-0.2 s slower than one
    process under a load of 1.4-2 on 2 CPUs."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cpus < 2:
        return False
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[3].split(b"/")[0]) < cpus
    except (OSError, ValueError, IndexError):
        return True


def _entries(categories: Sequence[str]) -> dict[str, BfclEntry]:
    """The entries of the single-turn categories by id (loaded already: kept for the process)."""
    entries = {e.id: e for e in load_entries(tuple(c for c in SINGLE_TURN if c in categories))}
    if FORMAT_SENSITIVITY in categories:
        entries.update((e.id, e) for e in load_format_sensitivity())
    return entries


def _in_two(ours: list[Job], theirs: list[Job], categories: Sequence[str], decoding: Decoding, row_of: RowOf,
            verdict_of: VerdictOf | None) -> dict[int, dict[int, Row]]:
    """``ours`` done here, ``theirs`` in a forked child, at the same time."""
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return {}
    if pid == 0:  # the child: its lines that read back, pickled to the pipe; never returns
        code = 1  # not sent in full (interrupted, the pipe closed): the parent does these lines itself
        try:
            os.close(read_end)
            entries = _entries(categories)
            sent, kept = [], []
            for n, i, entry_id, result, where, source in theirs:
                try:
                    trace, status, line, same, surrogate, huge, _ = row_of(entry_id, categories[n], result, where,
                                                                           source, decoding)
                    if same:  # the verdict of a trace equal to json.loads of its line
                        verdict = verdict_of(entries[entry_id], trace) if verdict_of is not None else None
                        sent.append((n, i, status, line, surrogate, huge, verdict))
                        kept.append(trace)
                except Exception:  # noqa: BLE001, S112 - done again in the parent, which raises it in order
                    continue
            rows = pickle.dumps(sent, protocol=pickle.HIGHEST_PROTOCOL)
            values = marshal.dumps(kept, _MARSHAL)
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(len(rows).to_bytes(8, "little") + rows + values)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    done: dict[int, dict[int, Row]] = {}
    reaped = False
    try:
        for n, i, entry_id, result, where, source in ours:
            with contextlib.suppress(Exception):  # done again in order, where it raises
                done.setdefault(n, {})[i] = row_of(entry_id, categories[n], result, where, source, decoding)
        entries = _entries(categories)
        for n, i, entry_id, *_ in ours if verdict_of is not None else ():  # their verdicts too, as the child makes its own (the scoring's work, done
            made = done.get(n, {}).get(i)  # while the child works): of the traces the scoring gets, those read back
            if made is not None and made[3]:
                with contextlib.suppress(Exception):  # made again in the scoring, where it raises
                    done[n][i] = (*made[:6], verdict_of(entries[entry_id], made[0]))  # type: ignore[misc]
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
        reaped = True
        _, status_code = os.waitpid(pid, 0)
        back: list[tuple[int, int, str, str, bool, bool, Verdict | None]] = []
        traces: list[dict[str, Any]] = []
        if status_code == 0:
            with contextlib.suppress(Exception):  # its lines are done here then
                size, view = int.from_bytes(data[:8], "little"), memoryview(data)
                back, traces = pickle.loads(view[8:8 + size]), marshal.loads(view[8 + size:])  # noqa: S301 - our own child's
                if len(traces) != len(back):
                    back, traces = [], []
        for (n, i, status, line, surrogate, huge, verdict), trace in zip(back, traces, strict=True):
            done.setdefault(n, {})[i] = (trace, status, line, True, surrogate, huge, verdict)
    finally:
        if not reaped:
            with contextlib.suppress(OSError):
                os.close(read_end)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
    return done
