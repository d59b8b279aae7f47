"""Opening and building a KGStore: engine selection, the directory lock, idempotent (re)builds."""

from __future__ import annotations

import datetime as _dt
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Self

from ._base import BATCH, SCHEMA, SCHEMA_VERSION, BuildAction, StoreBase
from ._lock import DirLock
from .digest import file_sha256
from .engine import load_engine
from .errors import KGError, KGLockedError
from .triples import CanonicalTriples, canonical_triples, coerce_triples, read_triple_file


def _triple_file_sha256(path: str | Path) -> str:
    """:func:`~kg_store.digest.file_sha256` of a triple file (a :class:`KGError` if it cannot be read)."""
    try:
        return file_sha256(path)
    except FileNotFoundError:
        raise KGError(f"triple file not found: {path}") from None
    except OSError as exc:
        raise KGError(f"cannot read triple file {path}: {exc}") from exc


BUILD_BUFFER_POOL_MIN = 128 << 20
BUILD_BUFFER_POOL_PER_TRIPLE = 128
"""A store that builds gets an engine buffer pool of this many bytes per triple (at least
``BUILD_BUFFER_POOL_MIN``) instead of the engine's default (most of the machine's memory, which its
bulk load then fills): a 1M-edge load runs in the same time with a third less peak memory
(``bench/bench_kg_scale.py``)."""

BUILD_LOCK_TURN_S = 1.0
"""``ensure_built`` waits for the build lock this long at a time, looking between turns whether another
process has built the database meanwhile."""


