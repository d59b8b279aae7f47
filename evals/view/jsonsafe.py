"""JSON the viewer writes (its API, the export's data files, ``evals leaderboard --format json``): never
``NaN`` or ``Infinity``, which are not JSON (a browser's ``JSON.parse`` and most other readers refuse them).

A run's files may hold such numbers (Python's ``json`` reads them), and a statistic of odd values can
compute one; every non-finite float is written as ``null`` instead.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps_finite", "finite"]


def finite(value: Any) -> Any:
    """``value`` with every non-finite float in it (in dicts, lists and tuples) made ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps_finite(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, allow_nan=False, **kwargs)``, with non-finite floats made ``null`` (the value is
    walked only when it holds one)."""
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **kwargs)
