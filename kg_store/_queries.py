"""The read queries of a KGStore: relations, entities, facts, neighbours, build info and statistics."""

from __future__ import annotations

from ._base import StoreBase, synchronised
from .results import KGStats
from .triples import Triple, _require_str


class QueriesMixin(StoreBase):
    """The read queries of :class:`~kg_store.KGStore` (path search is in :mod:`kg_store._search`)."""

    @synchronised
    def build_info(self) -> dict[str, str]:
        """What the last build recorded: ``source``, ``source_sha256``, ``built_at``, ``engine``,
        ``engine_version``, ``triples_at_build``, ``schema_version``; and ``edited`` = ``"true"`` once
        facts were added or removed since."""
        return dict(sorted(self._read_meta().items()))

    @synchronised
    def relations(self) -> list[str]:
        """Distinct relation names, sorted."""
        self._check_open()
        self._adjacency()
        return sorted(self._rel_counts())

    @synchronised
    def entities(self) -> list[str]:
        """All entity names, sorted."""
        return self._entity_names()

    @synchronised
    def has_entity(self, name: str) -> bool:
        """Whether ``name`` is an entity of the KG."""
        self._check_open()
        return isinstance(name, str) and self._entity_exists(name)

    @synchronised
    def has_relation(self, name: str) -> bool:
        """Whether some fact uses relation ``name``."""
        self._check_open()
        self._adjacency()
        return isinstance(name, str) and self._rel_counts()[name] > 0

    @synchronised
    def triples(self) -> list[Triple]:
        """All facts, sorted."""
        out = self._adjacency()
        if out is not None:
            return [Triple(h, r, t) for h in sorted(out) for r, t in out[h]]
        rows = self._execute("MATCH (a:Entity)-[r:Rel]->(b:Entity) RETURN a.name, r.relation, b.name")
        return sorted(Triple(*row) for row in rows)

    @synchronised
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

    @synchronised
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
