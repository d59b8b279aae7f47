"""The FamilyTool knowledge graph in an embedded graph database (Kuzu, or LadybugDB).

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

Without the cache, a relation path is followed hop by hop with one single-hop query per entity
reached (see ``KGStore._db_edges`` for why not one multi-hop Cypher pattern).
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import difflib
import functools
import tempfile
import threading
import warnings
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from ._lock import DirLock
from .engine import Engine, load_engine
from .errors import KGError, KGLockedError
from .results import KGStats, PathSearchResult
from .scorers import LexicalScorer, RelationScorer, top_k_relations
from .triples import Triple, _require_str, coerce_triples, parse_triple_file, triples_checksum

__all__ = ["KGStore", "SCHEMA_VERSION", "SEARCH_MODES"]

SCHEMA_VERSION = "1"
SEARCH_MODES = ("exact", "greedy", "retrieval")
DEFAULT_MAX_PATHS = 1000
BuildAction = Literal["created", "unchanged", "rebuilt"]

_SCHEMA = (
    "CREATE NODE TABLE IF NOT EXISTS Entity(name STRING PRIMARY KEY)",
    "CREATE REL TABLE IF NOT EXISTS Rel(FROM Entity TO Entity, relation STRING)",
    "CREATE NODE TABLE IF NOT EXISTS KGMeta(key STRING PRIMARY KEY, value STRING)",
)
_TABLES = {"Entity", "Rel", "KGMeta"}
_INSERT_BATCH = 5000
_PK_LOOKUP_MAX = 4  # frontier size up to which entities are looked up one by one (see _out_edges)

# A hop of a traversal: None = any relation (greedy search), else the allowed relation names.
_Hop = tuple[str, ...] | None

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _synchronised(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a method under the store's re-entrant mutex (one engine connection is shared by threads)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        self = args[0]
        with self._mutex:  # type: ignore[attr-defined]
            return method(*args, **kwargs)

    return wrapper


def _edges_with(edges: Sequence[tuple[str, str]], relation: str) -> Iterable[tuple[str, str]]:
    """The ``(relation, tail)`` items of a sorted edge list that have ``relation`` (by bisection)."""
    i = bisect_left(edges, (relation, ""))
    while i < len(edges) and edges[i][0] == relation:
        yield edges[i]
        i += 1


def _check_path(path: object) -> list[str]:
    if isinstance(path, str) or not isinstance(path, Sequence):
        raise KGError(f"path must be a list of relation names, got {type(path).__name__} {path!r}")
    if not path:
        raise KGError("path must contain at least one relation")
    return [_require_str(r, f"relation #{i} of the path") for i, r in enumerate(path, start=1)]


class KGStore:
    """A persistent knowledge graph of ``head -relation-> tail`` facts.

    Create one with :meth:`build` (from a FamilyTool triple file), :meth:`from_triples` or
    :meth:`open`; close it with :meth:`close` or use it as a context manager. A read-write store holds
    an exclusive lock on its directory until closed; read-only stores share it.

    A store is safe to share between threads (calls are serialised).
    """

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

    # ------------------------------------------------------------------ opening and building

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
    ) -> tuple[KGStore, bool]:
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
                database = eng.database(str(db_file), read_only=read_only)
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
                for ddl in _SCHEMA:
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
    ) -> KGStore:
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
    ) -> KGStore:
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
            triples_file: FamilyTool KG file, one ``['head', 'relation', 'tail']`` per line.
            lock_timeout: seconds to wait for another store on this directory to close.
            engine: ``"kuzu"`` or ``"ladybug"``; default ``$EVALS_KG_ENGINE`` or ``"kuzu"``.
            cache: keep the adjacency in memory (see the module docs).
            copy_threshold: load with the engine's bulk ``COPY FROM`` (via a temporary CSV) when there
                are at least this many triples; below it, parameterised batched inserts.

        Raises:
            KGError: unreadable file; :class:`KGParseError` (a KGError) names the bad line;
                :class:`KGLockedError` when the directory stays locked.
        """
        triples = parse_triple_file(triples_file)
        return cls._build(
            db_dir,
            triples,
            source=str(Path(triples_file).resolve()),
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
        triples = parse_triple_file(triples_file)
        eng = load_engine(engine)
        if (Path(db_dir) / eng.db_filename).is_file():
            try:
                with cls.open(
                    db_dir, read_only=True, lock_timeout=lock_timeout, engine=engine, cache=False
                ) as s:
                    meta = s._read_meta()
            except KGLockedError:
                raise
            except KGError:
                meta = {}  # not a usable kg_store database: rebuild it below
            if meta.get("source_sha256") == triples_checksum(triples):
                return "unchanged"
        with cls._build(
            db_dir,
            triples,
            source=str(Path(triples_file).resolve()),
            lock_timeout=lock_timeout,
            engine=engine,
            cache=False,
            copy_threshold=10_000,
        ) as store:
            assert store.last_build_action is not None
            return store.last_build_action

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
    ) -> KGStore:
        """Like :meth:`build`, from an iterable of ``(head, relation, tail)`` sequences of strings."""
        return cls._build(
            db_dir,
            coerce_triples(triples),
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
        triples: list[Triple],
        *,
        source: str,
        lock_timeout: float,
        engine: str | None,
        cache: bool,
        copy_threshold: int,
    ) -> KGStore:
        distinct = sorted(set(triples))
        checksum = triples_checksum(distinct)
        store, existed = cls._open_dir(
            db_dir, read_only=False, create=True, lock_timeout=lock_timeout, engine=engine, cache=cache
        )
        try:
            with store._mutex:
                meta = store._read_meta()
                if meta.get("source_sha256") == checksum and meta.get("schema_version") == SCHEMA_VERSION:
                    store.last_build_action = "unchanged"
                else:
                    store._load(distinct, checksum=checksum, source=source, copy_threshold=copy_threshold)
                    store.last_build_action = "rebuilt" if existed else "created"
        except BaseException:
            store.close()
            raise
        return store

    def _load(self, triples: list[Triple], *, checksum: str, source: str, copy_threshold: int) -> None:
        """Replace the whole graph by ``triples`` (distinct, sorted) and record the source checksum.

        The checksum is removed first and written last, so an interrupted load is redone next build.
        """
        self._execute("MATCH (m:KGMeta) DELETE m")
        self._execute("DROP TABLE IF EXISTS Rel")
        self._execute("DROP TABLE IF EXISTS Entity")
        self._prepared.clear()
        for ddl in _SCHEMA[:2]:
            self._execute(ddl)
        entities = sorted({t.head for t in triples} | {t.tail for t in triples})
        if len(triples) >= copy_threshold:
            self._copy_load(entities, triples)
        else:
            with self._transaction():
                for i in range(0, len(entities), _INSERT_BATCH):
                    self._execute(
                        "UNWIND $names AS n CREATE (:Entity {name: n})",
                        {"names": entities[i : i + _INSERT_BATCH]},
                    )
                for i in range(0, len(triples), _INSERT_BATCH):
                    rows = [{"h": h, "r": r, "t": t} for h, r, t in triples[i : i + _INSERT_BATCH]]
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
            "triples_at_build": str(len(triples)),
            "source_sha256": checksum,
        }
        for key, value in meta.items():
            self._set_meta(key, value)
        self._reset_caches()

    def _copy_load(self, entities: list[str], triples: list[Triple]) -> None:
        """Bulk-load through CSV files and ``COPY FROM`` (much faster than inserts for big graphs)."""
        with tempfile.TemporaryDirectory(prefix="kg_store_load_") as tmp:
            if "'" in tmp or "\\" in tmp:
                raise KGError(f"temporary directory {tmp!r} has a quote or backslash; set TMPDIR elsewhere")
            ent_csv, rel_csv = Path(tmp, "entities.csv"), Path(tmp, "rels.csv")
            with ent_csv.open("w", encoding="utf-8", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(["name"])
                writer.writerows([e] for e in entities)
            with rel_csv.open("w", encoding="utf-8", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(["from", "to", "relation"])
                writer.writerows((h, t, r) for h, r, t in triples)
            # COPY takes no parameter for the file; these paths are our own temporary files.
            options = "(HEADER=true, PARALLEL=false, QUOTE='\"', ESCAPE='\"')"
            self._execute(f"COPY Entity FROM '{ent_csv}' {options}")
            self._execute(f"COPY Rel FROM '{rel_csv}' {options}")

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
            return result.get_all()
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
        if not _TABLES <= tables:
            raise KGError(
                f"{self.db_file} is not a kg_store database (tables {sorted(tables)}; "
                f"expected {sorted(_TABLES)}); rebuild it with KGStore.build(...)"
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
            # one row per head with its edges collected in the engine: ~2x faster than a row per edge
            rows = self._execute(
                "MATCH (a:Entity)-[r:Rel]->(b:Entity) RETURN a.name, collect([r.relation, b.name])"
            )
            self._out = {h: sorted((r, t) for r, t in edges) for h, edges in rows}
            self._in = None
        return self._out

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

    def _unknown_entity(self, name: str) -> KGError:
        matches = difflib.get_close_matches(name, self.entities(), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""
        return KGError(f"unknown entity {name!r}: it is not in the KG{hint}")

    # ------------------------------------------------------------------ traversal

    def _walk(self, start: str, hops: list[_Hop], limit: int | None) -> tuple[list[list[Triple]], bool]:
        """All walks from ``start`` whose i-th edge matches ``hops[i]``, sorted; and whether truncated.

        A depth-first search over sorted edge lists, so walks come out in lexicographic order and the
        search stops after ``limit + 1`` walks. Edges come from the in-memory adjacency or, without
        it, from one single-hop query per (entity, hop) visited.
        """
        if any(h is not None and not h for h in hops):
            return [], False
        if limit is not None and limit < 1:
            raise KGError(f"max_paths must be at least 1, got {limit}")
        if self._adjacency() is not None:
            edges = self._memory_edge_levels(hops)
        else:
            edges = self._db_edge_levels(start, hops)
        stop = None if limit is None else limit + 1
        paths: list[list[Triple]] = []
        acc: list[Triple] = []

        def step(node: str, depth: int) -> bool:  # False once enough walks were found
            if depth == len(hops):
                paths.append(list(acc))
                return stop is None or len(paths) < stop
            for r, t in edges(node, depth):
                acc.append(Triple(node, r, t))
                more = step(t, depth + 1)
                acc.pop()
                if not more:
                    return False
            return True

        step(start, 0)
        if limit is not None and len(paths) > limit:
            return paths[:limit], True
        return paths, False

    def _memory_edge_levels(self, hops: list[_Hop]) -> Callable[[str, int], Iterable[tuple[str, str]]]:
        """Lookup ``(entity, depth) -> sorted [(relation, tail)]`` allowed by ``hops[depth]``, from the cache."""
        out = self._out or {}

        def edges(node: str, depth: int) -> Iterable[tuple[str, str]]:
            hop = hops[depth]
            node_edges = out.get(node, [])
            if hop is None:
                return node_edges
            return [e for r in sorted(hop) for e in _edges_with(node_edges, r)]

        return edges

    def _db_edge_levels(self, start: str, hops: list[_Hop]) -> Callable[[str, int], list[tuple[str, str]]]:
        """Fetch from the database, level by level, the allowed out-edges of every entity a walk can
        reach; return a lookup ``(entity, depth) -> sorted [(relation, tail)]``.

        Multi-hop patterns are not sent as one Cypher query on purpose: both engines drop rows of
        3-hop patterns (LadybugDB 0.22.0 often, Kuzu 0.11.3 rarely; Kuzu also when one hop filters
        with ``=`` and another with ``IN``). Single-hop queries are correct in both and about as fast.
        """
        levels: list[dict[str, list[tuple[str, str]]]] = []
        frontier = [start]
        for hop in hops:
            level = self._out_edges(frontier, hop)
            levels.append(level)
            frontier = sorted({t for edges in level.values() for _, t in edges})
            if not frontier:
                break
        return lambda node, depth: levels[depth].get(node, []) if depth < len(levels) else []

    def _out_edges(self, nodes: list[str], hop: _Hop) -> dict[str, list[tuple[str, str]]]:
        """Sorted ``(relation, tail)`` out-edges allowed by ``hop`` of each of ``nodes``.

        A few nodes: one primary-key lookup each (fast on any graph size). Many: batched queries with
        ``name IN $names`` (a scan of the entity table, cheaper than many lookups on small graphs).
        """
        rel_filter = "" if hop is None else " WHERE r.relation IN $p"
        extra: dict[str, Any] = {} if hop is None else {"p": sorted(hop)}
        rows: list[list[Any]] = []
        if len(nodes) <= _PK_LOOKUP_MAX:
            query = f"MATCH (a:Entity {{name: $n}})-[r:Rel]->(b:Entity){rel_filter} RETURN a.name, r.relation, b.name"
            for node in nodes:
                rows += self._execute(query, {"n": node, **extra})
        else:
            cond = "a.name IN $names" + ("" if hop is None else " AND r.relation IN $p")
            query = f"MATCH (a:Entity)-[r:Rel]->(b:Entity) WHERE {cond} RETURN a.name, r.relation, b.name"
            for i in range(0, len(nodes), _INSERT_BATCH):
                rows += self._execute(query, {"names": nodes[i : i + _INSERT_BATCH], **extra})
        out: dict[str, list[tuple[str, str]]] = {}
        for h, r, t in sorted(rows):
            out.setdefault(h, []).append((r, t))
        return out

    # ------------------------------------------------------------------ public queries

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

    @_synchronised
    def build_info(self) -> dict[str, str]:
        """What the last build recorded: ``source``, ``source_sha256``, ``built_at``, ``engine``,
        ``engine_version``, ``triples_at_build``, ``schema_version``; and ``edited`` = ``"true"`` once
        facts were added or removed since."""
        return dict(sorted(self._read_meta().items()))

    @_synchronised
    def relations(self) -> list[str]:
        """Distinct relation names, sorted."""
        self._check_open()
        self._adjacency()
        return sorted(self._rel_counts())

    @_synchronised
    def entities(self) -> list[str]:
        """All entity names, sorted."""
        out = self._adjacency()
        if out is not None:
            return sorted(out.keys() | self._incoming().keys())
        return [row[0] for row in self._execute("MATCH (n:Entity) RETURN n.name ORDER BY n.name")]

    @_synchronised
    def has_entity(self, name: str) -> bool:
        """Whether ``name`` is an entity of the KG."""
        self._check_open()
        return isinstance(name, str) and self._entity_exists(name)

    @_synchronised
    def has_relation(self, name: str) -> bool:
        """Whether some fact uses relation ``name``."""
        self._check_open()
        self._adjacency()
        return isinstance(name, str) and self._rel_counts()[name] > 0

    @_synchronised
    def triples(self) -> list[Triple]:
        """All facts, sorted."""
        out = self._adjacency()
        if out is not None:
            return [Triple(h, r, t) for h in sorted(out) for r, t in out[h]]
        rows = self._execute("MATCH (a:Entity)-[r:Rel]->(b:Entity) RETURN a.name, r.relation, b.name")
        return sorted(Triple(*row) for row in rows)

    @_synchronised
    def neighbors(self, entity: str) -> dict[str, list[Triple]]:
        """The facts around ``entity``: ``"out"`` where it is the head, ``"in"`` where it is the tail (sorted).

        Raises:
            KGError: ``entity`` is not in the KG (the message suggests close names).
        """
        _require_str(entity, "entity")
        self._check_open()
        if not self._entity_exists(entity):
            raise self._unknown_entity(entity)
        out = self._adjacency()
        if out is not None:
            return {
                "out": [Triple(entity, r, t) for r, t in out.get(entity, ())],
                "in": [Triple(h, r, entity) for h, r in self._incoming().get(entity, ())],
            }
        outs = self._execute(
            "MATCH (a:Entity {name: $n})-[r:Rel]->(b:Entity) RETURN a.name, r.relation, b.name", {"n": entity}
        )
        ins = self._execute(
            "MATCH (a:Entity)-[r:Rel]->(b:Entity {name: $n}) RETURN a.name, r.relation, b.name", {"n": entity}
        )
        return {"out": sorted(Triple(*r) for r in outs), "in": sorted(Triple(*r) for r in ins)}

    @_synchronised
    def follow(self, start: str, path: Sequence[str], *, max_paths: int | None = None) -> list[list[Triple]]:
        """Exact relation-path extraction: every walk from ``start`` along the relations of ``path`` in order.

        Returns the paths (each a list of one triple per hop), sorted; ``[]`` if none (also when a
        relation does not exist). Walks may revisit entities (``['mother', 'son']`` leads back to start).

        Raises:
            KGError: ``start`` is not in the KG, or ``path`` is empty or not a list of strings.
        """
        _require_str(start, "start entity")
        rels = _check_path(path)
        self._check_open()
        paths, _ = self._walk(start, [(r,) for r in rels], max_paths)
        if not paths and not self._entity_exists(start):
            raise self._unknown_entity(start)
        return paths

    @_synchronised
    def search(
        self,
        start: str,
        path: Sequence[str],
        mode: str = "exact",
        top_k: int = 3,
        scorer: RelationScorer | None = None,
        *,
        max_paths: int | None = DEFAULT_MAX_PATHS,
    ) -> PathSearchResult:
        """KGETool path extraction ``KG.search(start, path)`` with the paper's handling of made-up relations.

        * ``"exact"``: :meth:`follow`; a relation that is not in the KG gives no paths.
        * ``"greedy"`` (Greedy Search): a relation that is not in the KG is replaced by *all* out-links
          of the entities reached so far; the rest of the path is then followed and walks that do not
          complete are dropped.
        * ``"retrieval"`` (Relation Retrieval): each relation that is not in the KG is replaced by the
          ``top_k`` most similar existing relations by ``scorer`` (default :attr:`scorer`, a
          :class:`LexicalScorer`); the Cartesian product of the candidates gives the relation paths,
          and the walks that exist in the KG are kept.

        When every relation exists, greedy and retrieval equal exact and ``mode`` reports ``"exact"``.
        An unknown start entity gives an empty result with ``start_found=False`` (no exception).
        At most ``max_paths`` paths are returned (``truncated`` says if more existed); ``None``: no limit.

        Raises:
            KGError: unknown mode, empty or malformed path, ``top_k`` < 1.
        """
        _require_str(start, "start entity")
        rels = _check_path(path)
        if mode not in SEARCH_MODES:
            raise KGError(f"unknown search mode {mode!r}; choose one of: {', '.join(SEARCH_MODES)}")
        self._check_open()
        self._adjacency()
        counts = self._rel_counts()
        missing = [r for r in dict.fromkeys(rels) if counts[r] <= 0]
        result = PathSearchResult(start=start, path=list(rels), mode=mode, missing_relations=missing)
        if not missing or mode == "exact":
            result.mode = "exact"
            hops: list[_Hop] = [(r,) for r in rels]
            if missing:
                hops = [()]  # an exact path through a relation that does not exist matches nothing
        elif mode == "greedy":
            hops = [None if r in missing else (r,) for r in rels]
        else:
            existing = sorted(counts)
            chosen = scorer if scorer is not None else self.scorer
            result.substitutions = {m: top_k_relations(chosen, m, existing, top_k) for m in missing}
            hops = [tuple(result.substitutions[r]) if r in missing else (r,) for r in rels]
        result.paths, result.truncated = self._walk(start, hops, max_paths)
        result.start_found = bool(result.paths) or self._entity_exists(start)
        return result

    def greedy_search(
        self, start: str, path: Sequence[str], *, max_paths: int | None = DEFAULT_MAX_PATHS
    ) -> PathSearchResult:
        """:meth:`search` with ``mode="greedy"``."""
        return self.search(start, path, mode="greedy", max_paths=max_paths)

    def retrieval_search(
        self,
        start: str,
        path: Sequence[str],
        top_k: int = 3,
        scorer: RelationScorer | None = None,
        *,
        max_paths: int | None = DEFAULT_MAX_PATHS,
    ) -> PathSearchResult:
        """:meth:`search` with ``mode="retrieval"``."""
        return self.search(start, path, mode="retrieval", top_k=top_k, scorer=scorer, max_paths=max_paths)

    @_synchronised
    def stats(self) -> KGStats:
        """Counts of facts, entities and relation types, and the out-degree distribution (from the database)."""
        ((n_triples, n_relations),) = self._execute(
            "MATCH ()-[r:Rel]->() RETURN count(*), count(DISTINCT r.relation)"
        )
        ((n_entities,),) = self._execute("MATCH (n:Entity) RETURN count(*)")
        rows = self._execute(
            "MATCH (n:Entity) OPTIONAL MATCH (n)-[r:Rel]->() WITH n, count(r) AS d RETURN d, count(*) ORDER BY d"
        )
        return KGStats(
            triples=int(n_triples),
            entities=int(n_entities),
            relation_types=int(n_relations),
            out_degree={int(d): int(c) for d, c in rows},
        )

    # ------------------------------------------------------------------ edits (the inductive setting)

    @_synchronised
    def add_fact(self, head: str, relation: str, tail: str) -> bool:
        """Add the fact ``head -relation-> tail``; new entities and relation types are allowed.

        The change is written to the database at once (it survives close and reopen) and is kept by a
        later :meth:`build` whose source file is unchanged (see :meth:`build`).

        Returns:
            True if the fact was new, False if it was already there.
        """
        h, r, t = (_require_str(v, n) for v, n in ((head, "head"), (relation, "relation"), (tail, "tail")))
        self._check_writable("add a fact")
        params = {"h": h, "r": r, "t": t}
        if self._execute(
            "MATCH (a:Entity {name: $h})-[e:Rel]->(b:Entity {name: $t}) WHERE e.relation = $r RETURN count(*)",
            params,
        )[0][0]:
            return False
        with self._transaction():
            self._execute(
                "MERGE (a:Entity {name: $h}) MERGE (b:Entity {name: $t}) CREATE (a)-[:Rel {relation: $r}]->(b)",
                params,
            )
            self._set_meta("edited", "true")
        if self._relation_counts is not None:
            self._relation_counts[r] += 1
        if self._out is not None:
            insort(self._out.setdefault(h, []), (r, t))
        if self._in is not None:
            insort(self._in.setdefault(t, []), (h, r))
        return True

    @_synchronised
    def remove_fact(self, head: str, relation: str, tail: str) -> bool:
        """Remove the fact ``head -relation-> tail``; entities left without any fact are removed too.

        Returns:
            True if the fact was there and was removed, False if it was not in the KG.
        """
        h, r, t = (_require_str(v, n) for v, n in ((head, "head"), (relation, "relation"), (tail, "tail")))
        self._check_writable("remove a fact")
        params = {"h": h, "r": r, "t": t}
        match = "MATCH (a:Entity {name: $h})-[e:Rel]->(b:Entity {name: $t}) WHERE e.relation = $r "
        if not self._execute(match + "RETURN count(*)", params)[0][0]:
            return False
        with self._transaction():
            self._execute(match + "DELETE e", params)
            for name in dict.fromkeys((h, t)):
                self._execute(
                    "MATCH (n:Entity {name: $n}) WHERE NOT EXISTS { MATCH (n)-[:Rel]-() } DELETE n",
                    {"n": name},
                )
            self._set_meta("edited", "true")
        if self._relation_counts is not None:
            self._relation_counts[r] -= 1
            if self._relation_counts[r] <= 0:
                del self._relation_counts[r]
        for index, key, item in ((self._out, h, (r, t)), (self._in, t, (h, r))):
            if index is not None:
                edges = index[key]
                edges.remove(item)
                if not edges:
                    del index[key]
        return True

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

    def __enter__(self) -> KGStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("read-only" if self._read_only else "read-write")
        return f"KGStore({str(self._dir)!r}, engine={self.engine!r}, {state})"
