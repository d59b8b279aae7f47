from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from evals.core.serving import build_tool_server
from server import ToolServer


@pytest.fixture(scope="module")
def tool_server(data_dir) -> Iterator[ToolServer]:  # noqa: ARG001 - data_dir skips without data
    """Both FamilyTool datasets mounted, with their KGs (read-only, greedy fallback)."""
    with contextlib.ExitStack() as stack:
        yield build_tool_server(["familytool-b", "familytool-e"], stack=stack)
