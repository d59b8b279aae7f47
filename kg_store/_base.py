"""The connection, schema, metadata, in-memory caches and lifetime that every part of a KGStore shares.

Schema (one database file per engine inside the store directory):

* ``Entity(name STRING PRIMARY KEY)``: every entity; each has at least one fact.
* ``Rel(FROM Entity TO Entity, relation STRING)``: one edge per distinct fact.
* ``KGMeta(key STRING PRIMARY KEY, value STRING)``: schema version, checksum and origin of the source
  triples of the last build, engine and build time.

The database is the data of record. By default a store also keeps the out-adjacency in memory
(loaded on first use with one query, updated on every write through this store), which keeps a
2-hop query in the microseconds instead of about a millisecond; ``cache=False`` sends every query to
the database. The cache cannot go stale: while a store is open no other process can write (see the
directory lock in :mod:`kg_store._lock`).

A read-only store that loads the adjacency from the database also saves it next to the database
(``<database file>.adjacency``, :mod:`marshal` format) for the next store to load in a fraction of
the time. That file names the size and modification time of the database files it was made from
and is not used once they differ; a write through a store (a build, :meth:`add_fact`,
:meth:`remove_fact`) removes it first.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import functools
import marshal
import os
import tempfile
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, Self, TypeVar

from ._lock import DirLock
from .engine import Engine
from .errors import KGError
from .scorers import LexicalScorer, RelationScorer
from .triples import gc_paused

SCHEMA_VERSION = "1"
BuildAction = Literal["created", "unchanged", "rebuilt"]

SCHEMA = (
    "CREATE NODE TABLE IF NOT EXISTS Entity(name STRING PRIMARY KEY)",
    "CREATE REL TABLE IF NOT EXISTS Rel(FROM Entity TO Entity, relation STRING)",
    "CREATE NODE TABLE IF NOT EXISTS KGMeta(key STRING PRIMARY KEY, value STRING)",
)
TABLES = {"Entity", "Rel", "KGMeta"}
BATCH = 5000  # rows per insert statement, names per ``IN $names`` query
ADJACENCY_FORMAT = 2  # of the saved adjacency file; another number: the file is not used

_S = TypeVar("_S", bound="StoreBase")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def synchronised(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """Run a method under the store's re-entrant mutex (one engine connection is shared by threads)."""

    @functools.wraps(method)
    def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._mutex:
            return method(self, *args, **kwargs)

    return wrapper


