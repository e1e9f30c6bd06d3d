"""The HTML report: structure, escaping of every value, and self-containment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import dlbench
from dlbench.errors import ResultsError
from dlbench.report.aggregate import Measured
from dlbench.report.cells import Report, Table
from dlbench.report.charts.charts import draw_chart
from dlbench.report.charts.checks import chart_problems
from dlbench.report.charts.figure import inline_svg
from dlbench.report.charts.series import build_series
from dlbench.report.html.charts import X, Y, report_charts
from dlbench.report.html.markup import STYLESHEET, Cell, cell, environment, number_cell
from dlbench.report.html.page import MAX_LIST_ITEMS, render_html, write_html_report

SVG = "{http://www.w3.org/2000/svg}"
EVIL = '<script>alert(1)</script>"onmouseover="alert(2)'


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text inside <script> elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Tags:
    parser = Tags()
    parser.feed(page)
    parser.close()
    return parser


def rec(model: str, batch: int, throughput: float | None, **extra: Any) -> dict[str, Any]:
    """A record as load_records gives it; ok when it has a throughput."""
    record: dict[str, Any] = {
        "exp.framework": "fake",
        "exp.model": model,
        "exp.phase": "training",
        "exp.device_type": "cpu",
        "exp.replica_batch": batch,
        "exp.id": f"{model}-{batch}",
        "exp.status": "ok" if throughput is not None else "failure",
        "exp.status_msg": "" if throughput is not None else "RuntimeError: out of memory",
        "sys.hostname": "node1",
        "hw.device_name": "fake",
    }
    if throughput is not None:
        record["results.throughput"] = throughput
        record["results.time"] = batch * 1000.0 / throughput
        record["results.time_data"] = [float(i) for i in range(3)]
    record.update(extra)
    return record


RECORDS = [
    rec("resnet50", 1, 100.0),
    rec("resnet50", 2, 180.0),
    rec("resnet50", 4, None),
    rec("alexnet", 1, 900.0),
    rec("alexnet", 2, 1700.0),
]


def report() -> Report:
    table = Table(
        "Exploration: results.time",
        ["exp.model", "batch 1", "batch 2"],
        [["resnet50", 10.0, 11.1111111], ["alexnet", 1.11111, None]],
        notes=["throughput = effective batch * 1000 / time"],
        group={"exp.framework": "fake"},
        floatfmt="{:.3f}",
    )
    return Report(
        "Sweep report",
        [table],
        warnings=["1 record(s) not ok skipped"],
        summary=["2 record(s) in 1 group(s) of tables."],
    )


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(report(), RECORDS)


def test_header_names_title_version_and_record_count(page: str) -> None:
    assert "<title>Sweep report</title>" in page
    assert "<h1>Sweep report</h1>" in page
    assert f"dlbench {dlbench.__version__}" in page
    assert "from 5 records (4 ok, 1 not ok)" in page
    assert re.search(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", page)
    assert "1 record(s) not ok skipped" in page
    assert "2 record(s) in 1 group(s) of tables." in page


def test_tables_use_floatfmt_dash_for_missing_and_right_align_numbers(page: str) -> None:
    assert '<td class="num" data-sort="11.1111111">11.111</td>' in page
    assert '<td class="num" data-sort="1.11111">1.111</td>' in page
    assert '<td class="missing">-</td>' in page
    assert "<td>resnet50</td>" in page
    assert '<th scope="col" class="num" title="click to sort">batch 1</th>' in page
    assert "throughput = effective batch * 1000 / time" in page
    assert "exp.framework=fake" in page


def test_mean_of_runs_shows_its_spread() -> None:
    table = Table("t", ["a"], [[Measured(100.0, 2.0, 3)]])
    page = render_html(Report("r", [table]), [])
    assert ">100.00 ±2.0%</td>" in page
    assert 'title="mean of 3 run(s), sample sd 2.00"' in page


def test_failure_has_its_own_section_with_status_and_message(page: str) -> None:
    failures = page[
        page.index('<section id="failures">') : page.index('<section id="experiments">')
    ]
    assert "Failures (1)" in failures
    assert '<section class="failure">' in failures
    assert ">failure</span>" in failures
    assert "RuntimeError: out of memory" in failures
    assert "exp.replica_batch=4" in failures


def test_all_ok_says_so() -> None:
    page = render_html(Report("r"), [])
    assert "Every experiment ended ok." in page
    assert "nothing to chart" in page
    assert "<svg" not in page


def test_every_experiment_has_collapsible_details_with_sorted_keys(page: str) -> None:
    assert page.count("<details id=\"exp-") == len(RECORDS)
    start = page.index('<details id="exp-0">')
    block = page[start : page.index("</details>", start)]
    keys = re.findall(r"<tr><td>([a-z_.]+)</td>", block)
    parameters = [k for k in keys if not k.startswith(("results.", "sys.", "hw."))]
    assert parameters == sorted(parameters)
    assert "<h4>Environment</h4>" in block and "sys.hostname" in block
    assert "<h4>Results</h4>" in block


def test_long_lists_are_cut_with_a_count() -> None:
    values = [float(i) for i in range(100)]
    page = render_html(Report("r"), [rec("m", 1, None, **{"results.time_data": values})])
    assert f"{float(MAX_LIST_ITEMS - 1)}, … (100 values)]" in page
    assert f"{float(MAX_LIST_ITEMS)}," not in page


def test_charts_are_inline_svg_with_a_caption_and_their_points_in_a_table(page: str) -> None:
    charts = page[page.index('<section id="charts">') : page.index('<section id="failures">')]
    assert charts.count("<svg") == 2  # one per model
    assert "<figcaption>resnet50 (fake, cpu): throughput" in charts
    assert "<figcaption>alexnet (fake, cpu): throughput" in charts
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page and "<metadata" not in page
    ids = [attrs["id"] for _, attrs in parse(page).tags if "id" in attrs]
    assert len(ids) == len(set(ids))
    # Each chart refers only to its own ids (markers, clip paths): none can reach
    # into another chart.
    for svg in re.findall(r"<svg.*?</svg>", charts, re.S):
        own = set(re.findall(r' id="([^"]+)"', svg))
        refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', svg))
        assert refs and refs <= own
        ET.fromstring(svg)  # well-formed
    # Each chart's points again as a table: resnet50's batches 1 and 2, alexnet's 1.
    tables = re.findall(r"<summary>The chart's points</summary>\n(.*?)</details>", charts, re.S)
    assert len(tables) == 2
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", row)
            for row in re.findall(r"<tr>(<td.*?)</tr>", tables[0])]
    assert [row[:5] for row in rows] == [
        ["results.throughput", "1", "100.00", "samples/s", "1"],
        ["results.throughput", "2", "180.00", "samples/s", "1"]]


def test_page_is_self_contained(page: str) -> None:
    tags = parse(page).tags
    for tag, attrs in tags:
        for name in ("src", "href", "xlink:href", "action", "poster", "data"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith(("#", "data:")), f"<{tag} {name}={value!r}>"
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)
    assert not re.search(r"<link[^>]*stylesheet", page, re.I)
    assert "@import" not in page and not re.search(r"url\(\s*['\"]?(https?:)?//", page)
    scripts = [attrs for tag, attrs in tags if tag == "script"]
    assert scripts == [{}]  # one inline script, the table sorter


def test_every_value_is_escaped() -> None:
    table = Table(EVIL, ["exp.model", EVIL], [[EVIL, 1.0]], notes=[EVIL], group={EVIL: EVIL})
    evil_report = Report(EVIL, [table], warnings=[EVIL], summary=[EVIL])
    records = [
        rec(EVIL, 1, 10.0, **{"fake.failure": EVIL, "sys.env": {EVIL: EVIL}}),
        rec(EVIL, 2, None, **{"exp.status_msg": EVIL, "exp.log_file": EVIL, "exp.id": EVIL}),
    ]
    page = render_html(evil_report, records)
    assert "<script>alert" not in page
    assert '"onmouseover=' not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&#34;onmouseover=&#34;alert(2)" in page
    parsed = parse(page)
    assert [tag for tag, _ in parsed.tags].count("script") == 1
    assert not any(name.startswith("on") for _, attrs in parsed.tags for name in attrs)
    # The text reads back as the value itself: escaped once, not twice.
    assert EVIL in "".join(parsed.text)


def test_write_is_atomic_and_replaces(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "report.html"
    write_html_report(Report("first"), [], path)
    write_html_report(Report("second"), [], path)
    assert "<title>second</title>" in path.read_text(encoding="utf-8")
    assert os.listdir(path.parent) == ["report.html"]


def test_write_failure_is_a_results_error_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.mkdir()  # a directory cannot be replaced by a file
    with pytest.raises(ResultsError, match=r"report\.html"):
        write_html_report(Report("r"), [], target)
    assert sorted(os.listdir(tmp_path)) == ["report.html"]


#: A tag of HTML or SVG in a string literal: markup built in Python.
_TAG = re.compile(r"""["'](<|</)(p|td|tr|th|table|li|ul|div|span|svg|g|text|rect|circle|"""
                  r"""line|path|polyline|section|figure|details|summary|h[1-6]|a|code|pre|"""
                  r"""title|nav|style|script|head|body|html|meta)[ >/]""")


