"""BFCL's Format Sensitivity columns (``format_sensitivity_max_delta``, ``format_sensitivity_std`` and each
configuration's accuracy) beside ``bfcl evaluate`` itself (``bfcl_evaluate_driver.py``, in .ci/bfcl-venv): a
prompting model's format_sensitivity result folder, some configurations partly wrong, scored by both; the cells
of BFCL's ``data_overall.csv`` and ``data_format_sensitivity.csv`` are ours as BFCL's CSV writes them, digit for
digit: a subset (three entries under each configuration), part of the configurations (the others "N/A") and one
configuration (0.0). BFCL's cells are committed too (``fixtures/bfcl_format_sensitivity_cells.json``, written by
``PYTHONPATH=. EVALS_DATA_DIR=... python tests/evals/benchmarks/bfcl/test_bfcl_format_sensitivity_scores.py OUT``
with .ci/bfcl-venv present), so that ours is checked against them where that venv is not."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from handler_folders import DRIVER
from handler_folders import ours as _ours

from evals.benchmarks.bfcl.format_sensitivity import configs, load_format_sensitivity
from evals.benchmarks.bfcl.metrics import FORMAT_CONFIGS, config_metric
from evals.benchmarks.bfcl.prompting import entry_format, oracle_text
from evals.benchmarks.bfcl.single_turn import gold_calls

MODEL = "gpt-4o-2024-11-20"  # a prompting model of BFCL's registry
FIXTURE = Path(__file__).parent / "fixtures" / "bfcl_format_sensitivity_cells.json"
# case -> (the configurations written, None: all; entries under each)
CASES: dict[str, tuple[set[str] | None, int]] = {
    "all-configs": (None, 3),  # a subset: three entries under each of the 26 configurations
    "some-configs": (set(FORMAT_CONFIGS[3:9]) | {FORMAT_CONFIGS[-1]}, 5),  # seven; the others not run
    "one-config": ({FORMAT_CONFIGS[4]}, 6),  # one configuration: BFCL's 0.0
}


def _folder(root: Path, wanted: set[str] | None, per_config: int) -> None:
    """result/<MODEL>/format_sensitivity/...: ``per_config`` entries under each configuration in ``wanted`` (all:
    None), right but where a pattern that differs by configuration makes them wrong."""
    seen: dict[str, int] = {}
    lines = []
    for entry in load_format_sensitivity():
        config = entry.id.split(":")[1]
        if (wanted is not None and config not in wanted) or seen.get(config, 0) >= per_config:
            continue
        k = seen[config] = seen.get(config, 0) + 1
        index = FORMAT_CONFIGS.index(config)
        right = (k + index) % (2 + index % 3) != 0
        text = oracle_text(gold_calls(entry, served=False), *entry_format(entry)) if right else "No call."
        lines.append(json.dumps({"id": entry.id, "result": text}))
    path = root / MODEL / "format_sensitivity" / "BFCL_v4_format_sensitivity_result.json"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")


def _theirs(bfcl_python: Path, root: Path, tmp: Path) -> dict[str, Any]:
    done = subprocess.run([str(bfcl_python), str(DRIVER), str(root), str(tmp / "score"), MODEL, "format_sensitivity"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    csv: dict[str, Any] = json.loads(done.stdout)["csv"]
    return csv


def test_the_configurations_are_the_pinned_wheels(bfcl_data):
    assert tuple(configs()) == FORMAT_CONFIGS


def _cells(theirs: dict[str, Any]) -> dict[str, str]:
    """The Format Sensitivity cells of BFCL's two CSVs."""
    overall, table = theirs["data_overall"], theirs["data_format_sensitivity"]
    return {**{f"data_overall:{k}": v for k, v in overall.items() if k.startswith("Format Sensitivity")},
            **{f"data_format_sensitivity:{k}": v for k, v in table.items() if k not in ("Rank", "Model")}}


def _check(cells: dict[str, str], summary: dict[str, Any], wanted: set[str] | None, per_config: int) -> None:
    metrics = summary["metrics"]
    # data_overall.csv and data_format_sensitivity.csv write BFCL's rounded numbers as str() writes them
    for name, column in (("format_sensitivity_max_delta", "Format Sensitivity Max Delta"),
                         ("format_sensitivity_std", "Format Sensitivity Standard Deviation")):
        assert str(metrics[name]) == cells[f"data_overall:{column}"] == cells[f"data_format_sensitivity:{column}"]
    for config in FORMAT_CONFIGS:  # each configuration's accuracy, "{:.2f}%"; "N/A" for one not run
        key = config_metric(config)
        assert (f"{metrics[key]:.2f}%" if key in metrics else "N/A") == cells[f"data_format_sensitivity:Config {config}"]
    if wanted is not None and len(wanted) == 1:
        assert metrics["format_sensitivity_max_delta"] == metrics["format_sensitivity_std"] == 0.0
    else:
        assert metrics["format_sensitivity_max_delta"] > 0 and metrics["format_sensitivity_std"] > 0
    stats = summary["metric_stats"]["format_sensitivity_std"]
    assert stats["samples"] == (26 if wanted is None else len(wanted)) * per_config  # the entries it covers


@pytest.mark.parametrize("case", list(CASES))
def test_format_sensitivity_cells_are_bfcls(bfcl_data, bfcl_python, tmp_path, case):
    wanted, per_config = CASES[case]
    root = tmp_path / "result"
    _folder(root, wanted, per_config)
    cells = _cells(_theirs(bfcl_python, root, tmp_path))
    _, summary = _ours(root, MODEL, tmp_path / "run")
    _check(cells, summary, wanted, per_config)
    assert json.loads(FIXTURE.read_text())[case] == cells  # the committed cells are BFCL's still


@pytest.mark.parametrize("case", list(CASES))
def test_the_committed_bfcl_cells_hold_without_bfcls_venv(bfcl_data, tmp_path, case):
    wanted, per_config = CASES[case]
    _folder(tmp_path / "result", wanted, per_config)
    _, summary = _ours(tmp_path / "result", MODEL, tmp_path / "run")
    cells = json.loads(FIXTURE.read_text())[case]
    _check(cells, summary, wanted, per_config)
    # `evals leaderboard` shows the two among BFCL's columns, with BFCL's numbers
    from evals.view.leaderboard import leaderboard_groups
    from evals.view.site import Site

    (group,) = leaderboard_groups(list(Site([tmp_path / "run"]).views.values()))
    shown = group["rows"][0]["metrics"]
    assert [m["key"] for m in group["metrics"]][-2:] == ["format_sensitivity_max_delta", "format_sensitivity_std"]
    assert str(shown["format_sensitivity_std"]["value"]) == cells["data_overall:Format Sensitivity Standard Deviation"]


def test_without_format_sensitivity_the_columns_have_no_value(bfcl_data, tmp_path):
    from evals.benchmarks.bfcl.metrics import METRICS
    from evals.core.metrics import TaskScore, aggregate

    values = aggregate(METRICS, [TaskScore(samples={"simple_python": (1.0, 1.0)})])
    assert not any(k.startswith("format_sensitivity") for k in values)  # BFCL's CSV: N/A


def main() -> None:
    """Writes the fixture: BFCL's Format Sensitivity cells of every case (the module docstring)."""
    venv = Path(__file__).parents[4] / ".ci" / "bfcl-venv" / "bin" / "python"
    answers = {}
    for case, (wanted, per_config) in CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            _folder(Path(tmp) / "result", wanted, per_config)
            answers[case] = _cells(_theirs(venv, Path(tmp) / "result", Path(tmp)))
    Path(sys.argv[1]).write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
