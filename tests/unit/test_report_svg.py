"""The one SVG writer and the axis helpers it shares with the matplotlib charts."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import dlbench
from dlbench.report.charts.axes import (
    axis_label,
    log_tick_values,
    nice_step,
    tick_text,
    tick_values,
)
from dlbench.report.charts.svg import (
    DASHED,
    LegendEntry,
    Scale,
    error_bar,
    legend,
    marker,
    svg_document,
    text,
    x_grid,
    y_grid,
    y_ticks,
    y_title,
)

SVG = "{http://www.w3.org/2000/svg}"


def test_ticks_known_answers() -> None:
    # 0..37.5 in about five intervals: steps of 10; 8.58 MiB: steps of 2.
    assert nice_step(37.5) == 10.0 and nice_step(8.58) == 2.0 and nice_step(0.2) == 0.05
    assert nice_step(12.0, 4) == 5.0  # 3 would be the raw step: the next round one is 5
    assert nice_step(0.0) == 1.0 and nice_step(-3.0) == 1.0 and nice_step(float("nan")) == 1.0
    assert tick_values(0.0, 40.0, 10.0) == [0.0, 10.0, 20.0, 30.0, 40.0]
    # Only the multiples inside the range; 0.1 steps stay exact (0.3, not 0.30000000000000004).
    assert tick_values(95.5, 104.5, 2.5) == [97.5, 100.0, 102.5]
    assert [tick_text(v) for v in tick_values(0.05, 0.35, 0.1)] == ["0.1", "0.2", "0.3"]
    assert tick_values(1.2, 1.3, 1.0) == []
    assert [tick_text(v) for v in (0.0, 2.5, 1000.0, 1234567.0, 1e-7)] == [
        "0", "2.5", "1,000", "1,234,567", "1e-07"]
    assert axis_label("results.time", "ms") == "results.time (ms)"
    assert axis_label("tokens/s", "tokens/s") == "tokens/s" and axis_label(None, "ms") == "ms"


def test_scales_and_axes() -> None:
    x = Scale(0.0, 10.0, 100.0, 600.0)
    assert (x(0.0), x(5.0), x(10.0)) == (100.0, 350.0, 600.0)
    y = Scale(50.0, 150.0, 200.0, 0.0)  # a y axis: pixels grow downwards
    assert (y(50.0), y(100.0), y(150.0)) == (200.0, 100.0, 0.0)
    assert Scale(3.0, 3.0, 0.0, 10.0)(3.0) == 5.0  # one value: the middle
    parts = [*x_grid(x, [0.0, 5.0], top=10.0, bottom=90.0),
             *y_ticks(y, [100.0], left=100.0), y_title(y, 14.0, "t <ms>")]
    root = ET.fromstring(svg_document(700, 220, parts, label="a & b", css_class="c"))
    assert root.get("viewBox") == "0 0 700 220" and root.get("aria-label") == "a & b"
    assert [(t.get("x"), t.get("y"), t.text) for t in root.iter(f"{SVG}text")] == [
        ("100.00", "106.00", "0"), ("350.00", "106.00", "5"), ("94.00", "104.00", "100"),
        ("-100.00", "14.00", "t <ms>")]
    assert [line.get("x1") for line in root.iter(f"{SVG}line")] == ["100.00", "350.00"]
    assert text(1, 2, "<b>", anchor="end") == (
        '<text x="1.00" y="2.00" text-anchor="end">&lt;b&gt;</text>')


def test_log_scale_and_its_ticks() -> None:
    y = Scale(1.0, 1000.0, 300.0, 0.0, log=True)  # three decades over 300 pixels
    assert [round(y(v), 6) for v in (1.0, 10.0, 100.0, 1000.0)] == [300.0, 200.0, 100.0, 0.0]
    assert round(y(10 ** 1.5), 6) == 150.0  # halfway between 10 and 100 in ratio
    assert y.contains(0.0) and y.contains(300.0) and not y.contains(301.0)
    assert not y.contains(2.0, margin=3.0)
    # The powers of ten in range; with fewer than two, 1, 2 and 5 times them.
    assert log_tick_values(8.0, 170.0) == [10.0, 100.0]
    assert log_tick_values(3.0, 40.0) == [5.0, 10.0, 20.0]
    assert log_tick_values(0.15, 0.9) == [0.2, 0.5]
    assert log_tick_values(1.0, 1000.0) == [1.0, 10.0, 100.0, 1000.0]
    assert log_tick_values(0.0, 10.0) == [] and log_tick_values(5.0, 1.0) == []


def test_grid_marks_and_legend() -> None:
    y = Scale(0.0, 100.0, 200.0, 0.0)
    line, number = ET.fromstring(svg_document(10, 10, y_grid(y, [50.0], left=80.0,
                                                             right=600.0)))
    assert (line.get("y1"), line.get("x1"), line.get("x2")) == ("100.00", "80.00", "600.00")
    assert (number.text, number.get("x"), number.get("text-anchor")) == ("50", "74.00", "end")
    [slot] = x_grid(Scale(-0.5, 1.5, 0.0, 200.0), [1.0], top=0.0, bottom=50.0,
                    labels=["<bert>"])
    assert 'x1="150.00"' in slot and ">&lt;bert&gt;</text>" in slot
    point = ET.fromstring(marker(1.0, 2.0, "#1f77b4", hollow=True, tooltip="a<b",
                                 data=[("x", "4")]))
    assert (point.get("cx"), point.get("cy"), point.get("fill"), point.get("data-x")) == (
        "1.00", "2.00", "#ffffff", "4")
    assert point[0].text == "a<b"
    assert len(ET.fromstring(marker(0, 0, "red", shape="star")).get("points", "").split()) == 10
    bar = ET.fromstring(error_bar(5.0, 80.0, 20.0, "red", dash=DASHED))
    assert bar.get("d") == "M5.00,80.00V20.00M2.00,80.00H8.00M2.00,20.00H8.00"
    assert bar.get("stroke-dasharray") == DASHED
    # An entry a row; a label longer than the width is wrapped onto two rows.
    long = "a" * 40 + " " + "b" * 40
    parts, height = legend([LegendEntry("x <1>", "red"), LegendEntry(long, "blue", "dash")],
                           left=10.0, top=100.0, width=300.0)
    root = ET.fromstring(svg_document(400, 200, parts))
    entries = [[t.text for t in g.iter(f"{SVG}text")] for g in root.iter(f"{SVG}g")]
    assert entries == [["x <1>"], ["a" * 40, "b" * 40]]
    assert height == 16 + 2 + 32 + 2
    lines = list(root.iter(f"{SVG}polyline"))
    assert lines[0].get("stroke-dasharray") is None and lines[1].get("stroke-dasharray") == DASHED


def test_a_labelled_document_has_a_title_first() -> None:
    root = ET.fromstring(svg_document(10, 10, ["<g/>"], label="p90 <ms>"))
    assert root[0].tag == f"{SVG}title" and root[0].text == "p90 <ms>"
    assert ET.fromstring(svg_document(10, 10, ["<g/>"]))[0].tag == f"{SVG}g"


def test_one_module_writes_svg() -> None:
    # Every chart of the HTML pages goes through one writer; PNG and PDF files are
    # matplotlib's.
    src = Path(dlbench.__file__).parent
    writers = sorted(str(path.relative_to(src)) for path in src.rglob("*.py")
                     if "<svg" in path.read_text(encoding="utf-8"))
    assert writers == [str(Path("report/charts/svg.py"))]


@pytest.mark.parametrize("bad", [{"width": -1.0}, {"height": float("inf")}])
def test_a_document_needs_a_finite_positive_size(bad: dict[str, float]) -> None:
    size = {"width": 10.0, "height": 10.0, **bad}
    with pytest.raises(ValueError, match="size"):
        svg_document(size["width"], size["height"], [])
