"""Record values that reach the HTML report by way of its charts (legend entries,
captions, the device name) and the status badge are escaped like every other value:
the caption and badge by the page's template, the chart's text by matplotlib's SVG
writer."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from dlbench.report.cells import Report, Table
from dlbench.report.html.charts import report_charts
from dlbench.report.html.page import render_html
from tests.unit.test_report_html import EVIL, SVG, parse, rec

# Ends an HTML comment, then opens a tag.
COMMENT_BREAKER = "--><img src=x onerror=alert(3)>"


def test_values_in_charts_status_and_key_names_are_escaped() -> None:
    records = [
        rec("m", 1, 10.0, **{"exp.framework": EVIL, "hw.device_name": EVIL, EVIL: 1}),
        rec("m", 2, 12.0, **{"exp.framework": COMMENT_BREAKER, "hw.device_name": EVIL}),
        rec("m", 2, None, **{"exp.status": EVIL, "exp.framework": "fake"}),
    ]
    page = render_html(Report("t", [Table("x", ["a"], [[1]])]), records)
    [svg] = re.findall(r"<svg.*?</svg>", page, re.S)
    # matplotlib's SVG parses as XML and reads back the legend's text as it was: both
    # series named, their values escaped in the markup.
    texts = [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]
    (chart,) = report_charts(records)
    legend = chart.drawn.labels["legend"]  # long labels wrapped onto lines
    assert [s.label for s in chart.series] == [
        f"exp.framework={EVIL}", "exp.framework=--><img src=x onerror=alert(3)>"]
    assert len(legend) == 2
    assert all(line in texts for label in legend for line in label.split("\n"))
    assert "exp.framework=&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert "exp.framework=--&gt;&lt;img src=x" in svg and "onerror=alert(3)&gt;" in svg
    assert "<!--" not in svg  # text as text: no comment for a value to break out of
    assert '<figcaption>m (cpu, &lt;script&gt;alert(1)&lt;/script&gt;&#34;onmouseover' in page
    assert "throughput in samples/s vs replica batch</figcaption>" in page
    assert '<span class="status status-bad">&lt;script&gt;alert(1)' in page
    assert "<script>alert" not in page and "<img" not in page
    parsed = parse(page)
    tags = [tag for tag, _ in parsed.tags]
    assert tags.count("script") == 1 and "img" not in tags
    assert not any(name.startswith("on") for _, attrs in parsed.tags for name in attrs)
