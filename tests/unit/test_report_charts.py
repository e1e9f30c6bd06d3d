"""Series building (aggregation, spread, grouping as the tables group, units, baselines,
key suggestions) and chart rendering: formats, layout, one panel per unit.

The checks of what a drawn chart may not do are in test_report_chart_checks.py."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dlbench.errors import ResultsError
from dlbench.report.charts.charts import (
    SD_LABEL,
    ChartError,
    ChartSeries,
    axis_label,
    build_series,
    draw_chart,
    render_chart,
    save_chart,
)
from dlbench.report.charts.checks import chart_problems


def rec(batch: Any, value: Any, **params: Any) -> dict[str, Any]:
    """An ok record at exp.replica_batch=batch with results.throughput=value."""
    record = {"exp.status": "ok", "exp.replica_batch": batch, "results.throughput": value}
    record.update({k.replace("__", "."): v for k, v in params.items()})
    return record


# Three records at x=1 with y 1, 2 and 6; one at x=2 with y 5.
# mean 3, min 1, max 6, median 2; sd: deviations -2, -1, 3 -> (4 + 1 + 9) / 2 = 7.
POINTS = [rec(1, 1.0), rec(1, 2.0), rec(1, 6.0), rec(2, 5.0)]


@pytest.mark.parametrize(
    ("aggregation", "expected"), [("avg", 3.0), ("min", 1.0), ("max", 6.0), ("median", 2.0)]
)
def test_aggregation_of_records_at_one_x(aggregation: str, expected: float) -> None:
    (series,) = build_series(POINTS, "exp.replica_batch", "results.throughput",
                             aggregation=aggregation)
    assert series.x == [1, 2]
    assert series.y == [expected, 5.0]


def test_err_is_sample_sd_and_zero_for_single_records() -> None:
    (series,) = build_series(POINTS, "exp.replica_batch", "results.throughput")
    assert series.err is not None
    assert series.err[0] == pytest.approx(math.sqrt(7.0))
    assert series.err[1] == 0.0


def test_err_is_none_when_every_point_has_one_record() -> None:
    (series,) = build_series([rec(1, 1.0), rec(2, 2.0)], "exp.replica_batch",
                             "results.throughput")
    assert series.err is None


def test_numbers_sorted_numerically_strings_in_first_seen_order() -> None:
    (numbers,) = build_series([rec(16, 3.0), rec(2, 1.0), rec(4, 2.0)], "exp.replica_batch",
                              "results.throughput")
    assert numbers.x == [2, 4, 16] and numbers.y == [1.0, 2.0, 3.0]
    words = [rec(1, 1.0, exp__model=m) for m in ("vgg16", "alexnet", "resnet50", "alexnet")]
    (strings,) = build_series(words, "exp.model", "results.throughput")
    assert strings.x == ["vgg16", "alexnet", "resnet50"]


def test_int_and_float_x_are_one_point() -> None:
    # A CSV round trip can turn 1 into 1.0; they must not become two points.
    (series,) = build_series([rec(1, 2.0), rec(1.0, 4.0)], "exp.replica_batch",
                             "results.throughput")
    assert series.x == [1] and series.y == [3.0]


def test_baseline_divides_each_series_by_its_own_value() -> None:
    records = [rec(1, 10.0, exp__model="a"), rec(2, 18.0, exp__model="a"),
               rec(4, 30.0, exp__model="a"), rec(1, 5.0, exp__model="b"),
               rec(2, 10.0, exp__model="b"), rec(2, 20.0, exp__model="b")]
    a, b = build_series(records, "exp.replica_batch", "results.throughput", baseline_x=1)
    assert a.y == pytest.approx([1.0, 1.8, 3.0])
    assert b.y == pytest.approx([1.0, 3.0])  # mean of 10 and 20 is 15, / 5
    # sd of 10 and 20 is 7.0711, divided by the baseline 5.
    assert b.err == pytest.approx([0.0, math.sqrt(50.0) / 5.0])


def test_baseline_missing_in_a_series_is_an_error() -> None:
    records = [rec(1, 10.0, exp__model="a"), rec(2, 20.0, exp__model="b")]
    with pytest.raises(ChartError, match=r"--baseline-x 1: series 'exp.model=b'.* values: 2"):
        build_series(records, "exp.replica_batch", "results.throughput", baseline_x=1)


def test_baseline_number_matches_a_string_x() -> None:
    # exp.gpus is a string; "--baseline-x 0" arrives as the int 0.
    records = [rec(1, 10.0, exp__gpus="0"), rec(1, 25.0, exp__gpus="0,1")]
    (series,) = build_series(records, "exp.gpus", "results.throughput", baseline_x=0)
    assert series.y == [1.0, 2.5]


def test_default_series_one_per_varying_parameter_value_without_user() -> None:
    records = [rec(1, 1.0, exp__model="alexnet", user__tag="x"),
               rec(2, 2.0, exp__model="alexnet", user__tag="y"),
               rec(1, 3.0, exp__model="vgg16", user__tag="x")]
    series = build_series(records, "exp.replica_batch", "results.throughput")
    assert [s.label for s in series] == ["exp.model=alexnet", "exp.model=vgg16"]
    assert [s.y for s in series] == [[1.0, 2.0], [3.0]]


def test_one_series_labelled_with_y_when_nothing_varies() -> None:
    (series,) = build_series([rec(1, 1.0), rec(2, 2.0)], "exp.replica_batch",
                             "results.throughput")
    assert series.label == "results.throughput"


def test_query_series_labels_and_legend() -> None:
    records = [rec(1, 1.0, exp__model="resnet50", exp__framework="pytorch"),
               rec(1, 2.0, exp__model="resnet18", exp__framework="pytorch")]
    queries = [{"exp.framework": "pytorch", "exp.model": "resnet50"},
               {"exp.model": "resnet18"}]
    labels = [s.label for s in build_series(records, "exp.replica_batch",
                                            "results.throughput", queries=queries)]
    assert labels == ["pytorch, resnet50", "resnet18"]
    named = build_series(records, "exp.replica_batch", "results.throughput",
                         queries=queries, legend=["R50", "R18"])
    assert [(s.label, s.y) for s in named] == [("R50", [1.0]), ("R18", [2.0])]


def test_legend_of_the_wrong_length_names_the_flag() -> None:
    with pytest.raises(ChartError, match="--legend names 2 series but there are 1"):
        build_series(POINTS, "exp.replica_batch", "results.throughput", legend=["a", "b"])


def test_query_matching_nothing_is_an_error() -> None:
    with pytest.raises(ResultsError, match="query 1"):
        build_series(POINTS, "exp.replica_batch", "results.throughput",
                     queries=[{"exp.model": "vgg"}])


def test_skips_are_warned_as_the_report_words_them() -> None:
    records = [rec(1, 1.0), {**rec(1, 100.0), "exp.status": "failure"},
               {"exp.status": "ok", "exp.replica_batch": 2}, rec(None, 3.0)]
    warnings: list[str] = []
    (series,) = build_series(records, "exp.replica_batch", "results.throughput",
                             warnings=warnings)
    assert series.y == [1.0]
    assert warnings == ["1 record(s) skipped: exp.status is not ok (1 failure)",
                        "1 record(s) skipped: no numeric results.throughput: record #3",
                        "1 record(s) without exp.replica_batch skipped"]


def test_no_ok_record_is_an_error() -> None:
    with pytest.raises(ResultsError, match="none of the 1 selected record"):
        build_series([{**rec(1, 1.0), "exp.status": "failure"}], "exp.replica_batch",
                     "results.throughput")


@pytest.mark.parametrize(("x", "y", "message"), [
    ("exp.replica_bath", "results.throughput",
     "--x exp.replica_bath: none of the 4 record(s) has this key; did you mean "
     "exp.replica_batch?"),
    ("exp.replica_batch", "results.througput",
     "--y results.througput: none of the 4 record(s) has this key; did you mean "
     "results.throughput?"),
    ("exp.replica_batch", "results.ci95", "(a known name these runs did not write)"),
])
def test_a_key_no_record_has_is_named_with_the_closest(x: str, y: str, message: str) -> None:
    with pytest.raises(ChartError) as caught:
        build_series(POINTS, x, y)
    assert message in str(caught.value) and "\n" not in str(caught.value)


SERIES = [ChartSeries("a", [1, 2, 4], [1.0, 1.9, 3.5], [0.0, 0.1, 0.2]),
          ChartSeries("b", [1, 2], [1.0, 1.5], None)]


@pytest.mark.parametrize(("fmt", "chart", "check"), [
    ("png", "line", lambda data: data.startswith(b"\x89PNG\r\n\x1a\n")),
    ("svg", "bar", lambda data: b"<svg" in data),
    ("pdf", "line", lambda data: data.startswith(b"%PDF")),
])
def test_render_formats(fmt: str, chart: str, check: Any) -> None:
    problems: list[str] = []
    data = render_chart(SERIES, chart=chart, title="t", xlabel="x", ylabel="y", fmt=fmt,
                        problems=problems)
    assert check(data) and problems == []


def test_render_string_x_gives_the_same_bytes_twice() -> None:
    series = [ChartSeries("m", ["vgg16", "alexnet"], [2.0, 3.0], None)]
    for fmt in ("svg", "pdf", "png"):
        # No date, fixed ids: charts committed to a repository do not churn.
        first = render_chart(series, fmt=fmt)
        assert render_chart(series, fmt=fmt) == first
        assert b"CreationDate" not in first and b"<dc:date>" not in first


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"chart": "pie"}, "accepted: line, bar"), ({"fmt": "gif"}, "accepted: png, svg, pdf")])
def test_render_refuses_unknown_chart_and_format(kwargs: Any, message: str) -> None:
    with pytest.raises(ChartError, match=message):
        render_chart(SERIES, **kwargs)


def series_lines(axes: Any) -> dict[str, Any]:
    """The lines of an axes that are series (labelled), by label."""
    return {line.get_label(): line for line in axes.get_lines()
            if not line.get_label().startswith("_")}


def test_line_chart_plots_each_series_values_and_spread() -> None:
    drawn = draw_chart(SERIES, chart="line", title="Throughput", xlabel="batch",
                       ylabel="samples/s")
    (axes,) = drawn.figure.axes
    lines = series_lines(axes)
    assert list(lines) == ["a", "b"]
    assert list(lines["a"].get_xdata()) == [1.0, 2.0, 4.0]  # a numeric axis
    assert list(lines["a"].get_ydata()) == [1.0, 1.9, 3.5]
    assert list(lines["b"].get_xdata()) == [1.0, 2.0]
    assert list(lines["b"].get_ydata()) == [1.0, 1.5]
    # Error bars only where the spread is above 0: a's points at x 2 and 4, +-0.1 and
    # +-0.2; b has none.
    bars = [c for c in axes.containers if c.has_yerr]
    (spread,) = bars
    segments = [[(float(x), round(float(y), 9)) for x, y in s]
                for s in spread.lines[2][0].get_segments()]
    assert segments == [[(2.0, 1.8), (2.0, 2.0)], [(4.0, 3.3), (4.0, 3.7)]]
    assert list(axes.get_xticks()) == [1.0, 2.0, 4.0]
    assert [t.get_text() for t in axes.get_xticklabels()] == ["1", "2", "4"]
    assert axes.get_ylim()[0] == 0.0
    assert (axes.get_title(), axes.get_xlabel(), axes.get_ylabel()) == (
        "Throughput", "batch", "samples/s")
    # The legend names the series, and what the error bars are.
    assert drawn.labels["legend"] == ["a", "b", SD_LABEL]
    assert chart_problems(drawn) == []
    # The file holds the same chart: matplotlib's SVG names each text in a comment.
    text = save_chart(drawn, "svg").decode()
    for label in ("Throughput", "batch", "samples/s", "a", "b", SD_LABEL):
        assert f"<!-- {label} -->" in text


def test_bar_chart_groups_series_in_slots() -> None:
    drawn = draw_chart(SERIES, chart="bar")
    (axes,) = drawn.figure.axes
    bars = [(round(p.get_x() + p.get_width() / 2, 6), p.get_height()) for p in axes.patches]
    # Two series share each slot (x 1, 2, 4 -> slots 0, 1, 2), 0.4 wide each.
    assert bars == [(-0.2, 1.0), (0.8, 1.9), (1.8, 3.5), (0.2, 1.0), (1.2, 1.5)]
    assert [t.get_text() for t in axes.get_xticklabels()] == ["1", "2", "4"]
    assert axes.get_xlim() == (-0.5, 2.5)
    # The tallest error bar's top (3.7) is below the top of the axes, with room to spare.
    low, high = axes.get_ylim()
    assert low == 0.0 and high > 3.7 * 1.05
    assert chart_problems(drawn) == []


# ---------------------------------------------------------------- units


def unit_rec(model: str, batch: int, value: float, unit: str | None, **params: Any
             ) -> dict[str, Any]:
    record = rec(batch, value, exp__model=model, **params)
    if unit is not None:
        record["results.throughput_unit"] = unit
    return record


def test_the_unit_comes_from_the_records_never_a_default() -> None:
    tokens = [unit_rec("bert_base", b, 71.2 * b, "tokens/s") for b in (1, 2)]
    (series,) = build_series(tokens, "exp.replica_batch", "results.throughput")
    assert series.unit == "tokens/s"
    # Without results.throughput_unit, the unit results.throughput is declared with.
    (plain,) = build_series([unit_rec("m", 1, 1.0, None)], "exp.replica_batch",
                            "results.throughput")
    assert plain.unit == "samples/s"
    timed = [{**r, "results.time": 10.0} for r in tokens]
    assert build_series(timed, "exp.replica_batch", "results.time")[0].unit == "ms"
    # A speedup is a ratio: no unit.
    (ratio,) = build_series(tokens, "exp.replica_batch", "results.throughput", baseline_x=1)
    assert ratio.unit == "" and ratio.y == [1.0, 2.0]
    drawn = draw_chart([series], ylabel="results.throughput")
    assert drawn.labels["ylabels"] == ["results.throughput (tokens/s)"]
    assert drawn.labels["legend"] == []  # one series, named like the axis
    # A label that already says the unit is kept as it is.
    assert axis_label("tokens/s", "tokens/s") == "tokens/s"
    assert axis_label("Throughput", "tokens/s") == "Throughput (tokens/s)"


def test_a_series_mixing_units_is_refused_in_one_line() -> None:
    records = [unit_rec("bert_base", 1, 71.2, "tokens/s"), unit_rec("resnet18", 2, 40.0,
                                                                    "images/s")]
    with pytest.raises(ChartError) as caught:
        build_series(records, "exp.replica_batch", "results.throughput",
                     queries=[{"exp.replica_batch": [1, 2]}])
    assert str(caught.value) == (
        "series '[1, 2]' mixes units of results.throughput: tokens/s (1 record(s)), "
        "images/s (1 record(s)); give each unit its own series with --series")


def test_series_in_different_units_get_a_panel_each() -> None:
    records = [unit_rec("bert_base", b, 71.2 * b, "tokens/s") for b in (1, 2)]
    records += [unit_rec("resnet18", b, 40.0 * b, "images/s") for b in (1, 2)]
    records += [unit_rec("cartpole", b, 900.0 * b, "steps/s") for b in (1, 2)]
    series = build_series(records, "exp.replica_batch", "results.throughput")
    drawn = draw_chart(series, title="mixed", xlabel="exp.replica_batch",
                       ylabel="results.throughput")
    assert [(p.unit, [s.label for s in p.series]) for p in drawn.panels] == [
        ("tokens/s", ["exp.model=bert_base"]), ("images/s", ["exp.model=resnet18"]),
        ("steps/s", ["exp.model=cartpole"])]
    assert drawn.labels["ylabels"] == ["results.throughput (tokens/s)",
                                       "results.throughput (images/s)",
                                       "results.throughput (steps/s)"]
    assert chart_problems(drawn) == []


# ---------------------------------------------------------------- grouping


def test_a_parameter_that_moves_with_x_leaves_one_series() -> None:
    # fake.step_ms set per batch size by an extension: one value at each x.
    moving = [rec(b, 10.0 * b, fake__step_ms=step) for b, step in ((1, 5.0), (2, 8.0), (4, 9.0))]
    (series,) = build_series(moving, "exp.replica_batch", "results.throughput")
    assert series.x == [1, 2, 4] and series.label == "results.throughput"
    # Two values at one x are two measurements: two series.
    both = [*moving, rec(1, 3.0, fake__step_ms=8.0)]
    labels = [s.label for s in build_series(both, "exp.replica_batch", "results.throughput")]
    assert labels == ["fake.step_ms=5.0", "fake.step_ms=8.0", "fake.step_ms=9.0"]


def test_models_are_never_one_series_even_at_different_x() -> None:
    # As in the tables, where each model is a row of its own.
    records = [rec(1, 10.0, exp__model="resnet18"), rec(2, 5.0, exp__model="resnet50")]
    series = build_series(records, "exp.replica_batch", "results.throughput")
    assert [(s.label, s.x) for s in series] == [("exp.model=resnet18", [1]),
                                                ("exp.model=resnet50", [2])]
