"""kg_store: the FamilyTool family knowledge graph in an embedded graph database (Kuzu or LadybugDB).

Build it from a triple file, list relations and entities, follow relation paths, run the KGETool
path extraction with Greedy Search or Relation Retrieval for relations that do not exist, add and
remove facts (the inductive setting) and get statistics. Knows nothing of MCP or benchmarks.

>>> with KGStore.build("/tmp/kg", "familykg-b.txt") as kg:             # doctest: +SKIP
...     kg.follow("Bob", ["mother", "prefer_dinnertime"])[0][-1].tail
'dinnertime_0002'
"""

from .engine import ENGINE_ENV_VAR, ENGINES, engine_name
from .errors import KGError, KGLockedError, KGParseError
from .results import KGStats, PathSearchResult
from .scorers import DEFAULT_ALIASES, EmbeddingScorer, LexicalScorer, RelationScorer, top_k_relations
from .store import SEARCH_MODES, KGStore
from .triples import Triple, parse_triple_file, triples_checksum

__all__ = [
    "DEFAULT_ALIASES",
    "ENGINES",
    "ENGINE_ENV_VAR",
    "EmbeddingScorer",
    "KGError",
    "KGLockedError",
    "KGParseError",
    "KGStats",
    "KGStore",
    "LexicalScorer",
    "PathSearchResult",
    "RelationScorer",
    "SEARCH_MODES",
    "Triple",
    "engine_name",
    "parse_triple_file",
    "top_k_relations",
    "triples_checksum",
]
