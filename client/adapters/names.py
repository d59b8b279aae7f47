"""Reversible mapping between benchmark tool names and names that providers accept.

OpenAI requires tool names to match ``^[a-zA-Z0-9_-]{1,64}$``; Anthropic has the same character set
(and a 64/128 character limit depending on the API version). Benchmark tools are called things like
``date of journey``, ``Search.Flights`` or a 100-character description. :class:`ToolNameMap` gives
every original name a safe name:

* a name that is already safe maps to itself;
* otherwise it is sanitised (every run of disallowed characters becomes ``_``) and, when that is
  still too long or collides with another name, shortened and given an 8-hex-digit hash suffix of
  the original name.

The mapping depends only on the *set* of names (not their order), so the same tool list always gives
the same safe names; adding names later never changes earlier assignments.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator

__all__ = ["DEFAULT_MAX_LEN", "ToolNameMap", "is_safe_name"]

DEFAULT_MAX_LEN = 64
_DISALLOWED = re.compile(r"[^a-zA-Z0-9_-]+")
_HASH_LEN = 8


def is_safe_name(name: str, max_len: int = DEFAULT_MAX_LEN) -> bool:
    """Whether ``name`` is accepted as-is by the providers (``^[a-zA-Z0-9_-]{1,max_len}$``)."""
    return 0 < len(name) <= max_len and _DISALLOWED.search(name) is None


def _digest(name: str, length: int = _HASH_LEN) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:length]


class ToolNameMap:
    """Bidirectional original <-> provider-safe tool-name mapping (see the module docstring)."""

    def __init__(self, names: Iterable[str] = (), *, max_len: int = DEFAULT_MAX_LEN) -> None:
        if max_len < 2 * _HASH_LEN + 2:
            raise ValueError(f"max_len must be at least {2 * _HASH_LEN + 2}, got {max_len}")
        self.max_len = max_len
        self._to_safe: dict[str, str] = {}
        self._to_original: dict[str, str] = {}
        unique = sorted(set(names))
        # Safe names first, so that they keep their own name whatever else is in the set.
        for name in unique:
            if is_safe_name(name, max_len):
                self._assign(name, name)
        for name in unique:
            if name not in self._to_safe:
                self.add(name)

    def _assign(self, original: str, safe: str) -> str:
        self._to_safe[original] = safe
        self._to_original[safe] = original
        return safe

    def add(self, name: str) -> str:
        """Register ``name`` (if new) and return its safe name."""
        existing = self._to_safe.get(name)
        if existing is not None:
            return existing
        if is_safe_name(name, self.max_len) and name not in self._to_original:
            return self._assign(name, name)
        sanitized = _DISALLOWED.sub("_", name).strip("_") or "tool"
        if len(sanitized) <= self.max_len and sanitized not in self._to_original:
            return self._assign(name, sanitized)
        stem = sanitized[: self.max_len - _HASH_LEN - 1]
        for length in range(_HASH_LEN, 65):
            candidate = f"{stem[: self.max_len - length - 1]}_{_digest(name, length)}"
            if candidate not in self._to_original:
                return self._assign(name, candidate)
        raise RuntimeError(f"could not find a collision-free safe name for tool {name!r}")  # pragma: no cover

    def to_safe(self, name: str) -> str:
        """Provider-safe name for an original name (registering it if it is new)."""
        return self.add(name)

    def to_original(self, safe: str) -> str:
        """Original name for a safe name. An unknown name (a tool the model made up) is returned unchanged."""
        return self._to_original.get(safe, safe)

    def __contains__(self, original: object) -> bool:
        return original in self._to_safe

    def __len__(self) -> int:
        return len(self._to_safe)

    def __iter__(self) -> Iterator[str]:
        return iter(self._to_safe)

    def items(self) -> list[tuple[str, str]]:
        """``(original, safe)`` pairs."""
        return list(self._to_safe.items())

    def renamed(self) -> dict[str, str]:
        """Only the names that had to change: ``{original: safe}``."""
        return {o: s for o, s in self._to_safe.items() if o != s}

    def __repr__(self) -> str:
        return f"ToolNameMap({len(self)} names, {len(self.renamed())} renamed)"
