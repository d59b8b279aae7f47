"""Fixtures for the kg_store tests: the real FamilyTool KG files and real stores on tmp_path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from kg_testutil import REPO_ROOT, read_triples_independently

from kg_store import KGStore, Triple


def kg_data_dir() -> Path:
    """``$EVALS_DATA_DIR``, else ``../shared/data`` next to the repository."""
    env = os.environ.get("EVALS_DATA_DIR")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def familytool_dir() -> Path:
    """The FamilyTool data directory; skips the test if the KG files are not there."""
    directory = kg_data_dir() / "familytool"
    missing = [n for n in ("familykg-b.txt", "familykg-e.txt") if not (directory / n).is_file()]
    if missing:
        pytest.skip(
            f"FamilyTool KG files {missing} not found in {directory}; set EVALS_DATA_DIR to the data directory"
        )
    return directory


@pytest.fixture(scope="session")
def kg_b_file(familytool_dir: Path) -> Path:
    return familytool_dir / "familykg-b.txt"


@pytest.fixture(scope="session")
def kg_e_file(familytool_dir: Path) -> Path:
    return familytool_dir / "familykg-e.txt"


@pytest.fixture(scope="session")
def triples_b(kg_b_file: Path) -> list[Triple]:
    return read_triples_independently(kg_b_file)


@pytest.fixture(scope="session")
def triples_e(kg_e_file: Path) -> list[Triple]:
    return read_triples_independently(kg_e_file)


@pytest.fixture(params=[True, False], ids=["cached", "db"])
def cache(request: pytest.FixtureRequest) -> bool:
    """Run a test with the in-memory adjacency and again with every query sent to the database."""
    return request.param


@pytest.fixture
def store_b(tmp_path: Path, kg_b_file: Path, cache: bool) -> Iterator[KGStore]:
    with KGStore.build(tmp_path / "kg-b", kg_b_file, cache=cache) as store:
        yield store


@pytest.fixture
def store_e(tmp_path: Path, kg_e_file: Path, cache: bool) -> Iterator[KGStore]:
    """FamilyTool-e, built, closed and opened again (store_b is the store that build returns)."""
    KGStore.build(tmp_path / "kg-e", kg_e_file).close()
    with KGStore.open(tmp_path / "kg-e", cache=cache) as store:
        yield store
