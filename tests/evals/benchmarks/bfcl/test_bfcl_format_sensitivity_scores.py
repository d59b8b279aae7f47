"""BFCL's Format Sensitivity columns (``format_sensitivity_max_delta``, ``format_sensitivity_std`` and each
configuration's accuracy) beside ``bfcl evaluate`` itself (``bfcl_evaluate_driver.py``, in .ci/bfcl-venv): a
prompting model's format_sensitivity result folder, some configurations partly wrong, scored by both; the cells
of BFCL's ``data_overall.csv`` and ``data_format_sensitivity.csv`` are ours as BFCL's CSV writes them, digit for
digit: a subset (three entries under each configuration), part of the configurations (the others "N/A") and one
configuration (0.0)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_bfcl_handlers import DRIVER, _ours

from evals.benchmarks.bfcl.format_sensitivity import configs, load_format_sensitivity
from evals.benchmarks.bfcl.metrics import FORMAT_CONFIGS, config_metric
from evals.benchmarks.bfcl.prompting import entry_format, oracle_text
from evals.benchmarks.bfcl.single_turn import gold_calls

MODEL = "gpt-4o-2024-11-20"  # a prompting model of BFCL's registry


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


@pytest.mark.parametrize(("wanted", "per_config"), [
    (None, 3),  # a subset: three entries under each of the 26 configurations
    (set(FORMAT_CONFIGS[3:9]) | {FORMAT_CONFIGS[-1]}, 5),  # seven configurations; the others not run
    ({FORMAT_CONFIGS[4]}, 6),  # one configuration: BFCL's 0.0
], ids=["all-configs", "some-configs", "one-config"])
def test_format_sensitivity_cells_are_bfcls(bfcl_data, bfcl_python, tmp_path, wanted, per_config):
    root = tmp_path / "result"
    _folder(root, wanted, per_config)
    theirs = _theirs(bfcl_python, root, tmp_path)
    _, summary = _ours(root, MODEL, tmp_path / "run")
    metrics = summary["metrics"]
    overall, table = theirs["data_overall"], theirs["data_format_sensitivity"]
    # data_overall.csv and data_format_sensitivity.csv write BFCL's rounded numbers as str() writes them
    for name, column in (("format_sensitivity_max_delta", "Format Sensitivity Max Delta"),
                         ("format_sensitivity_std", "Format Sensitivity Standard Deviation")):
        assert str(metrics[name]) == overall[column] == table[column], name
    for config in FORMAT_CONFIGS:  # each configuration's accuracy, "{:.2f}%"; "N/A" for one not run
        key = config_metric(config)
        assert (f"{metrics[key]:.2f}%" if key in metrics else "N/A") == table[f"Config {config}"], config
    if wanted is not None and len(wanted) == 1:
        assert metrics["format_sensitivity_max_delta"] == metrics["format_sensitivity_std"] == 0.0
    else:
        assert metrics["format_sensitivity_max_delta"] > 0 and metrics["format_sensitivity_std"] > 0
    stats = summary["metric_stats"]["format_sensitivity_std"]
    assert stats["samples"] == (26 if wanted is None else len(wanted)) * per_config  # the entries it covers


def test_without_format_sensitivity_the_columns_have_no_value(bfcl_data, tmp_path):
    from evals.benchmarks.bfcl.metrics import METRICS
    from evals.core.metrics import TaskScore, aggregate

    values = aggregate(METRICS, [TaskScore(samples={"simple_python": (1.0, 1.0)})])
    assert not any(k.startswith("format_sensitivity") for k in values)  # BFCL's CSV: N/A
