"""`evals view` and `evals leaderboard` over task-file runs, in a real browser (tests/evals/conftest.py).

Three runs of `evals run taskfile` (tests/evals/view_runs.py): the family example's ten tasks by the
oracle, and a second task file (the first four of them) by the oracle and by a scripted model with
known mistakes (f01's answer; f03 misses the gold call `find`, so the reference to its result stays
unresolved). Every run has the setting `agent` and none of the models has a price.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from view_runs import MINI_TASKS, serve_view, taskfile_runs

from evals.view.compare import CompareError
from evals.view.site import Site


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return taskfile_runs(tmp_path_factory.mktemp("taskfile-view"))


@pytest.fixture(scope="module")
def server(runs: Path) -> Iterator[str]:
    with serve_view(runs) as url:
        yield url


GROUP = "section.card:has(table.leader)"  # a leaderboard group


def _row(page: Any, run_id: str) -> Any:
    return page.locator(f"table.runs tr:has(input[aria-label='select {run_id}'])")


def _models(group: Any) -> list[str]:
    return [str(x) for x in group.locator("tbody tr td:nth-child(2)").all_inner_texts()]


def _leaderboard(runs: Path, fmt: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "leaderboard", str(runs), "--format", fmt],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_runs_of_two_task_files_are_ranked_listed_and_compared_apart(runs, server, page):
    # the leaderboard page: a group per task file, each oracle in its own
    page.goto(server + "#/leaderboard")
    page.wait_for_selector(GROUP)
    titles = page.locator(GROUP + " h3").all_inner_texts()
    assert len(titles) == 2, titles
    assert any("family_tasks.yaml" in t for t in titles) and any("mini_tasks.yaml" in t for t in titles)
    assert _models(page.locator(GROUP, has_text="family_tasks.yaml")) == ["oracle"]
    mini = page.locator(GROUP, has_text="mini_tasks.yaml")
    assert _models(mini) == ["oracle", "openai:m"]
    assert mini.locator("tbody tr").first.locator("td").nth(6).inner_text() == str(MINI_TASKS)  # its own oracle run
    # the runs list: each run names its task file; a quick comparison only of the runs of one file
    page.goto(server)
    page.wait_for_selector("table.runs tbody tr")
    assert "family_tasks.yaml" in _row(page, "family-oracle").locator("td").nth(1).inner_text()
    quick = page.locator("p.quick a").all_inner_texts()
    assert quick == [next(q for q in quick if "mini_tasks.yaml" in q)] and quick[0].startswith("Compare all 2 ")
    page.check("input[aria-label='select mini-oracle']")
    page.check("input[aria-label='select family-oracle']")
    assert page.locator("button.primary").is_disabled()
    assert "different task sets" in page.locator("#cmp-hint").inner_text()
    # a comparison asked for anyway is refused, with the reason
    page.goto(server + "#/compare/mini-oracle,family-oracle")
    page.wait_for_selector(".card.error")
    reason = page.locator(".card.error pre").inner_text()
    assert "different task sets" in reason and "mini_tasks.yaml" in reason and "family_tasks.yaml" in reason
    page.goto(server + "#/compare/mini-oracle,mini-model")
    page.wait_for_selector("#flips tbody tr")
    assert "mini_tasks.yaml" in page.locator("h1").inner_text()


def test_the_leaderboard_command_groups_by_task_file_also_for_runs_written_before_the_key(runs, tmp_path):
    groups = json.loads(_leaderboard(runs, "json"))["groups"]
    by_file = {g["dataset"]["name"]: [r["model"] for r in g["rows"]] for g in groups}
    assert by_file == {"family_tasks.yaml": ["oracle"], "mini_tasks.yaml": ["oracle", "openai:m"]}
    config = json.loads((runs / "mini-oracle" / "config.json").read_text())
    assert config["dataset"] == {"name": "mini_tasks.yaml", "sha256": config["data"]["mini_tasks.yaml"]}
    # runs whose config.json has no "dataset" (written before it existed): the same groups, from "options" and "data"
    old = tmp_path / "old"
    shutil.copytree(runs, old)
    for cfg_path in old.glob("*/config.json"):
        cfg = json.loads(cfg_path.read_text())
        del cfg["dataset"]
        cfg_path.write_text(json.dumps(cfg))
    again = json.loads(_leaderboard(old, "json"))["groups"]
    assert [(g["dataset"], [r["model"] for r in g["rows"]]) for g in again] == [
        (g["dataset"], [r["model"] for r in g["rows"]]) for g in groups]
    with pytest.raises(CompareError, match="different task sets"):
        Site([old]).compare(["mini-oracle", "family-oracle"])


def test_answer_accuracy_is_a_column_and_an_unpriced_model_costs_unknown(runs, server, page):
    page.goto(server)
    page.wait_for_selector("table.runs tbody tr")
    headline = _row(page, "mini-model").locator(".headline .metric").all_text_contents()
    assert "Answer accuracy ↑50.00 ± 50.00" in headline, headline  # f01 wrong, f02 right (f03, f04 have no answer)
    costs = [_row(page, r).locator("td").nth(7).evaluate("c => c.firstChild.textContent")
             for r in ("family-oracle", "mini-oracle", "mini-model")]
    assert costs == ["unknown"] * 3
    page.goto(server + "#/run/mini-model")
    page.wait_for_selector("#tasks tbody tr")
    assert page.locator(".stat", has_text="cost").locator(".value").inner_text() == "unknown"
    page.goto(server + "#/leaderboard")
    page.wait_for_selector(GROUP)
    header = page.locator(GROUP).first.locator("thead th").all_text_contents()
    assert "Answer accuracy ↑" in header, header
    assert {t for t in page.locator("table.leader tbody tr td:last-child").all_inner_texts()} == {"unknown"}
    # the command: unknown in the table and CSV, null with cost_known false in JSON; never 0
    table = _leaderboard(runs, "table")
    assert "Answer accuracy" in table and "0.0000" not in table
    assert all(line.rstrip().endswith("unknown") for line in table.splitlines() if line.startswith(("1 ", "2 ")))
    header, *csv_rows = (dict(enumerate(line.split(","))) for line in _leaderboard(runs, "csv").splitlines())
    col = {name: i for i, name in header.items()}
    assert "answer_accuracy" in col and [r[col["cost_usd"]] for r in csv_rows] == ["unknown"] * 3
    assert sorted(r[col["dataset"]] for r in csv_rows) == ["family_tasks.yaml", "mini_tasks.yaml", "mini_tasks.yaml"]
    rows = [r for g in json.loads(_leaderboard(runs, "json"))["groups"] for r in g["rows"]]
    assert all(r["cost_usd"] is None and r["cost_known"] is False for r in rows)
    assert {r["model"]: r["metrics"]["answer_accuracy"]["value"] for r in rows if r["tasks"] == MINI_TASKS} == {
        "oracle": 100.0, "openai:m": 50.0}


def _open_fresh(page: Any, url: str) -> None:
    """Load ``url`` as a new document: going to another ``#/...`` of the same page only changes the hash,
    and the episode drawn before stays (its ``.transcript`` included) until the new one replaces it."""
    page.goto("about:blank")
    page.goto(url)


def _diff(page: Any, key: str) -> list[str]:
    return page.locator(".calls-section table.diff tr", has=page.locator(f"td:first-child code:text-is('{key}')")) \
        .first.locator("td").all_inner_texts()


def test_a_task_file_episode_shows_gold_beside_predicted_with_references_resolved_or_named(runs, server, page):
    page.goto(server + "#/run/mini-model/task/f03")
    page.wait_for_selector(".transcript")
    assert page.locator(".calls-section .pair").count() == 3  # two gold calls, and the call no gold call asks for
    assert page.locator(".goldcall code.fn").all_inner_texts() == ["kg_search_path", "book_restaurant"]
    # the gold `find` call was missed: the reference to its result is named, not a marker
    cells = _diff(page, "restaurant")
    assert cells[1] == '<unresolved: the result of gold call "find", at paths.0.1.2>' and cells[2] == "restaurant_0001"
    assert cells[3] == "≠"
    assert "\u0000" not in page.locator("main").inner_text() and "\\u0000" not in page.locator("main").inner_text()
    assert "References: gold call 2 (book_restaurant) restaurant" in page.locator(".calls-section").inner_text()
    assert "a call no gold call asks for" in page.locator(".calls-section").inner_text()  # its kg_neighbors call
    # the scorer's details (shown raw under "scorer details") name it too, never the bare marker
    details = Site([runs]).episode("mini-model", "f03")["details"]
    assert '"<unresolved: the result of gold call \\"find\\", at paths.0.1.2>"' in details and "\\u0000" not in details
    # the oracle's episode: the reference resolved, equal to the predicted value
    _open_fresh(page, server + "#/run/mini-oracle/task/f03")
    page.wait_for_selector(".transcript")
    assert _diff(page, "restaurant")[1:] == ["restaurant_0007", "restaurant_0007", "="]
    assert page.locator(".decision").all_inner_texts()[1].startswith("match")
    # the gold answer beside the final answer
    _open_fresh(page, server + "#/run/mini-model/task/f01")
    page.wait_for_selector(".transcript")
    answers = page.locator("section.card", has_text="Gold answer and final answer").locator("tbody tr")
    assert answers.nth(0).locator("td").all_inner_texts() == ["gold (normalized)", "Lena", ""]
    assert answers.nth(1).locator("td").all_inner_texts() == ["final answer", "Rosa", "wrong"]