class StoreBase:
    """What every part of :class:`~kg_store.KGStore` shares: the connection, the schema and metadata,
    the in-memory adjacency, the properties and the lifetime. Not used on its own."""

    def __init__(
        self,
        *,
        engine: Engine,
        db_dir: Path,
        lock: DirLock,
        database: Any,
        connection: Any,
        read_only: bool,
        cache: bool,
    ) -> None:
        """Internal: use :meth:`build`, :meth:`from_triples` or :meth:`open`."""
        self._engine = engine
        self._dir = db_dir
        self._lock = lock
        self._db = database
        self._conn = connection
        self._read_only = read_only
        self._use_cache = cache
        self._mutex = threading.RLock()
        self._prepared: dict[str, Any] = {}
        self._closed = False
        self.scorer: RelationScorer = LexicalScorer()
        #: What the last :meth:`build` / :meth:`from_triples` did; ``None`` for a store from :meth:`open`.
        self.last_build_action: BuildAction | None = None
        self._reset_caches()

    # ------------------------------------------------------------------ properties

    @property
    def engine(self) -> str:
        """The engine in use: ``"kuzu"`` or ``"ladybug"``."""
        return self._engine.name

    @property
    def path(self) -> Path:
        """The store directory."""
        return self._dir

    @property
    def db_file(self) -> Path:
        """The engine's database file inside :attr:`path`."""
        return self._dir / self._engine.db_filename

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only."""
        return self._read_only

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    # ------------------------------------------------------------------ low-level helpers

    def _check_open(self) -> None:
        if self._closed:
            raise KGError(f"KG store {self._dir} is closed")

    def _check_writable(self, operation: str) -> None:
        self._check_open()
        if self._read_only:
            raise KGError(f"cannot {operation}: KG store {self._dir} was opened read-only")

    def _execute(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Run one Cypher statement with parameters; return all rows."""
        self._check_open()
        try:
            if self._engine.supports_prepare and params:
                stmt = self._prepared.get(query)
                if stmt is None:
                    with warnings.catch_warnings():  # Kuzu 0.11 marks prepare() deprecated; it is 2x faster
                        warnings.simplefilter("ignore", DeprecationWarning)
                        stmt = self._conn.prepare(query)
                    self._prepared[query] = stmt
                result = self._conn.execute(stmt, params)
            else:
                result = self._conn.execute(query, params or {})
            rows: list[list[Any]] = result.get_all()
            return rows
        except RuntimeError as exc:
            raise KGError(f"{self._engine.name} query failed: {exc} (query: {query})") from exc

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """Run the enclosed statements in one write transaction (rolled back on any error)."""
        self._execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            with contextlib.suppress(KGError):
                self._execute("ROLLBACK")
            raise
        self._execute("COMMIT")

    def _check_schema(self) -> None:
        tables = {row[1] for row in self._execute("CALL show_tables() RETURN *")}
        if not TABLES <= tables:
            raise KGError(
                f"{self.db_file} is not a kg_store database (tables {sorted(tables)}; "
                f"expected {sorted(TABLES)}); rebuild it with KGStore.build(...)"
            )
        version = self._read_meta().get("schema_version")
        if version != SCHEMA_VERSION:
            raise KGError(
                f"KG database {self.db_file} has schema version {version!r}, this code needs "
                f"{SCHEMA_VERSION!r}; rebuild it with KGStore.build(...)"
            )

    def _read_meta(self) -> dict[str, str]:
        return {k: v for k, v in self._execute("MATCH (m:KGMeta) RETURN m.key, m.value")}

    def _set_meta(self, key: str, value: str) -> None:
        self._execute("MERGE (m:KGMeta {key: $k}) SET m.value = $v", {"k": key, "v": value})

    def _reset_caches(self) -> None:
        self._relation_counts: Counter[str] | None = None
        # head -> sorted [(relation, tail)], and tail -> sorted [(head, relation)] (built when needed)
        self._out: dict[str, list[tuple[str, str]]] | None = None
        self._in: dict[str, list[tuple[str, str]]] | None = None

    def _rel_counts(self) -> Counter[str]:
        if self._relation_counts is None:
            if self._out is not None:
                self._relation_counts = Counter(r for edges in self._out.values() for r, _ in edges)
            else:
                rows = self._execute("MATCH ()-[r:Rel]->() RETURN r.relation, count(*)")
                self._relation_counts = Counter({r: int(c) for r, c in rows})
        return self._relation_counts

    def _adjacency(self) -> dict[str, list[tuple[str, str]]] | None:
        """The in-memory out-adjacency (loading it on first use), or None when caching is off."""
        if not self._use_cache:
            return None
        if self._out is None:
            saved = self._read_adjacency_file()
            if saved is not None:
                self._out, counts = saved
                self._relation_counts = Counter(counts)
            else:
                self._out = self._query_adjacency()
                if self._read_only:
                    self._write_adjacency_file(self._out, self._rel_counts())
            self._in = None
        return self._out

    def _query_adjacency(self) -> dict[str, list[tuple[str, str]]]:
        """All edges, exported by the engine as one CSV file and read back with :mod:`csv`: at 1M edges
        about a fifth of the time of turning a query's result into Python objects."""
        names: dict[str, str] = {}  # one string object per name: less memory, a smaller saved file
        one = names.setdefault
        out: dict[str, list[tuple[str, str]]] = {}
        with tempfile.TemporaryDirectory(prefix="kg_store_adjacency_") as tmp, gc_paused():
            path = Path(tmp, "edges.csv")
            if "'" in str(path) or "\\" in str(path):  # COPY takes no parameter for the file
                rows = self._execute(
                    "MATCH (a:Entity)-[r:Rel]->(b:Entity) RETURN a.name, collect([r.relation, b.name])"
                )
                return {one(h, h): sorted((one(r, r), one(t, t)) for r, t in edges) for h, edges in rows}
            self._execute(
                "COPY (MATCH (a:Entity)-[r:Rel]->(b:Entity) RETURN a.name, r.relation, b.name) "
                f"TO '{path}' (HEADER=false)"
            )
            with path.open(encoding="utf-8", newline="") as f:
                for h, r, t in csv.reader(f):
                    edges = out.get(h)
                    if edges is None:
                        edges = out[one(h, h)] = []
                    edges.append((one(r, r), one(t, t)))
        for edges in out.values():
            edges.sort()
        return out

    @property
    def _adjacency_path(self) -> Path:
        return self._dir / f"{self._engine.db_filename}.adjacency"

    def _database_signature(self) -> list[tuple[str, int, int]]:
        """Name, size and modification time (ns) of the database's files on disk."""
        sig = []
        for path in sorted(self._dir.glob(self._engine.db_filename + "*")):
            if path != self._adjacency_path and path.is_file():
                st = path.stat()
                sig.append((path.name, st.st_size, st.st_mtime_ns))
        return sig

    def _read_adjacency_file(self) -> tuple[dict[str, list[tuple[str, str]]], dict[str, int]] | None:
        """The saved adjacency and relation counts if they were made from the database files as they are
        now, else None (the counts are saved too: counting a million edges again took half a warm open)."""
        try:
            with gc_paused():  # a million tuples: 0.6-0.8 s instead of 0.9-1.5 s at 1M edges
                data = marshal.loads(self._adjacency_path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if not (isinstance(data, tuple) and len(data) == 4 and data[0] == ADJACENCY_FORMAT):
            return None
        if data[1] != self._database_signature() or not (isinstance(data[2], dict) and isinstance(data[3], dict)):
            return None
        out: dict[str, list[tuple[str, str]]] = data[2]
        counts: dict[str, int] = data[3]
        return out, counts

    def _write_adjacency_file(self, out: dict[str, list[tuple[str, str]]], counts: Counter[str]) -> None:
        """Save ``out`` and the relation ``counts`` for the next store (best effort: an unwritable
        directory just goes without)."""
        try:
            fd, tmp = tempfile.mkstemp(dir=self._dir, prefix=".adjacency-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as f:
                marshal.dump((ADJACENCY_FORMAT, self._database_signature(), out, dict(counts)), f)
            os.replace(tmp, self._adjacency_path)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def _drop_adjacency_file(self) -> None:
        """Remove the saved adjacency (before a write changes the database)."""
        with contextlib.suppress(FileNotFoundError):
            self._adjacency_path.unlink()

    def _incoming(self) -> dict[str, list[tuple[str, str]]]:
        """The in-memory in-adjacency, derived from the out-adjacency (which must be loaded)."""
        if self._in is None:
            inc: dict[str, list[tuple[str, str]]] = {}
            for h in sorted(self._out or {}):
                for r, t in (self._out or {})[h]:
                    inc.setdefault(t, []).append((h, r))
            self._in = inc
        return self._in

    def _entity_exists(self, name: str) -> bool:
        out = self._adjacency()
        if out is not None:
            return name in out or name in self._incoming()
        return bool(self._execute("MATCH (n:Entity {name: $n}) RETURN n.name", {"n": name}))

    def _entity_names(self) -> list[str]:
        """All entity names, sorted (the body of :meth:`KGStore.entities`)."""
        out = self._adjacency()
        if out is not None:
            return sorted(out.keys() | self._incoming().keys())
        return [row[0] for row in self._execute("MATCH (n:Entity) RETURN n.name ORDER BY n.name")]

    def _unknown_entity(self, name: str) -> KGError:
        with self._mutex:
            known = self._entity_names()
        matches = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""
        return KGError(f"unknown entity {name!r}: it is not in the KG{hint}")

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close the connection and database and release the directory lock (idempotent)."""
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            self._prepared.clear()
            try:
                for obj in (self._conn, self._db):
                    close = getattr(obj, "close", None)
                    if close is not None:
                        close()
            finally:
                self._conn = self._db = None
                self._reset_caches()
                self._lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("read-only" if self._read_only else "read-write")
        return f"KGStore({str(self._dir)!r}, engine={self.engine!r}, {state})"
