"""``evals serve --kg-file FILE``: a user's own triple file served as the KG tools, over the SDK's stdio client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import StdioServerParameters

from client.agent import result_text
from client.mcp_session import connect, list_all_tools
from kg_store import KGStore

TRIPLES = """# a user's KG: comments, blank lines, a double-quoted name and a tuple are all fine
['Ann', 'employer', 'Acme']
['Acme', 'located_in', 'Oslo']

["O'Neil", 'employer', 'Acme']
('Oslo', 'country', 'Norway')
['Ann', 'employer', 'Acme']
"""


def _evals(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "EVALS_CACHE_DIR": str(tmp_path / "cache")}


async def test_kg_file_is_served_with_the_kg_tools(tmp_path: Path, env: dict[str, str]) -> None:
    kg = tmp_path / "people.txt"
    kg.write_text(TRIPLES, encoding="utf-8")
    params = StdioServerParameters(command=sys.executable, args=["-m", "evals.cli", "serve", "--stdio", "--kg-file",
                                                                  str(kg)], env=env)
    for _ in range(2):  # built on first use, then served from the cached database
        async with connect(params, timeout=600) as client:  # start-up builds the KG
            names = [t.name for t in await list_all_tools(client)]
            assert names == ["kg_list_relations", "kg_neighbors", "kg_search_path"]
            res = await client.call_tool("kg_search_path", {"start": "Ann", "path": ["employer", "located_in"]})
            assert not res.is_error, result_text(res)
            assert res.structured_content is not None
            assert res.structured_content["paths"] == [[["Ann", "employer", "Acme"], ["Acme", "located_in", "Oslo"]]]
            res = await client.call_tool("kg_neighbors", {"entity": "Acme"})
            assert res.structured_content is not None
            assert res.structured_content["in"] == [["Ann", "employer", "Acme"], ["O'Neil", "employer", "Acme"]]
            res = await client.call_tool("kg_list_relations", {})
            assert res.structured_content == {"relations": ["country", "employer", "located_in"], "count": 3}
            res = await client.call_tool("kg_neighbors", {"entity": "Nobody"})
            assert res.is_error and "Nobody" in result_text(res)
    (db,) = (tmp_path / "cache" / "kg").iterdir()
    with KGStore.open(db, read_only=True) as store:
        assert store.stats().triples == 4  # the duplicate line is one fact


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("['a', 'r', 'b']\n['a', 'r']\n", "bad.txt:2: expected 3 items"),
        ("['a', 'r', 'b']\n\n['a', 'r', 'b'\n", "bad.txt:3: not a Python-style triple"),
        (None, "no such file"),
    ],
)
def test_bad_kg_file_is_one_line_and_exit_2(tmp_path: Path, env: dict[str, str], content: str | None,
                                            expected: str) -> None:
    kg = tmp_path / "bad.txt"
    if content is not None:
        kg.write_text(content, encoding="utf-8")
    proc = _evals("serve", "--stdio", "--kg-file", str(kg), env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr
