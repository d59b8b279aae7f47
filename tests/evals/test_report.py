"""`evals report`: the published numbers file, paper-row matching, Markdown and HTML rendering, and a real run."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

import evals.report
from evals.core.registry import all_benchmarks, get_benchmark
from evals.report import (
    add_report_parser,
    hop_plot_svg,
    load_paper_numbers,
    main_metric,
    normalize_model,
    paper_files,
    paper_rows_for,
    published_rows_for,
    render_html,
    render_markdown,
    write_report,
)

REPO = Path(__file__).resolve().parents[2]
PAPERS = REPO.parent / "shared" / "papers"

FAMILYTOOL_KEYS = {"tool_em", "tool_acc", "value_acc", "kg_em", "kg_f1", "kg_no_hallucination", "kg_coverage", "kg_format_error"}
TOOLHOP_KEYS = {"answer_accuracy", "tool_hallucination", "param_hallucination", "param_omission",
                "query_error_rate", "instance_error_rate"}
KNOWN_KEYS = {"familytool": FAMILYTOOL_KEYS, "toolhop": TOOLHOP_KEYS}
SETTING_VALUES = {
    "strategy": {"kgetool", "golden-kg", "full-kg", "direct", "forced", "free", "agent", "paper", "oneshot"},
    "step": {"kg_extraction", "tool_use"},
    "kg_values": {"true_values"},
    "path_extraction": {"greedy", "retrieval"},
    "feedback": {"detailed", "minimal"},
}


def _paper_files() -> list[Path]:
    files = sorted(paper_files())  # each registered benchmark's paper_numbers.yaml
    assert {f.parent.name for f in files} >= {"familytool", "toolhop"}
    return files


def _paper_file(benchmark: str) -> Path:
    return get_benchmark(benchmark).paper_numbers.path


# ---- the published numbers ------------------------------------------------------------------------
@pytest.mark.parametrize("path", _paper_files(), ids=lambda p: p.parent.name)
def test_every_paper_row_names_its_table_model_setting_and_known_metrics(path):
    doc = yaml.safe_load(path.read_text())
    family = path.parent.name
    assert doc["paper"] and doc["citation"] and doc["source"] and doc["benchmarks"]
    models = set()
    numbers = [t["table"] for t in doc["tables"] if t["table"] is not None]
    assert len(numbers) == len(set(numbers)), "a table number appears twice"
    n_rows = 0
    for table in doc["tables"]:
        assert table["table"] is None or isinstance(table["table"], int)
        assert isinstance(table["caption"], str) and table["caption"]
        assert table.get("number_from"), "say where the table number comes from"
        if table["table"] is None:
            assert table.get("label"), "an unnumbered table needs a short label"
        assert table["rows"]
        for row in table["rows"]:
            n_rows += 1
            assert set(row) <= {"model", "setting", "metrics", "extra", "aggregate", "note"}, row
            assert isinstance(row["model"], str) and row["model"].strip()
            models.add(row["model"])
            setting = {**(table.get("setting") or {}), **(row.get("setting") or {})}
            assert setting.get("dataset") in doc["benchmarks"], (table["table"], row)
            for key, value in setting.items():
                if key in SETTING_VALUES:
                    assert value in SETTING_VALUES[key], (key, value)
            metrics = row["metrics"]
            known = KNOWN_KEYS.get(family) or {m.name for m in get_benchmark(family).metrics}  # else: its declared metrics
            assert metrics and set(metrics) <= known, (table["table"], row)
            for value in [*metrics.values(), *(row.get("extra") or {}).values()]:
                assert isinstance(value, int | float) and not isinstance(value, bool)
                assert 0 <= value <= 100, row
    assert set(doc["model_aliases"]) <= models, "an alias names a model no row has"
    loaded = [r for r in load_paper_numbers() if r.paper == doc["paper"]]
    assert len(loaded) == n_rows


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|") if c.strip()]


def _contiguous(needle: list[str], hay: list[str]) -> bool:
    return any(hay[i:i + len(needle)] == needle for i in range(len(hay) - len(needle) + 1))


def test_familytool_numbers_are_the_papers(tmp_path):
    """Each transcribed row is a run of cells of a line of the paper's text (Table 10 by row and column)."""
    text = PAPERS / "familytool.txt"
    if not text.is_file():
        pytest.skip(f"{text} not found")
    lines = [_cells(x) for x in text.read_text().splitlines() if "|" in x]
    doc = yaml.safe_load(_paper_file("familytool-b").read_text())
    checked = 0
    for table in doc["tables"]:
        if table["table"] == 10:
            header = next(c for c in lines if c and c[0].startswith("LLM-KG"))
            tool_models = header[2:]
            for row in table["rows"]:
                kg_line = next(c for c in lines if c[0] == row["setting"]["kg_model"] and len(c) == 9)
                assert kg_line[1 + tool_models.index(row["model"])] == f"{row['metrics']['tool_em']:.2f}", row
                checked += 1
            continue
        for row in table["rows"]:
            values = [f"{v:.2f}" for v in row["metrics"].values()]
            assert any(c[0] == row["model"] and _contiguous(values, c[1:]) for c in lines), (table["table"], row)
            checked += 1
    assert checked == sum(len(t["rows"]) for t in doc["tables"])


