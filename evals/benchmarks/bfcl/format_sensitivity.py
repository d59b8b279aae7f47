"""BFCL's format_sensitivity category: 200 single-turn entries, each under every one of BFCL's 26 prompt
configurations (return format: Python, JSON, verbose or concise XML; calls inside ``<TOOLCALL>`` tags or
not; function docs as Python, XML or JSON; plain text or Markdown; the classic or the experimental style).

As BFCL's ``load_format_sensitivity_test_cases`` builds them: the entry ids listed in the wheel's
``BFCL_v4_format_sensitivity.json`` (category by category, each category's entries in its file's order),
and for each entry every configuration of BFCL's ``get_all_format_sensitivity_configs`` (imported from
the wheel), numbered on: ``format_sensitivity_<n>:<configuration>:<original id>``. Each is scored as
BFCL's ``format_sensitivity_runner`` scores it: decoded in the configuration's return format, checked by
the AST checker as the original entry (its id standing for the category, in Python).
"""

from __future__ import annotations

import functools
import json
import zipfile
from pathlib import Path

from .data import MAX_MEMBER_BYTES, BfclEntry, WheelError, read_category, verified_wheel
from .files import FORMAT_SENSITIVITY, SINGLE_TURN

__all__ = ["base_id", "config_of", "format_sensitivity_ids", "load_format_sensitivity"]

_IDS = "bfcl_eval/data/BFCL_v4_format_sensitivity.json"


def _id_lists(wheel: Path) -> dict[str, list[str]]:
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(_IDS)
        if info.file_size > MAX_MEMBER_BYTES:
            raise WheelError(f"{wheel}:{_IDS}: {info.file_size} bytes, over the bound of {MAX_MEMBER_BYTES}")
        value = json.loads(archive.read(info))
    if not isinstance(value, dict) or not all(
            c in SINGLE_TURN and isinstance(v, list) for c, v in value.items()):
        raise WheelError(f"{wheel}:{_IDS}: not a map of single-turn categories to entry ids")
    return value


def configs() -> list[str]:
    """BFCL's 26 configurations, in its order (``get_all_format_sensitivity_configs``, from the wheel)."""
    from .handlers import bfcl_code

    return list(bfcl_code()["configs"]())


@functools.cache
def _entries(wheel: Path) -> tuple[BfclEntry, ...]:
    every = configs()
    out: list[BfclEntry] = []
    for category, ids in _id_lists(wheel).items():
        wanted = set(ids)
        for entry in read_category(category, wheel):
            if entry.id not in wanted:
                continue
            for config in every:
                out.append(BfclEntry(f"{FORMAT_SENSITIVITY}_{len(out)}:{config}:{entry.id}", FORMAT_SENSITIVITY,
                                     entry.messages, entry.functions, entry.ground_truth))
    return tuple(out)


def load_format_sensitivity(wheel: Path | None = None) -> list[BfclEntry]:
    """The category's entries, as BFCL builds them (module docstring)."""
    return list(_entries(verified_wheel(wheel).resolve()))


def format_sensitivity_ids(wheel: Path | None = None) -> list[str]:
    return [e.id for e in load_format_sensitivity(wheel)]


def config_of(entry_id: str) -> str:
    """The configuration part of a format_sensitivity id."""
    return entry_id.split(":")[1]


def base_id(entry_id: str) -> str:
    """The original entry's id (what BFCL gives its AST checker as the category)."""
    return entry_id.split(":")[-1]
