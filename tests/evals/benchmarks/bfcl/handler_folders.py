"""Crafted BFCL result folders scored twice: by ``bfcl evaluate`` itself (``bfcl_evaluate_driver.py`` in
.ci/bfcl-venv) and by ``evals score --format bfcl-official``; the fixture of BFCL's verdicts written from the
first. Shared by ``test_bfcl_handlers.py``, ``test_bfcl_results_handler_episodes.py`` and
``test_bfcl_results_own_decoders.py`` (each crafts its own folders)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
DRIVER = HERE / "bfcl_evaluate_driver.py"
VENV_PYTHON = HERE.parents[3] / ".ci" / "bfcl-venv" / "bin" / "python"


def bfcl_verdicts(bfcl_python: Path, root: Path, model: str, tmp: Path, categories: Sequence[str]) -> dict[str, Any]:
    """``bfcl evaluate`` of ``root/<model>`` over ``categories``: the driver's JSON (``verdicts``, ``scores``, ``csv``)."""
    done = subprocess.run([str(bfcl_python), str(DRIVER), str(root), str(tmp / "score"), model, *categories],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def ours(root: Path, model: str, out: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """``evals score`` of ``root/<model>``: each entry's error type ("" when right) and the run's summary."""
    from client import eventloop
    from evals.core.formats import import_predictions
    from evals.core.run import score_run_dir

    run = import_predictions(root / model.replace("/", "_"), "bfcl-official", "bfcl", out)
    summary = eventloop.run(score_run_dir(run))
    scores = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    return {s["task_id"]: s["score"]["details"]["verdict"]["error_type"] or "" for s in scores}, summary


def write_fixture(fixture: Path, out: Path, models: Iterable[str], crafted_folder: Callable[[Path, str], Any],
                  categories: Callable[[str], Sequence[str]]) -> None:
    """BFCL's verdicts on every model's crafted folder (made under ``out``), written to ``fixture``."""
    answers = {}
    for model in models:
        root = out / model.replace("/", "_").replace(".", "_") / "result"
        crafted_folder(root, model)
        answers[model] = bfcl_verdicts(VENV_PYTHON, root, model, root.parent, categories(model))["verdicts"]
    fixture.parent.mkdir(exist_ok=True)
    fixture.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")


def write_rows(path: Path, rows: Sequence[tuple[str, Any]], ids: list[str]) -> None:
    """A result file of ``{"id", "result"}`` lines; their ids added to ``ids``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": i, "result": r}) + "\n" for i, r in rows))
    ids.extend(i for i, _ in rows)


Crafter = Callable[[Path, str], list[str]]


def equal_to_bfcl(bfcl_python: Path, tmp: Path, model: str, crafted_folder: Crafter, categories: Sequence[str],
                  fixture: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """``model``'s crafted folder scored both ways: every verdict and every category's accuracy equal, and BFCL's
    verdicts the committed ones; ours and our summary."""
    root = tmp / "result"
    ids = crafted_folder(root, model)
    theirs = bfcl_verdicts(bfcl_python, root, model, tmp, categories)
    got, summary = ours(root, model, tmp / "run")
    assert got == {i: theirs["verdicts"][i] for i in ids}
    assert theirs["scores"], "BFCL wrote no score file"
    for category, header in theirs["scores"].items():
        assert summary["metrics"][category] == round(100 * header["accuracy"], 2), category
    assert json.loads(fixture.read_text())[model] == theirs["verdicts"]
    return got, summary


def equal_to_committed(tmp: Path, model: str, crafted_folder: Crafter, fixture: Path) -> dict[str, str]:
    """``model``'s crafted folder scored by us: every verdict the committed one of BFCL; the committed verdicts."""
    root = tmp / "result"
    ids = crafted_folder(root, model)
    got, _ = ours(root, model, tmp / "run")
    committed: dict[str, str] = json.loads(fixture.read_text())[model]
    assert got == {i: committed[i] for i in ids}
    return committed
