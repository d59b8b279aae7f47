"""Directory locking: one read-write store or several read-only ones; concurrent builds."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest
from kg_testutil import run_python, start_python

from kg_store import KGError, KGLockedError, KGStore
from kg_store.engine import engine_name


def test_second_read_write_store_in_one_process_is_refused(tmp_path: Path, kg_b_file: Path) -> None:
    db = tmp_path / "db"
    with KGStore.build(db, kg_b_file):
        with pytest.raises(KGLockedError, match=r"locked by another store \(pid \d+ read-write\)"):
            KGStore.open(db)
        with pytest.raises(KGLockedError, match="cannot open it read-only"):
            KGStore.open(db, read_only=True)
        with pytest.raises(KGLockedError, match=r"waited 0.2 s"):
            KGStore.build(db, kg_b_file, lock_timeout=0.2)
    with KGStore.open(db) as store:  # free again once closed
        assert store.has_entity("Bob")


def test_read_write_store_in_another_process_is_refused(tmp_path: Path, kg_b_file: Path) -> None:
    db = tmp_path / "db"
    KGStore.build(db, kg_b_file).close()
    holder = start_python(
        textwrap.dedent(
            f"""
            import os, sys
            from kg_store import KGStore
            store = KGStore.open({str(db)!r})
            print("ready", os.getpid(), flush=True)
            sys.stdin.readline()
            store.close()
            """
        )
    )
    try:
        line = holder.stdout.readline().split()
        assert line and line[0] == "ready", holder.stderr.read()
        with pytest.raises(KGLockedError, match=rf"pid {line[1]} read-write.*one read-write process"):
            KGStore.open(db)
        with pytest.raises(KGLockedError):
            KGStore.open(db, read_only=True)
    finally:
        holder.communicate("\n", timeout=30)
    assert holder.returncode == 0, holder.stderr
    with KGStore.open(db, read_only=True) as store:
        assert store.has_entity("Bob")


def test_engine_lock_taken_outside_kg_store_is_a_clear_error(tmp_path: Path, kg_b_file: Path) -> None:
    db = tmp_path / "db"
    with KGStore.build(db, kg_b_file) as store:
        db_file = store.db_file
    module = engine_name()
    holder = start_python(
        f"import sys, {module}\ndb = {module}.Database({str(db_file)!r})\nprint('ready', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    try:
        assert holder.stdout.readline().strip() == "ready", holder.stderr.read()
        with pytest.raises(KGLockedError, match="locked by another process that did not go through kg_store"):
            KGStore.open(db)
    finally:
        holder.communicate("\n", timeout=30)


def test_concurrent_builds_of_one_directory(tmp_path: Path, kg_e_file: Path) -> None:
    db = tmp_path / "db"
    code = textwrap.dedent(
        f"""
        import json
        from kg_store import KGStore
        with KGStore.build({str(db)!r}, {str(kg_e_file)!r}) as store:
            print(json.dumps([store.last_build_action, store.stats().triples]))
        """
    )
    procs = [start_python(code) for _ in range(3)]
    outputs = [p.communicate(timeout=60) for p in procs]
    for p, (_out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
    results = sorted(json.loads(out) for out, _ in outputs)
    assert results == [["created", 491], ["unchanged", 491], ["unchanged", 491]]


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("kuzu", "ladybug")),
    reason="needs both kuzu and ladybug",
)
def test_the_two_engines_cannot_share_a_process() -> None:
    other = "ladybug" if engine_name() == "kuzu" else "kuzu"
    proc = run_python(
        f"import {other}\nfrom kg_store.engine import load_engine\n"
        f"try:\n    load_engine({engine_name()!r})\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("KGError")
    assert f"{other!r} is already imported in this process" in proc.stdout
    assert issubclass(KGLockedError, KGError)
