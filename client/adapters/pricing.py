"""A small table of per-million-token prices for well-known models, used to report run costs.

Prices change; every entry names its source and the date it was read. A model that is not in the
table has no price (cost reported as ``None``). Users can add or override prices with a JSON file
named by the ``EVALS_PRICES`` environment variable (or pass ``overrides=`` from the CLI)::

    {"my-model": {"input": 0.2, "output": 0.8},
     "gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10, "cache_read_per_mtok": 1.25}}

Lookup is by exact model name, then by the name with a date / ``-latest`` suffix removed
(``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini``, ``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``),
then with a ``provider/`` prefix removed (OpenRouter style ``openai/gpt-4o``).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from client.messages import Price
from tool_specs.bounded_read import bounded_text

__all__ = ["PRICES", "PRICES_ENV", "Price", "load_price_overrides", "price_for"]

PRICES_ENV = "EVALS_PRICES"

PRICES: dict[str, Price] = {
    # --- OpenAI: Price(input, output, cache_read="cached input"), standard tier.
    #     Source: https://openai.com/api/pricing, read 2025-11. ---
    "gpt-4o": Price(2.50, 10.00, cache_read_per_mtok=1.25),  # openai.com/api/pricing, 2025-11
    "gpt-4o-mini": Price(0.15, 0.60, cache_read_per_mtok=0.075),  # openai.com/api/pricing, 2025-11
    "gpt-4.1": Price(2.00, 8.00, cache_read_per_mtok=0.50),  # openai.com/api/pricing, 2025-11
    "gpt-4.1-mini": Price(0.40, 1.60, cache_read_per_mtok=0.10),  # openai.com/api/pricing, 2025-11
    "gpt-4.1-nano": Price(0.10, 0.40, cache_read_per_mtok=0.025),  # openai.com/api/pricing, 2025-11
    "o3": Price(
        2.00, 8.00, cache_read_per_mtok=0.50
    ),  # openai.com/api/pricing, 2025-11 (after the 2025-06 cut)
    "o4-mini": Price(1.10, 4.40, cache_read_per_mtok=0.275),  # openai.com/api/pricing, 2025-11
    "gpt-5": Price(1.25, 10.00, cache_read_per_mtok=0.125),  # openai.com/api/pricing, 2025-11
    "gpt-5-mini": Price(0.25, 2.00, cache_read_per_mtok=0.025),  # openai.com/api/pricing, 2025-11
    "gpt-5-nano": Price(0.05, 0.40, cache_read_per_mtok=0.005),  # openai.com/api/pricing, 2025-11
    # --- Anthropic: Price(input, output, cache_read (0.1x input), cache_write (5-minute, 1.25x input)).
    #     Source: https://www.anthropic.com/pricing#api, read 2025-11. ---
    "claude-3-5-haiku": Price(0.80, 4.00, 0.08, 1.00),  # anthropic.com/pricing, 2025-11
    "claude-3-7-sonnet": Price(3.00, 15.00, 0.30, 3.75),  # anthropic.com/pricing, 2025-11
    "claude-sonnet-4": Price(
        3.00, 15.00, 0.30, 3.75
    ),  # anthropic.com/pricing, 2025-11 (<=200k-token prompts)
    "claude-sonnet-4-5": Price(
        3.00, 15.00, 0.30, 3.75
    ),  # anthropic.com/pricing, 2025-11 (<=200k-token prompts)
    "claude-haiku-4-5": Price(1.00, 5.00, 0.10, 1.25),  # anthropic.com/pricing, 2025-11
    "claude-opus-4-1": Price(15.00, 75.00, 1.50, 18.75),  # anthropic.com/pricing, 2025-11
    "claude-opus-4-5": Price(5.00, 25.00, 0.50, 6.25),  # anthropic.com/pricing, 2025-11
}
# Aliases that name the same model.
PRICES["claude-sonnet-4-0"] = PRICES["claude-sonnet-4"]

_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def load_price_overrides(path: str | os.PathLike[str] | None = None) -> dict[str, Price]:
    """Read ``{model: price}`` from a JSON file (default: the file named by ``$EVALS_PRICES``).

    Returns ``{}`` when no file is configured. Raises ``ValueError`` naming the file and model when an
    entry is malformed.
    """
    if path is None:
        path = os.environ.get(PRICES_ENV) or None
        if path is None:
            return {}
    file = Path(path)
    try:
        data: Any = json.loads(bounded_text(file))  # untrusted: no more than MAX_LINE_BYTES read
    except (OSError, ValueError) as exc:  # past the bound (LineTooLong, FILE:LINE), not UTF-8, not JSON
        raise ValueError(f"cannot read price table {file} ({PRICES_ENV}): {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(
            f"price table {file} must be a JSON object {{model: price}}, got {type(data).__name__}"
        )
    prices: dict[str, Price] = {}
    for model, entry in data.items():
        if not isinstance(entry, dict):
            raise ValueError(f"price table {file}: entry for {model!r} must be an object, got {entry!r}")
        try:
            prices[model] = Price.from_dict(entry)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"price table {file}: bad entry for {model!r}: {exc}") from exc
    return prices


def _env_prices() -> dict[str, Price]:
    """``$EVALS_PRICES`` parsed once per process and version of the file's bytes (its
    :func:`~kg_store.digest.file_sha256`: one ``stat`` per model call after the first)."""
    path = os.environ.get(PRICES_ENV)
    if not path:
        return {}
    from kg_store.digest import file_sha256  # only with a price file: kg_store's package is not light

    try:
        sha256 = file_sha256(path)
    except OSError:
        return load_price_overrides(path)  # raises a clear error
    return _parsed_prices(path, sha256)


@functools.lru_cache(maxsize=4)
def _parsed_prices(path: str, sha256: str) -> dict[str, Price]:
    return load_price_overrides(path)


def price_for(
    model: str, overrides: Mapping[str, Price] | None = None, *, use_env: bool = True
) -> Price | None:
    """Price of ``model``, or ``None`` when unknown.

    ``overrides`` (e.g. from the CLI) win over ``$EVALS_PRICES``, which wins over the built-in table.
    """
    tables: list[Mapping[str, Price]] = []
    if overrides:
        tables.append(overrides)
    if use_env:
        tables.append(_env_prices())
    tables.append(PRICES)
    candidates = [model]
    if "/" in model:
        candidates.append(model.rsplit("/", 1)[1])
    for name in list(candidates):
        stripped = _SUFFIX.sub("", name)
        if stripped != name:
            candidates.append(stripped)
    for table in tables:
        for name in candidates:
            if name in table:
                return table[name]
    return None
