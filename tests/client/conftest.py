"""Fixtures for the client tests: a fake provider server shared by the module, reset per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_providers import FakeProviderServer


@pytest.fixture(scope="session")
def _fake_server_session() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture
def fake_server(_fake_server_session: FakeProviderServer) -> Iterator[FakeProviderServer]:
    """A running :class:`FakeProviderServer` with empty scripts; checked for leftover steps afterwards."""
    _fake_server_session.reset()
    yield _fake_server_session
    _fake_server_session.reset()


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must never pick up real credentials or endpoints from the environment."""
    for var in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "EVALS_PRICES",
    ):
        monkeypatch.delenv(var, raising=False)
