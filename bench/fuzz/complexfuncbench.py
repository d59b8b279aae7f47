"""ComplexFuncBench: official result files (`result.jsonl`) against `print_results.py`.

The official code: THUDM/ComplexFuncBench at the commit the fixtures name (c37b284,
tests/evals/benchmarks/complexfuncbench/fixtures/README.md), `print_results.py` with its
`utils/utils.py`, unchanged, run by the system Python (it needs the standard library only) through a
small driver that calls `basic_metric` and also records the values it printed (its locals on return,
so that `nan`, `inf` and dictionary keys need no parsing of the printed text). Ours: `evals score FILE
--format complexfuncbench-official --benchmark complexfuncbench` with an empty data directory (scored
from the file alone). Numbers are compared at the two decimals our summary gives (the official value
rounded by Python's `round`, which rounds the binary value exactly).
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

NAME = "complexfuncbench"
REPO = "THUDM/ComplexFuncBench"
COMMIT = "c37b284"
DOMAINS = ("Hotels", "Flights", "Car-Rental", "Attraction", "Cross")
KEYS = {"Hotels": "hotels", "Flights": "flights", "Car-Rental": "car_rental", "Attraction": "attraction",
        "Cross": "cross"}

DRIVER = r'''
import json, sys, io, contextlib, math
sys.path.insert(0, sys.argv[1])
import print_results
got = {}
def prof(frame, event, arg):
    if event == "return" and frame.f_code is print_results.basic_metric.__code__:
        got.update(frame.f_locals)
sys.setprofile(prof)
buf = io.StringIO()
sys.setrecursionlimit(1000)
try:
    with contextlib.redirect_stdout(buf):
        print_results.basic_metric(sys.argv[2])
except BaseException as e:
    sys.setprofile(None)
    print(json.dumps({"stopped": type(e).__name__ + ": " + str(e)[:200]}))
    sys.exit(0)
sys.setprofile(None)
def f(v):
    return repr(float(round(v, 2))) if isinstance(v, (int, float)) and math.isfinite(v) else repr(v)
n = {}
for k, v in got["domain_success_rate"].items():
    n["success:" + k] = f(v)
for k, v in got["domain_call_acc"].items():
    n["call:" + k] = f(v)
n["success_rate"] = f(got["overall_success"])
n["call_accuracy"] = f(got["overall_call_acc"])
n["completeness"] = f(got["complete_score_avg"])
n["correctness"] = f(got["correct_score_avg"])
print(json.dumps({"numbers": n, "printed": buf.getvalue()[-2000:]}))
'''


def prepare(work: Path) -> None:
    prepare_official(work, REPO, COMMIT, ["print_results.py", "utils"], None)
    (work / "driver.py").write_text(DRIVER, encoding="utf-8")


# ---- generation ----
HUGE = int("9" * 401)
TIES = ((109, 800), (1, 8), (3, 8), (5, 16), (21, 80), (1, 40), (123, 400), (7, 200), (33, 80), (41, 400))


def _count(rng: random.Random, odd: float) -> Any:
    if rng.random() >= odd:
        return rng.randint(0, 12)
    return rng.choice([HUGE, -HUGE, 2**53 + 1, float("inf"), float("-inf"), float("nan"), 0.1, 2.5, 1e308, -3,
                       True, False, "3", "x", None, [1], {"a": 1}, 1e-300, 0.0, 7.0])


def _score(rng: random.Random) -> Any:
    return rng.choice([0, 1, 2, 0, 1, 2, -1, -2, 1.0, 2.0, True, False, "1", None, 3, 0.5, float("nan"), [1], {"x": 1}])


def _text(rng: random.Random) -> str:
    pieces = ["plain", "\u2028", "\u2029", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\x0b", "\r", "\t", "é", "😀",
              "\ud800", "\udfff", "\x00", "\"", "\\", " "]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))


def _record(rng: random.Random, rid: str, odd: float) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    total = rng.randint(0, 12)
    for name in ("success_turn_num", "total_turn_num", "correct_call_num", "total_call_num"):
        counts[name] = _count(rng, odd)
    if rng.random() > odd:
        counts["total_call_num"] = max(total, counts["correct_call_num"]) if isinstance(counts["correct_call_num"], int) \
            and not isinstance(counts["correct_call_num"], bool) and abs(counts["correct_call_num"]) < 100 else total
    if rng.random() < odd / 3:
        counts.pop(rng.choice(list(counts)))
    rec: dict[str, Any] = {"id": rid, "gen_convs": [{"role": "assistant", "content": _text(rng)}],
                           "message": rng.choice(["Success.", "Success.", "Fail.", "Success. ", None, 1]),
                           "count_dict": counts}
    r = rng.random()
    if r < 0.3:
        rec["resp_eval"] = None
    elif r < 0.3 + odd / 4:
        rec["resp_eval"] = rng.choice([{}, [], "x", 0, {"complete": {"score": 1}}, {"complete": 1, "correct": 2}])
    elif r < 0.3 + odd / 3:
        rec.pop("message") if rng.random() < 0.5 else None
    else:
        rec["resp_eval"] = {"complete": {"score": _score(rng)}, "correct": {"score": _score(rng)}}
    if rng.random() < odd / 8:
        rec.pop(rng.choice(["resp_eval", "message"]), None)
    if rng.random() < 0.05:
        rec["gen_convs"] = f"@@DEEP{rng.choice([50, 900, 3000])}@@"  # replaced by as many nested lists
    return rec


def _ids(rng: random.Random, n: int) -> list[str]:
    out = []
    for i in range(n):
        r = rng.random()
        if r < 0.05:
            dom = rng.choice(["Weather", "Cross-x", "", "hotels", "Ho\u2028tels", "Car"])
        else:
            dom = rng.choice(DOMAINS)
        out.append(f"{dom}-{rng.randint(0, 500) if rng.random() < 0.3 else i}")
    if out and rng.random() < 0.2:
        out[rng.randrange(len(out))] = rng.choice(out)  # a repeated id
    return out


def generate(rng: random.Random, case_dir: Path) -> Path:
    kind = rng.random()
    odd = rng.choice([0.0, 0.0, 0.02, 0.1, 0.4])
    if kind < 0.35:  # a size on a rounding tie: correct / total * 100 lands on .xx5
        c, t = rng.choice(TIES)
        recs: list[dict[str, Any]] = []
        per = rng.choice([1, 2, 4, 8])
        for i in range(per):
            recs.append({"id": f"{rng.choice(DOMAINS)}-{i}", "message": rng.choice(["Success.", "x"]),
                         "count_dict": {"success_turn_num": 1, "total_turn_num": 1,
                                        "correct_call_num": c // per + (c % per if i == 0 else 0),
                                        "total_call_num": t // per + (t % per if i == 0 else 0)},
                         "resp_eval": {"complete": {"score": rng.choice([0, 1, 2])},
                                       "correct": {"score": rng.choice([0, 1, 2])}}})
        n_success = rng.choice([1, 3, 5, 15, 45, 123, 333])
        recs += [{"id": f"{rng.choice(DOMAINS)}-s{i}", "message": "Success.",
                  "count_dict": {"success_turn_num": 0, "total_turn_num": 0, "correct_call_num": 0, "total_call_num": 0},
                  "resp_eval": None} for i in range(n_success)]
        rng.shuffle(recs)
    else:
        n = rng.choice([0, 1, 2, 3, 5, 8, 13, 40, 80, 151, 401])
        recs = [_record(rng, rid, odd) for rid in _ids(rng, n)]
    lines = []
    for rec in recs:
        text = json.dumps(rec, ensure_ascii=rng.random() < 0.5)
        for depth in (50, 900, 3000):
            text = text.replace(f'"@@DEEP{depth}@@"', "[" * depth + '"x"' + "]" * depth)
        ending = rng.choice(["\n"] * 12 + ["\r\n", "\r", "\x0c\n", "\x1c\n", "\u2028\n", "\x85\n", " \n", "\t\n"])
        lines.append(text + ending)
    if lines and rng.random() < 0.1:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["\n", " \n", "\x0c\n", "\u2028\n", "\r\n"]))
    data = "".join(lines)
    if data and rng.random() < 0.1:
        data = data.rstrip("\n")
    if rng.random() < 0.02:
        data = "\ufeff" + data
    name = "result.jsonl" if rng.random() < 0.97 else rng.choice(["result.json", "result.txt"])
    path = case_dir / name
    raw = data.encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.02:
        raw += b"\xff\xfe\n"
    path.write_bytes(raw)
    return path


# ---- the two sides ----
def run_official(work: Path, case: Path) -> Outcome:
    return driver_outcome([str(work / "driver.py"), str(work / "code"), str(case)], cwd=work / "code")


def _ours_numbers(summary: dict[str, Any]) -> dict[str, str]:
    metrics = summary.get("metrics") or {}
    out: dict[str, str] = {}

    def f(v: Any) -> str:
        return repr(float(v)) if isinstance(v, int | float) else repr(v)

    for key in ("success_rate", "call_accuracy", "completeness", "correctness"):
        if key in metrics:
            out[key] = f(metrics[key])
        elif key in ("completeness", "correctness"):  # nothing judged: not reported (print_results prints 0)
            out[key] = "0.0"
    for d, k in KEYS.items():
        for kind, name in (("success", "success_rate"), ("call", "call_accuracy")):
            if f"{name}_{k}" in metrics:
                out[f"{kind}:{d}"] = f(metrics[f"{name}_{k}"])
    for d, v in (summary.get("foreign_domains") or {}).items():
        out[f"success:{d}"] = f(v["success_rate"])
        out[f"call:{d}"] = f(v["call_accuracy"])
    return out


def run_ours(case: Path) -> Outcome:
    empty = Path("/tmp/evals-fuzz-empty-data")
    empty.mkdir(exist_ok=True)
    got = evals_score(["score", str(case), "--format", "complexfuncbench-official", "--benchmark", NAME,
                       "--json", "--out", "run"], {"EVALS_DATA_DIR": str(empty)})
    return got.outcome(_ours_numbers(got.summary) if got.summary else {})
