"""A report as one self-contained HTML page: tables, charts, failures, every experiment.

The page has no external resource of any kind (styles and the small table-sorting
script are inline, charts are inline SVG), so it can be mailed, archived or opened
from ``file://`` on a machine with no network. Every value that comes from a record
or a report is HTML-escaped: model names and error messages are user input.

Example::

    records = load_records(["runs/sweep1"])
    report = build_table_report(records, "exploration")
    write_html_report(report, records, Path("sweep1.html"))
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dlbench
from dlbench.config.registry import varying_parameters
from dlbench.report.aggregate import Measured
from dlbench.report.cells import Report, Table
from dlbench.report.html.markup import escape, list_items, number_cell, page_shell
from dlbench.report.html.memory import memory_html
from dlbench.report.html.operator_table import OPEN_TABLES, operator_table_html
from dlbench.report.operators import record_operators
from dlbench.report.render import format_value, spread
from dlbench.report.serving.section import serving_section_html
from dlbench.results.io import write_atomically
from dlbench.results.text_table import MISSING, format_number
from dlbench.results.values import is_number as _is_number

#: Lists (e.g. ``results.time_data``) longer than this are cut in the experiment details.
MAX_LIST_ITEMS = 20

#: Always at the start of an experiment's label, whether they vary or not.
_LABEL_KEYS = ("exp.framework", "exp.model", "exp.phase")

_ENVIRONMENT_PREFIXES = ("sys.", "hw.")

# Sorts a table by the clicked header; numeric cells carry their raw value in
# data-sort so that "1,000.00" or a floatfmt never decides the order.
_JS = """
(function () {
  function key(row, index) {
    var cell = row.cells[index];
    if (!cell || cell.classList.contains("missing")) { return null; }
    var raw = cell.getAttribute("data-sort");
    return raw !== null ? parseFloat(raw) : cell.textContent;
  }
  function compare(a, b) {
    if (a === null || b === null) { return a === b ? 0 : (a === null ? 1 : -1); }
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }
  function sortBy(th) {
    var table = th.closest("table");
    var body = table.tBodies[0];
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = key(r1, index), b = key(r2, index);
      if (a === null || b === null) { return compare(a, b); }
      return ascending ? compare(a, b) : compare(b, a);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  document.querySelectorAll("table.sortable thead th").forEach(function (th) {
    th.addEventListener("click", function () { sortBy(th); });
  });
  // A link to an experiment opens its (closed) details block.
  document.querySelectorAll("a[href^='#exp-']").forEach(function (a) {
    a.addEventListener("click", function () {
      var target = document.getElementById(a.getAttribute("href").slice(1));
      if (target) { target.open = true; }
    });
  });
})();
"""



def _status(record: Mapping[str, Any]) -> str:
    return str(record.get("exp.status", "unknown"))


# ---------------------------------------------------------------- values


def _cell(value: Any, floatfmt: str | None) -> str:
    """One ``<td>``, worded as in the text report (``152.31 ±2.1%``, ``-``); numbers
    right-aligned and carrying their raw value for sorting."""
    text = format_value(value, floatfmt)
    if not _is_number(value):
        return f"<td>{escape(text)}</td>" if value is not None else '<td class="missing">-</td>'
    if text == MISSING:  # NaN or infinity: no measurement
        return '<td class="missing">-</td>'
    tip = ""
    if isinstance(value, Measured):
        sd = "-" if value.sd is None else format_number(value.sd, floatfmt)
        tip = f"mean of {value.n} run(s), sample sd {sd}"
    return number_cell(float(value), text + spread(value), tip)


def _plain_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _detail_value(value: Any) -> str:
    """A record's value in full, except that long lists and dicts are cut with a count."""
    if isinstance(value, (list, tuple)) and len(value) > MAX_LIST_ITEMS:
        head = json.dumps(list(value[:MAX_LIST_ITEMS]), ensure_ascii=False)
        return f"{head[:-1]}, … ({len(value)} values)]"
    if isinstance(value, dict) and len(value) > MAX_LIST_ITEMS:
        text = json.dumps(dict(sorted(value.items())[:MAX_LIST_ITEMS]), ensure_ascii=False)
        return f"{text[:-1]}, … ({len(value)} entries)}}"
    return _plain_value(value)


# ---------------------------------------------------------------- report parts


def _table_html(table: Table) -> str:
    numeric = [
        any(_is_number(row[i]) for row in table.rows if i < len(row))
        for i in range(len(table.columns))
    ]
    head = "".join(
        f'<th scope="col" class="{"num" if is_num else "text"}" title="click to sort">'
        f"{escape(c)}</th>"
        for c, is_num in zip(table.columns, numeric, strict=True)
    )
    body = "\n".join(
        "<tr>" + "".join(_cell(v, table.floatfmt) for v in row) + "</tr>" for row in table.rows
    )
    parts = [f"<h3>{escape(table.title)}</h3>"]
    if table.group:
        group = ", ".join(f"{k}={_plain_value(v)}" for k, v in table.group.items())
        parts.append(f'<p class="group">{escape(group)}</p>')
    parts.append(
        f'<table class="sortable"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'
    )
    if table.notes:
        parts.append(f'<ul class="notes">{list_items(table.notes)}</ul>')
    return "\n".join(parts)


def _label(record: Mapping[str, Any], varying: Sequence[str]) -> str:
    """``fake resnet50 training exp.replica_batch=2``: what tells this experiment apart."""
    words = [str(record.get(k, "?")) for k in _LABEL_KEYS]
    words += [
        f"{k}={_plain_value(record[k])}" for k in varying if k in record and k not in _LABEL_KEYS
    ]
    return " ".join(words)


def _status_html(status: str) -> str:
    kind = "status-ok" if status == "ok" else "status-bad"
    return f'<span class="status {kind}">{escape(status)}</span>'


def _failure_html(index: int, record: Mapping[str, Any], label: str) -> str:
    message = record.get("exp.status_msg") or "(no message)"
    parts = [
        '<section class="failure">',
        f"<h3>{_status_html(_status(record))} {escape(label)}</h3>",
        f'<pre class="status-msg">{escape(_plain_value(message))}</pre>',
    ]
    if "exp.log_file" in record:
        parts.append(f"<p>Log: <code>{escape(_plain_value(record['exp.log_file']))}</code></p>")
    parts.append(f'<p><a href="#exp-{index}">All parameters of this experiment</a></p>')
    parts.append("</section>")
    return "\n".join(parts)


def _kv_table(record: Mapping[str, Any], keys: Sequence[str]) -> str:
    rows = "\n".join(
        f"<tr><td>{escape(k)}</td><td>{escape(_detail_value(record[k]))}</td></tr>" for k in keys
    )
    return f'<table class="kv"><tbody>\n{rows}\n</tbody></table>'


def _experiment_html(index: int, record: Mapping[str, Any], label: str) -> str:
    keys = sorted(record)
    groups = (
        ("Results", [k for k in keys if k.startswith("results.")]),
        ("Environment", [k for k in keys if k.startswith(_ENVIRONMENT_PREFIXES)]),
    )
    grouped = {k for _, group in groups for k in group}
    sections = [("Parameters", [k for k in keys if k not in grouped]), *groups]
    body = "\n".join(
        f"<h4>{title}</h4>\n{_kv_table(record, group)}" for title, group in sections if group
    )
    exp_id = record.get("exp.id")
    ident = f" <code>{escape(exp_id)}</code>" if exp_id is not None else ""
    return (
        f'<details id="exp-{index}"><summary>{_status_html(_status(record))} '
        f"{escape(label)}{ident}</summary>\n{body}\n</details>"
    )


def _header_html(report: Report, records: Sequence[Mapping[str, Any]]) -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    ok = sum(_status(r) == "ok" for r in records)
    parts = [
        f"<h1>{escape(report.title)}</h1>",
        f'<p class="meta">Generated {escape(now)} by dlbench {escape(dlbench.__version__)} from '
        f"{len(records)} records ({ok} ok, {len(records) - ok} not ok).</p>",
        '<nav><a href="#tables">Tables</a><a href="#charts">Charts</a>'
        '<a href="#failures">Failures</a><a href="#experiments">Experiments</a></nav>',
    ]
    if report.warnings:
        parts.append(f'<div class="warnings" role="alert"><strong>Warnings</strong>'
                     f"<ul>{list_items(report.warnings)}</ul></div>")
    if report.summary:
        parts.append(f'<ul class="summary">{list_items(report.summary)}</ul>')
    return "\n".join(parts)


# ---------------------------------------------------------------- charts

def _charts_html(records: Sequence[Mapping[str, Any]]) -> str:
    """Throughput against replica batch, one inline SVG chart per model (and device)
    (:func:`dlbench.report.html.charts.report_charts`), each with what the drawing
    found wrong with it, if anything, and its points as a table (for a screen reader,
    and to copy)."""
    from dlbench.report.html.charts import chart_table, report_charts

    charts = report_charts(records)
    if not charts:
        return "<p>No experiment ended ok with a throughput: nothing to chart.</p>"
    figures = []
    for chart in charts:
        problems = list_items(chart.problems)
        figures.append(
            f'<figure class="chart"><figcaption>{escape(chart.caption)}</figcaption>\n'
            f"{chart.svg}\n"
            + (f'<ul class="notes">{problems}</ul>\n' if problems else "")
            + f"<details><summary>The chart's points</summary>\n"
            f"{_table_html(chart_table(chart))}\n</details>"
            + "</figure>"
        )
    return "\n".join(figures)


def render_html(report: Report, records: Sequence[Mapping[str, Any]]) -> str:
    """The whole report as one HTML document, with no external resource.

    Contains the report's tables, warnings and summary; throughput charts of the
    records that ended ``ok``; a section per experiment that did not; and every
    experiment's parameters, results and environment in a collapsible block.
    """
    varying = varying_parameters(records)
    labels = [_label(r, varying) for r in records]
    failures = [i for i, r in enumerate(records) if _status(r) != "ok"]
    tables = "\n".join(_table_html(t) for t in report.tables) or "<p>No tables.</p>"
    failure_parts = "\n".join(_failure_html(i, records[i], labels[i]) for i in failures)
    experiments = "\n".join(_experiment_html(i, r, labels[i]) for i, r in enumerate(records))
    body = f"""{_header_html(report, records)}
<section id="tables"><h2>Tables</h2>
{tables}
</section>
<section id="charts"><h2>Charts</h2>
{_charts_html(records)}
</section>
{profiles_section_html(records, labels)}
{serving_section_html(report, records)}
<section id="failures"><h2>Failures ({len(failures)})</h2>
{failure_parts or "<p>Every experiment ended ok.</p>"}
</section>
<section id="experiments"><h2>Experiments ({len(records)})</h2>
{experiments or "<p>No records.</p>"}
</section>"""
    return page_shell(report.title, body, _JS)


def write_html_report(report: Report, records: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Write :func:`render_html` to ``path`` through
    :func:`~dlbench.results.export.open_output`: a file is written beside it and renamed
    into place, so a reader never sees half a page; a device or a FIFO is written in
    place."""
    write_atomically(path, render_html(report, records))


def profiles_section_html(records: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> str:
    """The page's "Operators and memory" section, or ``""`` when no record has an
    operator breakdown or a memory figure. ``labels[i]`` names ``records[i]`` (the
    page's experiment labels); links point at the page's ``#exp-<i>`` blocks."""
    profiled = [i for i, r in enumerate(records) if record_operators(r)]
    memory = memory_html(records, labels)
    if not profiled and not memory:
        return ""
    parts = ['<section id="profiles"><h2>Operators and memory</h2>']
    if memory:
        parts += ["<h3>Memory breakdown</h3>", memory]
    if profiled:
        parts.append(f"<h3>Operators by self time ({len(profiled)} profiled experiment(s))</h3>")
        open_ = len(profiled) <= OPEN_TABLES
        parts += [operator_table_html(i, records[i], labels[i], open_=open_) for i in profiled]
    parts.append("</section>")
    return "\n".join(parts)
