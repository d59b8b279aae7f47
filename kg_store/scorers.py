"""Relation scorers for relation retrieval: rank the KG's relations by similarity to a made-up one.

The paper (KGETool, "Relation Retrieval") embeds relations with jina-embeddings-v3 and takes the top-k
by cosine similarity. :class:`EmbeddingScorer` does that with any embedding function or a
sentence-transformers model; :class:`LexicalScorer` is the offline default with no dependencies.
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .errors import KGError

__all__ = ["RelationScorer", "LexicalScorer", "EmbeddingScorer", "DEFAULT_ALIASES", "top_k_relations"]


@runtime_checkable
class RelationScorer(Protocol):
    """Scores how well each candidate relation matches a query relation (higher is better)."""

    def score(self, query: str, candidates: list[str]) -> list[float]:
        """Return one score per candidate, in candidate order."""
        ...


def top_k_relations(scorer: RelationScorer, query: str, candidates: Sequence[str], k: int) -> list[str]:
    """The ``k`` best candidates for ``query``, best first; ties are broken by name for determinism.

    Raises:
        KGError: ``k`` < 1, or the scorer returned the wrong number of scores.
    """
    if k < 1:
        raise KGError(f"top_k must be at least 1, got {k}")
    cands = list(candidates)
    scores = list(scorer.score(query, cands))
    if len(scores) != len(cands):
        raise KGError(
            f"relation scorer {type(scorer).__name__} returned {len(scores)} scores for {len(cands)} candidates"
        )
    ranked = sorted(zip(scores, cands, strict=True), key=lambda sc: (-float(sc[0]), sc[1]))
    return [c for _, c in ranked[:k]]


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^0-9a-zA-Z]+")

# Everyday words for family relations and the KG's words for them. Used by LexicalScorer to add
# query variants; the original spelling is always scored too.
DEFAULT_ALIASES: dict[str, tuple[str, ...]] = {
    "mom": ("mother",),
    "mum": ("mother",),
    "mommy": ("mother",),
    "mummy": ("mother",),
    "mama": ("mother",),
    "ma": ("mother",),
    "dad": ("father",),
    "daddy": ("father",),
    "papa": ("father",),
    "pa": ("father",),
    "parent": ("mother", "father"),
    "child": ("son", "daughter"),
    "kid": ("son", "daughter"),
    "boy": ("son",),
    "girl": ("daughter",),
    "spouse": ("wife", "husband"),
    "partner": ("wife", "husband"),
    "sibling": ("brother", "sister"),
    "favorite": ("favourite", "prefer"),
    "favourite": ("prefer",),
    "preferred": ("prefer",),
    "preference": ("prefer",),
    "likes": ("prefer",),
    "like": ("prefer",),
}


def _tokens(text: str) -> list[str]:
    """Lower-case word tokens of a relation name: split on ``_``/non-alphanumerics and camelCase."""
    return [t for t in _SPLIT.split(_CAMEL.sub("_", text).lower()) if t]


def _features(tokens: Sequence[str], n: int) -> Counter[str]:
    """Character n-grams of each token with boundary marks, plus whole-token features."""
    feats: Counter[str] = Counter()
    for tok in tokens:
        padded = f"<{tok}>"
        if len(padded) <= n:
            feats[padded] += 1
        else:
            for i in range(len(padded) - n + 1):
                feats[padded[i : i + n]] += 1
        feats["w:" + tok] += 1
    # n-grams across word joins, so "dinner_time" ~ "dinnertime" and "hair_stylist" ~ "hairstylist"
    if len(tokens) > 1:
        joined = "".join(tokens)
        for i in range(len(joined) - n + 1):
            feats["j:" + joined[i : i + n]] += 1
    return feats


class LexicalScorer:
    """Offline relation similarity from spelling: TF-IDF weighted character n-grams plus string ratio.

    Relation names are split into words on ``_`` and camelCase; each word contributes its character
    n-grams (with word-boundary marks) and itself as a feature. N-grams are weighted by inverse document
    frequency over the candidate set, so a prefix shared by most relations (``prefer_``) counts little
    and the distinctive part (``dinnertime``) decides. The score is
    ``0.8 * tfidf_cosine + 0.2 * difflib_ratio``; when ``aliases`` map a query word to KG words
    (``mom`` -> ``mother``), every variant is scored and the best counts.

    Examples: ``mom`` ranks ``mother`` first; ``preferred_dinner_time`` ranks ``prefer_dinnertime`` first.
    Synonyms with no spelling in common (``spouse``/``wife``) need an alias or :class:`EmbeddingScorer`.
    """

    def __init__(
        self,
        *,
        ngram: int = 3,
        aliases: Mapping[str, Sequence[str]] | None = None,
        max_variants: int = 16,
    ) -> None:
        """Args:
        ngram: character n-gram length (>= 2).
        aliases: query word -> KG words; ``None`` uses :data:`DEFAULT_ALIASES`, ``{}`` turns them off.
        max_variants: cap on the number of alias variants of one query.
        """
        if ngram < 2:
            raise KGError(f"ngram must be at least 2, got {ngram}")
        self.ngram = ngram
        self.aliases = {
            k.lower(): tuple(v) for k, v in (DEFAULT_ALIASES if aliases is None else aliases).items()
        }
        self.max_variants = max(1, max_variants)
        self._prepared: dict[tuple[str, ...], _Prepared] = {}

    def _variants(self, query: str) -> list[list[str]]:
        choices = [[tok, *self.aliases.get(tok, ())] for tok in _tokens(query)]
        return [list(v) for v in itertools.islice(itertools.product(*choices), self.max_variants)]

    def _prepare(self, candidates: tuple[str, ...]) -> _Prepared:
        """Candidate vectors and IDF, computed once per candidate list (the KG's relations rarely change)."""
        prepared = self._prepared.get(candidates)
        if prepared is None:
            cand_tokens = [_tokens(c) for c in candidates]
            cand_feats = [_features(t, self.ngram) for t in cand_tokens]
            df: Counter[str] = Counter()
            for feats in cand_feats:
                df.update(feats.keys())
            n_docs = len(candidates) + 1
            idf = {g: math.log(n_docs / (c + 1)) + 1.0 for g, c in df.items()}
            default_idf = math.log(n_docs) + 1.0
            vecs = [{g: c * idf[g] for g, c in f.items()} for f in cand_feats]
            norms = [math.sqrt(sum(x * x for x in v.values())) or 1.0 for v in vecs]
            prepared = _Prepared(idf, default_idf, vecs, norms, [" ".join(t) for t in cand_tokens])
            if len(self._prepared) >= 8:
                self._prepared.pop(next(iter(self._prepared)))
            self._prepared[candidates] = prepared
        return prepared

    def score(self, query: str, candidates: list[str]) -> list[float]:
        """Similarity of ``query`` to each candidate, in [0, 1]."""
        if not candidates:
            return []
        prep = self._prepare(tuple(candidates))
        best = [0.0] * len(candidates)
        matcher = difflib.SequenceMatcher(autojunk=False)
        for variant in self._variants(query) or [[]]:
            qvec = {
                g: c * prep.idf.get(g, prep.default_idf) for g, c in _features(variant, self.ngram).items()
            }
            qnorm = math.sqrt(sum(x * x for x in qvec.values())) or 1.0
            matcher.set_seq2(" ".join(variant))  # difflib indexes seq2 once; candidates go in seq1
            for i, cvec in enumerate(prep.vectors):
                dot = sum(w * cvec[g] for g, w in qvec.items() if g in cvec)
                matcher.set_seq1(prep.joined[i])
                s = 0.8 * dot / (qnorm * prep.norms[i]) + 0.2 * matcher.ratio()
                if s > best[i]:
                    best[i] = s
        return best


@dataclass
class _Prepared:
    idf: dict[str, float]
    default_idf: float
    vectors: list[dict[str, float]]
    norms: list[float]
    joined: list[str]


EmbedFn = Callable[[list[str]], Sequence[Sequence[float]]]


class EmbeddingScorer:
    """Cosine similarity of embeddings, as the paper's retriever (jina-embeddings-v3) does.

    ``model`` is either any callable ``list[str] -> list[vector]`` or the name of a
    sentence-transformers model, loaded on first use (``pip install sentence-transformers``).
    Relation names are embedded with ``_`` replaced by spaces when ``humanize`` is true. Embeddings
    are cached per text, so the KG's relations are embedded once.
    """

    def __init__(self, model: str | EmbedFn, *, humanize: bool = True, **model_kwargs: Any) -> None:
        """Args:
        model: an embedding callable, or a sentence-transformers model name or path.
        humanize: embed ``prefer_dinnertime`` as ``prefer dinnertime``.
        model_kwargs: passed to ``SentenceTransformer(...)`` when ``model`` is a name.
        """
        if not (isinstance(model, str) or callable(model)):
            raise KGError(f"EmbeddingScorer needs a model name or a callable, got {type(model).__name__}")
        self.model = model
        self.humanize = humanize
        self._model_kwargs = model_kwargs
        self._embed_fn: EmbedFn | None = None if isinstance(model, str) else model
        self._cache: dict[str, tuple[float, ...]] = {}

    def _load(self) -> EmbedFn:
        if self._embed_fn is None:
            name = str(self.model)
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise KGError(
                    f"EmbeddingScorer({name!r}) needs sentence-transformers, which is not installed "
                    "(pip install sentence-transformers); or pass an embedding callable instead"
                ) from exc
            st_model = SentenceTransformer(name, **self._model_kwargs)

            def embed(texts: list[str]) -> Sequence[Sequence[float]]:
                vectors: list[list[float]] = st_model.encode(texts, normalize_embeddings=True).tolist()
                return vectors

            self._embed_fn = embed
        return self._embed_fn

    def _text(self, relation: str) -> str:
        return relation.replace("_", " ") if self.humanize else relation

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Embeddings of ``texts`` (relation names), computing only those not cached yet."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            vectors = list(self._load()([self._text(t) for t in todo]))
            if len(vectors) != len(todo):
                raise KGError(f"embedding function returned {len(vectors)} vectors for {len(todo)} texts")
            for text, vec in zip(todo, vectors, strict=True):
                self._cache[text] = tuple(float(x) for x in vec)
        return [self._cache[t] for t in texts]

    def score(self, query: str, candidates: list[str]) -> list[float]:
        """Cosine similarity of ``query``'s embedding with each candidate's (0 for a zero vector)."""
        if not candidates:
            return []
        qvec, *cvecs = self.embed([query, *candidates])
        qn = math.sqrt(sum(x * x for x in qvec))
        out: list[float] = []
        for cvec in cvecs:
            if len(cvec) != len(qvec):
                raise KGError(
                    f"embedding sizes differ: {len(qvec)} for the query, {len(cvec)} for a candidate"
                )
            cn = math.sqrt(sum(x * x for x in cvec))
            out.append(sum(a * b for a, b in zip(qvec, cvec, strict=True)) / (qn * cn) if qn and cn else 0.0)
        return out
