"""Operator breakdowns and memory charts in the HTML report, and operators in compare."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from typing import Any

import pytest

from dlbench.report.cells import Report
from dlbench.report.charts.axes import nice_step
from dlbench.report.compare.compare import compare_records
from dlbench.report.compare.formatting import format_comparison
from dlbench.report.html.memory import draw_memory_chart, unit_for
from dlbench.report.html.page import profiles_section, render_html
from dlbench.report.operators import OperatorChange, compare_operators, record_operators

EVIL = '<script>alert(1)</script>"onmouseover="alert(2)'
SVG = "{http://www.w3.org/2000/svg}"


def op(name: str, host_ms: float, share: float, calls: int, device_ms: float = 0.0
       ) -> dict[str, Any]:
    return {"name": name, "calls": calls, "self_device_ms": device_ms,
            "self_host_ms": host_ms, "share": share}


def rec(ops: list[dict[str, Any]] | None = None, batches: int = 2, **extra: Any
        ) -> dict[str, Any]:
    """An ok pytorch toy record; ``ops`` are window totals over ``batches`` batches."""
    record: dict[str, Any] = {
        "exp.status": "ok", "exp.framework": "pytorch", "exp.model": "toy",
        "exp.phase": "training", "exp.replica_batch": 16, "exp.effective_batch": 16,
        "results.throughput": 100.0, "results.profile.batches": batches,
        "results.profile.utilization_basis": "cpu_time",
    }
    if ops is not None:
        record["results.profile.top_ops"] = ops
    record.update({k.replace("__", "."): v for k, v in extra.items()})
    return record


class _Rows(HTMLParser):
    """The text of each table row's cells, and every attribute seen."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(page: str) -> _Rows:
    parser = _Rows()
    parser.feed(page)
    return parser


def test_operators_are_per_step_largest_first_on_the_ranked_time() -> None:
    # Out of order on purpose; the window had 2 batches.
    record = rec([op("aten::add", 2.0, 0.05, 8), op("aten::mm", 30.0, 0.6, 4),
                  op("aten::relu", 5.0, 0.1, 2)])
    ops = record_operators(record)
    assert [o.name for o in ops] == ["aten::mm", "aten::relu", "aten::add"]
    assert [o.self_ms for o in ops] == [15.0, 2.5, 1.0]
    assert [o.calls for o in ops] == [2.0, 1.0, 4.0]
    assert [o.share for o in ops] == [0.6, 0.1, 0.05]
    # On a GPU the worker ranks by device time: so does the table.
    gpu = rec([op("k1", 9.0, 0.1, 1, device_ms=1.0), op("k2", 1.0, 0.3, 1, device_ms=3.0)],
              results__profile__utilization_basis="device_kernels")
    assert [(o.name, o.self_ms) for o in record_operators(gpu)] == [("k2", 1.5), ("k1", 0.5)]


def _operators(records: list[dict[str, Any]]) -> str:
    """The operator tables of the page of ``records``."""
    page = render_html(Report("r"), records)
    return page[page.index("<h3>Operators by self time"):page.index('<section id="failures">')]


def test_operator_table_content_order_and_shares() -> None:
    record = rec([op("aten::mm", 30.0, 0.6, 4), op("aten::relu", 0.25, 0.005, 6)],
                 results__profile__utilization=0.9)
    page = _operators([rec(), rec(), rec(), record])
    rows = [r for r in parse(page).rows if r]
    assert rows == [["aten::mm", "15.00", "60.0%", "2"], ["aten::relu", "0.125", "0.5%", "3"]]
    assert "self ms / step" in page and "share of step" in page and "calls / step" in page
    assert "listed: 60.5% of the step; busy: 90.0%" in page
    assert 'href="#exp-3"' in page and "<details class=\"operators\" open>" in page
    assert "<td><code>aten::mm</code></td>" in page
    # Without the window's batches the table says it shows whole-window figures.
    whole = _operators([rec([op("aten::mm", 30.0, 0.6, 4)], batches=0)])
    assert [r for r in parse(whole).rows if r] == [["aten::mm", "30.00", "60.0%", "4"]]
    assert "self ms / window" in whole
    # More than four profiled experiments: their tables start closed.
    many = _operators([rec([op("aten::mm", 30.0, 0.6, 4)])] * 5)
    assert many.count('<details class="operators">') == 5


def test_memory_bars_are_proportional_to_bytes_on_one_axis() -> None:
    small = rec(results__memory__weights_bytes=1_000_000, results__memory__gradients_bytes=0,
                results__memory__optimizer_bytes=2_000_000,
                results__memory__activations_bytes=500_000)
    big = rec(results__memory__weights_bytes=1_000_000,
              results__memory__gradients_bytes=1_000_000,
              results__memory__optimizer_bytes=2_000_000,
              results__memory__activations_bytes=4_000_000,
              results__memory__peak_bytes=9_000_000)
    figure = draw_memory_chart([("small", small), ("big", big), ("none", rec())])
    assert figure is not None
    (axes,) = figure.axes
    mib = 1024.0**2
    # Zero-byte parts and records without figures draw nothing; every segment is its
    # bytes on one axis in MiB, stacked from where the one before it on its row ends.
    segments = [(p.get_gid(), p.get_x(), p.get_width()) for p in axes.patches]
    assert [gid for gid, _, _ in segments] == [
        "memory-0-weights", "memory-0-optimizer-state", "memory-0-activations",
        "memory-1-weights", "memory-1-gradients", "memory-1-optimizer-state",
        "memory-1-activations"]
    widths = [1e6, 2e6, 5e5, 1e6, 1e6, 2e6, 4e6]
    assert [w for _, _, w in segments] == pytest.approx([b / mib for b in widths])
    starts = [0.0, 1e6, 3e6, 0.0, 1e6, 2e6, 4e6]
    assert [x for _, x, _ in segments] == pytest.approx([b / mib for b in starts])
    # The peak's mark sits at its bytes on the same axis, on the big row (the second).
    (peak,) = [line for line in axes.get_lines() if line.get_gid() == "memory-peak-1"]
    assert list(peak.get_xydata()[0]) == pytest.approx([9e6 / mib, 1.0])
    # 9,000,000 B = 8.58 MiB: the axis is in MiB, ticks 0, 2, ... 10; rows by label.
    assert axes.get_xlabel() == "memory (MiB)"
    assert [t.get_text() for t in axes.get_xticklabels()][-1] == "10"
    assert [t.get_text() for t in axes.get_yticklabels()] == ["small", "big"]
    assert [t.get_text() for t in axes.texts] == ["3.338 MiB", "7.629 MiB"]
    assert draw_memory_chart([("none", rec())]) is None