def test_toolhop_numbers_are_the_summarys():
    text = PAPERS / "toolhop-summary.txt"
    if not text.is_file():
        pytest.skip(f"{text} not found")
    lines = [_cells(x) for x in text.read_text().splitlines() if x.startswith("|")]
    doc = yaml.safe_load(_paper_file("toolhop").read_text())
    for table in doc["tables"]:
        for row in table["rows"]:
            values = [f"{v:.2f}" for v in [*row["metrics"].values(), *(row.get("extra") or {}).values()]]
            assert any(c[0] == row["model"] and set(values) <= set(c[1:]) for c in lines), row


# ---- matching runs to paper rows ------------------------------------------------------------------
def test_model_specs_are_normalised_to_compare_with_the_papers_names():
    assert normalize_model("openai:gpt-4o") == "gpt-4o"
    assert normalize_model("vllm:Qwen/Qwen2.5-7B-Instruct") == "qwen2.5-7b-instruct"
    assert normalize_model("vllm:/models/Qwen3-8B/") == "qwen3-8b"
    assert normalize_model("openai:qwen2.5:7b") == "qwen2.5:7b"  # only the provider prefix goes
    assert normalize_model("anthropic:claude-3-5-sonnet-20240620") == "claude-3-5-sonnet-20240620"


def _run(model: str, strategy: str, benchmark: str = "familytool-b", **options) -> dict:
    return {"run_dir": "r", "benchmark": benchmark, "model": model, "strategy": strategy, "tasks": 1,
            "completed": 1, "errored": 0, "metrics": {}, "options": options}


def test_paper_rows_are_found_by_model_dataset_and_setting():
    rows = load_paper_numbers()
    pairs = paper_rows_for(_run("openai:gpt-4o", "kgetool"), rows)
    same = [r for r, s in pairs if s]
    assert pairs[: len(same)] == [(r, True) for r in same]  # same setting first
    by_tables = {r.tables: r for r in same}
    assert by_tables[(5, 7, 10)].metrics == {"tool_em": 19.67, "tool_acc": 76.81, "value_acc": 23.64}
    assert by_tables[(3, 6)].metrics["kg_em"] == 61.90
    assert all(r.model == "GPT-4o" and r.setting["dataset"] == "familytool-b" for r, _ in pairs)
    # Relation Retrieval is another setting; a run that states it gets Table 7's RR row instead
    rr = [r for r, s in paper_rows_for(_run("openai:gpt-4o", "kgetool", kg_search="retrieval"), rows) if s]
    assert {r.tables for r in rr} == {(6,), (7,)} and all(r.setting["path_extraction"] == "retrieval" for r in rr)
    # our own step-2 input is not the paper's: a run with it matches no row
    assert not [r for r, s in paper_rows_for(_run("openai:gpt-4o", "kgetool", tool_step="project"), rows) if s]
    # a cross-LLM row matches a run whose step-1 model is that LLM
    cross = [r for r, s in paper_rows_for(_run("openai:gpt-4o", "kgetool", kg_model="openai:o3-mini"), rows) if s]
    assert [(r.tables, r.metrics) for r in cross if "kg_model" in r.setting] == [((10,), {"tool_em": 19.88})]
    # the agent strategy is not the paper's: every row is "another setting"
    agent = paper_rows_for(_run("vllm:Qwen/Qwen2.5-7B-Instruct", "agent", "familytool-e"), rows)
    assert agent and not any(s for _, s in agent) and {r.model for r, _ in agent} == {"Qwen2.5-7B"}
    assert paper_rows_for(_run("anthropic:claude-3-5-sonnet-20240620", "kgetool"), rows) == []
    assert paper_rows_for(_run("oracle", "agent"), rows) == []
    # the ablation strategies are the paper's golden and full KG tables
    golden = [r.tables for r, s in paper_rows_for(_run("openai:gpt-4o", "golden-kg", "familytool-e"), rows) if s]
    assert golden == [(4,)]  # not Table 9: its KG holds true values instead of placeholders
    assert [r.tables for r, s in paper_rows_for(_run("openai:gpt-4o", "full-kg"), rows) if s] == [(8,)]
    # ToolHop: the mode and feedback a run states; the 14-model average is no model
    th = paper_rows_for(_run("openai:gpt-4o", "forced", "toolhop", mode="forced", feedback="detailed"), rows)
    assert [(r.metrics, s) for r, s in th if s] == [({"answer_accuracy": 49.04}, True)]
    assert not any(r.aggregate for r, _ in th)
    minimal = paper_rows_for(_run("openai:gpt-4o", "forced-minimal", "toolhop", mode="forced", feedback="minimal"), rows)
    assert not any(s for _, s in minimal)  # the feedback ablation does not say its scenario


