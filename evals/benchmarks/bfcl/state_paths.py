"""Where two states differ: the paths of a multi-turn backend's attribute whose values differ between the
model's instance and the ground truth's (``evals view``), instead of two whole JSON trees.

A path is written from the attribute down: ``.key`` for an object's key that is an identifier, ``["key"]``
for any other, ``[i]`` for a list's item; a side that lacks the path shows ``(absent)``. Two lists of different
lengths are compared item by item, the longer one's extra items against ``(absent)``; values of different
types (an object and a text, ...) are one difference at their path. The walk is iterative and bounded (the
states come from a model's calls): at most ``MAX_PATHS`` paths (then one row says how many more differ)
and ``MAX_DEPTH`` levels (a deeper pair is shown whole); each value is shown as JSON cut at ``MAX_VALUE_CHARS``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ABSENT", "MAX_PATHS", "differing_paths"]

ABSENT = "(absent)"
MAX_PATHS = 200
MAX_DEPTH = 64
MAX_VALUE_CHARS = 300
_MISSING = object()


def _key(key: str) -> str:
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key, ensure_ascii=False)}]"


def _shown(value: Any) -> str:
    if value is _MISSING:
        return ABSENT
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (RecursionError, ValueError):
        return "(nested too deep to show)"
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + " ... (cut)"


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except RecursionError:  # nested deeper than Python compares: walked level by level instead
        return False


def differing_paths(model: Any, gold: Any, root: str = "") -> list[tuple[str, str, str]]:
    """``(path, the model's value, the ground truth's value)`` for each place the two differ, in order (keys
    in the ground truth's order, then the model's own); none when they are equal."""
    out: list[tuple[str, str, str]] = []
    more = 0
    stack: list[tuple[str, Any, Any, int]] = [(root, model, gold, 0)]
    while stack:
        path, a, b, depth = stack.pop()
        if _equal(a, b):
            continue
        pairs: list[tuple[str, Any, Any]] | None = None
        if depth < MAX_DEPTH and isinstance(a, dict) and isinstance(b, dict):
            keys = list(dict.fromkeys([*b, *a]))
            pairs = [(path + _key(str(k)), a.get(k, _MISSING), b.get(k, _MISSING)) for k in keys]
        elif depth < MAX_DEPTH and isinstance(a, list) and isinstance(b, list):
            pairs = [(f"{path}[{i}]", a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING)
                     for i in range(max(len(a), len(b)))]
        if pairs is not None:
            stack.extend((p, x, y, depth + 1) for p, x, y in reversed(pairs))
            continue
        if len(out) < MAX_PATHS:
            out.append((path or "(the value)", _shown(a), _shown(b)))
        else:
            more += 1
    if more:
        out.append((f"... and {more} more paths", "", ""))
    return out
