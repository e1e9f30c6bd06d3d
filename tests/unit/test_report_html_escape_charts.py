"""Record values that reach the HTML report by way of its charts (legend entries,
captions, the device name) and the status badge are escaped like every other value."""

from __future__ import annotations

import re

from dlbench.report.cells import Report, Table
from dlbench.report.html.page import render_html
from tests.unit.test_report_html import EVIL, parse, rec

# Ends an HTML comment, then opens a tag: matplotlib writes legend text into comments.
COMMENT_BREAKER = "--><img src=x onerror=alert(3)>"


def test_values_in_charts_status_and_key_names_are_escaped() -> None:
    records = [
        rec("m", 1, 10.0, **{"exp.framework": EVIL, "hw.device_name": EVIL, EVIL: 1}),
        rec("m", 2, 12.0, **{"exp.framework": COMMENT_BREAKER, "hw.device_name": EVIL}),
        rec("m", 2, None, **{"exp.status": EVIL, "exp.framework": "fake"}),
    ]
    page = render_html(Report("t", [Table("x", ["a"], [[1]])]), records)
    [svg] = re.findall(r"<svg.*?</svg>", page, re.S)
    # the legend names both series, with their values escaped (long labels are wrapped
    # to fit the image, and matplotlib writes each line in a comment of its own)
    assert "exp.framework=&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert "&lt;img src=x -->" in svg and "<!-- onerror=alert(3)&gt; -->" in svg
    assert '<figcaption>m (cpu, &lt;script&gt;alert(1)&lt;/script&gt;&quot;onmouseover' in page
    assert "throughput in samples/s vs replica batch</figcaption>" in page
    assert '<span class="status status-bad">&lt;script&gt;alert(1)' in page
    assert "<script>alert" not in page and "<img" not in page
    parsed = parse(page)
    tags = [tag for tag, _ in parsed.tags]
    assert tags.count("script") == 1 and "img" not in tags
    assert not any(name.startswith("on") for _, attrs in parsed.tags for name in attrs)