# ---- rendering -------------------------------------------------------------------------------------------
def _summaries() -> list[dict]:
    a = {
        "run_dir": "runs/a", "benchmark": "familytool-b", "model": "openai:gpt-4o", "strategy": "kgetool",
        "tasks": 483, "completed": 480, "errored": 3,
        "metrics": {"tool_em": 61.2, "tool_acc": 90.1, "value_acc": 70.3, "kg_em": 40.0, "kg_format_error": 1.2},
        "project_strict_metrics": {"tool_em": 55.5, "tool_acc": 90.1, "value_acc": 65.0},
        "breakdowns": {"hops": {"1": {"tasks": 106, "tool_em": 70.0}, "2": {"tasks": 361, "tool_em": 60.0},
                                "10": {"tasks": 3, "tool_em": 33.33}},
                       "speaker": {"Bob": {"tasks": 300, "tool_em": 50.0}, "Alice": {"tasks": 183, "tool_em": 44.4}}},
        "matchers": {"rule": 400, "response": 10, "llm": 2},
        "options": {"kg_search": "greedy"},
    }
    b = {
        "run_dir": "runs/b", "benchmark": "familytool-b", "model": "vllm:Qwen/Qwen2.5-7B-Instruct", "strategy": "agent",
        "tasks": 483, "completed": 483, "errored": 0,
        "metrics": {"tool_em": 30.25, "tool_acc": 80.0, "value_acc": 40.0, "kg_format_error": 0.5},
        "breakdowns": {"hops": {"1": {"tasks": 106, "tool_em": 40.0}, "2": {"tasks": 361, "tool_em": 28.0},
                                "10": {"tasks": 3, "tool_em": 0.0}}},
    }
    c = {
        "run_dir": "runs/c", "benchmark": "toolhop", "model": "openai:<b>gpt-4o</b>|x", "strategy": "free",
        "tasks": 995, "completed": 995, "errored": 0,
        "metrics": {"answer_accuracy": 45.67, "param_omission": 3.5, "tasks_with_gold_chain": 990},
        "breakdowns": {"domain": {"film": {"tasks": 20, "answer_accuracy": 50.0}}},
    }
    return [a, b, c]


PUBLISHED_KGETOOL_B = "Published numbers (FamilyTool Tables 5, 7, 10), familytool-b · kgetool · path_extraction=greedy"


def _table(md: str, title: str) -> list[list[str]]:
    """The rows of the Markdown table under ``**title**`` (header first, separator dropped)."""
    block = md.split(f"**{title}**\n\n", 1)[1].split("\n\n", 1)[0]
    rows = [_cells(x.replace("\\|", "\0")) for x in block.splitlines()]
    return [[c.replace("\0", "|") for c in r] for r in rows if not set("".join(r)) <= set(":-")]


