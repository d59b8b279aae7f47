"""Shared fixtures for the tool_specs tests (benchmark data access with clear skips)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

Record = list[dict[str, Any]]


def _data_dir() -> Path:
    env = os.environ.get("EVALS_DATA_DIR")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def data_file() -> Callable[..., Path]:
    """``data_file("familytool", "familytool-b.jsonl")``: the path under the data dir
    (``$EVALS_DATA_DIR``, else ``<repo>/../shared/data``), or skip saying what is missing."""

    def get(*parts: str) -> Path:
        path = _data_dir().joinpath(*parts)
        if not path.is_file():
            pytest.skip(
                f"benchmark data file {path} is absent (set EVALS_DATA_DIR to the shared data folder)"
            )
        return path

    return get


@pytest.fixture(scope="session")
def familytool_records(data_file: Callable[..., Path]) -> Callable[[str], list[Record]]:
    """``familytool_records("b")``: every record of familytool-b.jsonl (4 messages each)."""
    cache: dict[str, list[Record]] = {}

    def get(variant: str) -> list[Record]:
        if variant not in cache:
            path = data_file("familytool", f"familytool-{variant}.jsonl")
            with path.open(encoding="utf-8") as handle:
                cache[variant] = [json.loads(line) for line in handle if line.strip()]
        return cache[variant]

    return get


@pytest.fixture(scope="session")
def familytool_tool(familytool_records: Callable[[str], list[Record]]) -> Callable[[str], dict[str, Any]]:
    """``familytool_tool("order_pizza")``: the raw candidate-tool dict with that name."""

    def get(name: str) -> dict[str, Any]:
        for variant in ("b", "e"):
            for record in familytool_records(variant):
                for tool in record[1]["content"]:
                    if tool["name"] == name:
                        return tool
        pytest.fail(f"FamilyTool has no candidate tool named {name!r}")

    return get
