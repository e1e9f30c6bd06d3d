"""Charts that cannot mislead, checked on the drawn figure: categorical x unconnected,
every point inside its axes, the legend inside the image, error bars that say what
they are; and what ``dlbench plot`` warns about."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

from dlbench.report.charts.charts import (
    CI_LABEL,
    PNG_KEY,
    SD_LABEL,
    ChartSeries,
    build_series,
    draw_chart,
    render_chart,
)
from dlbench.report.charts.checks import chart_problems
from tests.unit.test_report_charts import rec, series_lines, unit_rec

# ---------------------------------------------------------------- what is drawn


def test_categorical_x_is_drawn_as_unconnected_points() -> None:
    records = [rec(1, v, exp__model=m, exp__framework=f)
               for m, f, v in (("resnet18", "pytorch", 40.0), ("resnet50", "pytorch", 12.0),
                               ("resnet18", "onnxruntime", 50.0))]
    series = build_series(records, "exp.model", "results.throughput")
    drawn = draw_chart(series, chart="line", xlabel="exp.model")
    (axes,) = drawn.figure.axes
    lines = series_lines(axes)
    assert list(lines) == ["exp.framework=pytorch", "exp.framework=onnxruntime"]
    assert all(line.get_linestyle() == "None" for line in lines.values())
    assert [t.get_text() for t in axes.get_xticklabels()] == ["resnet18", "resnet50"]
    assert chart_problems(drawn) == []
    # The check sees a line that joins them.
    lines["exp.framework=pytorch"].set_linestyle("-")
    assert chart_problems(drawn) == ["a line joins categorical x values in the axes 'samples/s'"]


@pytest.mark.parametrize(("chart", "series"), [
    ("line", [ChartSeries("one point", [8], [5.0], None)]),
    ("line", [ChartSeries("at zero", [1, 2], [0.0, 1000.0], None)]),
    ("line", [ChartSeries("near zero", [1, 2, 3], [0.5, 1000.0, 2000.0], [0.0, 50.0, 0.0])]),
    ("bar", [ChartSeries("negative", ["a", "b"], [-3.0, 2.0], [0.5, 0.0])]),
    ("line", [ChartSeries("flat", [1, 2], [7.0, 7.0], None, ci=[(1.0, 2.0), None])]),
])
def test_every_point_lies_inside_the_axes(chart: str, series: list[ChartSeries]) -> None:
    drawn = draw_chart(series, chart=chart, ylabel="y")
    assert chart_problems(drawn) == []


def test_a_point_on_the_edge_is_found() -> None:
    drawn = draw_chart([ChartSeries("s", [1, 2], [1.0, 2.0], None)], ylabel="y")
    drawn.panels[0].axes.set_ylim(0.0, 2.0)  # what autoscaling without a margin does
    assert chart_problems(drawn) == ["point (2, 2) lies on or past the top edge of the axes 'y'"]


LONG = "exp.model={}, exp.image_size=112, exp.dtype=bfloat16, pytorch.compile=true"


def test_the_legend_of_long_labels_lies_inside_the_image() -> None:
    series = [ChartSeries(LONG.format(m), [1, 2], [float(i), float(i + 1)], None)
              for i, m in enumerate(("resnet18", "resnet50", "alexnet", "vgg16", "bert"))]
    drawn = draw_chart(series, title="t", xlabel="exp.replica_batch", ylabel="y")
    figure = drawn.figure
    assert drawn.legend is not None
    assert figure.get_size_inches()[0] == 7.0  # wrapped and stacked, not widened
    assert chart_problems(drawn) == []
    # The check sees a legend that runs off: one row of the unwrapped labels.
    drawn.legend.remove()
    figure.legend([line for line in drawn.panels[0].axes.get_lines()],
                  [s.label for s in series], loc="outside lower center", ncols=5)
    assert chart_problems(drawn) == ["the legend runs past the left, right edge of the image"]


def test_error_bars_say_what_they_are_and_the_ci_is_drawn() -> None:
    # One run with a CI (results.ci95_rel 10 %): the CI of its mean batch time, on the
    # log scale t * e^(-+0.1), carried to the throughput c / t; three runs at batch 2:
    # their sd.
    records = [rec(1, 100.0, **{"results.ci95_rel": 0.1})]
    records += [rec(2, value) for value in (180.0, 200.0, 220.0)]
    (series,) = build_series(records, "exp.replica_batch", "results.throughput")
    assert series.ci is not None and series.ci[1] is None and series.n == [1, 3]
    below, above = series.ci[0]  # type: ignore[misc]
    assert (below, above) == pytest.approx((100.0 - 100.0 * math.exp(-0.1),
                                            100.0 * math.exp(0.1) - 100.0))
    assert series.err == [0.0, 20.0]
    drawn = draw_chart([series], ylabel="results.throughput")
    assert drawn.labels["legend"] == [SD_LABEL, CI_LABEL]
    styles = [c.get_linestyle() for c in drawn.panels[0].axes.collections]
    assert styles[0] == [(0.0, None)] and styles[1] != styles[0]  # the CI is dashed
    assert chart_problems(drawn) == []
    # The mean batch time's CI: results.ci95 relative to the time, on the log scale.
    timed = [{**rec(1, 100.0), "results.time": 10.0, "results.ci95": 0.4}]
    (time,) = build_series(timed, "exp.replica_batch", "results.time")
    assert time.ci == [pytest.approx((10.0 - 10.0 * math.exp(-0.04),
                                      10.0 * math.exp(0.04) - 10.0))]
    assert time.unit == "ms"


def test_a_png_records_its_labels_and_the_problems_found() -> None:
    from PIL import Image

    series = build_series([unit_rec("bert_base", b, 71.2 * b, "tokens/s") for b in (1, 2)],
                          "exp.replica_batch", "results.throughput")
    data = render_chart(series, title="t", xlabel="exp.replica_batch",
                        ylabel="results.throughput")
    described = json.loads(Image.open(io.BytesIO(data)).text[PNG_KEY])  # type: ignore[attr-defined]
    assert described == {"legend": [], "problems": [], "title": "t",
                         "units": ["tokens/s"], "xlabel": "exp.replica_batch",
                         "ylabels": ["results.throughput (tokens/s)"]}


# ---------------------------------------------------------------- dlbench plot


def test_plot_warns_of_dropped_records_and_suggests_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlbench.cli.main import main
    from dlbench.results.io import write_records

    monkeypatch.chdir(tmp_path)
    records = [unit_rec("m", b, 10.0 * b, "images/s") for b in (1, 2)]
    records.append({**rec(4, None, exp__model="m"), "exp.status": "failure"})
    write_records(records, "runs.json")
    assert main(["plot", "--input", "runs.json", "--x", "exp.replica_batch",
                 "--output", "c.svg"]) == 0
    out, err = capsys.readouterr()
    assert err == ("dlbench: warning: 1 record(s) skipped: exp.status is not ok (1 failure)\n")
    assert out == "chart written to c.svg (1 series, 2 points)\n"
    assert "<!-- results.throughput (images/s) -->" in (tmp_path / "c.svg").read_text()
    assert main(["plot", "--input", "runs.json", "--x", "exp.replica_bach",
                 "--output", "d.svg"]) == 2
    assert capsys.readouterr().err == (
        "dlbench: error: --x exp.replica_bach: none of the 3 record(s) has this key; "
        "did you mean exp.replica_batch?\n")
    assert not (tmp_path / "d.svg").exists()
