"""Result records: :class:`PathSearchResult` and :class:`KGStats`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .triples import Triple

__all__ = ["PathSearchResult", "KGStats"]


@dataclass
class PathSearchResult:
    """The outcome of one KGETool path extraction (``KG.search(start, path)``).

    Attributes:
        start: the start entity asked for.
        path: the relation path asked for.
        mode: the mode actually used: ``"exact"`` (also when greedy/retrieval was asked for but every
            relation exists), ``"greedy"`` or ``"retrieval"``.
        paths: the extracted paths, each a list of triples (one per hop), sorted.
        missing_relations: requested relations that are not in the KG (the paper's fake or
            "hallucinated" relations), distinct, in path order.
        substitutions: retrieval only: each missing relation -> the existing relations tried in its place,
            best first.
        start_found: whether the start entity is in the KG (if not, ``paths`` is empty).
        truncated: more paths existed than the ``max_paths`` limit; ``paths`` holds the first ones.
    """

    start: str
    path: list[str]
    mode: str
    paths: list[list[Triple]] = field(default_factory=list)
    missing_relations: list[str] = field(default_factory=list)
    substitutions: dict[str, list[str]] = field(default_factory=dict)
    start_found: bool = True
    truncated: bool = False

    def triples(self) -> list[Triple]:
        """The distinct triples of all paths (the extracted sub-KG), in first-seen order."""
        return list(dict.fromkeys(t for p in self.paths for t in p))

    def end_entities(self) -> list[str]:
        """The distinct last entities of the paths, in first-seen order."""
        return list(dict.fromkeys(p[-1].tail for p in self.paths if p))

    @property
    def hallucinated(self) -> bool:
        """Whether the requested path used any relation that is not in the KG."""
        return bool(self.missing_relations)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict; triples become ``[head, relation, tail]`` lists."""
        return {
            "start": self.start,
            "path": list(self.path),
            "mode": self.mode,
            "start_found": self.start_found,
            "missing_relations": list(self.missing_relations),
            "substitutions": {k: list(v) for k, v in self.substitutions.items()},
            "paths": [[list(t) for t in p] for p in self.paths],
            "triples": [list(t) for t in self.triples()],
            "truncated": self.truncated,
        }


@dataclass(frozen=True)
class KGStats:
    """Size of the graph.

    Attributes:
        triples: number of distinct facts.
        entities: number of entities (every entity has at least one fact).
        relation_types: number of distinct relation names.
        out_degree: out-degree -> number of entities with that out-degree (0 counts entities that only
            appear as tails).
    """

    triples: int
    entities: int
    relation_types: int
    out_degree: dict[int, int]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (``out_degree`` keys become strings, in ascending degree order)."""
        return {
            "triples": self.triples,
            "entities": self.entities,
            "relation_types": self.relation_types,
            "out_degree": {str(k): v for k, v in sorted(self.out_degree.items())},
        }
