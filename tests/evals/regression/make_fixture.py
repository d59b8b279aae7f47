"""Make the regression fixture: recorded ``evals run`` directories and their ``evals score`` summaries.

Runs ``evals run`` (``python -m evals.cli`` of the checkout this file sits in) for FamilyTool-b/-e and
ToolHop against the local OpenAI-compatible stand-in of ``tests/client/fake_providers.py``, whose
models are deterministic heuristics built from the benchmark files alone (no ``evals`` import):
they get some calls right and some wrong (wrong tool, wrong value, a number where a string is
expected, an explicit default, no call at all, made-up relations and tools, omitted and extra
parameters), one judge answers EQUIVALENT/DIFFERENT, and one task of two runs gets an HTTP 400, so
errored episodes are covered. Each run is stored as ``runs/<name>/config.json`` +
``traces.jsonl.gz`` and scored with ``evals score --json`` into ``runs/<name>/expected.json``.

    EVALS_DATA_DIR=../shared/data .venv/bin/python tests/evals/regression/make_fixture.py [--only NAME ...]

The models depend only on the request, so a rerun gives the same outcomes (episode ids, timings and
ports differ). ``test_rescore.py`` re-scores the stored traces with the current code and compares
every stored number; regenerate only when a scoring change is intended, and say so in the commit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUNS = HERE / "runs"
sys.path.insert(0, str(REPO / "tests" / "client"))

from fake_providers import FakeProviderServer, openai_chat, openai_error  # noqa: E402

KEY_ENV = "EVALS_FIXTURE_FAKE_KEY"


def data_dir() -> Path:
    env = os.environ.get("EVALS_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


# ==================================================================================================
# FamilyTool: tasks read straight from the data files
# ==================================================================================================
_SPEAKER_RE = re.compile(r"<speak>\s*(?:Speaker|Person)\s*:\s*([^<]*?)\.?\s*</speak>\s*", re.S)
_TRIPLE_RE = re.compile(r"\[\s*'?([^\[\],']+?)'?\s*,\s*'?([^\[\],']+?)'?\s*,\s*'?([^\[\],']+?)'?\s*\]")
MARKER = "The extra information for the query is"


@dataclass
class FTask:
    index: int
    id: str
    speaker: str | None
    query: str
    gold_kg: list[tuple[str, str, str]]
    gold_name: str
    gold_args: dict[str, Any]
    candidates: list[str]


def load_familytool(dataset: str) -> list[FTask]:
    out = []
    path = data_dir() / "familytool" / f"familytool-{dataset}.jsonl"
    for i, line in enumerate(path.read_text().splitlines()):
        msgs = json.loads(line)
        raw = msgs[2]["content"]
        m = _SPEAKER_RE.search(raw)
        speaker = (m.group(1).strip() or None) if m else None
        text = raw[: m.start()] + raw[m.end():] if m else raw
        k = text.find(MARKER)
        gold_kg = [tuple(s.strip() for s in t) for t in _TRIPLE_RE.findall(text[k + len(MARKER):])]
        gold = msgs[3]["content"][0]
        out.append(FTask(i, str(msgs[0]["content"]), speaker, text[:k].strip(), gold_kg, gold["name"],
                         dict(gold.get("parameters") or {}), [t["name"] for t in msgs[1]["content"]]))
    return out


def gold_paths(gold: list[tuple[str, str, str]]) -> list[list[tuple[str, str, str]]]:
    """Root-to-leaf chains of the gold sub-KG."""
    triples = list(dict.fromkeys(gold))
    by_tail = {t[2]: t for t in triples}
    paths = []
    for t in triples:
        if any(o[0] == t[2] and o != t for o in triples):
            continue
        chain, seen = [t], {t}
        while chain[0][0] in by_tail and by_tail[chain[0][0]] not in seen:
            prev = by_tail[chain[0][0]]
            chain.insert(0, prev)
            seen.add(prev)
        paths.append(chain)
    return paths


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _user(body: dict[str, Any]) -> str:
    return next(_text(m.get("content")) for m in body["messages"] if m["role"] == "user")


def _turn(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def _tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in body.get("tools") or []}


def find_ftask(tasks: list[FTask], body: dict[str, Any]) -> FTask:
    user, tools = _user(body), set(_tools(body))
    hits = [t for t in tasks if t.query and t.query in user and (t.speaker is None or t.speaker in user)]
    if tools:
        hits = [t for t in hits if set(t.candidates) <= tools] or hits
    if not hits:
        raise LookupError(f"no FamilyTool task for request: {user[:200]!r}")
    return max(hits, key=lambda t: (len(t.query), -t.index))  # the longest query wins, then file order


def _other_entity(value: Any) -> Any:
    """A plausible but wrong value: another entity id of the same kind, or a changed number/name."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        m = re.match(r"^(.*_)(\d{4})$", value)
        if m:
            n = int(m.group(2))
            return f"{m.group(1)}{(n + 1) if n % 2 == 0 else (n - 1):04d}"
        return value + " Jr."
    return value


