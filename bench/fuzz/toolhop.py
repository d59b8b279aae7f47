"""ToolHop: official output files (what `code/evaluation_closed.py` writes) against the official scripts.

The official code: `code/evaluation_closed.py` of the Hugging Face dataset bytedance-research/ToolHop,
as copied on GitHub in MananDesai54/llm-benchmarking at 61da0692c678e73f0c334f6399c3e9415645e729 (the
only copy the `fetch` tool can reach; see docs/fidelity.md), run unchanged by the system Python with
the three imports its scoring never uses stubbed (tqdm as the identity, func_timeout, requests):

* `Result`: its `main()` with `--output_file CASE` and an empty `--input_file` (no sample left to run),
  so it only reads the file back and prints `Result:`;
* the answer rule: its `sample_process` on every line (with `sample_process_direct` made the identity:
  the conversation is the file's), `answer_correct` removed first; the decisions added and divided as
  `main` divides (`round(100 * total / 995, 2)`), or the exception it raised.

Ours: `evals score FILE --format toolhop-official --benchmark toolhop` (`official_result`,
`official_answer_rule`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from .checkout import prepare_official
from .official_run import driver_outcome
from .ours import evals_score
from .outcome import Outcome

NAME = "toolhop"
REPO = "MananDesai54/llm-benchmarking"
COMMIT = "61da0692c678e73f0c334f6399c3e9415645e729"

DRIVER = r'''
import io, json, sys, types, contextlib
for name in ("tqdm", "func_timeout", "requests"):
    mod = types.ModuleType(name)
    mod.tqdm = lambda it, **kw: it
    mod.func_set_timeout = lambda t: (lambda f: f)
    sys.modules[name] = mod
sys.path.insert(0, sys.argv[1])
import evaluation_closed as ev
case, empty = sys.argv[2], sys.argv[3]
out = {}
buf = io.StringIO()
sys.argv = ["evaluation_closed.py", "--output_file", case, "--input_file", empty, "--scenario", "Direct"]
try:
    with contextlib.redirect_stdout(buf):
        ev.main()
except BaseException as e:
    print(json.dumps({"stopped": type(e).__name__ + ": " + str(e)[:200]}))
    sys.exit(0)
res = [l for l in buf.getvalue().splitlines() if l.startswith("Result: ")]
out["official_result"] = res[-1][len("Result: "):]
ev.sample_process_direct = lambda sample, args: sample
args = types.SimpleNamespace(scenario="Direct")
total = 0
try:
    with open(case, "r", encoding="utf8") as f:
        for line in f.readlines():
            sample = json.loads(line)
            sample.pop("answer_correct", None)
            got = ev.sample_process(sample, args)
            total += (got or {}).get("answer_correct", 0) if isinstance(got, dict) else 0
    out["official_answer_rule"] = repr(float(round(100 * total / 995, 2)))
except Exception as e:
    out["official_answer_rule"] = "stopped: " + type(e).__name__
print(json.dumps({"numbers": out}))
'''


def prepare(work: Path) -> None:
    prepare_official(work, REPO, COMMIT, ["code/evaluation_closed.py"], None)
    (work / "driver.py").write_text(DRIVER, encoding="utf-8")
    (work / "empty.json").write_text("[]", encoding="utf-8")


ANSWERS = ["100", "2.50", "1,000", "1000", "Paris", "paris", "", "0", "0.0", "..", "2020-01-05", "John Smith", "7",
           "é", "a\u2028b", "10.", "-3", "3.14"]


def _content(rng: random.Random, answer: Any) -> Any:
    base = str(answer) if rng.random() < 0.6 else rng.choice(ANSWERS)
    r = rng.random()
    if r < 0.05:
        return rng.choice([None, "", 0, 1, [], ["x"], {"a": 1}, True])
    pieces = [rng.choice(["<answer>", "The answer is ", "", "Final answer: "]), base,
              rng.choice(["</answer>", ".", "0", ".00", ",", "", "\u2028", "\x0c", "\r", " ", "\ud800"])]
    text = "".join(pieces)
    if rng.random() < 0.2:
        text = text.replace("0", "0,0", 1)
    return text.upper() if rng.random() < 0.1 else text


def _messages(rng: random.Random, answer: Any) -> Any:
    r = rng.random()
    if r < 0.04:
        return rng.choice([None, {}, "text", [], 5, {"-1": 1}])
    msgs: list[Any] = [{"role": "user", "content": "question"}]
    for _ in range(rng.choice([0, 0, 1, 2])):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]})
        msgs.append({"role": "tool", "content": _content(rng, answer), "tool_call_id": "c"})
    last = {"role": rng.choice(["assistant"] * 8 + ["tool", "user", "Assistant"]), "content": _content(rng, answer)}
    if rng.random() < 0.03:
        last.pop(rng.choice(["role", "content"]))
    msgs.append(last)
    if rng.random() < 0.1:
        msgs = msgs[-1:]
    if rng.random() < 0.03:
        msgs[-1] = rng.choice(["str", 3, None, []])
    return msgs


def _recorded(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.8:
        return rng.choice([0, 1])
    return rng.choice([True, False, "1", None, 0.5, float("nan"), float("inf"), int("9" * 401), 2**60, [1], {"a": 1},
                       -1, 1.0, "__absent__"])


def generate(rng: random.Random, case_dir: Path) -> Path:
    n = rng.choice([0, 1, 2, 3, 5, 10, 40, 199, 995, 996])
    odd = rng.choice([0.0, 0.05, 0.2])
    lines = []
    ids = [rng.choice([i, str(i), i + 0.0]) if rng.random() < odd else i for i in range(n)]
    if n and rng.random() < 0.2:
        ids[rng.randrange(n)] = ids[0]
    for i in range(n):
        answer: Any = rng.choice(ANSWERS) if rng.random() >= odd else rng.choice([5, None, 1.5, ["x"], True])
        rec: dict[str, Any] = {"id": ids[i], "question": "q", "answer": answer, "messages": _messages(rng, answer)}
        got = _recorded(rng) if rng.random() >= 0.1 else "__absent__"
        if got != "__absent__":
            rec["answer_correct"] = got
        if rng.random() < odd / 4:
            rec.pop(rng.choice(["id", "answer", "messages"]))
        text = json.dumps(rec, ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.01:
            text = "[" * 3000 + "]" * 3000
        lines.append(text + rng.choice(["\n"] * 12 + ["\r\n", "\r", "\x0c\n", "\u2028\n", " \n", "\x85\n"]))
    if lines and rng.random() < 0.05:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["\n", " \n", "\u2028\n"]))
    data = "".join(lines)
    if data and rng.random() < 0.1:
        data = data.rstrip("\n")
    path = case_dir / "output.jsonl"
    raw = data.encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.02:
        raw = b"\xef\xbb\xbf" + raw if rng.random() < 0.5 else raw + b"\xff\n"
    path.write_bytes(raw)
    return path


def run_official(work: Path, case: Path) -> Outcome:
    got = driver_outcome([str(work / "driver.py"), str(work / "code" / "code"), str(case), str(work / "empty.json")])
    if got.stopped:
        return got
    numbers = got.numbers
    if numbers.get("official_result") not in (None, "nan", "inf", "-inf"):
        numbers["official_result"] = repr(float(numbers["official_result"]))
    return Outcome(numbers=numbers)


def run_ours(case: Path) -> Outcome:
    got = evals_score(["score", str(case), "--format", "toolhop-official", "--benchmark", NAME, "--json",
                       "--out", "run"], {"EVALS_DATA_DIR": "/work/shared/data"})
    metrics = (got.summary or {}).get("metrics") or {}
    return got.outcome({k: repr(float(metrics[k])) for k in ("official_result", "official_answer_rule") if k in metrics})
