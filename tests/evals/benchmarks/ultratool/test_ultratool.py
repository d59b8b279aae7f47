"""UltraTool: the official parser and metrics to the last digit (fixtures scored by the official
code), the published GPT runs reproduced through ``evals score --format ultratool-official``, the
oracle at 100 over the real MCP server with both strategies, the judge's rubric through the real
OpenAI SDK against a local stand-in, and the approximations kept apart from the paper's rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_providers import FakeProviderServer, openai_chat
from loopback_http import serve_directory

from client.agent import result_text
from client.mcp_session import connect
from client.runs import RunDir
from evals.benchmarks.ultratool.metrics import (
    CREATION_DIMENSIONS,
    PLANNING_DIMENSIONS,
    awareness_values,
    levenshtein_scores,
    official_value,
    similarity,
)
from evals.benchmarks.ultratool.parsing import parse_judge_scores, parse_steps, surviving_literal
from evals.benchmarks.ultratool.plugin import calls_to_steps
from evals.benchmarks.ultratool.tasks import build_prompt, load_records
from evals.core.data import data_dir
from evals.core.formats import export_run, import_predictions
from evals.core.registry import get_benchmark, load_benchmark
from evals.core.run import RunOptions, run_benchmark, score_run_dir
from evals.report.paper import load_paper_numbers
from server import ToolServer, create_app, serve_in_background

HERE = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((HERE / "expected.json").read_text())
PUBLISHED = ("ultratool", "predictions", "English-dataset")


@pytest.fixture(scope="module", autouse=True)
def _needs_data() -> None:
    if not (data_dir() / "ultratool" / "English-dataset" / "test.json").is_file():
        pytest.skip("UltraTool data not found; set EVALS_DATA_DIR (e.g. to ../shared/data)")


# Stand-ins for the official code files that hold the protocol texts (prompts, system message,
# rubrics): the official files' shape, made-up strings. The benchmark reads them as data (ast); the
# ``.ran`` marker would show that a file was run.
STAND_IN_UTILS = r"""import json
open(__file__ + ".ran", "w").close()


def generate_prompt_chinese(method, dataset, data, E=None):
    USER_PROMPT = {'planning': "wrong language\n"}
    PROMPT_DICT = {"prompt_no_input": "wrong\n{input}\n"}
    EXAMPLE_DICT = {"prompt_no_input": "wrong\n{input}\n{reference}\n"}
    if method == 'few_shot_cot':
        content = user_prompt + "wrong" + example + "wrong" + user
    return content


def generate_prompt_english(method, dataset, data, E=None):
    USER_PROMPT = {
        'planning': "Make a plan.\n",
        'tool_usage_awareness': 'Say 0 or 1 per step.\n',
        'tool_selection': '''Name a tool per step.\n''',
        'tool_creation_awareness': "Say 1 for a missing tool.\n",
        'tool_creation': "Write the missing tools.\n",
        'tool_usage': "Fill the \"param\" fields.\n",
    }
    PROMPT_DICT = {
        "prompt_no_input_plan": (
            "Q> \n{input}\n"
            "A> "
        ),
        "prompt_no_input": ("P> \n{input}\n" "A> "),
        "prompt_input": ("P> \n{input}\n" "T> \n{toolset}\n" "A> "),
        "prompt_input_tool": ("Q> \n{question}\n" "P> \n{input}\n" "T> \n{toolset}\n" "A> "),
    }
    EXAMPLE_DICT = {
        "prompt_no_input_plan": ("Q> \n{input}\n" "A> \n{reference}\n"),
        "prompt_no_input": ("P> \n{input}\n" "A> \n{reference}\n"),
        "prompt_input": ("P> \n{input}\n" "T> \n{toolset}\n" "A> \n{reference}\n"),
        "prompt_input_tool": ("Q> \n{question}\n" "P> \n{input}\n" "T> \n{toolset}\n" "A> \n{reference}\n"),
    }
    if method == 'zero_shot_cot':
        user_prompt = USER_PROMPT[dataset]
        content = user_prompt + '\n' + user
    elif method == 'few_shot_cot':
        assert E != None
        user_prompt = USER_PROMPT[dataset]
        content = user_prompt + "\n[keep to the format]\n" + example + '\n[begin]\n' + user
    return content