def test_html_is_written_by_templates_that_escape_every_value() -> None:
    # Known answer: the five characters HTML gives meaning to, inside text and quotes,
    # as Jinja2's autoescape writes them.
    assert environment().autoescape is True
    text = environment().from_string("<p title=\"{{ v }}\">{{ v }}</p>").render(
        v="<a href=\"x\">&'</a>")
    assert text == ("<p title=\"&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt;\">"
                    "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt;</p>")
    # No module of dlbench builds markup from strings: every tag is in a template,
    # every chart is matplotlib's.
    src = Path(dlbench.__file__).parent
    building = sorted(f"{path.relative_to(src)}: {match.group(0)}"
                      for path in src.rglob("*.py")
                      for match in _TAG.finditer(path.read_text(encoding="utf-8")))
    assert building == []


def test_one_page_shell_for_every_page() -> None:
    page = render_html(Report("a < b"), [])
    assert page.startswith("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n")
    assert "<title>a &lt; b</title>" in page
    assert f'<meta name="generator" content="dlbench {dlbench.__version__}">' in page
    assert f"<style>\n{STYLESHEET}</style>" in page and page.endswith("</body>\n</html>\n")
    # One page shell and one stylesheet: no other file of dlbench writes a document or
    # a <style>, and no rule of the stylesheet is given twice.
    src = Path(dlbench.__file__).parent
    for marker in ("<!DOCTYPE html>", "<style"):
        shells = sorted(str(path.relative_to(src)) for path in src.rglob("*")
                        if path.is_file() and path.suffix in (".py", ".j2")
                        and marker in path.read_text(encoding="utf-8"))
        assert shells == [str(Path("report/templates/page.html.j2"))], marker
    selectors = re.findall(r"^([^{}\s][^{}]*)\{", STYLESHEET, flags=re.MULTILINE)
    assert len(selectors) > 25 and len(selectors) == len(set(selectors))
    assert render_html(Report("r"), []).count("<style>") == 1


