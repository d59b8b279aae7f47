"""BFCL's entries, read straight out of the pinned ``bfcl-eval`` wheel (a zip file) in the data directory.

The wheel is checked against its pinned sha256 before anything is read from it: a wheel that is
not the pinned one is refused with a message naming it. Only ``bfcl_eval/data/`` is read (the test
files, JSON Lines despite their ``.json`` names, and ``possible_answer/``); no code of the wheel is
imported or run here.
"""

from __future__ import annotations

import functools
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.data import data_file
from ...core.derived_cache import cached_derivation
from .files import NO_ANSWER, SERVED, SINGLE_TURN, SOURCES, WHEEL

__all__ = ["MAX_MEMBER_BYTES", "BfclEntry", "WheelError", "load_entries", "pinned_sha256", "read_answers", "read_category", "read_func_docs",
           "read_jsonl", "verified_wheel", "wheel_path"]

MAX_MEMBER_BYTES = 64 * 1024 * 1024  # no test file of the pinned wheel is near this; a bound all the same
_DATA = "bfcl_eval/data/"


class WheelError(ValueError):
    """The wheel is not the pinned one, or a file in it is missing or malformed; the message names it."""


@dataclass(frozen=True)
class BfclEntry:
    """One BFCL test entry: its id, category, the turn's messages, the offered functions (BFCL's
    function docs) and the possible answers (``None`` where the wheel has none: the irrelevance
    categories, where no call is right, and ``live_relevance``, where any call is)."""

    id: str
    category: str
    messages: tuple[dict[str, Any], ...]
    functions: tuple[dict[str, Any], ...]
    ground_truth: tuple[dict[str, Any], ...] | None

    @property
    def query(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == "user")


def pinned_sha256() -> str:
    """The bfcl-eval wheel's pinned sha256."""
    return SOURCES[WHEEL[0]][0].sha256


def wheel_path(path: Path | None = None) -> Path:
    """The wheel's path (default: the one in the data directory), not checked."""
    return path if path is not None else data_file(*WHEEL)


def verified_wheel(path: Path | None = None) -> Path:
    """The wheel (default: the one in the data directory), checked against its pinned sha256 (read
    once per version of the file: :mod:`kg_store.digest`)."""
    from kg_store.digest import file_sha256  # the checksum `evals data fetch` checks the wheel with

    wheel = wheel_path(path)
    expected, got = pinned_sha256(), file_sha256(wheel)
    if got != expected:
        raise WheelError(f"{wheel.resolve()}: sha256 {got} is not the pinned bfcl-eval wheel's ({expected}); "
                         f"remove it and run `evals data fetch {WHEEL[0]}`")
    return wheel


def read_jsonl(archive: zipfile.ZipFile, member: str, where: str, *, keyed: bool = True) -> list[dict[str, Any]]:
    """The objects of one JSON Lines member of the wheel; ``keyed``: each must have a string ``id``."""
    try:
        info = archive.getinfo(member)
    except KeyError:
        raise WheelError(f"{where}: no {member} in the wheel") from None
    if info.file_size > MAX_MEMBER_BYTES:
        raise WheelError(f"{where}:{member}: {info.file_size} bytes, over the bound of {MAX_MEMBER_BYTES}")
    out = []
    with archive.open(info) as f:
        for number, line in enumerate(f.read(MAX_MEMBER_BYTES + 1).decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise WheelError(f"{where}:{member}:{number}: not JSON ({exc.msg})") from None
            except ValueError as exc:  # an integer past Python's digit bound
                raise WheelError(f"{where}:{member}:{number}: not readable JSON ({exc})") from None
            if not isinstance(value, dict) or (keyed and not isinstance(value.get("id"), str)):
                raise WheelError(f"{where}:{member}:{number}: not an entry with an id")
            out.append(value)
    return out


def read_answers(archive: zipfile.ZipFile, name: str, where: str) -> dict[str, Any]:
    """The possible answers of ``BFCL_v4_<name>.json`` (``possible_answer/``): entry id -> its ``ground_truth``."""
    return {a["id"]: a.get("ground_truth")
            for a in read_jsonl(archive, f"{_DATA}possible_answer/BFCL_v4_{name}.json", where)}


def read_func_docs(file_name: str, wheel: Path | None = None) -> list[dict[str, Any]]:
    """BFCL's function docs in the wheel's ``multi_turn_func_doc/<file_name>`` (each an object with a
    string ``name``), read as every member is (:func:`read_jsonl`: bounded, a bad line named)."""
    path = verified_wheel(wheel)
    member = f"{_DATA}multi_turn_func_doc/{file_name}"
    with zipfile.ZipFile(path) as archive:
        docs = read_jsonl(archive, member, str(path), keyed=False)
    if not all(isinstance(d.get("name"), str) for d in docs):
        raise WheelError(f"{path}:{member}: not a list of function docs")
    return docs


def read_category(category: str, wheel: Path | None = None) -> list[BfclEntry]:
    """The entries of one served category, in the file's order, with their possible answers (read
    from the user cache while the wheel and this code are the same: :mod:`~evals.core.derived_cache`)."""
    if category not in SINGLE_TURN:
        if category in SERVED:
            raise WheelError(f"BFCL category {category!r} is not a single-turn category")
        raise WheelError(f"BFCL category {category!r} is not served yet (served: {', '.join(SERVED)})")
    return list(_memo(category, verified_wheel(wheel).resolve()))


@functools.lru_cache(maxsize=64)
def _memo(category: str, path: Path) -> tuple[BfclEntry, ...]:
    """One category's entries, kept for the process (a run loads the benchmark several times: import,
    score; 150 ms for the five categories each time without it). A wheel's bytes are the pinned ones
    (checked first), so its path is the key."""
    return tuple(cached_derivation(
        f"bfcl-{category}", [path], lambda: _read_category(category, path), code=[__file__, Path(__file__).with_name("files.py")],
        encode=lambda entries: [(e.id, e.category, e.messages, e.functions, e.ground_truth) for e in entries],
        decode=lambda rows: [BfclEntry(i, c, tuple(m), tuple(f), None if g is None else tuple(g))
                             for i, c, m, f, g in rows],
    ))


def _read_category(category: str, path: Path) -> list[BfclEntry]:
    with zipfile.ZipFile(path) as archive:
        rows = read_jsonl(archive, f"{_DATA}BFCL_v4_{category}.json", str(path))
        answers: dict[str, Any] = {}
        if category not in NO_ANSWER:
            answers = read_answers(archive, category, str(path))
    out = []
    for row in rows:
        question, functions = row.get("question"), row.get("function")
        if not (isinstance(question, list) and len(question) == 1 and isinstance(question[0], list)
                and question[0] and all(isinstance(m, dict) for m in question[0])
                and question[0][-1].get("role") == "user" and isinstance(functions, list)):
            raise WheelError(f"{path}: entry {row['id']} is not a single-turn entry (messages ending with a user "
                             "message) with functions")
        truth = answers.get(row["id"]) if category not in NO_ANSWER else None
        if category not in NO_ANSWER and not isinstance(truth, list):
            raise WheelError(f"{path}: entry {row['id']} has no possible answer")
        out.append(BfclEntry(row["id"], category, tuple(question[0]), tuple(functions),
                             tuple(truth) if truth is not None else None))
    return out


def load_entries(categories: tuple[str, ...] = SINGLE_TURN, wheel: Path | None = None) -> list[BfclEntry]:
    """The entries of ``categories`` (served single-turn ones), category by category."""
    return [e for c in categories for e in read_category(c, wheel)]