def test_units_and_ticks() -> None:
    assert unit_for(38440.0) == ("KiB", 1024.0)
    assert unit_for(100.0) == ("B", 1.0)
    assert unit_for(3 * 1024.0**3) == ("GiB", 1024.0**3)
    assert nice_step(37.5) == 10.0 and nice_step(8.58) == 2.0 and nice_step(0.2) == 0.05


def test_hostile_operator_and_label_are_escaped_everywhere() -> None:
    record = rec([op(EVIL, 10.0, 0.5, 1)], exp__model=EVIL,
                 results__memory__weights_bytes=4096, results__memory__note=EVIL,
                 results__profile__trace=EVIL)
    page = render_html(Report("r"), [record])
    parsed = parse(page)
    assert parsed.tags.count("script") == 1  # the page's own
    assert not [name for name, _ in parsed.attrs if name.startswith("on")]
    assert "<script>alert" not in page
    section = page[page.index('<section id="profiles">'):page.index('<section id="failures">')]
    assert EVIL not in section and "&lt;script&gt;alert(1)&lt;/script&gt;&#34;" in section
    # The chart stays well-formed XML with the label inside it, as matplotlib wrote it.
    svg = section[section.index("<svg"):section.index("</svg>") + 6]
    texts = [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert any("<script>alert(1)" in t for t in texts)


def test_no_section_without_profiles_or_memory() -> None:
    assert profiles_section([rec()], ["toy"]) is None
    assert 'id="profiles"' not in render_html(Report("r"), [rec()])


def test_compare_operators_known_percentages_and_order() -> None:
    # Window of 2 batches on both sides: per step A mm 10, B mm 11.8 (+18%).
    a = rec([op("aten::mm", 20.0, 0.5, 4), op("aten::add", 4.0, 0.1, 2),
             op("aten::relu", 2.0, 0.05, 2), op("aten::gone", 6.0, 0.1, 2)])
    b = rec([op("aten::mm", 23.6, 0.5, 4), op("aten::add", 2.0, 0.1, 2),
             op("aten::relu", 2.0, 0.05, 2), op("aten::new", 1.0, 0.01, 2)])
    changes = compare_operators([a], [b])
    assert changes is not None
    assert [(c.name, c.a_ms, c.b_ms, c.change_text()) for c in changes] == [
        ("aten::mm", 10.0, 11.8, "+18.0%"), ("aten::add", 2.0, 1.0, "-50.0%"),
        ("aten::relu", 1.0, 1.0, "+0.0%"), ("aten::gone", 3.0, None, "only in A"),
        ("aten::new", None, 0.5, "only in B")]
    assert changes[0].change_pct == pytest.approx(18.0)
    assert OperatorChange("x", 0.0, 1.0).change_pct is None
    # Repeats on a side are pooled: mm per step 11.8 and 14 average to 12.9.
    b2 = rec([op("aten::mm", 28.0, 0.5, 4)])
    pooled = compare_operators([a], [b, b2])
    assert pooled is not None and pooled[0].b_ms == pytest.approx(12.9)
    assert compare_operators([a], [rec()]) is None


def test_dlbench_compare_prints_the_operator_table() -> None:
    a = [rec([op("aten::mm", 20.0, 0.5, 4)], exp__replica_batch=16),
         rec([op("aten::mm", 40.0, 0.5, 4)], exp__replica_batch=32)]
    b = [rec([op("aten::mm", 23.6, 0.5, 4)], exp__replica_batch=16, results__throughput=90.0),
         rec(None, exp__replica_batch=32)]
    comparison = compare_records(a, b)
    lines = format_comparison(comparison, "text")
    text = "\n".join(lines)
    assert "exp.replica_batch=16:" in text and "exp.replica_batch=32:" not in text
    mm = next(line for line in lines if line.startswith("aten::mm"))
    assert mm.split() == ["aten::mm", "10.00", "11.80", "+18.0%"]
    assert "| aten::mm" in "\n".join(format_comparison(comparison, "markdown"))
    doc = json.loads("\n".join(format_comparison(comparison, "json")))
    ops = doc["rows"][0]["operators"]
    assert ops[0]["name"] == "aten::mm" and ops[0]["change_pct"] == pytest.approx(18.0)
    assert "operators" not in doc["rows"][1]
    # csv stays one table of configurations.
    assert not any("aten::mm" in line for line in format_comparison(comparison, "csv"))