# tool-call behaviours, chosen by the task's index in its file
FT_CALL = ("gold", "explicit_default", "upper", "wrong_tool", "wrong_value", "type", "gold", "no_call")
# KG behaviours (agent: lookups; kgetool: step-1 text), by index with another period
FT_KG = ("gold", "partial", "made_up", "extra", "none")


def ft_call(task: FTask, tools: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    kind = FT_CALL[task.index % len(FT_CALL)]
    name, args = task.gold_name, dict(task.gold_args)
    first = next(iter(args), None)
    number = next((k for k, v in args.items() if isinstance(v, int | float) and not isinstance(v, bool)), None)
    if kind == "no_call":
        return None
    if kind == "explicit_default":
        props = (tools.get(name, {}).get("parameters") or {}).get("properties") or {}
        extra = next(((k, v["default"]) for k, v in props.items() if isinstance(v, dict) and "default" in v
                      and k not in args), None)
        if extra:
            args[extra[0]] = extra[1]
        elif number is not None:
            args[number] = str(args[number])  # no default to spell out: a number written as a string
    elif kind == "upper" and first is not None:
        args[first] = args[first].upper() if isinstance(args[first], str) else str(args[first])
    elif kind == "wrong_tool":
        others = sorted(n for n in tools if n != name and not n.startswith("kg_"))
        if others:
            name = others[0]
        elif first is not None:
            args[first] = _other_entity(args[first])
    elif kind == "wrong_value" and first is not None:
        args[first] = _other_entity(args[first])
    elif kind == "type" and first is not None:
        key = number if number is not None else first
        v = args[key]
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            args[key] = [v]
        elif isinstance(v, int | float):
            args[key] = str(v)  # "120" for 120: a string where the schema may say number
        else:
            digits = re.search(r"(\d+)$", v)
            args[key] = int(digits.group(1)) if digits else [v]  # 2 for "city_0002"
    return name, args


def ft_searches(task: FTask) -> list[tuple[str, list[str]]]:
    """The KG lookups (start, relation path) the model makes, by KG behaviour."""
    kind = FT_KG[task.index % len(FT_KG)]
    paths = [(p[0][0], [t[1] for t in p]) for p in gold_paths(task.gold_kg)]
    if kind == "gold":
        return paths
    if kind == "partial":
        start, rels = paths[0]
        return [(start, rels[:1])] if len(rels) > 1 else [(start, ["knows"])]
    if kind == "made_up":
        start, rels = paths[0]
        return [(start, [*rels[:-1], "favourite_" + rels[-1].removeprefix("prefer_")])]
    if kind == "extra":
        start, rels = paths[0]
        return [*paths, (start, rels[:1])] if len(rels) > 1 else [*paths, ("Nobody", rels)]
    return []


def familytool_model(tasks: list[FTask], error_index: int | None = None):
    def model(body: dict[str, Any]) -> Any:
        task = find_ftask(tasks, body)
        if task.index == error_index:
            return openai_error(400, f"This model's request for {task.id} was rejected: invalid 'messages'.")
        tools = _tools(body)
        if not tools:  # KGETool step 1: write KG.search lines
            kind = FT_KG[task.index % len(FT_KG)]
            if kind == "none":
                return openai_chat("I would look up the speaker's family first.", usage=(180, 12))
            lines = [f'KG.search(start="{s}", path=[{",".join(chr(34) + r + chr(34) for r in p)}])'
                     for s, p in ft_searches(task)]  # the paper's prompt's syntax
            return openai_chat("\n".join(lines), usage=(180, 24))
        turn = _turn(body)
        if "kg_search_path" in tools:  # agent
            kind = FT_KG[task.index % len(FT_KG)]
            lookups: list[list[tuple[str, dict[str, Any]]]] = []
            if kind == "extra":  # first the speaker's neighbours, then the gold paths
                lookups.append([("kg_neighbors", {"entity": task.speaker or "Bob"})])
                lookups.append([("kg_search_path", {"start": s, "path": p}) for s, p in ft_searches(task)[:-1]])
            elif kind != "none":
                lookups.append([("kg_search_path", {"start": s, "path": p}) for s, p in ft_searches(task)])
            if turn < len(lookups):
                return openai_chat(tool_calls=lookups[turn], usage=(400 + 50 * turn, 30))
        call = ft_call(task, tools)
        if call is None:
            return openai_chat("Sorry, I cannot do that with these tools.", usage=(420, 11))
        return openai_chat(tool_calls=[call], usage=(420, 25))

    return model


def judge_model(body: dict[str, Any]) -> Any:
    """EQUIVALENT when the candidate is the reference up to letter case, else DIFFERENT."""
    prompt = _text(body["messages"][-1].get("content"))
    ref = re.search(r"Reference call:\n(.*?)\n\nCandidate call:\n(.*?)\n\n", prompt, re.S)

    def fold(x: Any) -> Any:
        if isinstance(x, str):
            return x.casefold()
        if isinstance(x, dict):
            return {k: fold(v) for k, v in x.items()}
        if isinstance(x, list):
            return [fold(v) for v in x]
        return x

    same = bool(ref) and fold(json.loads(ref.group(1))) == fold(json.loads(ref.group(2)))
    verdict = "The candidate names the same entity in other letter case.\nEQUIVALENT" if same else \
        "The candidate calls another tool or passes another value.\nDIFFERENT"
    return openai_chat(verdict, usage=(300, 12))


# ==================================================================================================
# ToolHop
# ==================================================================================================
@dataclass
class HTask:
    index: int
    id: str
    question: str
    answer: str


def load_toolhop() -> list[HTask]:
    path = data_dir() / "toolhop" / "toolhop_subset100_localbench.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [HTask(i, str(r["source_id"]), r["question"], str(r["answer"])) for i, r in enumerate(rows)]


TH_FREE = ("valid_right", "made_up_tool", "extra_param", "omitted", "prose_right", "two_calls_right", "wrong")
TH_DIRECT = ("right", "prose_right", "wrong")


def _placeholder(schema: dict[str, Any]) -> Any:
    t = schema.get("type")
    t = t[0] if isinstance(t, list) and t else t
    return {"string": "unknown", "integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}.get(t, "unknown")


def _valid_args(fn: dict[str, Any]) -> dict[str, Any]:
    params = fn.get("parameters") or {}
    props = params.get("properties") or {}
    return {k: _placeholder(props.get(k) or {}) for k in params.get("required") or []}


def _wrong(answer: str) -> str:
    return str(int(answer) + 1) if answer.isdigit() else "nothing"


def toolhop_model(tasks: list[HTask], error_index: int | None = None):
    by_question = {t.question.strip(): t for t in tasks}

    def find(body: dict[str, Any]) -> HTask:
        user = _user(body).strip()
        hit = by_question.get(user) or next((t for q, t in by_question.items() if q in user), None)
        if hit is None:
            raise LookupError(f"no ToolHop task for request: {user[:200]!r}")
        return hit

    def model(body: dict[str, Any]) -> Any:
        task = find(body)
        if task.index == error_index:
            return openai_error(400, f"Invalid 'messages' for task {task.id}: request rejected.")
        tools = list(_tools(body).values())
        if not tools:  # direct
            kind = TH_DIRECT[task.index % len(TH_DIRECT)]
            text = {"right": f"Step by step.\nFinal answer: {task.answer}",
                    "prose_right": f"I believe it is {task.answer}.",
                    "wrong": f"Final answer: {_wrong(task.answer)}"}[kind]
            return openai_chat(text, usage=(150, 30))
        kind = TH_FREE[task.index % len(TH_FREE)]
        first, last = tools[0], tools[-1]
        plan: list[list[tuple[str, Any]]] = {
            "valid_right": [[(first["name"], _valid_args(first))]],
            "made_up_tool": [[("web_search", {"query": task.question[:80]})]],
            "extra_param": [[(first["name"], {**_valid_args(first), "verbose": True})]],
            "omitted": [[(first["name"], {})]],
            "prose_right": [],
            "two_calls_right": [[(first["name"], _valid_args(first))],
                                [(last["name"], {"unexpected": 1})]],
            "wrong": [[(first["name"], _valid_args(first)), (last["name"], "not json")]],
        }[kind]
        answer = {"valid_right": f"Final answer: {task.answer}", "made_up_tool": "Final answer: unknown",
                  "extra_param": f"The tools say so.\nFinal answer: {task.answer}",
                  "omitted": f"Final answer: {_wrong(task.answer)}", "prose_right": f"It is {task.answer}.",
                  "two_calls_right": f"Final answer: {task.answer}", "wrong": f"Final answer: {_wrong(task.answer)}"}[kind]
        turn = _turn(body)
        if turn < len(plan):
            return openai_chat(tool_calls=plan[turn], usage=(600 + 80 * turn, 40))
        return openai_chat(answer, usage=(700, 20))

    return model


# ==================================================================================================
# The runs
# ==================================================================================================
@dataclass
class Run:
    name: str
    args: list[str]
    expect_rc: int = 0
    note: str = ""


def runs() -> list[Run]:
    ft = ["--api-key-env", KEY_ENV, "--no-progress"]
    return [
        Run("familytool-b_agent", ["familytool-b", "--model", "openai:ft-b-err", "--strategy", "agent",
                                   "--limit", "15", "--concurrency", "4", "--max-turns", "4", *ft], 1,
            "one task (index 5) answered HTTP 400: errored"),
        Run("familytool-b_kgetool_judge", ["familytool-b", "--model", "openai:ft-b", "--strategy", "kgetool",
                                           "--judge", "openai:judge", "--scoring", "project", "--limit", "15",
                                           "--concurrency", "4", *ft],
            0, "the LLM judge's decisions are in the traces"),
        Run("familytool-b_golden-kg_wide", ["familytool-b", "--model", "openai:ft-b", "--strategy", "golden-kg",
                                            "--limit", "341", "--concurrency", "8", *ft],
            0, "341 tasks: reaches make_payment (float amounts) and eee (untyped counts)"),
        Run("familytool-e_golden-kg", ["familytool-e", "--model", "openai:ft-e", "--strategy", "golden-kg",
                                       "--limit", "10", "--concurrency", "4", *ft]),
        Run("familytool-e_agent_inductive", ["familytool-e", "--inductive", "--model", "openai:ft-e",
                                             "--strategy", "agent", "--limit", "10", "--concurrency", "4",
                                             "--max-turns", "4", *ft]),
        Run("toolhop_free", ["toolhop", "--model", "openai:th-err", "--strategy", "free", "--limit", "12",
                             "--concurrency", "2", "--max-turns", "5", *ft], 1,
            "one task (index 3) answered HTTP 400: errored"),
        Run("toolhop_direct", ["toolhop", "--model", "openai:th", "--strategy", "direct", "--limit", "10",
                               "--concurrency", "4", *ft]),
        Run("toolhop_oracle_free", ["toolhop", "--model", "oracle", "--strategy", "free", "--limit", "10",
                                    "--concurrency", "2", "--no-progress"]),
    ]


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_")) and k != "EVALS_PRICES"}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
               EVALS_DATA_DIR=str(data_dir()), EVALS_CACHE_DIR=str(cache), EVALS_TOOLHOP="subset",
               **{KEY_ENV: "sk-fixture"})
    return env


def evals(args: list[str], env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def score(run_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    proc = evals(["score", str(run_dir), "--json"], env)
    if proc.returncode != 0:
        raise SystemExit(f"evals score {run_dir} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="run names to (re)make; default all")
    ap.add_argument("--out", type=Path, default=RUNS, help=f"fixture directory (default {RUNS})")
    ap.add_argument("--keep-work", action="store_true", help="keep the raw run directories")
    opts = ap.parse_args()
    if not (data_dir() / "familytool" / "familytool-b.jsonl").is_file():
        raise SystemExit(f"benchmark data not found under {data_dir()}; set EVALS_DATA_DIR")

    ftb, fte, th = load_familytool("b"), load_familytool("e"), load_toolhop()
    models = {
        "ft-b": familytool_model(ftb), "ft-b-err": familytool_model(ftb, error_index=5),
        "ft-e": familytool_model(fte), "th": toolhop_model(th), "th-err": toolhop_model(th, error_index=3),
        "judge": judge_model,
    }

    def dispatch(body: dict[str, Any]) -> Any:
        return models[body["model"]](body)

    work = Path(tempfile.mkdtemp(prefix="evals-fixture-"))
    run_env, score_env = _env(work / "run-cache"), _env(work / "score-cache")
    selected = [r for r in runs() if not opts.only or r.name in opts.only]
    try:
        with FakeProviderServer() as server:
            server.openai.respond_with(dispatch)
            for run in selected:
                raw = work / "raw" / run.name
                args = ["run", *run.args, "--run-dir", str(raw), "--json"]
                if run.args[run.args.index("--model") + 1].startswith("openai:"):
                    args += ["--base-url", server.openai_base_url]
                t0 = time.monotonic()
                proc = evals(args, run_env)
                if proc.returncode != run.expect_rc:
                    raise SystemExit(f"{run.name}: evals run exited {proc.returncode}, expected {run.expect_rc}:\n"
                                     f"{proc.stderr[-3000:]}")
                dest = opts.out / run.name
                shutil.rmtree(dest, ignore_errors=True)
                dest.mkdir(parents=True)
                config = json.loads((raw / "config.json").read_text())
                config.get("run", {})["run_dir"] = f"runs/{run.name}"  # no machine-specific path
                (dest / "config.json").write_text(json.dumps(config, indent=2) + "\n")
                data = (raw / "traces.jsonl").read_bytes()
                with gzip.GzipFile(dest / "traces.jsonl.gz", "wb", mtime=0) as f:
                    f.write(data)
                # the judge's decisions are stored with the scores (scoring is a phase of its own):
                # keep them, so that re-scoring reuses them instead of counting them as missing
                scores = raw / "scores.jsonl"
                if scores.is_file() and any(json.loads(line).get("judge") for line in scores.read_text().splitlines() if line):
                    with gzip.GzipFile(dest / "scores.jsonl.gz", "wb", mtime=0) as f:
                        f.write(scores.read_bytes())
                # score exactly what is stored, unpacked, with an empty cache (as the test does)
                check = work / "check" / run.name
                check.mkdir(parents=True)
                shutil.copy(dest / "config.json", check / "config.json")
                (check / "traces.jsonl").write_bytes(gzip.decompress((dest / "traces.jsonl.gz").read_bytes()))
                if (dest / "scores.jsonl.gz").is_file():
                    (check / "scores.jsonl").write_bytes(gzip.decompress((dest / "scores.jsonl.gz").read_bytes()))
                summary = score(check, score_env)
                summary["run_dir"] = f"runs/{run.name}"
                (dest / "expected.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
                printed = json.loads(proc.stdout.strip().splitlines()[-1])
                same = printed.get("metrics") == summary.get("metrics")
                print(f"{run.name}: {summary['tasks']} tasks, {summary['completed']} completed, "
                      f"{summary['errored']} errored, {time.monotonic() - t0:.1f}s; metrics {summary['metrics']}"
                      f"{'' if same else ' (differs from what evals run printed!)'}", flush=True)
    finally:
        if opts.keep_work:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    total = sum(p.stat().st_size for p in opts.out.rglob("*") if p.is_file())
    print(f"fixture: {opts.out} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
