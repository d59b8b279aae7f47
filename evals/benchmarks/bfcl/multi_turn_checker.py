"""BFCL's multi-turn checker, re-implemented: an entry's recorded calls judged as ``multi_turn_checker`` does.

The model's calls are not judged by what happened live: they are run again, turn by turn, on
fresh instances of the entry's backends, beside the ground truth's calls on fresh instances of
their own, as BFCL's eval runner and checker do (``tests/evals/benchmarks/bfcl/test_bfcl_fidelity.py``
runs BFCL's own checker beside this one):

* an episode that failed (no list of turns) is ``multi_turn:inference_error``; fewer turns than
  the ground truth (the model hit the step limit) is ``multi_turn:force_terminated``;
* a step (one model response) is decoded as BFCL's FC handlers decode it: every call written as
  ``name(k=repr(v),...)``; a step with a call whose arguments were not JSON, or with no call, is
  dropped;
* per turn: the model's steps run on its instances, the turn's ground truth on the gold ones
  (both keep their state from turn to turn); then, in this order: a turn with ground truth but no
  model step is ``multi_turn:empty_turn_model_response``; a turn without ground truth is not
  checked (its calls still ran); each backend's public attributes must equal the gold one's
  (``multi_turn:instance_state_mismatch``, with the differing attributes); and every result of
  the turn's gold calls must be among the results of all the model's calls so far, as a multiset
  (``multi_turn:execution_response_mismatch``, with the missing results);
* the first failing turn gives the verdict; an entry no turn fails is right.

Where it runs: the whole replay of an entry is one operation of the scoring's holder process
(:mod:`.multi_turn_replay`, :meth:`.backend_host.Holder.request_units`): a call past a bound is
refused here before it is sent, each call and comparison is held to its own deadline there, and a
call stopped at its deadline is an error call that changed nothing (the replay is sent again with
that call's result fixed).
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import json
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import backend_calls, backend_host
from .backend_calls import MAX_DETAIL_CHARS, bounded_differences, jsonable
from .backend_host import Holder, HostError, UnitStopped
from .backends import call_text, precheck_text, stopped_text
from .checker import Verdict
from .multi_turn import MultiTurnEntry
from .multi_turn_replay import CALL, DIFF, MAKE, units

__all__ = ["MAX_DETAIL_CHARS", "MultiTurnVerdict", "acheck_multi_turn", "bounded_differences", "cancel_prefetch",
           "check_multi_turn", "decode_steps", "jsonable", "prefetch"]



@dataclass(frozen=True)
class MultiTurnVerdict(Verdict):
    """A multi-turn verdict: BFCL's error type and message, the first failing turn, and its details
    (the state differences per backend, or the missing results)."""

    turn: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "turn": self.turn, "details": self.details}


_holders = threading.local()  # one scoring holder per thread, reused entry after entry


def _holder() -> Holder:
    holder: Holder | None = getattr(_holders, "holder", None)
    if holder is None:
        holder = _holders.holder = Holder()
    return holder


def decode_steps(turn: Sequence[Sequence[Mapping[str, Any]]]) -> list[list[str]]:
    """One turn's steps (each a list of ``{"name", "arguments"}``, arguments ``None`` when they
    were not JSON) as BFCL's decoded steps: call strings; undecodable and empty steps dropped. A
    prompting model's call carries the string BFCL's prompting decoder wrote (``text``), used as it is."""
    out = []
    for step in turn:
        if not step or any(not isinstance(c.get("arguments"), dict) for c in step):
            continue
        out.append([c["text"] if isinstance(c.get("text"), str) else call_text(str(c.get("name")), c["arguments"])
                    for c in step])
    return out


def _ready(entry: MultiTurnEntry, turns: Sequence[Sequence[Sequence[Mapping[str, Any]]]] | None
           ) -> MultiTurnVerdict | tuple[tuple[str, str], list[list[list[str]]]]:
    """The verdict when no replay is needed (no turns, too few turns, already known), else the
    verdict's cache key and the decoded turns to replay."""
    truth = entry.ground_truth
    if turns is None:
        return MultiTurnVerdict(False, "multi_turn:inference_error",
                                "Error during inference phase. Model did not output a list of model responses.")
    if len(turns) != len(truth):
        return MultiTurnVerdict(False, "multi_turn:force_terminated",
                                f"Model was force-terminated during inference phase. The length of the model result "
                                f"turns ({len(turns)}) does not match the length of the ground truth turns ({len(truth)}).")
    decoded = [decode_steps(t) for t in turns]
    key = (entry.id, json.dumps([decoded, backend_calls.MAX_PRECISION, backend_host.CALL_DEADLINE_S]))
    if key in _verdicts:  # a run asks for a verdict twice (its progress, then its score)
        _verdicts.move_to_end(key)
        return _verdicts[key]
    return key, decoded


def _started(key: tuple[str, str]) -> concurrent.futures.Future[MultiTurnVerdict | Exception] | None:
    """The replay :func:`prefetch` started for ``key`` (taken: each is used once), or None."""
    with _prefetch_lock:
        return _prefetched.pop(key, None)


