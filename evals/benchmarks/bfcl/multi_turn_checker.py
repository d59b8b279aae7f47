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

import json
import threading
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

__all__ = ["MAX_DETAIL_CHARS", "MultiTurnVerdict", "bounded_differences", "check_multi_turn", "decode_steps",
           "jsonable"]



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
    were not JSON) as BFCL's decoded steps: call strings; undecodable and empty steps dropped."""
    out = []
    for step in turn:
        if not step or any(not isinstance(c.get("arguments"), dict) for c in step):
            continue
        out.append([call_text(str(c.get("name")), c["arguments"]) for c in step])
    return out


def check_multi_turn(entry: MultiTurnEntry, turns: Sequence[Sequence[Sequence[Mapping[str, Any]]]] | None) -> MultiTurnVerdict:
    """The verdict on one entry: ``turns`` holds, per user turn, the model's steps (``None``: the
    episode failed and left no turns)."""
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
    verdict = _replayed(entry, decoded)
    _verdicts[key] = verdict
    if len(_verdicts) > _KEPT_VERDICTS:
        _verdicts.popitem(last=False)
    return verdict


_KEPT_VERDICTS = 256
_verdicts: OrderedDict[tuple[str, str], MultiTurnVerdict] = OrderedDict()


def _replayed(entry: MultiTurnEntry, decoded: list[list[list[str]]]) -> MultiTurnVerdict:
    """The entry replayed in the scoring holder's process, in one operation (:mod:`.multi_turn_replay`):
    a call past a bound is refused here (an error call that runs nowhere); one past its deadline is
    stopped, an error call that changed nothing, and the replay starts over without it."""
    truth = [list(t) for t in entry.ground_truth]
    plan = units(decoded, truth)
    fixed = {str(n): refused for n, (kind, text) in enumerate(plan)
             if kind == CALL and (refused := precheck_text(text)) is not None}
    limits = [backend_host.MAKE_DEADLINE_S if kind == MAKE else backend_host.CALL_DEADLINE_S for kind, _ in plan]
    op = {**entry.make_op(), "op": "replay", "turns": decoded, "truth": truth, "fixed": fixed}
    holder = _holder()  # the next entry reuses the process (as BFCL's checker runs every entry in one)
    for _ in plan:  # each pass stops at most one more unit
        try:
            answer = holder.request_units(op, limits)
        except UnitStopped as exc:
            kind = plan[exc.unit][0] if exc.unit < len(plan) else DIFF
            if kind == CALL and str(exc.unit) not in fixed:
                fixed[str(exc.unit)] = stopped_text(exc)
                continue
            what = "its backends could not be loaded" if kind == MAKE else "the backends' states could not be compared"
            raise RuntimeError(f"BFCL entry {entry.id}: {what}: {exc}") from None
        except HostError as exc:
            raise RuntimeError(f"BFCL entry {entry.id}: its backends could not be loaded: {exc}") from None
        if "load_error" in answer or "error" in answer:
            raise RuntimeError(f"BFCL entry {entry.id}: its backends could not be loaded: "
                               f"{answer.get('load_error') or answer.get('error')}")
        return MultiTurnVerdict(**answer["verdict"])
    raise RuntimeError(f"BFCL entry {entry.id}: its replay was stopped more often than it has calls")