def test_the_pages_chart_is_the_png_chart() -> None:
    # Categorical x (models): points in evenly spaced slots, dodged, never joined; two
    # units, two panels; the same figure as dlbench plot's, inlined.
    records = [rec(m, 1, t, **{"exp.dtype": d, "results.throughput_unit": u})
               for m, t in (("bert", 10.0), ("gpt", 30.0))
               for d, u in (("float32", "tokens/s"), ("float16", "tokens/s"))]
    records += [rec("resnet", 1, 50.0, **{"exp.dtype": "int8"})]
    series = build_series(records, "exp.model", "results.throughput")
    drawn = draw_chart(series, xlabel="exp.model", ylabel="results.throughput")
    assert chart_problems(drawn) == []
    assert drawn.labels["ylabels"] == ["results.throughput (tokens/s)",
                                       "results.throughput (samples/s)"]
    points = [[float(x) for x in line.get_xdata()] for panel in drawn.panels
              for line in panel.axes.get_lines() if line.get_marker() == "o"]
    # Three slots; the two series of the first panel a quarter of a slot apart, either
    # side of the slot's middle; none joined.
    assert points == [[-0.125, 0.875], [0.125, 1.125], [2.0]]
    assert all(line.get_linestyle() == "None" for panel in drawn.panels
               for line in panel.axes.get_lines() if line.get_marker() == "o")
    # The page's SVG is that figure: its labels, slots and legend are its text.
    root = ET.fromstring(inline_svg(drawn.figure, ids="x-"))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert all(label in texts for label in drawn.labels["ylabels"])
    assert [t for t in texts if t in ("bert", "gpt", "resnet")] == ["bert", "gpt", "resnet"]
    for label in drawn.labels["legend"]:
        assert all(line in texts for line in label.split("\n")), label
    # and the report's chart is dlbench plot's figure of the same series.
    for chart in report_charts(RECORDS):
        plotted = draw_chart(chart.series, xlabel=X, ylabel=Y)
        assert chart.drawn.labels == plotted.labels and chart.problems == []


def test_an_html_page_without_charts_is_built_without_matplotlib() -> None:
    # A page with nothing to chart (no ok record) pays for neither matplotlib nor numpy's
    # drawing: a fresh interpreter leaves matplotlib unloaded.
    script = (
        "import sys\n"
        "from dlbench.report.cells import Report\n"
        "from dlbench.report.html.page import render_html\n"
        "from tests.unit.test_report_html import RECORDS\n"
        "failed = [dict(r, **{'exp.status': 'failure'}) for r in RECORDS]\n"
        "page = render_html(Report('r'), failed)\n"
        "assert page.count('<svg') == 0 and 'Failures (5)' in page\n"
        "print('matplotlib' in sys.modules)\n")
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / "src"), str(repo)])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=repo, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n"


def test_cells_known_answers() -> None:
    assert cell(None) == Cell("-", missing=True)
    assert cell(float("nan")) == Cell("-", missing=True)
    assert cell("x<y") == Cell("x<y")  # escaped by the template, not here
    assert cell(1234.5, "{:.1f}") == Cell("1234.5", "1234.5")
    assert cell(Measured(100.0, 2.0, 3)) == Cell("100.00 ±2.0%", "100.0",
                                                 "mean of 3 run(s), sample sd 2.00")
    assert number_cell(float("inf"), "inf") == Cell("-", missing=True)
