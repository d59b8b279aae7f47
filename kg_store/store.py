"""The family knowledge graph in an embedded graph database (Kuzu, or LadybugDB): :class:`KGStore`.

``KGStore`` is put together from one part per responsibility, each in its own module:

* :mod:`kg_store._base`: the connection, schema and metadata, the in-memory adjacency cache, the
  properties and the lifetime (``close``, context manager); the schema is described there.
* :mod:`kg_store._building`: engine selection, the directory lock, ``open``, ``build``,
  ``ensure_built``, ``from_triples`` (idempotent by checksum; bulk ``COPY FROM`` for big graphs).
* :mod:`kg_store._queries`: relations, entities, facts, neighbours, build info, statistics.
* :mod:`kg_store._search`: ``follow`` and the KGETool ``search`` (exact, Greedy Search, Relation
  Retrieval) over the cache or hop by hop over the database.
* :mod:`kg_store._edits`: ``add_fact`` and ``remove_fact`` (the inductive setting).
"""

from __future__ import annotations

from ._base import SCHEMA_VERSION, BuildAction
from ._building import BuildingMixin
from ._edits import EditsMixin
from ._queries import QueriesMixin
from ._search import DEFAULT_MAX_PATHS, SEARCH_MODES, SearchMixin

__all__ = ["DEFAULT_MAX_PATHS", "SCHEMA_VERSION", "SEARCH_MODES", "BuildAction", "KGStore"]


class KGStore(BuildingMixin, QueriesMixin, SearchMixin, EditsMixin):
    """A persistent knowledge graph of ``head -relation-> tail`` facts.

    Create one with :meth:`build` (from a triple file), :meth:`from_triples` or
    :meth:`open`; close it with :meth:`close` or use it as a context manager. A read-write store holds
    an exclusive lock on its directory until closed; read-only stores share it.

    A store is safe to share between threads (calls are serialised).
    """
