"""A report as one self-contained HTML page: tables, charts, failures, every experiment.

The page has no external resource of any kind (styles and the small table-sorting
script are inline, charts are inline SVG), so it can be mailed, archived or opened
from ``file://`` on a machine with no network. It is the template ``report.html.j2``
(:mod:`dlbench.report.html.markup`): this module decides what the page says, the
template how, and every value that comes from a record or a report is HTML-escaped
by the template: model names and error messages are user input.

Example::

    records = load_records(["runs/sweep1"])
    report = build_table_report(records, "exploration")
    write_html_report(report, records, Path("sweep1.html"))
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dlbench.config.identity import varying_parameters
from dlbench.report.cells import Report
from dlbench.report.html.charts import report_charts
from dlbench.report.html.markup import plain_value, render_page, table_view
from dlbench.report.html.memory import MemorySection, memory_section
from dlbench.report.html.operator_table import OPEN_TABLES, OperatorTable, operator_table
from dlbench.report.operators import record_operators
from dlbench.report.serving.section import serving_section
from dlbench.results.io import write_atomically

#: Lists (e.g. ``results.time_data``) longer than this are cut in the experiment details.
MAX_LIST_ITEMS = 20

#: Always at the start of an experiment's label, whether they vary or not.
_LABEL_KEYS = ("exp.framework", "exp.model", "exp.phase")

_ENVIRONMENT_PREFIXES = ("sys.", "hw.")


def _status(record: Mapping[str, Any]) -> str:
    return str(record.get("exp.status", "unknown"))


def _detail_value(value: Any) -> str:
    """A record's value in full, except that long lists and dicts are cut with a count."""
    if isinstance(value, (list, tuple)) and len(value) > MAX_LIST_ITEMS:
        head = json.dumps(list(value[:MAX_LIST_ITEMS]), ensure_ascii=False)
        return f"{head[:-1]}, … ({len(value)} values)]"
    if isinstance(value, dict) and len(value) > MAX_LIST_ITEMS:
        text = json.dumps(dict(sorted(value.items())[:MAX_LIST_ITEMS]), ensure_ascii=False)
        return f"{text[:-1]}, … ({len(value)} entries)}}"
    return plain_value(value)


def _label(record: Mapping[str, Any], varying: Sequence[str]) -> str:
    """``fake resnet50 training exp.replica_batch=2``: what tells this experiment apart."""
    words = [str(record.get(k, "?")) for k in _LABEL_KEYS]
    words += [
        f"{k}={plain_value(record[k])}" for k in varying if k in record and k not in _LABEL_KEYS
    ]
    return " ".join(words)


@dataclass
class Failure:
    """An experiment that did not end ok, as its section shows it."""

    index: int
    status: str
    label: str
    message: str
    log_file: str | None


def _failure(index: int, record: Mapping[str, Any], label: str) -> Failure:
    message = record.get("exp.status_msg") or "(no message)"
    log = record.get("exp.log_file")
    return Failure(index, _status(record), label, plain_value(message),
                   None if log is None else plain_value(log))


@dataclass
class Experiment:
    """An experiment's collapsible block: its parameters, results and environment, each
    as (key, value text) pairs sorted by key."""

    index: int
    status: str
    label: str
    exp_id: str | None
    groups: list[tuple[str, list[tuple[str, str]]]]


def _experiment(index: int, record: Mapping[str, Any], label: str) -> Experiment:
    keys = sorted(record)
    groups = (
        ("Results", [k for k in keys if k.startswith("results.")]),
        ("Environment", [k for k in keys if k.startswith(_ENVIRONMENT_PREFIXES)]),
    )
    grouped = {k for _, group in groups for k in group}
    sections = [("Parameters", [k for k in keys if k not in grouped]), *groups]
    exp_id = record.get("exp.id")
    return Experiment(index, _status(record), label,
                      None if exp_id is None else str(exp_id),
                      [(title, [(k, _detail_value(record[k])) for k in group])
                       for title, group in sections if group])


@dataclass
class Profiles:
    """The page's "Operators and memory" section: the memory charts (or None) and the
    operator table of each profiled experiment."""

    memory: MemorySection | None
    operators: list[OperatorTable]


def profiles_section(records: Sequence[Mapping[str, Any]],
                     labels: Sequence[str]) -> Profiles | None:
    """The page's "Operators and memory" section, or None when no record has an
    operator breakdown or a memory figure. ``labels[i]`` names ``records[i]`` (the
    page's experiment labels); links point at the page's ``#exp-<i>`` blocks."""
    profiled = [i for i, r in enumerate(records) if record_operators(r)]
    memory = memory_section(records, labels)
    if not profiled and memory is None:
        return None
    open_ = len(profiled) <= OPEN_TABLES
    tables = [operator_table(i, records[i], labels[i], open_=open_) for i in profiled]
    return Profiles(memory, [t for t in tables if t is not None])


def render_html(report: Report, records: Sequence[Mapping[str, Any]]) -> str:
    """The whole report as one HTML document, with no external resource.

    Contains the report's tables, warnings and summary; throughput charts of the
    records that ended ``ok``, each with its points as a table; the operators and
    memory of profiled records; the serving curves of server runs; a section per
    experiment that did not end ok; and every experiment's parameters, results and
    environment in a collapsible block.
    """
    varying = varying_parameters(records)
    labels = [_label(r, varying) for r in records]
    return render_page(
        "report.html.j2",
        title=report.title,
        now=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        records=len(records),
        ok=sum(_status(r) == "ok" for r in records),
        warnings=report.warnings,
        summary=report.summary,
        tables=[table_view(t) for t in report.tables],
        charts=report_charts(records),
        profiles=profiles_section(records, labels),
        serving=serving_section(report, records),
        failures=[_failure(i, r, labels[i]) for i, r in enumerate(records)
                  if _status(r) != "ok"],
        experiments=[_experiment(i, r, labels[i]) for i, r in enumerate(records)],
    )


def write_html_report(report: Report, records: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Write :func:`render_html` to ``path`` through
    :func:`~dlbench.results.export.open_output`: a file is written beside it and renamed
    into place, so a reader never sees half a page; a device or a FIFO is written in
    place."""
    write_atomically(path, render_html(report, records))