def test_markdown_sets_runs_side_by_side_per_benchmark_with_breakdowns_and_paper_rows():
    md = render_markdown(_summaries(), load_paper_numbers(), plot_files={"familytool-b": "hops-familytool-b.svg"})
    assert md.index("## familytool-b") < md.index("## toolhop")
    metrics = _table(md, "Metrics")
    assert metrics[0] == ["metric", "openai:gpt-4o · kgetool", "vllm:Qwen/Qwen2.5-7B-Instruct · agent"]
    rows = {r[0]: r[1:] for r in metrics[1:]}
    assert rows["Tool EM ↑ (tool_em)"] == ["**61.20**", "30.25"]  # best of the row in bold
    assert rows["KG Format Error ↓ (kg_format_error)"] == ["1.20", "**0.50**"]  # lower is better
    assert rows["KG extraction EM ↑ (kg_em)"] == ["40.00", "–"]
    assert [r[0] for r in _table(md, "Project strict metrics")[1:]] == [
        "Tool EM (project: rule matcher only) ↑ (tool_em)", "Tool Acc (project) ↑ (tool_acc)",
        "Value Acc (project: rule matcher only) ↑ (value_acc)"]
    assert _table(md, "Matchers")[1] == ["calls matched by the rule matcher (project) (rule)", "400", "–"]
    hops = _table(md, "By hops")
    assert [r[0] for r in hops[1:]] == ["1", "2", "10"]  # numeric order
    assert hops[0][:2] == ["hops", "tasks"] and hops[3][1] == "3"
    assert _table(md, "By speaker")[1][0] == "Alice"
    assert "![familytool-b: accuracy by hop count](hops-familytool-b.svg)" in md
    # the paper's numbers of the GPT-4o run's setting, the run under GPT-4o's row (see the tests below)
    tool_use = _table(md, f"{PUBLISHED_KGETOOL_B} · step=tool_use")
    i = next(n for n, r in enumerate(tool_use) if r[1] == "GPT-4o")
    assert tool_use[i][2:] == ["19.67", "76.81", "23.64"]
    assert tool_use[i + 1] == ["**this run: openai:gpt-4o · kgetool**", "**openai:gpt-4o**", "**61.20**", "**90.10**", "**70.30**"]
    # the same model's rows in other settings, apart
    other = _table(md, "openai:gpt-4o · kgetool: the papers' numbers for the same model on familytool-b, other settings")
    assert other[1][0] == "**this run**" and {r[0] for r in other[2:]} >= {"FamilyTool Table 4", "FamilyTool Table 8"}
    assert not any("Tables 5, 7, 10" in r[0] for r in other)  # the run's own setting is in the published block
    qwen = _table(md, "vllm:Qwen/Qwen2.5-7B-Instruct · agent: the papers' numbers for the same model on familytool-b, other settings")
    assert "28.78" in [c for r in qwen for c in r]
    assert "The papers publish no numbers for familytool-b in the setting of `vllm:Qwen/Qwen2.5-7B-Instruct · agent`" in md
    # the ToolHop run: generic keys, a count shown as a count, a model name that needs escaping
    th = md.split("## toolhop", 1)[1]
    assert "| Answer accuracy ↑ (answer_accuracy) | 45.67 |" in th
    assert "| tasks with a gold call chain (tasks_with_gold_chain) | 990 |" in th
    assert "openai:<b>gpt-4o</b>\\|x · free" in th
    assert "**By domain**" in th and "No published row of this setting is for the model of `openai:<b>gpt-4o</b>|x · free`" in th
    assert "hops-toolhop" not in md  # no hop breakdown, no plot


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def test_html_is_one_self_contained_page_with_inline_svg_plots():
    page = render_html(_summaries(), load_paper_numbers())
    parser = _Tags()
    parser.feed(page)
    names = [t for t, _ in parser.tags]
    assert names.count("svg") == 1  # familytool-b has hop data; toolhop has none
    assert "script" not in names and "link" not in names and "img" not in names
    for _, attrs in parser.tags:  # nothing is fetched: no src, and links only to anchors in the page
        assert "src" not in attrs
        for link in (attrs.get("href"), attrs.get("xlink:href")):
            assert link is None or link.startswith("#"), link
    text = "".join(parser.text)
    assert "openai:<b>gpt-4o</b>|x · free" in text  # escaped in the page, shown as written
    assert "<b>gpt-4o</b>" not in page
    assert "61.20" in text and "19.67" in text and "Tables 5, 7, 10" in text
    assert "Tool EM by hop count" in page  # the plot's title, as SVG text


# ---- the published block: the papers' rows of a run's dataset and setting, every model ------------------
def _section(md: str, heading: str) -> str:
    """The Markdown from ``### heading`` to the next heading."""
    return md.split(f"### {heading}\n\n", 1)[1].split("\n#", 1)[0]


def test_published_block_is_shown_for_a_model_the_papers_do_not_have():
    claude = {**_run("anthropic:claude-3-5-sonnet-20240620", "kgetool"), "metrics": {"tool_em": 50.0}}
    md = render_markdown([claude], load_paper_numbers())
    block = _section(md, "Published numbers: familytool-b · kgetool · path_extraction=greedy")
    tool_use = _table(block, f"{PUBLISHED_KGETOOL_B} · step=tool_use")
    assert tool_use[0][:2] == ["source", "model"] and tool_use[0][2] == "Tool EM ↑ (tool_em)"
    assert [r[1] for r in tool_use[1:]] == ["Llama3.1-8B", "Qwen2.5-7B", "Qwen2.5-32B", "QwQ-32B", "Qwen3-8B",
                                            "Qwen3-32B", "GPT-4o", "DeepSeek-V3"]
    assert not any("this run" in r[0] for r in tool_use)  # nobody to line up
    assert "No published row of this setting is for the model of `anthropic:claude-3-5-sonnet-20240620 · kgetool`" in block
    assert "rows in bold" not in block
    # ToolHop too: a model of no row still gets its setting's rows, the 14-model average included
    th = render_markdown([_run("openai:o1", "free", "toolhop", mode="free", feedback="detailed")], load_paper_numbers())
    rows = _table(th, "Published numbers (ToolHop main results), toolhop · free · feedback=detailed")
    assert [(r[1], r[2]) for r in rows[1:]][:1] == [("GPT-4o", "47.74")] and rows[-1][1:] == ["14-Model Average", "32.84"]


