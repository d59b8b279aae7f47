"""How often a BFCL holder's client reads a progress record that no one wrote, before and after the
record got its check (``evals/benchmarks/bfcl/backend_host.py``).

A holder process marks each unit of a replay as it starts (unit, start time) in a page it shares
with the client; the client stops the unit once its start is past the unit's deadline. A writer
process here marks units as fast as it can, for ``--seconds``; the client side reads as the holder's
client reads, and counts the reads that give a record no one wrote (a unit with another unit's start,
or unit 0 started at 0.0: what ``Struct.pack_into`` leaves between clearing the record and writing its
fields, read twice alike). "before" is the reader and writer of d31da84 (``pack_into``, two reads
that agree); "now" is the module's (one copy of the record and its check; a read mid-write is read
again). Each such read before the fix could stop a replay at once as past its unit's deadline
("its backends could not be loaded: stopped after 60 s").

    python bench/bench_bfcl_progress_record.py --seconds 5 --repeats 3
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import struct
import time
from collections.abc import Callable

from evals.benchmarks.bfcl import backend_host

_BEFORE = struct.Struct("=qd")


def _write_before(page: mmap.mmap, unit: int) -> None:
    _BEFORE.pack_into(page, 0, unit, float(unit))


def _read_before(page: mmap.mmap) -> tuple[int, float] | None:
    seen = _BEFORE.unpack_from(page, 0)
    while True:
        again = _BEFORE.unpack_from(page, 0)
        if again == seen:
            return int(seen[0]), float(seen[1])
        seen = again


def _write_now(page: mmap.mmap, unit: int) -> None:  # the module's record, its start set to the unit
    started = float(unit)
    page[:backend_host._PROGRESS.size] = backend_host._PROGRESS.pack(unit, started,
                                                                      backend_host._progress_check(unit, started))


def _one(write: Callable[[mmap.mmap, int], None], read: Callable[[mmap.mmap], tuple[int, float] | None],
         seconds: float) -> tuple[int, int, int]:
    """(reads, reads of a record no one wrote, reads taken again) while a writer process marks units."""
    page = mmap.mmap(-1, mmap.PAGESIZE)
    write(page, 1)
    pid = os.fork()
    if pid == 0:
        unit, end = 2, time.monotonic() + seconds
        while time.monotonic() < end:
            write(page, unit)
            unit += 1
        os._exit(0)
    reads = wrong = again = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = read(page)
        reads += 1
        if got is None:
            again += 1
        elif float(got[0]) != got[1]:  # every record written holds its unit as its start
            wrong += 1
    os.waitpid(pid, 0)
    return reads, wrong, again


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = {"before (d31da84)": (_write_before, _read_before),
            "now": (_write_now, backend_host._progress_now)}
    results: dict[str, list[tuple[int, int, int]]] = {name: [] for name in rows}
    for _ in range(args.repeats):  # interleaved: both see the same load
        for name, (write, read) in rows.items():
            results[name].append(_one(write, read, args.seconds))
    print(f"| reader | reads (median of {args.repeats}) | records no one wrote | share | reads taken again |")
    print("|---|---:|---:|---:|---:|")
    for name, runs in results.items():
        reads = statistics.median(r[0] for r in runs)
        wrong = statistics.median(r[1] for r in runs)
        again = statistics.median(r[2] for r in runs)
        print(f"| {name} | {reads:,.0f} | {wrong:,.0f} | {wrong / reads:.2%} | {again:,.0f} |")


if __name__ == "__main__":
    main()