def prefetch(items: Sequence[tuple[MultiTurnEntry, Sequence[Sequence[Sequence[Mapping[str, Any]]]] | None]]) -> None:
    """Start the replays of entries about to be scored (an import of result files, as it reads them),
    in batches of :data:`_BATCH` over up to :func:`_prefetch_holders` holders, each in a thread of its
    own (they wait on their holders' sockets); a scoring of one of them then takes its verdict
    (:func:`check_multi_turn`, :func:`acheck_multi_turn`) instead of replaying it. The verdicts are
    those of the same replays (each entry runs on fresh instances, as in one holder); bounded by the
    entries given."""
    wanted = []
    with _prefetch_lock:
        for entry, turns in items:
            ready = _ready(entry, turns)
            if isinstance(ready, MultiTurnVerdict) or ready[0] in _prefetched:
                continue
            wanted.append((ready[0], entry, ready[1]))
    if not wanted:
        return
    global _prefetch_pool
    if _prefetch_pool is None:
        _prefetch_pool = concurrent.futures.ThreadPoolExecutor(_prefetch_holders(), thread_name_prefix="bfcl-replay")
    for start in range(0, len(wanted), _BATCH):
        batch = wanted[start:start + _BATCH]
        ones: list[concurrent.futures.Future[MultiTurnVerdict | Exception]] = [concurrent.futures.Future() for _ in batch]
        with _prefetch_lock:
            _prefetched.update((key, one) for (key, _, _), one in zip(batch, ones, strict=True))
        done = _prefetch_pool.submit(_replay_in_thread, [(entry, decoded) for _, entry, decoded in batch])
        done.add_done_callback(lambda f, ones=ones: _settle(f, ones))  # type: ignore[misc]


def _replay_in_thread(items: list[tuple[MultiTurnEntry, list[list[list[str]]]]]) -> list[MultiTurnVerdict | Exception]:
    return _replay_batch(_holder(), items)  # the thread's own holder


