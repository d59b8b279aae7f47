"""kg_store: the family knowledge graph in an embedded graph database (Kuzu or LadybugDB).

Build it from a triple file, list relations and entities, follow relation paths, run the KGETool
path extraction with Greedy Search or Relation Retrieval for relations that do not exist, add and
remove facts (the inductive setting) and get statistics. Knows nothing of MCP or benchmarks.
``KGStore`` is assembled in :mod:`kg_store.store` from one private module per responsibility.

>>> with KGStore.build("/tmp/kg", "familykg-b.txt") as kg:             # doctest: +SKIP
...     kg.follow("Bob", ["mother", "prefer_dinnertime"])[0][-1].tail
'dinnertime_0002'
"""

from .digest import RACY_NS, file_sha256
from .engine import ENGINE_ENV_VAR, ENGINES, Engine, engine_name, load_engine
from .errors import KGError, KGLockedError, KGParseError
from .results import KGStats, PathSearchResult
from .scorers import DEFAULT_ALIASES, EmbeddingScorer, LexicalScorer, RelationScorer, top_k_relations
from .store import DEFAULT_MAX_PATHS, SCHEMA_VERSION, SEARCH_MODES, BuildAction, KGStore
from .triples import (
    CanonicalTriples,
    Triple,
    canonical_triples,
    coerce_triples,
    parse_triple_file,
    read_triple_file,
    triples_checksum,
)

__all__ = [
    "CanonicalTriples",
    "DEFAULT_ALIASES",
    "DEFAULT_MAX_PATHS",
    "ENGINES",
    "ENGINE_ENV_VAR",
    "BuildAction",
    "EmbeddingScorer",
    "Engine",
    "KGError",
    "KGLockedError",
    "KGParseError",
    "KGStats",
    "KGStore",
    "LexicalScorer",
    "PathSearchResult",
    "RACY_NS",
    "RelationScorer",
    "SCHEMA_VERSION",
    "SEARCH_MODES",
    "Triple",
    "canonical_triples",
    "coerce_triples",
    "engine_name",
    "file_sha256",
    "load_engine",
    "parse_triple_file",
    "read_triple_file",
    "top_k_relations",
    "triples_checksum",
]
