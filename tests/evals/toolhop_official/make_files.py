"""Writes ``files/``: official ToolHop output files (our own records) for each rule and quirk of the
official scoring, and for each kind of difference the differential fuzzer found (issue 47).

    python tests/evals/toolhop_official/make_files.py
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "files"


def rec(i: object, answer: object, *contents: tuple[str, object], correct: object = 0, absent: bool = False) -> dict:
    msgs = [{"role": "user", "content": "question"}] + [{"role": r, "content": c} for r, c in contents]
    out = {"id": i, "question": "question", "answer": answer, "messages": msgs}
    if not absent:
        out["answer_correct"] = correct
    return out


def write(name: str, records: list[dict], endings: list[str] | None = None) -> None:
    endings = endings or ["\n"] * len(records)
    text = "".join(json.dumps(r, ensure_ascii=False) + e for r, e in zip(records, endings, strict=True))
    (OUT / name).write_text(text, encoding="utf-8", newline="")


def main() -> None:
    OUT.mkdir(exist_ok=True)
    rule = [
        rec(1, "100", ("assistant", "<answer>1</answer>")),  # rstrip('.0'): "100" -> "1", found in "<answer>1</answer>"
        rec(2, "Paris", ("tool", "PARIS"), ("assistant", "I think so"), correct=1),  # the tool message before it
        rec(3, "1000", ("assistant", "<answer>1,000</answer>"), correct=1),  # commas removed from the content only
        rec(4, "1,000", ("assistant", "<answer>1000</answer>"), correct=1),  # ... not from the answer: no match
        rec(5, "2.50", ("assistant", "2.5")),  # "2.5" both sides
        rec(6, "x", ("assistant", None)),  # an empty content: no decision
        rec(7, "x", ("assistant", "y"), ("user", "x")),  # the last message is not the assistant's: no decision
        rec(8, "John Smith", ("assistant", "<answer>john smith</answer>"), correct=True),
        rec(9, "7", ("tool", "70"), ("assistant", "no"), correct=1),  # "70".rstrip('.0') is "7"
        rec(10, "abc", ("assistant", "xyz"), ("tool", "abc"), ("assistant", "other"), correct=0),
    ]
    write("answer_rule.jsonl", rule)
    write("repeated_ids.jsonl", rule[:4] + [rec(1, "100", ("assistant", "1"), correct=1), rule[1]])
    write("missing_answer_correct.jsonl", [rec(1, "5", ("assistant", "5"), absent=True)] + rule[1:5])
    write("user_before_answer.jsonl", [rec(1, "5", ("assistant", "6"), correct=0)] + rule[1:4])  # messages[-2]: the user
    only = {"id": 11, "question": "q", "answer": "5", "messages": [{"role": "assistant", "content": "4"}]}
    write("rule_index_error.jsonl", [only] + rule[1:3])  # messages[-2] does not exist: IndexError
    write("unicode_line_breaks.jsonl", [rec(k, "a\u2028b", ("assistant", f"a\u2028b\x1c\x85\x0c{k}"), correct=1)
                                         for k in range(6)], ["\n", "\r\n", "\r", "\n", "\n", "\n"])
    write("form_feed_line_end.jsonl", rule[:3], ["\n", "\x0c\n", "\n"])
    write("blank_line.jsonl", rule[:3], ["\n", "\n\n", "\n"])
    write("infinity_recorded.jsonl", rule[:3] + [rec(12, "5", ("assistant", "5"), correct=float("inf"))])
    write("huge_recorded.jsonl", rule[:3] + [rec(12, "5", ("assistant", "5"), correct=2**60 + 1)])
    write("more_than_995.jsonl", [rec(k, "5", ("assistant", "5" if k % 3 else "6"), correct=int(k % 3 != 0))
                                  for k in range(1000)])


if __name__ == "__main__":
    main()
