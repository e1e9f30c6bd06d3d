"""Record values that reach the HTML report by way of its charts (legend entries,
captions, the device name) and the status badge are escaped like every other value."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from dlbench.report.cells import Report, Table
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
    # the legend names both series, with their values escaped, and so do the points'
    # tooltips and the series' data-label
    legend = [t.text for g in ET.fromstring(svg).iter(f"{SVG}g")
              if g.get("class") == "legend-entry" for t in g.iter(f"{SVG}text")]
    assert legend == [f"exp.framework={EVIL}",
                      "exp.framework=--><img src=x onerror=alert(3)>"]
    assert "exp.framework=&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert 'data-label="exp.framework=--&gt;&lt;img src=x onerror=alert(3)&gt;"' in svg
    assert '<figcaption>m (cpu, &lt;script&gt;alert(1)&lt;/script&gt;&quot;onmouseover' in page
    assert "throughput in samples/s vs replica batch</figcaption>" in page
    assert '<span class="status status-bad">&lt;script&gt;alert(1)' in page
    assert "<script>alert" not in page and "<img" not in page
    parsed = parse(page)
    tags = [tag for tag, _ in parsed.tags]
    assert tags.count("script") == 1 and "img" not in tags
    assert not any(name.startswith("on") for _, attrs in parsed.tags for name in attrs)
