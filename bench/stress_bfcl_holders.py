"""Stress BFCL's holders (``evals/benchmarks/bfcl/backend_host.py``) as a loaded run does, with few live
processes so that making room happens all the time: verdict threads replay entries (blocking
``request_units``, each thread its own holder, as progress verdicts and ``evals score`` do) while an
event loop's sessions make their calls (``arequest``, a holder per session, half left to the
garbage collector). Prints what was done and every failure with its message and how long it took.
A correct holder fails nothing (gold calls only).

    python bench/stress_bfcl_holders.py --seconds 20 --max-live 3 [--widen-ms 2]

``--widen-ms``: every process end waits that long before its kill (widens the window between a
holder chosen to make room and its process ended). To compare with another commit, run it with
``PYTHONPATH`` at that commit's tree (``git archive REF | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import threading
import time
from typing import Any

from evals.benchmarks.bfcl import backend_host
from evals.benchmarks.bfcl.backends import host_call
from evals.benchmarks.bfcl.multi_turn import gold_steps, read_multi_turn
from evals.benchmarks.bfcl.multi_turn_checker import MultiTurnVerdict, _replay_batch, decode_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--max-live", type=int, default=3, help="MAX_LIVE_PROCESSES (default 3)")
    parser.add_argument("--verdict-threads", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--widen-ms", type=float, default=0.0)
    args = parser.parse_args()
    backend_host.MAX_LIVE_PROCESSES = args.max_live
    if args.widen_ms:
        kill = backend_host._kill

        def slow_kill(pid: int, sock: Any) -> None:
            time.sleep(args.widen_ms / 1000)
            kill(pid, sock)

        backend_host._kill = slow_kill
    entries = list(read_multi_turn("multi_turn_base"))[:20]
    failures: collections.Counter[str] = collections.Counter()
    done: collections.Counter[str] = collections.Counter()
    stop = time.monotonic() + args.seconds

    def verdicts(first: int) -> None:
        holder, n = backend_host.Holder(), first
        while time.monotonic() < stop:
            entry = entries[n % len(entries)]
            n += 1
            started = time.monotonic()
            decoded = [decode_steps([s] if s else []) for s in gold_steps(entry)]
            try:
                result: Any = _replay_batch(holder, [(entry, decoded)])[0]
            except Exception as exc:  # noqa: BLE001 - counted and printed
                result = exc
            if isinstance(result, MultiTurnVerdict) and result.valid:
                done["verdicts"] += 1
            else:
                failures[f"verdict: {result!r} ({time.monotonic() - started:.1f} s)"] += 1

    async def session(first: int) -> None:
        n = first
        while time.monotonic() < stop:
            entry = entries[n % len(entries)]
            n += 1
            holder = backend_host.Holder()
            for step in gold_steps(entry):
                for call in step:
                    started = time.monotonic()
                    text = await host_call(holder, entry.make_op(), call["name"], call["arguments"])
                    if "did not complete" in text or "could not be loaded" in text:
                        failures[f"session call: {text[:200]} ({time.monotonic() - started:.1f} s)"] += 1
                    else:
                        done["session calls"] += 1
            if first % 2:
                holder.close()

    async def run() -> None:
        threads = [threading.Thread(target=verdicts, args=(k,)) for k in range(args.verdict_threads)]
        for thread in threads:
            thread.start()
        await asyncio.gather(*(session(k) for k in range(args.sessions)))
        for thread in threads:
            await asyncio.to_thread(thread.join)

    asyncio.run(run())
    print(f"{done['verdicts']} verdicts, {done['session calls']} session calls, {sum(failures.values())} failed")
    for message, count in failures.most_common():
        print(f"{count} x {message}")


if __name__ == "__main__":
    main()
