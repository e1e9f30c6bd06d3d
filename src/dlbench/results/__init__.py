"""Results: the log format, the log parser, the store, queries, import/export, tables.

One experiment is one log file is one record: a flat dict keyed by dotted names
(``exp.model``, ``results.time``, ``sys.hostname``) with JSON values.
"""

from __future__ import annotations

from dlbench.results.io import (
    WRITE_FORMATS,
    dumps_records,
    load_dataframe,
    load_records,
    write_atomically,
    write_records,
)
from dlbench.results.log.file import LINE_RE, LogWriter, format_line
from dlbench.results.log.parser import ParseWarning, parse_log, parse_logs
from dlbench.results.query import (
    OPERATORS,
    distinct_values,
    filter_records,
    match,
    parse_query,
    select_records,
)
from dlbench.results.store import FORMAT_VERSION, STORE_FILENAME, Store
from dlbench.results.text_table import TABLE_FORMATS, choose_columns, format_table

__all__ = [
    "FORMAT_VERSION",
    "LINE_RE",
    "OPERATORS",
    "STORE_FILENAME",
    "TABLE_FORMATS",
    "WRITE_FORMATS",
    "LogWriter",
    "ParseWarning",
    "Store",
    "choose_columns",
    "distinct_values",
    "dumps_records",
    "filter_records",
    "format_line",
    "format_table",
    "load_dataframe",
    "load_records",
    "match",
    "parse_log",
    "parse_logs",
    "parse_query",
    "select_records",
    "write_atomically",
    "write_records",
]
