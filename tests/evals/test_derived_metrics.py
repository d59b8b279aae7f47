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


def test_a_linear_derived_metric_has_the_delta_methods_standard_error_of_its_parts():
    metrics = (
        Metric("a", "A"), Metric("b", "B"),
        Metric("mean", "mean of A and B", derived_from=("a", "b"), derive=lambda x, y: (x + y) / 2, linear=True),
        Metric("plain", "not declared linear", derived_from=("a", "b"), derive=lambda x, y: (x + y) / 2),
    )
    scores = [TaskScore(samples={"a": (x, 1)}) for x in (1, 0, 1, 1)] + [TaskScore(samples={"b": (x, 1)}) for x in (0, 0, 1)]
    values = aggregate(metrics, scores)
    se_a, se_b = values["a"].stderr, values["b"].stderr
    assert se_a is not None and se_b is not None
    assert values["mean"].value == round(100 * (3 / 4 + 1 / 3) / 2, 2)
    assert abs(values["mean"].stderr - ((se_a / 2) ** 2 + (se_b / 2) ** 2) ** 0.5) < 1e-3
    assert values["plain"].stderr is None
    one = aggregate(metrics, scores[:1] + scores[4:])  # A over one task: no standard error, so none for the mean
    assert one["a"].stderr is None and one["mean"].stderr is None and one["mean"].value == round(100 * (1 + 1 / 3) / 2, 2)


def test_derive_counts_gives_each_parts_number_of_samples_after_the_fractions():
    seen: list[tuple[float, ...]] = []

    def weighted(x: float, y: float, nx: float, ny: float) -> float:
        seen.append((x, y, nx, ny))
        return (x * nx + y * ny) / (nx + ny)

    metrics = (Metric("a", "A"), Metric("b", "B"),
               Metric("w", "count-weighted", derived_from=("a", "b"), derive=weighted, derive_counts=True, linear=True))
    scores = [TaskScore(samples={"a": (1, 1)}), TaskScore(samples={"a": (1, 1)}), TaskScore(samples={"a": (0, 1)}),
              TaskScore(samples={"b": (0, 1)})]
    values = aggregate(metrics, scores)
    assert seen[0] == (2 / 3, 0.0, 3.0, 1.0)
    assert values["w"].value == 50.0


def test_a_part_without_a_value_counts_as_zero_when_declared_and_is_named():
    metrics = (
        Metric("a", "A"), Metric("b", "B"), Metric("c", "C"), Metric("d", "D"),
        Metric("ab", "mean of A and B", derived_from=("a", "b"), derive=lambda x, y: (x + y) / 2, linear=True,
               absent="zero", shown_incomplete=False),
        Metric("w", "weighted", derived_from=("d", "c"), derive=lambda x, y, nx, ny: (x * nx + y * ny) / (nx + ny),
               derive_counts=True, linear=True, absent="zero", absent_counts=(("c", 6.0),)),
        Metric("top", "mean of AB and W", derived_from=("ab", "w"), derive=lambda x, y: (x + y) / 2, linear=True,
               absent="zero"),
        Metric("strict", "needs C", derived_from=("a", "c"), derive=lambda x, y: x),
    )
    scores = [TaskScore(samples={"a": (1, 1)}, groups={"g": "x"}), TaskScore(samples={"a": (1, 1)}, groups={"g": "x"}),
              TaskScore(samples={"b": (0, 1)}, groups={"g": "y"}), TaskScore(samples={"d": (1, 1)}, groups={"g": "y"}),
              TaskScore(samples={"d": (1, 1)}, groups={"g": "y"})]
    values = aggregate(metrics, scores)
    assert values["ab"].value == 50.0 and values["ab"].missing == () and values["ab"].tasks == 3
    assert values["w"].value == 25.0 and values["w"].missing == ("c",)  # D over 2 samples, C counted 0 over 6
    assert values["top"].value == 37.5 and values["top"].missing == ("c",) and values["top"].samples == 5
    assert "strict" not in values
    without_b = aggregate(metrics, scores[:2] + scores[3:])
    assert "ab" not in without_b  # not shown while a part is missing ...
    assert without_b["top"].value == round(100 * ((1 + 0) / 2 + 0.25) / 2, 2)  # ... yet used, 0-filled
    assert without_b["top"].missing == ("b", "c")
    assert values["w"].to_dict()["missing"] == ["c"] and "missing" not in values["ab"].to_dict()
    blocks = summary_blocks(metrics, scores)
    assert "top" not in blocks["breakdowns"]["g"]["x"]  # a group's value lacking parts says nothing of it


def test_absent_skip_derives_from_the_parts_that_have_a_value_only():
    def spread(*fractions: float) -> float:
        return max(fractions) - min(fractions)

    metrics = [Metric("a", "a"), Metric("b", "b"), Metric("c", "c"),
               Metric("spread", "spread", derived_from=("a", "b", "c"), derive=spread, absent="skip")]
    scores = [TaskScore(samples={"a": (1.0, 1.0)}), TaskScore(samples={"a": (0.0, 1.0)}),
              TaskScore(samples={"c": (1.0, 1.0)})]
    out = aggregate(metrics, scores)
    assert out["spread"].value == 50.0 and out["spread"].missing == () and out["spread"].stderr is None
    assert out["spread"].samples == 3.0  # the entries of the parts it was derived from
    assert "spread" not in aggregate(metrics, [TaskScore(samples={"x": (1.0, 1.0)})])  # no part: no value