class BuildingMixin(StoreBase):
    """:meth:`open`, :meth:`build`, :meth:`ensure_built` and :meth:`from_triples` of :class:`~kg_store.KGStore`."""

    @classmethod
    def _open_dir(
        cls,
        db_dir: str | Path,
        *,
        read_only: bool,
        create: bool,
        lock_timeout: float,
        engine: str | None,
        cache: bool,
        buffer_pool_size: int = 0,
    ) -> tuple[Self, bool]:
        """Lock and open the database in ``db_dir``; return the store and whether its file existed."""
        eng = load_engine(engine)
        directory = Path(db_dir)
        db_file = directory / eng.db_filename
        if create:
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise KGError(f"cannot create KG directory {directory}: {exc}") from exc
        elif not directory.is_dir():
            raise KGError(f"KG directory {directory} does not exist; create it with KGStore.build(...)")
        lock = DirLock(directory)
        lock.acquire(exclusive=not read_only, timeout=lock_timeout)
        existed = db_file.exists()
        try:
            if not existed and not create:
                others = [p.name for p in directory.glob("graph.*") if p.name != eng.db_filename]
                hint = f" (it holds {', '.join(others)}, made by another engine)" if others else ""
                raise KGError(
                    f"no {eng.name} KG database in {directory}{hint}; build it with KGStore.build(...)"
                )
            try:
                database = eng.database(str(db_file), read_only=read_only, buffer_pool_size=buffer_pool_size)
                conn = eng.connect(database)
            except RuntimeError as exc:
                if "lock" in str(exc).lower():
                    raise KGLockedError(
                        f"KG database {db_file} is locked by another process that did not go through "
                        f"kg_store ({exc}); close it first"
                    ) from exc
                raise KGError(f"cannot open KG database {db_file} with {eng.name}: {exc}") from exc
            store = cls(
                engine=eng,
                db_dir=directory,
                lock=lock,
                database=database,
                connection=conn,
                read_only=read_only,
                cache=cache,
            )
        except BaseException:
            lock.release()
            raise
        try:
            if create:
                for ddl in SCHEMA:
                    store._execute(ddl)
            else:
                store._check_schema()
        except BaseException:
            store.close()
            raise
        return store, existed

    @classmethod
    def open(
        cls,
        db_dir: str | Path,
        read_only: bool = False,
        *,
        lock_timeout: float = 0.0,
        engine: str | None = None,
        cache: bool = True,
    ) -> Self:
        """Open an existing store.

        Args:
            db_dir: the directory given to :meth:`build` / :meth:`from_triples`.
            read_only: open read-only; several read-only stores (in any processes) may be open at once,
                but not while a read-write one is.
            lock_timeout: seconds to wait for a conflicting store to close (0: fail at once).
            engine: ``"kuzu"`` or ``"ladybug"``; default ``$EVALS_KG_ENGINE`` or ``"kuzu"``.
            cache: keep the adjacency in memory for fast queries (see the module docs).

        Raises:
            KGError: the directory or database does not exist or is not a kg_store database.
            KGLockedError: another store holds a conflicting lock for longer than ``lock_timeout``.
        """
        store, _ = cls._open_dir(
            db_dir, read_only=read_only, create=False, lock_timeout=lock_timeout, engine=engine, cache=cache
        )
        return store

    @classmethod
    def build(
        cls,
        db_dir: str | Path,
        triples_file: str | Path,
        *,
        lock_timeout: float = 30.0,
        engine: str | None = None,
        cache: bool = True,
        copy_threshold: int = 10_000,
    ) -> Self:
        """Build (or refresh) the store in ``db_dir`` from a triple file; return it open read-write.

        Idempotent: the SHA-256 of the file's canonical content (distinct triples, sorted) is recorded
        at build time. If it equals the recorded one the database is left as it is
        (``last_build_action == "unchanged"``), which also keeps any facts added or removed since with
        :meth:`add_fact` / :meth:`remove_fact`. If it differs (or the schema version changed) the graph
        is replaced by the file's content (``"rebuilt"``), dropping such edits. A new database gives
        ``"created"``. Concurrent builds of one directory (threads or processes) are serialised by the
        directory lock: the later one waits up to ``lock_timeout`` seconds, then finds it unchanged.

        Args:
            db_dir: directory for the database (created if needed).
            triples_file: a KG triple file, one ``['head', 'relation', 'tail']`` per line.
            lock_timeout: seconds to wait for another store on this directory to close.
            engine: ``"kuzu"`` or ``"ladybug"``; default ``$EVALS_KG_ENGINE`` or ``"kuzu"``.
            cache: keep the adjacency in memory (see the module docs).
            copy_threshold: load with the engine's bulk ``COPY FROM`` (via a temporary CSV) when there
                are at least this many triples; below it, parameterised batched inserts.

        Raises:
            KGError: unreadable file; :class:`KGParseError` (a KGError) names the bad line;
                :class:`KGLockedError` when the directory stays locked.
        """
        digest = _triple_file_sha256(triples_file)
        return cls._build(
            db_dir,
            read_triple_file(triples_file),
            source=str(Path(triples_file).resolve()),
            file_digest=digest,
            lock_timeout=lock_timeout,
            engine=engine,
            cache=cache,
            copy_threshold=copy_threshold,
        )

    @classmethod
    def ensure_built(
        cls,
        db_dir: str | Path,
        triples_file: str | Path,
        *,
        lock_timeout: float = 30.0,
        engine: str | None = None,
    ) -> BuildAction:
        """Make ``db_dir`` hold the KG of ``triples_file`` and leave it closed; return what was done.

        Same result as ``KGStore.build(...).close()``, but when the database is already up to date it
        only checks the recorded checksum under a shared (read-only) lock, so it succeeds while
        read-only stores of the directory are open in other processes (a build would wait for them).

        Raises:
            KGError: as :meth:`build`; :class:`KGLockedError` if a needed lock stays taken.
        """
        digest = _triple_file_sha256(triples_file)
        if cls._up_to_date(db_dir, "file_sha256", digest, lock_timeout=lock_timeout, engine=engine):
            return "unchanged"  # the very file of the last build: not even parsed
        triples = read_triple_file(triples_file)
        checksum = triples.checksum  # once: the loop below may look many times
        deadline = time.monotonic() + lock_timeout
        while True:
            if cls._up_to_date(db_dir, "source_sha256", checksum, lock_timeout=lock_timeout, engine=engine):
                return "unchanged"
            # Another process may be building it right now (two workers of one run on a fresh cache),
            # and then keep it open read-only: wait for the build lock in short turns and look again
            # in between, instead of waiting for a lock that such a reader holds for its whole run.
            try:
                with cls._build(
                    db_dir,
                    triples,
                    source=str(Path(triples_file).resolve()),
                    file_digest=digest,
                    lock_timeout=max(0.0, min(BUILD_LOCK_TURN_S, deadline - time.monotonic())),
                    engine=engine,
                    cache=False,
                    copy_threshold=10_000,
                ) as store:
                    assert store.last_build_action is not None
                    return store.last_build_action
            except KGLockedError:
                if time.monotonic() >= deadline:
                    raise

    @classmethod
    def _up_to_date(
        cls, db_dir: str | Path, key: str, checksum: str, *, lock_timeout: float, engine: str | None
    ) -> bool:
        """Whether ``db_dir`` holds a kg_store database whose metadata ``key`` is ``checksum``: the
        triples' :func:`triples_checksum` (``source_sha256``) or the triple file's (``file_sha256``),
        checked under a shared lock."""
        if not (Path(db_dir) / load_engine(engine).db_filename).is_file():
            return False
        try:
            with cls.open(db_dir, read_only=True, lock_timeout=lock_timeout, engine=engine, cache=False) as s:
                meta = s._read_meta()
        except KGLockedError:
            raise
        except KGError:
            return False  # not a usable kg_store database: rebuild it
        return bool(meta.get(key) == checksum and meta.get("schema_version") == SCHEMA_VERSION)

    @classmethod
    def from_triples(
        cls,
        db_dir: str | Path,
        triples: Iterable[Sequence[str]],
        *,
        lock_timeout: float = 30.0,
        engine: str | None = None,
        cache: bool = True,
        copy_threshold: int = 10_000,
    ) -> Self:
        """Like :meth:`build`, from an iterable of ``(head, relation, tail)`` sequences of strings."""
        return cls._build(
            db_dir,
            canonical_triples(coerce_triples(triples)),
            source="<triples>",
            lock_timeout=lock_timeout,
            engine=engine,
            cache=cache,
            copy_threshold=copy_threshold,
        )

    @classmethod
    def _build(
        cls,
        db_dir: str | Path,
        triples: CanonicalTriples,
        *,
        source: str,
        file_digest: str | None = None,
        lock_timeout: float,
        engine: str | None,
        cache: bool,
        copy_threshold: int,
    ) -> Self:
        checksum = triples.checksum
        store, existed = cls._open_dir(
            db_dir, read_only=False, create=True, lock_timeout=lock_timeout, engine=engine, cache=cache,
            buffer_pool_size=max(BUILD_BUFFER_POOL_MIN, BUILD_BUFFER_POOL_PER_TRIPLE * len(triples.rows)),
        )
        try:
            with store._mutex:
                meta = store._read_meta()
                if meta.get("source_sha256") == checksum and meta.get("schema_version") == SCHEMA_VERSION:
                    store.last_build_action = "unchanged"
                    if file_digest is not None and meta.get("file_sha256") != file_digest:
                        store._set_meta("file_sha256", file_digest)  # same triples, another file
                else:
                    store._load(triples, checksum=checksum, source=source, copy_threshold=copy_threshold)
                    if file_digest is not None:
                        store._set_meta("file_sha256", file_digest)
                    store.last_build_action = "rebuilt" if existed else "created"
        except BaseException:
            store.close()
            raise
        return store

    def _load(self, triples: CanonicalTriples, *, checksum: str, source: str, copy_threshold: int) -> None:
        """Replace the whole graph by ``triples`` and record the source checksum.

        The checksum is removed first and written last, so an interrupted load is redone next build.
        """
        self._drop_adjacency_file()
        self._execute("MATCH (m:KGMeta) DELETE m")
        self._execute("DROP TABLE IF EXISTS Rel")
        self._execute("DROP TABLE IF EXISTS Entity")
        self._prepared.clear()
        for ddl in SCHEMA[:2]:
            self._execute(ddl)
        count = len(triples.rows)
        if count >= copy_threshold:
            self._copy_load(triples)
        else:
            facts = triples.triples()
            entities = sorted({t.head for t in facts} | {t.tail for t in facts})
            with self._transaction():
                for i in range(0, len(entities), BATCH):
                    self._execute(
                        "UNWIND $names AS n CREATE (:Entity {name: n})",
                        {"names": entities[i : i + BATCH]},
                    )
                for i in range(0, len(facts), BATCH):
                    rows = [{"h": h, "r": r, "t": t} for h, r, t in facts[i : i + BATCH]]
                    self._execute(
                        "UNWIND $rows AS row MATCH (a:Entity {name: row.h}), (b:Entity {name: row.t}) "
                        "CREATE (a)-[:Rel {relation: row.r}]->(b)",
                        {"rows": rows},
                    )
        meta = {
            "schema_version": SCHEMA_VERSION,
            "source": source,
            "built_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "engine": self._engine.name,
            "engine_version": self._engine.version,
            "triples_at_build": str(count),
            "source_sha256": checksum,
        }
        for key, value in meta.items():
            self._set_meta(key, value)
        self._reset_caches()

    def _copy_load(self, triples: CanonicalTriples) -> None:
        """Bulk-load with ``COPY FROM`` a CSV file of the entities, then one of the rows (much faster
        than inserts for big graphs)."""
        with tempfile.TemporaryDirectory(prefix="kg_store_load_") as tmp:
            if "'" in tmp or "\\" in tmp:
                raise KGError(f"temporary directory {tmp!r} has a quote or backslash; set TMPDIR elsewhere")
            rel_csv = Path(tmp, "rels.csv")
            triples.write_csv(rel_csv)
            triples.rows = []  # written: the engine's load needs the memory more (no caller uses them again)
            # COPY takes no parameter for the file; this path is our own temporary file. A field with a
            # line break needs the serial CSV reader.
            options = f"(HEADER=true, PARALLEL={str(not triples.multiline).lower()}, QUOTE='\"', ESCAPE='\"')"
            entity_csv = Path(tmp, "entities.csv")
            triples.write_entities_csv(entity_csv)  # the parser's distinct names: no DISTINCT in the engine
            triples.entities = []
            self._execute(f"COPY Entity FROM '{entity_csv}' {options}")
            self._execute(f"COPY Rel FROM '{rel_csv}' {options}")
