"""`evals view` in a real browser (Debian chromium driven headless by Playwright) over real runs.

Two FamilyTool runs of a scripted OpenAI-compatible model (tests/evals/view_runs.py) through the MCP
server: run A gets tasks 1 and 5 wrong, run B tasks 1 and 3 (each passes a person's name where the
gold call has the entity at the end of the KG path). The app is served on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from view_runs import scripted_run, serve_view, wrong_arguments

from client import eventloop
from evals.benchmarks.familytool.data import load_tasks

LIMIT = 8
WRONG_A = {1, 5}
WRONG_B = {1, 3}


@pytest.fixture(scope="module")
def runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("view-runs")
    eventloop.run(scripted_run(root / "run-a", limit=LIMIT, wrong=WRONG_A, model="model-a"))
    eventloop.run(scripted_run(root / "run-b", limit=LIMIT, wrong=WRONG_B, model="model-b"))
    return root


@pytest.fixture(scope="module")
def tasks(data_dir: Path) -> list[Any]:
    return load_tasks("b")[:LIMIT]


@pytest.fixture(scope="module")
def server(runs: Path) -> Iterator[str]:
    with serve_view(runs) as url:
        yield url


def test_a_failed_task_is_under_the_failed_filter_and_its_transcript_shows_gold_and_predicted(server, page, tasks):
    failed = tasks[5]
    page.goto(server + "#/run/run-a")
    page.wait_for_selector("#tasks tbody tr")
    assert page.locator("#tasks tbody tr").count() == LIMIT
    page.select_option("#task-filter", "failed:tool_em")
    rows = page.locator("#tasks tbody tr")
    assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.task)")) == sorted(tasks[i].id for i in WRONG_A)
    # the free text filter narrows to one task
    page.fill("#task-search", failed.id)
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.task)") == [failed.id]
    page.click(f"#tasks tbody tr[data-task='{failed.id}'] a")
    page.wait_for_selector(".calls-section")
    gold = failed.gold_calls[0]
    wrong = wrong_arguments(failed)
    key = next(k for k in gold.arguments if gold.arguments[k] != wrong[k])
    differing = page.locator(".calls-section table.diff tr.differs")
    assert differing.count() == 1
    cells = differing.locator("td").all_inner_texts()
    assert cells[0] == key and cells[1] == str(gold.arguments[key]) and cells[2] == str(wrong[key])
    assert page.locator(".goldcall code.fn").inner_text() == gold.name
    assert page.locator(".predcall code.fn").inner_text() == gold.name
    assert "no match" in page.locator(".decision").inner_text()
    # the transcript shows the call as the model made it, and the KG path the episode walked
    assert f'"{wrong[key]}"' in page.locator(".transcript").inner_text()
    assert page.locator(".chain").count() >= 2


def test_model_output_with_markup_is_shown_as_text(server, page, tasks):
    page.goto(server + f"#/run/run-a/task/{tasks[0].id}")
    page.wait_for_selector(".transcript .item.response")
    text = page.locator(".transcript .item.response pre.text").first.inner_text()
    assert "<script>window.__pwned = 1</script>" in text and 'onerror="window.__pwned = 2"' in text
    assert page.evaluate("window.__pwned") is None
    assert page.locator(".transcript img").count() == 0 and page.locator(".transcript script").count() == 0


def test_a_comparison_of_two_runs_lists_the_flipped_tasks_and_a_test(server, page, tasks):
    page.goto(server)
    page.wait_for_selector("table.runs tbody tr")
    page.check("input[aria-label='select run-a']")
    page.check("input[aria-label='select run-b']")
    page.click("button.primary")
    page.wait_for_selector("#flips tbody tr")
    flipped = page.locator("#flips tbody tr").evaluate_all("rs => rs.map(r => r.dataset.task)")
    assert sorted(flipped) == sorted(tasks[i].id for i in WRONG_A ^ WRONG_B)
    table = page.locator("table.compare").first.inner_text()
    assert "McNemar (exact)" in table and "95% CI" in table.upper()
    page.select_option("#cmp-which", "allwrong")
    both = page.locator("#flips tbody tr").evaluate_all("rs => rs.map(r => r.dataset.task)")
    assert both == [tasks[i].id for i in sorted(WRONG_A & WRONG_B)]


def test_the_static_export_opens_from_disk(runs, browser, tmp_path, tasks):
    out = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "view", str(runs), "--export", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "index.html").is_file() and not any(p.suffix == ".py" for p in out.rglob("*"))
    pg = browser.new_page()
    try:
        pg.goto((out / "index.html").as_uri() + "#/compare/run-a,run-b")
        pg.wait_for_selector("#flips tbody tr")
        flipped = pg.locator("#flips tbody tr").evaluate_all("rs => rs.map(r => r.dataset.task)")
        assert sorted(flipped) == sorted(tasks[i].id for i in WRONG_A ^ WRONG_B)
        pg.goto((out / "index.html").as_uri() + f"#/run/run-b/task/{tasks[3].id}")
        pg.wait_for_selector(".calls-section")
        assert pg.locator(".calls-section tr.differs").count() == 1
    finally:
        pg.close()


def test_leaderboard_command_ranks_the_models(runs):
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "leaderboard", str(runs), "--format", "csv"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:]]
    # both runs score (LIMIT - 2) / LIMIT tasks on Tool EM: a tie, both listed, one row per model
    assert sorted(r["model"] for r in rows) == ["openai:model-a", "openai:model-b"]
    assert {float(r["tool_em"]) for r in rows} == {100 * (LIMIT - 2) / LIMIT}
    table = subprocess.run([sys.executable, "-m", "evals.cli", "leaderboard", str(runs)], capture_output=True, text=True,
                           timeout=120)
    assert table.returncode == 0 and "openai:model-a" in table.stdout and "±" in table.stdout


def test_view_refuses_a_directory_without_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "view", str(tmp_path), "--export", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: no run directories found") and "Traceback" not in proc.stderr
    missing = subprocess.run([sys.executable, "-m", "evals.cli", "leaderboard", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no such directory" in missing.stderr


def test_an_unregistered_copy_still_shows_its_tasks(runs, tmp_path):
    """A run whose benchmark is not registered is listed with its stored scores and transcripts."""
    import json

    from evals.view.site import Site

    copy = tmp_path / "renamed"
    shutil.copytree(runs / "run-a", copy)
    cfg = json.loads((copy / "config.json").read_text())
    cfg["benchmark"] = "not-a-benchmark"
    (copy / "config.json").write_text(json.dumps(cfg))
    site = Site([copy])
    rows = site.tasks("renamed")["tasks"]
    assert len(rows) == LIMIT and {r["passed"].get("tool_em") for r in rows} == {True, False}
    ep = site.episode("renamed", rows[0]["id"])
    assert ep["sections"] == [] and ep["items"]


def test_a_run_in_progress_shows_its_progress_and_the_page_refreshes(runs, server, page):
    """A run whose lock an `evals run` holds is listed with a progress bar; the list refreshes by itself."""
    import fcntl

    from playwright.sync_api import expect

    live = runs / "run-live"
    shutil.copytree(runs / "run-a", live)
    lines = (live / "traces.jsonl").read_text().splitlines(keepends=True)
    (live / "traces.jsonl").write_text("".join(lines[:3]))
    (live / "scores.jsonl").unlink()
    fd = os.open(live / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        page.goto(server)
        progress = page.locator("tr:has(input[aria-label='select run-live']) .progress")
        progress.wait_for()
        assert progress.inner_text() == f"running: 3 / {LIMIT} episodes"
        with open(live / "traces.jsonl", "a") as f:
            f.write(lines[3])
        expect(progress).to_have_text(f"running: 4 / {LIMIT} episodes", timeout=30_000)  # refreshed by itself
    finally:
        os.close(fd)
        shutil.rmtree(live)


def test_the_task_table_of_a_run_page_fits_a_1280_pixel_window(server, browser, tasks):
    """Issue 37 item 10: the run page's task table ran past the right edge of its card in a 1280 px
    window (a scroll bar under the table)."""
    pg = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        pg.set_default_timeout(30_000)
        pg.goto(server + "#/run/run-a")
        pg.wait_for_selector("#tasks tbody tr")
        # what real runs hold: an error that is one long word (a URL, a JSON blob), a long query
        pg.evaluate("""() => {
            const cells = document.querySelector('#tasks tbody tr').querySelectorAll('td');
            cells[cells.length - 1].textContent = 'ConnectError:http://127.0.0.1:8000/v1/' + 'x'.repeat(300);
            cells[1].textContent = 'Who is the mother of the father of ' + 'Bob'.repeat(60) + '?';
        }""")
        sizes = pg.evaluate("""() => {
            const t = document.querySelector('#tasks table'), wrap = t.parentElement;
            return {page: document.documentElement.scrollWidth, window: window.innerWidth,
                    table: t.getBoundingClientRect().right, box: wrap.getBoundingClientRect().right,
                    scroll: wrap.scrollWidth, client: wrap.clientWidth};
        }""")
        assert sizes["page"] <= sizes["window"], sizes
        assert sizes["table"] <= sizes["box"] + 0.5 and sizes["scroll"] <= sizes["client"], sizes
    finally:
        pg.close()


def test_the_favicon_is_served(server):
    """Issue 37 item 10: a browser's first request, /favicon.ico, was a 404."""
    import httpx2 as httpx

    got = httpx.get(server + "favicon.ico", timeout=30)
    assert got.status_code == 200 and got.headers["content-type"].startswith("image/"), got.status_code
    assert got.content[:4] == b"\x00\x00\x01\x00"  # an ICO file
