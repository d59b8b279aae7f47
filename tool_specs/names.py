"""\"Did you mean\" hints for names (tools, tasks, parameters), and names cut short for messages. A leaf
module: it imports nothing of the package."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

__all__ = ["SHOWN_CHARS", "clipped", "did_you_mean", "shown_name", "suggest_names"]

SHOWN_CHARS = 80  # of a name from outside echoed in a message


def suggest_names(name: str, known: Iterable[str], n: int = 3, *, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` names from ``known`` that look like ``name`` (best first), for "did you mean" hints.

    A case-insensitive or separator-insensitive match (``date of journey`` vs ``date_of_journey``)
    comes first; the rest comes from :func:`difflib.get_close_matches`.
    """
    known_list = [k for k in dict.fromkeys(known) if k != name]
    if not known_list or n <= 0:
        return []

    def squash(text: str) -> str:
        return "".join(ch for ch in text.lower() if ch.isalnum())

    target = squash(name)
    out = [k for k in known_list if squash(k) == target]
    out += [k for k in difflib.get_close_matches(name, known_list, n=n, cutoff=cutoff) if k not in out]
    if len(out) < n:
        by_squash = {squash(k): k for k in known_list}
        out += [
            by_squash[s]
            for s in difflib.get_close_matches(target, list(by_squash), n=n, cutoff=cutoff)
            if by_squash[s] not in out
        ]
    return out[:n]


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """`` Did you mean 'a' or 'b'?`` for the names of ``known`` close to ``name``; ``""`` when none is."""
    close = suggest_names(name, known)
    return (" Did you mean " + " or ".join(f"'{c}'" for c in close) + "?") if close else ""


def shown_name(name: str, limit: int = SHOWN_CHARS) -> str:
    """``name`` as an error message may echo it: whole up to ``limit`` characters, else its first
    ``limit`` characters and its length (``'abc...' (200000 chars)``), quoted. A client's id or name
    (a task id in a URL, a session id, a tool name) can be megabytes; a message must not carry it."""
    if len(name) <= limit:
        return repr(name)
    return f"{name[:limit]!r}... ({len(name)} chars)"


def clipped(message: str, limit: int = 500) -> str:
    """A message from elsewhere that may quote a client's name whole (e.g. the KG's "unknown entity
    ..."), cut to ``limit`` characters and its length."""
    return message if len(message) <= limit else f"{message[:limit]}... ({len(message)} chars)"
