"""``client.eventloop``: uvloop where installed, the standard loop on request."""

from __future__ import annotations

import asyncio

import pytest

from client import eventloop


async def _loop_type() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_runs_on_uvloop_by_default_and_on_asyncio_when_asked(monkeypatch):
    pytest.importorskip("uvloop")
    monkeypatch.delenv(eventloop.ENV, raising=False)
    assert eventloop.loop_name() == "uvloop"
    assert eventloop.run(_loop_type()).startswith("uvloop")
    monkeypatch.setenv(eventloop.ENV, "asyncio")
    assert eventloop.loop_name() == "asyncio"
    assert eventloop.run(_loop_type()).startswith("asyncio")


def test_a_wrong_setting_is_named(monkeypatch):
    monkeypatch.setenv(eventloop.ENV, "trio")
    with pytest.raises(ValueError, match="EVALS_EVENT_LOOP must be auto, uvloop or asyncio, not 'trio'"):
        eventloop.loop_name()


def test_episode_gc_freezes_and_restores_the_collector():
    import gc

    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    with eventloop.episode_gc(young=12345):
        assert gc.get_threshold() == (max(12345, before[0]), before[1], before[2])
        assert gc.get_freeze_count() > frozen  # what existed is kept out of collections
        with eventloop.episode_gc(young=5):  # nested: acts once, at the outermost
            assert gc.get_threshold()[0] == max(12345, before[0])
        assert gc.get_threshold()[0] == max(12345, before[0]) and gc.get_freeze_count() > frozen
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
    with pytest.raises(RuntimeError), eventloop.episode_gc():
        raise RuntimeError("restored on errors too")
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