def test_a_run_is_lined_up_under_its_models_published_row_in_the_same_columns():
    gpt = {**_run("openai:gpt-4o", "kgetool"), "run_dir": "runs/g",
           "metrics": {"tool_em": 20.5, "tool_acc": 70.0, "value_acc": 25.0, "kg_em": 60.0, "kg_f1": 75.0}}
    qwen = {**_run("vllm:Qwen/Qwen2.5-7B-Instruct", "kgetool"), "run_dir": "runs/q", "metrics": {"tool_em": 30.0}}
    md = render_markdown([gpt, qwen], load_paper_numbers())
    # two runs of one setting: one block, each run under its own model's row
    assert md.count("### Published numbers: familytool-b · kgetool · path_extraction=greedy") == 1
    tool_use = _table(md, f"{PUBLISHED_KGETOOL_B} · step=tool_use")
    models = [r[1] for r in tool_use]
    i, j = models.index("GPT-4o"), models.index("Qwen2.5-7B")
    assert tool_use[i + 1] == ["**this run: openai:gpt-4o · kgetool**", "**openai:gpt-4o**", "**20.50**", "**70.00**", "**25.00**"]
    assert tool_use[j + 1][:3] == ["**this run: vllm:Qwen/Qwen2.5-7B-Instruct · kgetool**", "**vllm:Qwen/Qwen2.5-7B-Instruct**", "**30.00**"]
    assert tool_use[j + 1][3:] == ["–", "–"] and len(tool_use[j + 1]) == len(tool_use[0])
    # the KG extraction step: its own table, its own columns, the run's KG numbers under GPT-4o's row
    kg = _table(md, "Published numbers (FamilyTool Tables 3, 6), familytool-b · kgetool · path_extraction=greedy · step=kg_extraction")
    k = [r[1] for r in kg].index("GPT-4o")
    assert kg[0][2:4] == ["KG extraction EM ↑ (kg_em)", "KG extraction F1 ↑ (kg_f1)"]
    assert kg[k][2:4] == ["61.90", "76.82"] and kg[k + 1][2:4] == ["**60.00**", "**75.00**"]
    # a cross-LLM run: Table 10's rows of its step-1 model, every tool-use model, the run under its own
    cross = render_markdown([{**_run("openai:gpt-4o", "kgetool", kg_model="openai:o3-mini"), "metrics": {"tool_em": 19.0}}],
                            load_paper_numbers())
    assert "### Published numbers: familytool-b · kgetool · path_extraction=greedy · kg_model=openai:o3-mini" in cross
    t10 = _table(cross, "Published numbers (FamilyTool Table 10), familytool-b · kgetool · path_extraction=greedy · step=tool_use")
    assert len(t10) == 1 + 8 + 1 and t10[[r[1] for r in t10].index("GPT-4o")][2] == "19.88"
    assert t10[[r[1] for r in t10].index("GPT-4o") + 1][2] == "**19.00**"
    # the page marks the run's rows
    page = render_html([gpt, qwen], load_paper_numbers())
    assert page.count('<tr class="self"><td>this run: openai:gpt-4o · kgetool</td>') == 2  # tool use and KG tables


def test_published_block_is_labelled_with_its_source_tables():
    md = render_markdown([_run("openai:gpt-4o", "full-kg")], load_paper_numbers())
    block = _section(md, "Published numbers: familytool-b · full-kg")
    assert "**Published numbers (FamilyTool Table 8), familytool-b · full-kg · step=tool_use**" in block
    rows = _table(block, "Published numbers (FamilyTool Table 8), familytool-b · full-kg · step=tool_use")
    assert {r[0] for r in rows[1:] if not r[0].startswith("**")} == {"FamilyTool Table 8"}
    assert "_As published; rows in bold are this report's runs" in block
    assert "FamilyTool Table 8: Tool use given the full KG (no extraction step), FamilyTool-b." in block
    page = render_html([_run("openai:gpt-4o", "full-kg")], load_paper_numbers())
    assert "<h3>Published numbers: familytool-b · full-kg</h3>" in page
    assert "<caption>Published numbers (FamilyTool Table 8), familytool-b · full-kg · step=tool_use</caption>" in page


