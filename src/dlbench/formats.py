"""The output formats of the command line, named once per family.

Two families, with one name for plain text, ``text`` (``table``, its earlier name in
``query`` and ``plan``, is still accepted: ``cli.usage.FORMAT_ALIASES``):

- data formats (``dlbench query``, ``dlbench plan``, ``dlbench status``): records as an
  aligned ``text`` table, ``json`` or ``csv``; ``query`` also writes ``parquet`` files;
- report formats (``dlbench report``, ``compare``, ``sysinfo``, ``peak``): a document as
  ``text``, ``markdown``, ``csv`` or ``json``; ``report`` also writes an ``html`` page.
"""

from __future__ import annotations

#: Formats of records: an aligned table, one JSON document, or CSV.
DATA_FORMATS = ("text", "json", "csv")
#: The format of records written to a file only (``dlbench query --output``): Parquet,
#: a column per key, for pandas, Polars, DuckDB (:mod:`dlbench.results.parquet`).
PARQUET_FORMAT = "parquet"
#: Formats of a report, a comparison or a machine's facts.
REPORT_FORMATS = ("text", "markdown", "csv", "json")
#: The report format written to a file only: a page with charts.
HTML_FORMAT = "html"
