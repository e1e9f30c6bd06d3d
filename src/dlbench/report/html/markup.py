"""HTML text: the one escaping rule and the one page shell of every page dlbench writes
(the HTML report, the history page, their charts and sections)."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable

import dlbench
from dlbench.textsafe import escape_surrogates

#: The one stylesheet of every page: the report (tables, notes, failures, details,
#: charts) and the history (its filter box, alert and time-series charts).
STYLESHEET = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
 color:#1f2328;background:#fff;max-width:1200px;margin:0 auto;padding:1.2rem 1.5rem 3rem}
h1{font-size:1.6rem;margin:.2rem 0}
h2{font-size:1.25rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem;margin-top:2rem;
 word-break:break-word}
h3{font-size:1.05rem;margin:1.2rem 0 .3rem}
.meta{color:#59636e;margin:.2rem 0 1rem}
nav a{margin-right:1rem}
a{color:#0969da}
table{border-collapse:collapse;margin:.4rem 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #d0d7de;padding:.25rem .65rem;text-align:left;vertical-align:top}
thead th{background:#f6f8fa;white-space:nowrap}
table.sortable thead th{cursor:pointer;user-select:none}
th[aria-sort=ascending]::after{content:" \\25B2";font-size:.7em}
th[aria-sort=descending]::after{content:" \\25BC";font-size:.7em}
td.num,th.num{text-align:right}
td.missing{color:#8c959f}
td.when{white-space:nowrap}
.group{color:#59636e;margin:0}
.notes{color:#59636e;font-size:.92em;margin:.2rem 0 1rem;padding-left:1.2rem}
.warnings{background:#fff8c5;border-left:4px solid #d4a72c;padding:.4rem 1rem;margin:1rem 0}
.alert{background:#ffebe9;border-left:4px solid #cf222e;padding:.4rem 1rem;margin:1rem 0}
.summary{background:#f6f8fa;padding:.5rem 1rem .5rem 2rem;border-radius:6px}
.failure{background:#ffebe9;border:1px solid #ff8182;border-left:6px solid #cf222e;
 border-radius:6px;padding:.3rem 1rem;margin:.8rem 0}
.failure h3{margin:.4rem 0}
.status{font-weight:700;text-transform:uppercase;letter-spacing:.03em}
.status-bad{color:#cf222e}
.status-ok{color:#1a7f37}
.bad{color:#cf222e;font-weight:600}
pre{white-space:pre-wrap;word-break:break-word;background:#fff;border:1px solid #d0d7de;
 border-radius:4px;padding:.5rem;margin:.4rem 0;font-size:.92em}
details{border:1px solid #d0d7de;border-radius:6px;margin:.35rem 0;padding:.25rem .7rem}
summary{cursor:pointer}
details table.kv td:first-child{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;
 white-space:nowrap}
#filter{font:inherit;padding:.3rem .5rem;width:100%;max-width:32rem;box-sizing:border-box}
figure{margin:1rem 0}
figcaption{font-weight:600;margin-bottom:.3rem}
.chart svg{max-width:100%;height:auto}
.series svg{max-width:100%;height:auto;border:1px solid #d0d7de;border-radius:4px}
.axis{stroke:#8c959f;stroke-width:1}
.label{font-size:11px;fill:#59636e}
.dot{fill:#0969da}
.dot:hover{fill:#1f2328}
.ci{stroke:#54aeff;stroke-width:1.5}
.mean{stroke:#1a7f37;stroke-width:1.5;fill:none}
.cp{stroke:#8c959f;stroke-width:2;stroke-dasharray:5 4}
.cp.bad{stroke:#cf222e}
"""


def escape(value: object) -> str:
    """``value`` as text safe inside an HTML element or a quoted attribute: ``&``, ``<``,
    ``>``, ``"`` and ``'`` escaped."""
    return html.escape(str(value), quote=True)


def list_items(texts: Iterable[object]) -> str:
    """One ``<li>`` per text, escaped, for a ``<ul>`` or ``<ol>`` of a page.

    >>> list_items(["a<b", 2])
    '<li>a&lt;b</li><li>2</li>'
    """
    return "".join(f"<li>{escape(text)}</li>" for text in texts)


def number_cell(value: float | None, text: str, title: str = "") -> str:
    """A right-aligned table cell showing ``text`` and carrying ``value`` for the page's
    sorting script (so that ``1,000.00`` or a format never decides the order), with an
    optional tooltip; a missing or non-finite value is a ``-`` cell."""
    if value is None or not math.isfinite(value):
        return '<td class="missing">-</td>'
    tip = f' title="{escape(title)}"' if title else ""
    return f'<td class="num" data-sort="{escape(repr(float(value)))}"{tip}>{escape(text)}</td>'


def page_shell(title: str, body: str, script: str) -> str:
    """A whole self-contained page: the document, its head (charset, viewport, the
    generator with dlbench's version, the escaped ``title``, no favicon request), the
    one :data:`STYLESHEET` and, after ``body`` (HTML, inserted as it is), the page's
    ``script``. A lone surrogate anywhere in the page is written as its visible
    ``\\udXXX`` escape (:mod:`dlbench.textsafe`), so the page always encodes as UTF-8."""
    return escape_surrogates(f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="dlbench {escape(dlbench.__version__)}">
<title>{escape(title)}</title>
<link rel="icon" href="data:,">
<style>{STYLESHEET}</style>
</head>
<body>
{body}
<script>{script}</script>
</body>
</html>
""")
