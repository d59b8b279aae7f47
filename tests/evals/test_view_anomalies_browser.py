"""The viewer's run page lists the run's ``anomalies`` (evals/core/anomalies.py) in a Caveats box, as
text: an imported ComplexFuncBench result file with repeated ids (its name holds markup) and a
recorded FamilyTool run with an errored episode, served on 127.0.0.1, read in headless chromium."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from view_runs import serve_view

from client import eventloop
from evals.core.formats import import_predictions
from evals.core.run import score_run_dir

TESTS = Path(__file__).resolve().parent
EDGE = TESTS / "benchmarks" / "complexfuncbench" / "fixtures" / "edge"
RECORDED = TESTS / "regression" / "runs" / "familytool-b_agent"  # KGMTUbench_5 errored
MARKUP = "<img src=x onerror=window.__pwned=1>"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    base = tmp_path_factory.mktemp("anomalies")
    runs = base / "runs"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALS_DATA_DIR", str(base / "no-data"))  # the result file scored alone, as print_results.py does
        mp.setenv("EVALS_CACHE_DIR", str(base / "cache"))
        src = base / "files" / f"{MARKUP}.jsonl"
        src.parent.mkdir()
        shutil.copy(EDGE / "repeated_ids.jsonl", src)
        eventloop.run(score_run_dir(import_predictions(src, "complexfuncbench-official", "complexfuncbench",
                                                       runs / "cfb-import")))
    rec = runs / "ft-errored"
    rec.mkdir()
    shutil.copy(RECORDED / "config.json", rec / "config.json")
    (rec / "traces.jsonl").write_bytes(gzip.decompress((RECORDED / "traces.jsonl.gz").read_bytes()))
    eventloop.run(score_run_dir(rec))
    return runs


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[str]:
    with serve_view(root) as url:
        yield url


def test_the_run_page_of_an_import_lists_its_anomalies_as_text(server, page):
    page.goto(server + "#/run/cfb-import")
    page.wait_for_selector("#anomalies li.anomaly")
    box = page.locator("#anomalies")
    assert box.locator("h3").inner_text().startswith("Caveats (")
    items = box.locator("li.anomaly").all_inner_texts()
    repeated = next(t for t in items if t.startswith("repeated_id"))
    assert "11 affected" in repeated and "print_results.py counts every line" in repeated
    assert f"{MARKUP}.jsonl:41" in repeated  # the file's name, markup and all, as text
    assert "counted as: every line" in repeated and "official code: print_results.py counts every line" in repeated
    assert any(t.startswith("no_prediction") and "949 affected" in t for t in items)
    assert box.locator("img").count() == 0 and page.evaluate("window.__pwned") is None


def test_the_run_page_of_a_run_with_an_errored_episode_lists_it(server, page):
    page.goto(server + "#/run/ft-errored")
    page.wait_for_selector("#anomalies li.anomaly")
    items = page.locator("#anomalies li.anomaly").all_inner_texts()
    errored = next(t for t in items if t.startswith("errored_episodes"))
    assert "1 of 15 episodes errored" in errored and "at: KGMTUbench_5" in errored