"""
STAND_IN_API = r"""import openai


def query_azure_openai_chat(query, engine="model"):
    messages = [
        {"role": "system", "content": "You are a stand-in system."},
    ]
    messages.append({"role": "user", "content": query})
    return openai.ChatCompletion.create(model=engine, messages=messages)
"""
STAND_IN_CONFIG = r"""
ch_prompt_plan = '''wrong language {question}'''

en_prompt_plan = '''
PLAN RUBRIC, answer [{{"Overall Score": n}}]
Q: {question}
R: {reference}
A: {answer}
'''

en_prompt_tool = '''
TOOL RUBRIC
Q: {question}
R: {reference}
A: {answer}
'''

language_to_plan_eval_prompt = {"ch": ch_prompt_plan, "en": en_prompt_plan}
"""
STAND_INS = {"inference/utils.py": STAND_IN_UTILS, "inference/openai_api.py": STAND_IN_API,
             "evaluation/config.py": STAND_IN_CONFIG}
STAND_IN_SYSTEM = "You are a stand-in system."


def _data_only(root: Path) -> Path:
    """A data dir holding the real data files (links) and none of the official code files."""
    (root / "ultratool").mkdir(parents=True)
    for part in ("English-dataset", "predictions"):
        (root / "ultratool" / part).symlink_to(data_dir() / "ultratool" / part)
    return root


def _write_stand_ins(root: Path, files: dict[str, str] = STAND_INS) -> Path:
    for path, text in files.items():
        dest = root / "ultratool" / "official" / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def _dirs(tmp_path_factory) -> dict[str, Path]:
    return {"bare": _data_only(tmp_path_factory.mktemp("ultratool-data-only")),
            "stand_ins": _write_stand_ins(_data_only(tmp_path_factory.mktemp("ultratool-stand-ins")))}


@pytest.fixture
def data_only(_dirs, monkeypatch) -> Path:
    """The data without the official code files: what scoring given answers must do with."""
    monkeypatch.setenv("EVALS_DATA_DIR", str(_dirs["bare"]))
    return _dirs["bare"]


@pytest.fixture
def stand_ins(_dirs, monkeypatch) -> Path:
    """The data with stand-ins for the official code files (``STAND_INS``)."""
    monkeypatch.setenv("EVALS_DATA_DIR", str(_dirs["stand_ins"]))
    return _dirs["stand_ins"]


def _fixture(task: str) -> list[dict]:
    return [json.loads(line) for line in (HERE / f"{task}.json").read_text().splitlines()]


@pytest.mark.parametrize("layout", ["gpt", "other"])
def test_tool_usage_fixture_equals_the_official_code(layout, data_only):
    records = {r.id: r for r in load_records("tool_usage")}
    flat: list[float] = []
    for row, want in zip(_fixture("tool_usage"), EXPECTED["fixtures"][f"tool_usage/{layout}"]["per_record"], strict=True):
        pred = parse_steps(row["init output"], "param", multiple_lists=layout == "other")
        scores = levenshtein_scores(pred if pred is not None else [], records[row["id"]].reference)
        assert official_value(scores) == want, row["id"]
        flat += scores
    assert official_value(flat) == EXPECTED["fixtures"][f"tool_usage/{layout}"]["total"]


@pytest.mark.parametrize("layout", ["gpt", "other"])
def test_awareness_fixture_equals_the_official_code(layout, data_only):
    records = {r.id: r for r in load_records("tool_usage_awareness")}
    rights, got_all, want_all = [], [], []
    for row, want in zip(_fixture("tool_usage_awareness"), EXPECTED["fixtures"][f"tool_usage_awareness/{layout}"]["per_record"],
                         strict=True):
        pred = parse_steps(row["init output"], "label", multiple_lists=layout == "other")
        got, gold = awareness_values(pred if pred is not None else [], records[row["id"]].reference)
        local = sum(a == b for a, b in zip(got, gold, strict=True)) / len(gold)
        assert [float(got == gold), round(local, 4)] == want, row["id"]
        rights.append(got == gold)
        got_all += got
        want_all += gold
    total = EXPECTED["fixtures"][f"tool_usage_awareness/{layout}"]["total"]
    assert round(sum(rights) / len(rights), 4) == total[0]
    assert round(sum(a == b for a, b in zip(got_all, want_all, strict=True)) / len(want_all), 4) == total[1]


def test_similarity_is_one_minus_the_normalised_levenshtein_distance():
    assert similarity("kitten", "sitting") == 1 - 3 / 7
    assert similarity("abc", "abc") == 1.0 and similarity("abc", "") == 0.0
    # an empty gold value scores 1 only against an empty value; a missing key 0; a missing step 0
    gold = [{"step": "1.2 x", "tool": "t", "param": {"a": "", "b": "xyz"}}, {"step": "2.1 y", "tool": "t", "param": {"c": "1"}}]
    assert levenshtein_scores([{"step": "1.2 other words", "param": {"a": "", "b\\_": "xyz"}}], gold) == [0.5, 0.0]
    assert levenshtein_scores([{"step": "1.2", "param": {"a": "", "b": "xyz"}}], gold) == [1.0, 0.0]


def _published(model: str, name: str) -> Path:
    return data_dir().joinpath(*PUBLISHED, model, name)


@pytest.mark.parametrize("model", ["gpt-3.5", "gpt-4"])
async def test_the_published_runs_give_the_papers_numbers(model, tmp_path, data_only):
    """`evals score --format ultratool-official` on the published files: every cell they cover
    equals the official code's output and the paper's table, to the last digit."""
    paper = {(r.setting["task"], m): v for r in load_paper_numbers(Path(get_benchmark("ultratool").paper_numbers.path))
             if r.model == {"gpt-3.5": "GPT-3.5", "gpt-4": "GPT-4"}[model] and r.setting["language"] == "en"
             for m, v in r.metrics.items()}
    official = EXPECTED["published"][model]
    for name, task in (("tool_usage.json", "tool_usage"), ("tool_usage_awareness.json", "tool_usage_awareness"),
                       ("eval/planning_eval.json", "planning")):
        run = import_predictions(_published(model, name), "ultratool-official", "ultratool", tmp_path / task)
        summary = await score_run_dir(run)
        assert summary["model"] == model and summary["options"]["task"] == task and summary["completed"] == 1000
        for metric, value in official[task].items():
            assert summary["metrics"][metric] == round(100 * value, 2), (task, metric)
            if (task, metric) in paper:
                assert summary["metrics"][metric] == paper[(task, metric)], (task, metric)
    assert len([k for k in paper if k[0] in ("tool_usage", "tool_usage_awareness", "planning")]) == 4


async def test_the_oracle_scores_100_with_both_strategies_over_the_real_server(tmp_path, stand_ins):
    for strategy in ("paper", "agent"):
        opts = RunOptions(benchmark="ultratool", model="oracle", strategy=strategy, run_dir=tmp_path / strategy,
                          limit=30, concurrency=8, progress=False, benchmark_options={"task": "tool_usage"})
        _, summary = await run_benchmark(opts)
        assert summary["completed"] == 30 and summary["metrics"]["local_levenshtein"] == 100.0, strategy
    traces = list(RunDir.open(tmp_path / "agent").iter_traces())
    calls = [e for t in traces for e in t["events"] if e["kind"] == "tool_call"]
    assert len(calls) == sum(len(r.reference) for r in load_records("tool_usage")[:30])
    assert not any(c["is_error"] for c in calls) and all('"status": "success"' in c["result_text"] for c in calls)
    paper = list(RunDir.open(tmp_path / "paper").iter_traces())
    assert all(e["tools"] == [] for t in paper for e in t["events"] if e["kind"] == "model_request")
    first = next(e for e in paper[0]["events"] if e["kind"] == "model_request")["messages"]
    assert STAND_IN_SYSTEM in json.dumps(first) and "[keep to the format]" in json.dumps(first)  # the official texts
    # the other released task without a judge, and the approximations
    for task in ("tool_usage_awareness", "tool_selection_approx", "tool_creation_awareness_approx"):
        opts = RunOptions(benchmark="ultratool", model="oracle", strategy="paper", run_dir=tmp_path / task,
                          limit=30, concurrency=8, progress=False, benchmark_options={"task": task})
        _, summary = await run_benchmark(opts)
        assert summary["metrics"]["global_accuracy"] == summary["metrics"]["local_accuracy"] == 100.0, task
    with pytest.raises(ValueError, match="tool_usage only"):
        await run_benchmark(RunOptions(benchmark="ultratool", model="oracle", strategy="agent", run_dir=tmp_path / "x",
                                       benchmark_options={"task": "planning"}))


def _rubric_answer(body: dict) -> dict:
    prompt = body["messages"][-1]["content"]
    dims = PLANNING_DIMENSIONS if prompt.startswith("\nPLAN RUBRIC") else CREATION_DIMENSIONS
    items = [{"Reasoning": "as good as the reference", key: 10} for _, key in dims]
    return openai_chat("```json\n" + json.dumps(items) + "\n```", usage=(900, 120))


@pytest.mark.parametrize("task", ["planning", "tool_creation"])
async def test_the_judge_rubric_through_the_real_sdk_gives_the_top_score(task, tmp_path, monkeypatch, stand_ins):
    with FakeProviderServer() as server:
        server.openai.respond_with(_rubric_answer)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        opts = RunOptions(benchmark="ultratool", model="oracle", strategy="paper", run_dir=tmp_path / "r", limit=5,
                          progress=False, judge_model="openai:judge", benchmark_options={"task": task})
        _, summary = await run_benchmark(opts)
        bodies = [b for b in server.openai.bodies if b["model"] == "judge"]
    dims = PLANNING_DIMENSIONS if task == "planning" else CREATION_DIMENSIONS
    assert all(summary["metrics"][name] == 100.0 for name, _ in dims) and summary["metrics"]["judge_unreadable"] == 0
    judged = 5 if task == "planning" else sum(len(r.reference) for r in load_records(task)[:5])
    assert len(bodies) == judged and summary["totals"]["judge"]["decisions"] == judged
    assert summary["totals"]["judge"]["input_tokens"] == 900 * judged and summary["totals"]["model"]["input_tokens"] == 0
    # the official system message and rubric (here: their stand-ins), filled; requests go out concurrently,
    # so the first task's is found by its text, not by its place
    assert all(b["messages"][0] == {"role": "system", "content": STAND_IN_SYSTEM} for b in bodies)
    record = load_records(task)[0]
    if task == "planning":
        expected = f"\nPLAN RUBRIC, answer [{{\"Overall Score\": n}}]\nQ: {record.data['input']}\nR: {record.reference}\nA: 1. "
    else:  # the official script's "user instruction" is the step's second word
        gold = record.reference[0]
        expected = f"\nTOOL RUBRIC\nQ: {gold['step'].split(' ')[1]}\nR: {gold['tool']}\nA: {{"
    assert any(b["messages"][-1]["content"].startswith(expected) for b in bodies)
    scores = [json.loads(line) for line in open(tmp_path / "r" / "scores.jsonl")]
    assert scores[0]["judge"] and "RUBRIC" in scores[0]["judge"][0]["prompt"]
    again = await score_run_dir(tmp_path / "r")  # from the stored judgments: nobody is asked
    assert again["metrics"] == summary["metrics"] and again["totals"]["judge"]["asked"] == 0
    if task == "planning":  # exported as the official eval file, which scores the same when read back
        files = export_run(tmp_path / "r", "ultratool-official", tmp_path / "out")
        assert [f.name for f in files] == ["planning.json", "planning_eval.json"]
        back = await score_run_dir(import_predictions(files[1], "ultratool-official", "ultratool", tmp_path / "back"))
        assert all(back["metrics"][name] == 100.0 for name, _ in dims)


def test_judge_scores_are_read_as_the_official_script_reads_them():
    keys = tuple(k for _, k in PLANNING_DIMENSIONS)
    good = json.dumps([{"Reasoning": "r", k: i + 1} for i, k in enumerate(keys)])
    assert parse_judge_scores("```json" + good + "```", keys) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert parse_judge_scores(good.replace("Overall Score", "Total"), keys) is None
    assert parse_judge_scores("The plan is fine: 8/10", keys) is None


async def test_a_real_mcp_client_lists_and_calls_a_tasks_tools():
    bench = load_benchmark("ultratool", {"task": "tool_usage"})
    record = bench.records["0"]
    import contextlib

    with contextlib.ExitStack() as stack:
        ts = ToolServer(bench.mounts(stack))
        async with serve_in_background(create_app(ts, json_response=True)) as base, \
                connect(f"{base}/mcp/ultratool/0?session=s1") as session:
            tools = (await session.list_tools()).tools
            assert [t.name for t in tools] == [t["name"] for t in record.data["toolset"]]
            schema = tools[0].input_schema
            assert schema["type"] == "object" and set(schema["properties"]) == set(record.data["toolset"][0]["arguments"]["properties"])
            gold = record.reference[0]
            first = await session.call_tool(gold["tool"], dict(gold["param"]))
            again = await session.call_tool(gold["tool"], dict(gold["param"]))
            assert not first.is_error and result_text(first) == result_text(again)  # the same arguments, the same result
            assert set(first.structured_content["result"]) == set(record.data["toolset"][0]["results"]["properties"])
            unknown = await session.call_tool("no_such_tool", {})
            assert unknown.is_error  # a clear error result, not a crashed session
            assert not (await session.call_tool(gold["tool"], dict(gold["param"]))).is_error


def test_calls_map_back_to_steps_by_tool_in_plan_order():
    gold = [{"step": "1.2 a", "tool": "t", "param": {"x": "1"}}, {"step": "2.1 b", "tool": "u", "param": {}},
            {"step": "3.1 c", "tool": "t", "param": {"x": "2"}}]
    calls = [{"name": "t", "arguments": {"x": 1}}, {"name": "v", "arguments": {}}, {"name": "t", "arguments": {"x": True}}]
    steps, extra = calls_to_steps(calls, gold)
    assert [s["step"] for s in steps] == ["1.2 a", "3.1 c"] and extra == [1]
    assert steps[0]["param"] == {"x": "1"} and steps[1]["param"] == {"x": "true"}


def test_the_oracles_answers_survive_the_official_rewrites():
    for task, kind, n in (("tool_usage", "param", 1000), ("tool_usage_awareness", "label", 1000), ("tool_creation", "label", 150)):
        for r in load_records(task)[:n]:
            assert parse_steps(surviving_literal(r.reference), kind) == r.reference, (task, r.id)
    # plain JSON does not: the parser turns "false" into "False" inside values
    r = next(r for r in load_records("tool_usage") if any(v == "false" for g in r.reference for v in g["param"].values()))
    assert parse_steps(json.dumps(r.reference), "param") != r.reference


def test_prompts_are_built_from_the_official_files_texts(stand_ins):
    """The few-shot prompt is the official concatenation of the English instruction, the example and
    the record, each in the template its fields call for (planning: the query template, as the
    published runs); every text comes from the (stand-in) official file, which is read, never run."""
    def example(task: str) -> dict:
        return json.loads((data_dir() / "ultratool" / "English-dataset" / "example" / f"{task}.json").read_text())

    plan, ex = load_records("planning")[0], example("planning")
    assert build_prompt(plan) == ("Make a plan.\n" "\n[keep to the format]\n" f"Q> \n{ex['input']}\nA> \n{ex['reference']}\n"
                                  "\n[begin]\n" f"Q> \n{plan.data['input']}\nA> ")
    usage, ex = load_records("tool_usage")[0], example("tool_usage")
    assert build_prompt(usage) == (
        'Fill the "param" fields.\n' "\n[keep to the format]\n"
        f"Q> \n{ex['question']}\nP> \n{ex['input']}\nT> \n{ex['toolset']}\nA> \n{ex['reference']}\n" "\n[begin]\n"
        f"Q> \n{usage.data['question']}\nP> \n{usage.data['input']}\nT> \n{usage.data['toolset']}\nA> ")
    aware = build_prompt(load_records("tool_usage_awareness")[0])
    assert aware.startswith("Say 0 or 1 per step.\n\n[keep to the format]\nP> \n[") and "T> " not in aware
    creation = build_prompt(load_records("tool_creation")[0])
    assert creation.startswith("Write the missing tools.\n\n[keep to the format]\nP> \n[") and creation.count("T> \n") == 2
    selection = build_prompt(load_records("tool_selection_approx")[0])
    assert selection.startswith("Name a tool per step.\n") and selection.endswith("A> ")
    assert not (stand_ins / "ultratool" / "official" / "inference" / "utils.py.ran").exists()


def test_a_missing_or_malformed_official_file_is_named(tmp_path, monkeypatch, data_only):
    from evals.benchmarks.ultratool.prompts import planning_rubric, system_message
    from evals.core.data import DataNotFound

    record = load_records("planning")[0]
    with pytest.raises(DataNotFound, match=r"official file inference/utils\.py .*`evals data fetch ultratool`"):
        build_prompt(record)
    with pytest.raises(DataNotFound, match=r"evaluation/config\.py .*`evals data fetch ultratool`"):
        planning_rubric()
    with pytest.raises(DataNotFound, match="evals data fetch ultratool"):  # a paper run stops before any episode
        load_benchmark("ultratool", {"task": "planning"}).check("paper", own_server=True)
    load_benchmark("ultratool", {"task": "tool_usage"}).check("agent", own_server=True)  # the agent needs none
    broken = _write_stand_ins(_data_only(tmp_path / "d"), {
        "inference/utils.py": STAND_IN_UTILS.replace("EXAMPLE_DICT = {\n", "EXAMPLES = {\n"),
        "inference/openai_api.py": STAND_IN_API.replace('"system"', '"user"'),
        "evaluation/config.py": STAND_IN_CONFIG.replace("en_prompt_plan =", "plan ="),
    })
    monkeypatch.setenv("EVALS_DATA_DIR", str(broken))
    with pytest.raises(ValueError, match=r"utils\.py: no assignment to EXAMPLE_DICT in generate_prompt_english"):
        build_prompt(record)
    with pytest.raises(ValueError, match=r"openai_api\.py: expected one system message"):
        system_message()
    with pytest.raises(ValueError, match=r"config\.py: no assignment to en_prompt_plan"):
        planning_rubric()


def test_the_official_files_give_the_published_runs_prompts():
    """With the real official files in the data dir (``evals data fetch ultratool``; not in CI): the
    pinned files, read into the prompts of the published runs."""
    from evals.benchmarks.ultratool.files import PROTOCOL
    from evals.benchmarks.ultratool.prompts import creation_rubric, planning_rubric, system_message
    from kg_store.digest import file_sha256

    if not all((data_dir() / f.dest).is_file() for f in PROTOCOL):
        pytest.skip("the official UltraTool code files are not in the data dir (`evals data fetch ultratool`)")
    assert all(file_sha256(data_dir() / f.dest) == f.sha256 for f in PROTOCOL)
    plan = build_prompt(load_records("planning")[0])
    assert plan.count("Question: \n") == 2 and "Plan: \n" not in plan and plan.endswith("Output: ")
    usage = build_prompt(load_records("tool_usage")[0])
    assert usage.count("Question: \n") == 2 and usage.count("Toolset: \n") == 2
    aware = build_prompt(load_records("tool_usage_awareness")[0])
    assert aware.count("Plan: \n") == 2 and "Toolset" not in aware
    assert system_message() and "{answer}" in planning_rubric() and "{reference}" in creation_rubric()


def test_approximations_are_deterministic_and_never_meet_the_papers_rows():
    a, b = load_records("tool_selection_approx", distractors=3), load_records("tool_selection_approx", distractors=3)
    assert [r.data for r in a] == [r.data for r in b]
    for r in a[:50]:
        names = [t["name"] for t in r.data["toolset"]]
        assert len(names) == len(set(names)) and all(g["tool"] in names for g in r.reference)
    aware = load_records("tool_creation_awareness_approx")
    labels = [g["tool"] for r in aware for g in r.reference]
    assert set(labels) == {"0", "1"}
    for r in aware[:50]:
        names = {t["name"] for t in r.data["toolset"]}
        test = json.loads((data_dir() / "ultratool" / "English-dataset" / "test.json").read_text().splitlines()[int(r.id)])
        for step, g in zip([s for s in test["plan"] if "(" in s["tool"]], r.reference, strict=True):
            assert (g["tool"] == "0") == (step["tool"].split("(")[0] in names)
    rows = load_paper_numbers(Path(get_benchmark("ultratool").paper_numbers.path))
    info = get_benchmark("ultratool")
    assert info.paper_numbers is not None
    setting = info.paper_numbers.setting({"strategy": "paper", "options": {"task": "tool_selection_approx"}})
    assert not [r for r in rows if r.setting["task"] == setting["task"]]
    assert {r.setting["task"] for r in rows} >= {"tool_selection", "tool_creation_awareness"}


async def test_export_writes_what_the_official_scripts_read(tmp_path):
    opts = RunOptions(benchmark="ultratool", model="oracle", strategy="agent", run_dir=tmp_path / "r", limit=20,
                      progress=False, benchmark_options={"task": "tool_usage"})
    await run_benchmark(opts)
    (path,) = export_run(tmp_path / "r", "ultratool-official", tmp_path / "out")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert path.name == "tool_usage.json" and len(rows) == 20 and set(rows[0]) == {"data", "init output"}
    assert json.loads(rows[0]["init output"])[0]["param"] == rows[0]["data"]["reference"][0]["param"]


def test_evals_data_fetch_gets_the_pinned_files_through_a_mirror(tmp_path):
    """The declared sources are the files of the pinned commit: fetched from a local mirror laid out
    as the repository, each checked against its sha256 (a wrong file is refused). The official code
    files that hold the prompts are part of the source; their stand-ins are refused."""
    from evals.benchmarks.ultratool.files import INFERENCE_UTILS, PROTOCOL
    from evals.core import fetch

    mirror = tmp_path / "mirror"
    for part in ("data", "predictions"):
        (mirror / part).mkdir(parents=True)
    (mirror / "data" / "English-dataset").symlink_to(data_dir() / "ultratool" / "English-dataset")
    (mirror / "predictions" / "English-dataset").symlink_to(data_dir().joinpath(*PUBLISHED))
    for path, text in STAND_INS.items():
        (mirror / path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / path).write_text(text)
    code = {f.dest for f in PROTOCOL}
    assert code == {"ultratool/official/inference/utils.py", "ultratool/official/inference/openai_api.py",
                    "ultratool/official/evaluation/config.py"}
    with serve_directory(mirror) as prefix:
        data = [f.dest for f in fetch.sources()["ultratool"] if f.dest not in code]
        files = fetch.fetch("ultratool", tmp_path / "data", url_prefix=prefix, only=data)
        assert len(files) == 11 and all(f.is_file() for f in files)
        # a copy that holds the test set serves without the prompt files (only a paper run needs them,
        # and its check names the fetch command); an empty data dir fetches everything, prompts included
        assert fetch.needed_files("ultratool", tmp_path / "data") == []
        assert len(fetch.needed_files("ultratool", tmp_path / "empty")) == 14
        with pytest.raises(fetch.ChecksumMismatch, match=r"inference/utils\.py.*not saved"):
            fetch.fetch("ultratool", tmp_path / "data", url_prefix=prefix, only=[INFERENCE_UTILS])
        assert not (tmp_path / "data" / INFERENCE_UTILS).exists()
        bad = tmp_path / "bad"
        (bad / "data" / "English-dataset").mkdir(parents=True)
        (bad / "data" / "English-dataset" / "test.json").write_text("{}\n")
    with serve_directory(bad) as prefix, pytest.raises(fetch.FetchError, match="sha256"):
        fetch.fetch("ultratool", tmp_path / "data2", url_prefix=prefix, only=["ultratool/English-dataset/test.json"])
