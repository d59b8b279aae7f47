"""ROUGE-L F as NesTools' official scorer gets it: ``rouge`` 1.0.1's summary-level ROUGE-L.

The official code (``evaluation/utils.py``, ``check_score``) scores a predicted string argument
against the gold one with ``Rouge().get_scores(pred.lower(), gold.lower())[0]["rouge-l"]["f"]``
from the PyPI package ``rouge==1.0.1``. That measure is not the textbook one, and the numbers
depend on its details, so this module computes the same quantity (our own code, written from the
package's documented behaviour and checked against it, see ``tests/evals/benchmarks/nestools``):

* a text is split into sentences at every ``"."``; empty pieces are dropped and each piece's
  whitespace is collapsed to single spaces (a piece of blanks becomes the empty sentence ``""``);
  a sentence's words are ``sentence.split(" ")``;
* ``m`` and ``n`` are the numbers of *distinct* words of the reference and of the candidate;
* for every (reference sentence, candidate sentence) pair, one longest common subsequence is
  reconstructed from the standard dynamic-programming table, walking back from the end: on equal
  words take both, else step back in the reference when that cell is strictly larger, else in the
  candidate. The union of the words of all these subsequences is a *set*; its size is ``llcs``;
* ``r = llcs / m``, ``p = llcs / n``, ``f = 2 * ((p * r) / (p + r + 1e-8))``.

A text with no sentence (``""``, ``"..."``) raises :class:`ValueError`, as the package does (the
official scorer then scores the argument 0). One difference is deliberate: the package recurses
once per step of the walk back and so raises ``RecursionError`` on texts of about a thousand
words; this walk is iterative.
"""

from __future__ import annotations

__all__ = ["PACKAGE_WALK_LIMIT", "package_walk", "rouge_l_f"]

#: the longest walk back (in recursive calls, the nesting of the argument in lists/dicts added) that
#: ``rouge`` 1.0.1 finishes under Python's default recursion limit of 1,000 when eval.py calls it; set
#: low on purpose (the frames below the walk in eval.py are about 15), so that every argument the
#: package would fail on is found (a few just under the limit are reported too)
PACKAGE_WALK_LIMIT = 950


def _sentences(text: str) -> list[str]:
    return [" ".join(piece.split()) for piece in text.split(".") if len(piece) > 0]


def _words(sentences: list[str]) -> list[str]:
    return [w for s in sentences for w in s.split(" ")]


def _lcs_words(ref: list[str], cand: list[str]) -> set[str]:
    """The reference words of one LCS of ``ref`` and ``cand`` (the walk described above)."""
    rows, cols = len(ref), len(cand)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(1, rows + 1):
        row, prev = table[i], table[i - 1]
        for j in range(1, cols + 1):
            row[j] = prev[j - 1] + 1 if ref[i - 1] == cand[j - 1] else max(prev[j], row[j - 1])
    out: set[str] = set()
    i, j = rows, cols
    while i > 0 and j > 0:
        if ref[i - 1] == cand[j - 1]:
            out.add(ref[i - 1])
            i, j = i - 1, j - 1
        elif table[i - 1][j] > table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return out


def _walk_steps(ref: list[str], cand: list[str]) -> int:
    """The recursive calls of the package's walk back for one sentence pair (steps to an edge, plus one)."""
    rows, cols = len(ref), len(cand)
    if rows * cols > 4_000_000:  # too big to tabulate here: the walk is at least max(rows, cols) steps
        return max(rows, cols) + 1
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(1, rows + 1):
        row, prev = table[i], table[i - 1]
        for j in range(1, cols + 1):
            row[j] = prev[j - 1] + 1 if ref[i - 1] == cand[j - 1] else max(prev[j], row[j - 1])
    i, j, steps = rows, cols, 1
    while i > 0 and j > 0:
        if ref[i - 1] == cand[j - 1]:
            i, j = i - 1, j - 1
        elif table[i - 1][j] > table[i][j - 1]:
            i -= 1
        else:
            j -= 1
        steps += 1
    return steps


def package_walk(candidate: str, reference: str) -> int:
    """The deepest recursion of ``rouge`` 1.0.1's walk back over the texts' sentence pairs (0 when it
    raises before walking): above about :data:`PACKAGE_WALK_LIMIT` the package raises
    ``RecursionError`` and eval.py scores the argument 0, where :func:`rouge_l_f` scores it."""
    cand_s, ref_s = _sentences(candidate), _sentences(reference)
    if not cand_s or not ref_s:
        return 0
    longest = max(len(r.split(" ")) for r in ref_s) + max(len(c.split(" ")) for c in cand_s)
    if longest < PACKAGE_WALK_LIMIT // 2:  # no walk can be that long: skip the tables
        return longest
    return max(_walk_steps(r.split(" "), c.split(" ")) for r in ref_s for c in cand_s)


def rouge_l_f(candidate: str, reference: str) -> float:
    """The ROUGE-L F of ``candidate`` (the prediction) against ``reference`` (the gold value)."""
    cand_s, ref_s = _sentences(candidate), _sentences(reference)
    if not cand_s or not ref_s:
        raise ValueError("Collections must contain at least 1 sentence.")
    m = len(set(_words(ref_s)))
    n = len(set(_words(cand_s)))
    union: set[str] = set()
    for r in ref_s:
        ref_words = r.split(" ")
        for c in cand_s:
            union |= _lcs_words(ref_words, c.split(" "))
    llcs = len(union)
    r_lcs = llcs / m
    p_lcs = llcs / n
    return 2.0 * ((p_lcs * r_lcs) / (p_lcs + r_lcs + 1e-8))
