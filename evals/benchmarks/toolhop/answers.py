"""ToolHop's answers: the normalisation both sides go through, and whether a final answer is right."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["answer_correct", "final_answer_part", "normalize_answer"]

_ARTICLES = {"a", "an", "the"}
_MARKER = re.compile(r"final answer\s*[:：]", re.IGNORECASE)
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


def _canonical_number(token: str) -> str:
    if _NUMBER.match(token):
        if "." in token:
            token = token.rstrip("0").rstrip(".")
        return token.lstrip("0") or "0" if not token.startswith("-") else "-" + (token[1:].lstrip("0") or "0")
    return token


def normalize_answer(text: str) -> list[str]:
    """Answer tokens: Unicode NFKD without accents, case-folded; thousands separators dropped
    (``1,234`` -> ``1234``); every other punctuation mark is a separator, except a decimal point
    between digits; numbers canonical (``015``, ``15.0`` -> ``15``); articles (a, an, the) dropped."""
    text = unicodedata.normalize("NFKD", str(text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", text)
    text = re.sub(r"[^\w.]+|_", " ", text)
    return [_canonical_number(t) for t in text.split() if t not in _ARTICLES]


def final_answer_part(prediction: str) -> str:
    """The text after the last ``Final answer:`` marker, else the whole prediction."""
    parts = _MARKER.split(prediction or "")
    return parts[-1] if len(parts) > 1 else (prediction or "")


def answer_correct(prediction: str | None, gold: str) -> bool:
    """Is the final answer right? Both sides are tokenised by :func:`normalize_answer`; the answer
    is right when the gold tokens appear as a contiguous sequence in the prediction's tokens (after
    its last ``Final answer:`` marker when there is one), or are equal. An empty gold or
    prediction is never right."""
    if not prediction:
        return False
    want = normalize_answer(gold)
    got = normalize_answer(final_answer_part(prediction))
    if not want or not got:
        return False
    n = len(want)
    return any(got[i : i + n] == want for i in range(len(got) - n + 1))
