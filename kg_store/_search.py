"""Relation-path search over a KGStore: exact ``follow``, and the KGETool ``search`` with Greedy Search
and Relation Retrieval for relations that do not exist.

Without the in-memory cache, a relation path is followed hop by hop with one single-hop query per
entity reached (see ``SearchMixin._db_edge_levels`` for why not one multi-hop Cypher pattern).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._base import BATCH, StoreBase, synchronised
from .errors import KGError
from .results import PathSearchResult
from .scorers import RelationScorer, top_k_relations
from .triples import Triple, _require_str

SEARCH_MODES = ("exact", "greedy", "retrieval")
DEFAULT_MAX_PATHS = 1000
_PK_LOOKUP_MAX = 4  # frontier size up to which entities are looked up one by one (see _out_edges)

# A hop of a traversal: None = any relation (greedy search), else the allowed relation names.
_Hop = tuple[str, ...] | None


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


class SearchMixin(StoreBase):
    """:meth:`follow`, :meth:`search` and its two shorthands of :class:`~kg_store.KGStore`."""

    @synchronised
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

    @synchronised
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
            for i in range(0, len(nodes), BATCH):
                rows += self._execute(query, {"names": nodes[i : i + BATCH], **extra})
        out: dict[str, list[tuple[str, str]]] = {}
        for h, r, t in sorted(rows):
            out.setdefault(h, []).append((r, t))
        return out