def test_published_block_holds_only_the_runs_dataset_and_setting():
    rows = load_paper_numbers()
    golden_e = published_rows_for(_run("openai:gpt-4o", "golden-kg", "familytool-e"), rows)
    assert golden_e and {r.tables for r in golden_e} == {(4,)}  # not Table 9 (true values), not familytool-b
    assert all(r.setting["dataset"] == "familytool-e" and r.setting["strategy"] == "golden-kg" for r in golden_e)
    md = render_markdown([_run("openai:gpt-4o", "golden-kg", "familytool-e")], rows)
    block = _section(md, "Published numbers: familytool-e · golden-kg")
    gpt = next(r for r in _table(block, "Published numbers (FamilyTool Table 4), familytool-e · golden-kg · step=tool_use") if r[1] == "GPT-4o")
    assert gpt[2:] == ["36.26", "81.75", "40.44"]  # FamilyTool-e's, not -b's 26.29
    assert "26.29" not in block and "29.89" not in block  # -b's golden-kg row, Table 9's true-values row
    # ToolHop: the forced scenario's rows, not free's, not the minimal-feedback ablation
    th = published_rows_for(_run("openai:gpt-4o", "forced", "toolhop", mode="forced", feedback="detailed"), rows)
    assert [(r.model, r.metrics["answer_accuracy"]) for r in th][:2] == [("GPT-4o", 49.04), ("GPT-4-Turbo", 47.94)]
    assert all(r.setting["strategy"] == "forced" and r.setting["dataset"] == "toolhop" for r in th)
    # Relation Retrieval: Tables 6 and 7's RR rows only
    rr = published_rows_for(_run("openai:o1", "kgetool", kg_search="retrieval"), rows)
    assert {r.tables for r in rr} == {(6,), (7,)} and all(r.setting["path_extraction"] == "retrieval" for r in rr)
    # a setting the papers have no numbers for: a block that says so
    agent = render_markdown([_run("openai:gpt-4o", "agent")], rows)
    assert published_rows_for(_run("openai:gpt-4o", "agent"), rows) == []
    assert "### Published numbers: familytool-b · strategy agent" in agent
    assert "their settings for familytool-b are the strategies full-kg, golden-kg, kgetool." in agent


def test_hop_plot_has_one_line_per_run_and_none_without_hop_data():
    runs = _summaries()
    svg = hop_plot_svg(runs[:2], "familytool-b")
    assert svg.startswith("<svg") and "openai:gpt-4o · kgetool" in svg and "vllm:Qwen/Qwen2.5-7B-Instruct · agent" in svg
    assert "(n=361)" in svg
    assert hop_plot_svg(runs[2:], "toolhop") is None


def test_write_report_writes_markdown_html_json_and_the_plot(tmp_path):
    paths = write_report(["runs/a", "runs/b", "runs/c"], tmp_path / "out", summaries=_summaries())
    out = tmp_path / "out"
    assert paths["markdown"] == str(out / "report.md") and paths["plots"] == [str(out / "hops-familytool-b.svg")]
    assert (out / "hops-familytool-b.svg").read_text().startswith("<?xml")
    assert "(hops-familytool-b.svg)" in (out / "report.md").read_text()
    data = json.loads((out / "report.json").read_text())
    assert [r["run_dir"] for r in data["runs"]] == ["runs/a", "runs/b", "runs/c"]
    assert any(p["tables"] == [5, 7, 10] and p["same_setting"] for p in data["runs"][0]["paper"])
    published = data["runs"][0]["published"]  # every model's row of the run's setting
    assert [p["model_matches"] for p in published if p["model"] == "GPT-4o"] == [True, True]
    assert len({p["model"] for p in published}) > 5 and data["runs"][1]["published"] == []  # agent: none


