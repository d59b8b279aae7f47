"""Adding and removing facts of a KGStore (the inductive setting); the in-memory caches follow."""

from __future__ import annotations

from bisect import insort

from ._base import StoreBase, synchronised
from .triples import _require_str


class EditsMixin(StoreBase):
    """:meth:`add_fact` and :meth:`remove_fact` of :class:`~kg_store.KGStore`."""

    @synchronised
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
        self._drop_adjacency_file()
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

    @synchronised
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
        self._drop_adjacency_file()
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