def _settle(done: concurrent.futures.Future[list[MultiTurnVerdict | Exception]],
            ones: Sequence[concurrent.futures.Future[MultiTurnVerdict | Exception]]) -> None:
    """Each entry's future from its batch's: its verdict, or the error of the whole batch."""
    for n, one in enumerate(ones):
        if done.cancelled():
            one.cancel()
        elif (exc := done.exception()) is not None:
            one.set_result(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
        else:
            one.set_result(done.result()[n])


def cancel_prefetch() -> None:
    """Drop the replays :func:`prefetch` started that have not begun (the import that asked stopped)."""
    global _prefetch_pool
    if _prefetch_pool is not None:
        _prefetch_pool.shutdown(wait=False, cancel_futures=True)
        _prefetch_pool = None
    with _prefetch_lock:
        _prefetched.clear()


def _prefetch_holders() -> int:
    """Holders for prefetched replays: one per CPU this process may use (the replays are the holders' CPU work)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cpus or 1)


_prefetched: dict[tuple[str, str], concurrent.futures.Future[MultiTurnVerdict | Exception]] = {}
_prefetch_lock = threading.Lock()
_prefetch_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _kept(key: tuple[str, str], verdict: MultiTurnVerdict | Exception) -> MultiTurnVerdict:
    if isinstance(verdict, Exception):
        raise verdict
    _verdicts[key] = verdict
    if len(_verdicts) > _KEPT_VERDICTS:
        _verdicts.popitem(last=False)
    return verdict


def check_multi_turn(entry: MultiTurnEntry, turns: Sequence[Sequence[Sequence[Mapping[str, Any]]]] | None) -> MultiTurnVerdict:
    """The verdict on one entry: ``turns`` holds, per user turn, the model's steps (``None``: the
    episode failed and left no turns)."""
    ready = _ready(entry, turns)
    if isinstance(ready, MultiTurnVerdict):
        return ready
    key, decoded = ready
    started = _started(key)
    if started is not None:
        return _kept(key, started.result())
    return _kept(key, _replay_batch(_holder(), [(entry, decoded)])[0])


async def acheck_multi_turn(entry: MultiTurnEntry,
                            turns: Sequence[Sequence[Sequence[Mapping[str, Any]]]] | None) -> MultiTurnVerdict:
    """:func:`check_multi_turn` for a scoring that scores several entries at once: the replays asked
    for together go to the holder as one operation (:class:`_Batcher`), off the event loop."""
    ready = _ready(entry, turns)
    if isinstance(ready, MultiTurnVerdict):
        return ready
    key, decoded = ready
    started = _started(key)
    if started is not None:
        return _kept(key, await asyncio.wrap_future(started))
    loop = asyncio.get_running_loop()
    batcher = _batchers.get(loop)
    if batcher is None:
        batcher = _batchers[loop] = _Batcher()
    return _kept(key, await batcher.replay(entry, decoded))


# more than BFCL v4's 800 multi-turn entries: a full run's progress line and its scoring replay each entry once
# (with 256, scoring replayed the 544 evicted ones again); bounded: a verdict's details are at most
# MAX_DETAIL_CHARS of state differences (typically a few hundred characters)
_KEPT_VERDICTS = 1024
_verdicts: OrderedDict[tuple[str, str], MultiTurnVerdict] = OrderedDict()
_BATCH = 16  # entries per holder operation


class _Batcher:
    """The replays of one event loop's scorings: those asked for while a batch runs go together in the
    next (at most :data:`_BATCH`), run in a thread on a holder of its own."""

    def __init__(self) -> None:
        self.holder = Holder()
        self.queue: list[tuple[MultiTurnEntry, list[list[list[str]]], asyncio.Future[MultiTurnVerdict | Exception]]] = []
        self.task: asyncio.Task[None] | None = None

    async def replay(self, entry: MultiTurnEntry, decoded: list[list[list[str]]]) -> MultiTurnVerdict | Exception:
        future: asyncio.Future[MultiTurnVerdict | Exception] = asyncio.get_running_loop().create_future()
        self.queue.append((entry, decoded, future))
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        batch: list[tuple[MultiTurnEntry, list[list[list[str]]], asyncio.Future[MultiTurnVerdict | Exception]]] = []
        try:
            while self.queue:
                for _ in range(8):  # the scorings started with these (or freed by the last batch) queue theirs
                    size = len(self.queue)
                    await asyncio.sleep(0)
                    if len(self.queue) in (size, _BATCH):
                        break
                batch, self.queue = self.queue[:_BATCH], self.queue[_BATCH:]
                try:
                    results: list[MultiTurnVerdict | Exception] = await asyncio.to_thread(
                        _replay_batch, self.holder, [(entry, decoded) for entry, decoded, _ in batch])
                except Exception as exc:  # noqa: BLE001 - each waiting scoring gets it
                    results = [exc] * len(batch)
                for (_, _, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:  # cancelled (the loop ends): no scoring waits for ever
            for _, _, future in [*batch, *self.queue]:
                if not future.done():
                    future.cancel()


_batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batcher] = weakref.WeakKeyDictionary()


def _replay_batch(holder: Holder, items: Sequence[tuple[MultiTurnEntry, list[list[list[str]]]]]
                  ) -> list[MultiTurnVerdict | Exception]:
    """Entries replayed in ``holder``'s process, in one operation (:mod:`.multi_turn_replay`; the next
    batch reuses the process, as BFCL's checker runs every entry in one): a call past a bound is
    refused here (an error call that runs nowhere); one past its deadline is stopped, an error call
    that changed nothing, and the operation is sent again without it. Per entry, its verdict or the
    error that kept it from one."""
    truths = [[list(t) for t in entry.ground_truth] for entry, _ in items]
    plans = [units(decoded, truth) for (_, decoded), truth in zip(items, truths, strict=True)]
    fixed = [{str(n): refused for n, (kind, text) in enumerate(plan)
              if kind == CALL and (refused := precheck_text(text)) is not None} for plan in plans]
    results: list[MultiTurnVerdict | Exception | None] = [None] * len(items)
    pending = list(range(len(items)))
    for _ in range(sum(map(len, plans)) + len(items)):  # each pass settles a unit or an entry
        if not pending:
            break
        ops = [{**items[i][0].make_op(), "op": "replay", "turns": items[i][1], "truth": truths[i], "fixed": fixed[i]}
               for i in pending]
        starts = [0]
        for i in pending:
            starts.append(starts[-1] + len(plans[i]))
        limits = [backend_host.MAKE_DEADLINE_S if kind == MAKE else backend_host.CALL_DEADLINE_S
                  for i in pending for kind, _ in plans[i]]
        try:
            answer = holder.request_units({"op": "replay", "entries": ops}, limits)
        except UnitStopped as exc:
            at = max(0, min(bisect.bisect_right(starts, exc.unit) - 1, len(pending) - 1))
            i, unit = pending[at], exc.unit - starts[at]
            kind = plans[i][unit][0] if unit < len(plans[i]) else DIFF
            if kind == CALL and str(unit) not in fixed[i]:
                fixed[i][str(unit)] = stopped_text(exc)
                continue
            what = "its backends could not be loaded" if kind == MAKE else "the backends' states could not be compared"
            results[i] = RuntimeError(f"BFCL entry {items[i][0].id}: {what}: {exc}")
            pending.remove(i)
            continue
        except HostError as exc:  # no process to replay in (the message says why)
            for i in pending:
                results[i] = RuntimeError(f"BFCL entry {items[i][0].id}: it could not be replayed: {exc}")
            break
        answers = answer.get("answers") or [answer] * len(pending)  # an error of the whole operation: each entry's
        for i, one in zip(pending, answers, strict=True):
            results[i] = MultiTurnVerdict(**one["verdict"]) if "verdict" in one else RuntimeError(
                f"BFCL entry {items[i][0].id}: its backends could not be loaded: {one['load_error']}"
                if "load_error" in one else f"BFCL entry {items[i][0].id}: its replay failed: {one.get('error')}")
        pending = []
    return [r if r is not None else RuntimeError(f"BFCL entry {items[n][0].id}: its replay was stopped more often "
                                                 "than it has calls") for n, r in enumerate(results)]