# ---- a real run, through the command line ------------------------------------------------------------
def _report_cli(argv: list[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="evals")
    add_report_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = args.func(args)
    return rc, out.getvalue(), err.getvalue()


def test_report_of_a_real_oracle_run(data_dir, tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle", "--limit", "3",
         "--run-dir", str(run), "--no-progress", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    rc, out, err = _report_cli(["report", str(run), "--out", str(tmp_path / "report"), "--json"])
    assert rc == 0, err
    paths = json.loads(out.strip().splitlines()[-1])
    md, page = Path(paths["markdown"]), Path(paths["html"])
    assert md.is_file() and page.is_file() and Path(paths["json"]).is_file()
    md_text, html_text = md.read_text(), page.read_text()
    for text in (md_text, html_text):
        assert "familytool-b" in text and "oracle · agent" in text and str(run) in text
        for value in summary["metrics"].values():
            assert f"{value:.2f}" in text
    assert f"| tasks | {summary['tasks']} |" in md_text and f"| completed | {summary['completed']} |" in md_text
    # one run: the default output directory is the run's report/, and paths go to stdout
    rc, out, _ = _report_cli(["report", str(run)])
    assert rc == 0 and out.splitlines()[0] == str(run / "report" / "report.md")
    assert (run / "report" / "report.html").is_file()
    # the same run as if its benchmark were no longer registered: summarised from its stored scores
    old = tmp_path / "old"
    shutil.copytree(run, old, ignore=shutil.ignore_patterns("report"))
    config = json.loads((old / "config.json").read_text())
    (old / "config.json").write_text(json.dumps({**config, "benchmark": "retired-bench"}))
    rc, out, err = _report_cli(["report", str(old), "--out", str(tmp_path / "old-report")])
    assert rc == 0, err
    old_md = (tmp_path / "old-report" / "report.md").read_text()
    assert "## retired-bench" in old_md and "benchmark not registered" in old_md
    old_metrics = {r[0]: r[1] for r in _table(old_md, "Metrics")[1:]}
    assert old_metrics["tool_em"].split(" ± ")[0] == f"{summary['metrics']['tool_em']:.2f}"  # generic label: the key


def test_report_of_a_directory_that_is_no_run_says_so(tmp_path):
    rc, out, err = _report_cli(["report", str(tmp_path)])
    assert rc == 2 and "is not a run directory" in err and out == ""


def test_runs_of_the_same_model_and_strategy_are_told_apart_by_their_directory():
    a, b, _ = _summaries()
    md = render_markdown([a, {**a, "run_dir": "runs/a2"}, b])
    assert _table(md, "Runs")[0] == ["run", "openai:gpt-4o · kgetool (a)", "openai:gpt-4o · kgetool (a2)",
                                     "vllm:Qwen/Qwen2.5-7B-Instruct · agent"]


# ---- benchmark-neutral: standard errors, the judge's cost, unregistered benchmarks ----------------------------
def _with_stats() -> dict:
    return {
        **_run("openai:gpt-4o", "kgetool"), "run_dir": "runs/s", "tasks": 25, "completed": 25,
        "metrics": {"tool_em": 48.0, "value_acc": 61.5},
        "metric_stats": {"tool_em": {"value": 48.0, "stderr": 3.1, "tasks": 25, "samples": 25.0, "over": "tasks"},
                         "value_acc": {"value": 61.5, "stderr": 2.4567, "tasks": 25, "samples": 60.0, "over": "gold parameters"}},
        "totals": {"model": {"turns": 50, "input_tokens": 120000.0, "output_tokens": 3400.0, "cost_usd": 1.2345},
                   "judge": {"decisions": 7, "asked": 5, "missing": 1, "input_tokens": 9000.0, "output_tokens": 70.0,
                             "cost_usd": 0.0567}},
    }


def test_metrics_are_shown_with_their_standard_error_and_what_they_were_computed_over():
    run = _with_stats()
    other = {**_run("vllm:Qwen/Qwen2.5-7B-Instruct", "kgetool"), "run_dir": "runs/q", "metrics": {"tool_em": 30.0}}
    md = render_markdown([run, other], load_paper_numbers())
    metrics = _table(md, "Metrics")
    assert metrics[0] == ["metric", "openai:gpt-4o · kgetool", "vllm:Qwen/Qwen2.5-7B-Instruct · kgetool", "over"]
    rows = {r[0]: r[1:] for r in metrics[1:]}
    assert rows["Tool EM ↑ (tool_em)"] == ["**48.00 ± 3.10**", "30.00", "25 tasks / –"]
    assert rows["Value Acc ↑ (value_acc)"] == ["61.50 ± 2.46", "–", "60 gold parameters (25 tasks) / –"]
    assert "± their standard error" in md
    # one run: the "over" cell is the run's alone
    single = {r[0]: r[1:] for r in _table(render_markdown([run]), "Metrics")[1:]}
    assert single["Tool EM ↑ (tool_em)"] == ["48.00 ± 3.10", "25 tasks"]
    # the run under its model's published row carries its standard error too
    tool_use = _table(md, f"{PUBLISHED_KGETOOL_B} · step=tool_use")
    i = [r[1] for r in tool_use].index("GPT-4o")
    assert tool_use[i + 1][2] == "**48.00 ± 3.10**"
    assert "48.00 ± 3.10" in render_html([run])


def test_the_judges_tokens_and_cost_are_shown_apart_from_the_models():
    md = render_markdown([_with_stats()])
    cost = {r[0]: r[1:] for r in _table(md, "Tokens and cost")[1:]}
    assert cost["model cost (USD)"] == ["1.2345"] and cost["model input tokens"] == ["120000"]
    assert cost["judge cost (USD)"] == ["0.0567"] and cost["judge input tokens"] == ["9000"]
    assert cost["judge decisions"] == ["7"] and cost["judge decisions asked now"] == ["5"]
    assert cost["judge decisions missing"] == ["1"]
    page = render_html([_with_stats()])
    assert "<td>judge cost (USD)</td><td>0.0567</td>" in page and "<td>model cost (USD)</td><td>1.2345</td>" in page
    assert "Tokens and cost" not in render_markdown(_summaries()[:1])  # an old summary without totals


def test_a_benchmark_not_in_the_registry_renders_with_generic_labels(tmp_path):
    old = {
        "run_dir": "runs/old", "benchmark": "retired-bench", "model": "openai:gpt-4o", "strategy": "plain",
        "tasks": 40, "completed": 39, "errored": 1,
        "metrics": {"accuracy": 55.0, "calls": 80},
        "strict_metrics": {"accuracy": 50.0},
        "metric_stats": {"accuracy": {"value": 55.0, "stderr": 7.87, "tasks": 40, "samples": 40.0, "over": "tasks"}},
        "breakdowns": {"hops": {"2": {"tasks": 20, "accuracy": 60.0}, "3": {"tasks": 20, "accuracy": 50.0}}},
        "totals": {"model": {"cost_usd": 0.5}, "judge": {"cost_usd": 0.25}},
    }
    md = render_markdown([old, {**old, "run_dir": "runs/old2", "metrics": {"accuracy": 45.0}, "metric_stats": {}}],
                         load_paper_numbers())
    assert "## retired-bench" in md
    rows = {r[0]: r[1:] for r in _table(md, "Metrics")[1:]}
    assert rows["accuracy"] == ["55.00 ± 7.87", "45.00", "40 tasks / –"]  # the key as label, no direction, no bold
    assert rows["calls"][0] == "80"
    assert [r[0] for r in _table(md, "Strict metrics")[1:]] == ["accuracy"]
    assert "no published numbers are recorded for retired-bench" in md
    assert "Sources of the published numbers" not in md
    assert main_metric("retired-bench", [old]) == "accuracy"  # the hop plot's metric: the first the hops have
    paths = write_report([], tmp_path, summaries=[old])
    assert paths["plots"] == [str(tmp_path / "hops-retired-bench.svg")]
    assert "retired-bench" in Path(paths["html"]).read_text()


def test_paper_numbers_synonyms_and_defaults_come_from_the_benchmark():
    rows = load_paper_numbers()
    mandatory = published_rows_for(_run("openai:gpt-4o", "mandatory", "toolhop"), rows)
    assert [(r.model, r.metrics["answer_accuracy"]) for r in mandatory][:1] == [("GPT-4o", 49.04)]
    rr = published_rows_for(_run("openai:o1", "kgetool", kg_search="RR"), rows)
    assert {r.tables for r in rr} == {(6,), (7,)}
    for name in ("familytool-b", "familytool-e", "toolhop"):
        pn = get_benchmark(name).paper_numbers
        assert pn.path.is_file() and pn.main_metric in {m.name for m in get_benchmark(name).metrics}


def test_the_report_package_names_no_benchmark():
    """Everything benchmark-specific comes from the registry: no name, setting key or main metric of one
    appears in the report's source."""
    forbidden = {"familytool", "toolhop"}
    for info in all_benchmarks().values():
        forbidden.add(info.name)
        pn = info.paper_numbers
        if pn is not None:
            forbidden |= {pn.main_metric, *pn.model_keys, *pn.defaults, *pn.synonyms, *map(str, pn.synonyms.values())}
    package = Path(evals.report.__file__).parent
    sources = sorted(package.glob("*.py"))
    assert {p.name for p in sources} >= {"__init__.py", "paper.py", "tables.py", "render.py", "cli.py"}
    for path in sources:
        text = path.read_text().lower()
        found = sorted(w for w in forbidden if re.search(rf"(?<![a-z0-9_]){re.escape(w.lower())}(?![a-z0-9_])", text))
        assert not found, f"{path.name} names {found}"


def test_a_model_or_judge_without_a_price_costs_unknown_not_zero():
    run = _with_stats()
    run["totals"] = {"model": {**run["totals"]["model"], "cost_usd": 0.0, "cost_known": False},
                     "judge": {**run["totals"]["judge"], "cost_usd": 0.01, "cost_known": False}}
    cost = {r[0]: r[1:] for r in _table(render_markdown([run, _with_stats()]), "Tokens and cost")[1:]}
    assert cost["model cost (USD)"] == ["unknown", "1.2345"] and cost["judge cost (USD)"] == ["unknown", "0.0567"]
