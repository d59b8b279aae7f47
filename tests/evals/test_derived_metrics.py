"""Derived metrics (evals/core/metrics.py): computed from other metrics' unrounded run-level fractions."""

from __future__ import annotations

from evals.core.metrics import Metric, TaskScore, aggregate, summary_blocks


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


METRICS = (
    Metric("p", "P"),
    Metric("r", "R"),
    Metric("f1", "F1", derived_from=("p", "r"), derive=_f1, digits=4),
    Metric("twice", "2 x F1", derived_from=("f1",), derive=lambda f: 2 * f),  # derived from a derived one
    Metric("other", "needs a metric without samples", derived_from=("p", "missing"), derive=lambda a, b: a),
)


def _task(p: tuple[float, float], r: tuple[float, float], group: str) -> TaskScore:
    return TaskScore(samples={"p": p, "r": r}, groups={"g": group})


def test_derived_metric_uses_the_run_level_fractions_not_an_average_of_task_values():
    scores = [_task((1, 1), (1, 3), "a"), _task((0, 2), (0, 1), "b")]
    values = aggregate(METRICS, scores)
    p, r = 1 / 3, 1 / 4
    assert values["f1"].value == round(100 * _f1(p, r), 4) and values["f1"].stderr is None
    assert values["f1"].tasks == 2 and values["twice"].value == round(200 * _f1(p, r), 2)
    assert "other" not in values  # an input has no value: no derived value either
    blocks = summary_blocks(METRICS, scores)
    assert blocks["breakdowns"]["g"]["a"]["f1"] == round(100 * _f1(1, 1 / 3), 4)
    assert blocks["breakdowns"]["g"]["b"]["f1"] == 0.0  # P + R = 0
