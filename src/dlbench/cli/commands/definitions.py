"""``dlbench definitions RUN_DIR``: a serving run's figures in other tools' definitions.

For each experiment that kept its requests' raw timestamps (``results.request_data``:
``exp.framework=endpoint`` and ``exp.phase=generate``), the figures vLLM, SGLang,
aiperf, GuideLLM, MLPerf LoadGen and inference-perf would report for the same requests
(:mod:`dlbench.measure.serving.peers`), each beside dlbench's value of the same name and
with the peer's definition in one line (docs/serving-definitions.md). The run directory
is only read.

This module is imported when the command line starts, so it imports only the standard
library and the command line's own vocabulary at the top; the figures come with NumPy,
loaded when the command runs.

Example::

    dlbench definitions runs/serve --as vllm
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dlbench.cli.usage import add_format, add_where, format_choices, read_warnings
from dlbench.errors import ResultsError
from dlbench.formats import DATA_FORMATS

if TYPE_CHECKING:
    from dlbench.measure.serving.peers import Context, Figure
    from dlbench.measure.serving.records import RequestRecord

#: The peers ``--as`` takes (:data:`dlbench.measure.serving.peers.PEERS`, named here so
#: that the parser is built without NumPy; a test checks that the two agree), and ``all``.
PEER_CHOICES = ("vllm", "sglang", "aiperf", "guidellm", "mlperf", "inference-perf")
ALL = "all"

#: The key whose raw requests the figures are computed from.
REQUEST_DATA = "results.request_data"

#: The columns of the table, and of the CSV after its experiment and peer columns.
COLUMNS = ("figure", "value", "unit", "dlbench key", "dlbench", "meaning", "definition")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``dlbench definitions``, on its parser."""
    parser.add_argument("run_dir", metavar="RUN_DIR",
                        help="a run directory (--out of dlbench run), a results.sqlite, a "
                             "log, or an export holding results.request_data")
    parser.add_argument("--as", dest="peer", choices=(*PEER_CHOICES, ALL), default=ALL,
                        help="whose definitions: one tool, or all of them")
    add_where(parser, "the experiments to print")
    add_format(parser, format_choices(DATA_FORMATS),
               "a table per experiment and tool (text), one JSON document, or CSV rows")
    parser.set_defaults(handler=definitions)


def definitions(args: argparse.Namespace) -> int:
    """Print the chosen peers' figures for each selected experiment with raw requests."""
    from dlbench.measure.serving.records import from_rows
    from dlbench.results.io import load_selected
    from dlbench.results.query import parse_query
    from dlbench.results.text_table import choose_columns, experiment_label

    flag = args.where_flag
    where = parse_query(args.where, flag)
    source = str(args.run_dir)
    warnings: list[Any] = []
    with read_warnings(warnings):
        selected = load_selected([args.run_dir], where, flag, source,
                                 parse_warnings=warnings, series=[REQUEST_DATA])
        served = [record for record in selected if isinstance(record.get(REQUEST_DATA), dict)]
        if not served:
            raise ResultsError(
                f"{source}: none of its {len(selected)} selected record(s) holds "
                f"{REQUEST_DATA}, the raw requests that exp.framework=endpoint and "
                f"exp.phase=generate runs record")
        labels = choose_columns(served, ("exp.model", "exp.scenario"))
        experiments = []
        for record in served:
            label = experiment_label(record, labels)
            try:
                requests = from_rows(record[REQUEST_DATA])
            except ValueError as error:
                raise ResultsError(f"{source}: experiment {label}: {error}") from error
            experiments.append(_experiment(record, label, requests, args.peer))
    print("\n".join(_render(experiments, args.format)))
    return 0


def _context(record: Mapping[str, Any]) -> Context:
    """The run's API, scenario and SLOs from its parameters (their defaults when it
    has none: an in-process generate run)."""
    from dlbench.measure.serving.definitions import SLOs
    from dlbench.measure.serving.peers import Context

    def slo(name: str) -> float:
        value = record.get(f"endpoint.slo_{name}_ms")
        return float(value) if isinstance(value, (int, float)) else 0.0

    return Context(api=str(record.get("endpoint.api") or "chat"),
                   scenario=str(record.get("exp.scenario") or "batch"),
                   slos=SLOs(ttft_ms=slo("ttft"), tpot_ms=slo("tpot"),
                             latency_ms=slo("latency")))


def _experiment(record: Mapping[str, Any], label: str, requests: Sequence[RequestRecord],
                peer: str) -> dict[str, Any]:
    """One experiment's peers, each with its figures beside dlbench's values."""
    from dlbench.measure.serving.definitions import serving_results
    from dlbench.measure.serving.peers import PEERS, peer_figures

    context = _context(record)
    computed: dict[str, Any] | None = None

    def dlbench_value(key: str | None) -> Any:
        # The value the run recorded; computed from the requests for a key it lacks.
        nonlocal computed
        if key is None:
            return None
        if record.get(key) is not None:
            return record[key]
        if computed is None:
            computed = serving_results(requests, context.slos)
        return computed.get(key)

    peers = []
    for name in PEER_CHOICES if peer == ALL else (peer,):
        figures = peer_figures(name, requests, context)
        peers.append({"peer": name, "title": PEERS[name].title, "source": PEERS[name].source,
                      "figures": [_figure(f, dlbench_value(f.dlbench_key)) for f in figures]})
    return {"exp.id": record.get("exp.id"), "experiment": label,
            "requests": sum(1 for r in requests if not r.warmup),
            "warmup": sum(1 for r in requests if r.warmup), "peers": peers}


def _figure(figure: Figure, dlbench: Any) -> dict[str, Any]:
    return {"figure": figure.name, "value": figure.value, "unit": figure.unit,
            "dlbench_key": figure.dlbench_key, "dlbench_value": dlbench,
            "same_meaning": figure.same_meaning if figure.dlbench_key else None,
            "definition": figure.definition}


def _render(experiments: Sequence[dict[str, Any]], fmt: str) -> list[str]:
    if fmt == "json":
        return [json.dumps({"experiments": experiments}, indent=2, ensure_ascii=False,
                           allow_nan=False, default=str)]
    if fmt == "csv":
        return _csv(experiments)
    return _text(experiments)


def _csv(experiments: Sequence[dict[str, Any]]) -> list[str]:
    from dlbench.results.text_table import csv_line

    lines = [csv_line(("exp.id", "experiment", "peer", "figure", "value", "unit",
                       "dlbench_key", "dlbench_value", "same_meaning", "definition"))]
    for experiment in experiments:
        for peer in experiment["peers"]:
            for f in peer["figures"]:
                lines.append(csv_line(
                    _csv_cell(v) for v in (
                        experiment["exp.id"], experiment["experiment"], peer["peer"],
                        f["figure"], f["value"], f["unit"], f["dlbench_key"],
                        f["dlbench_value"], f["same_meaning"], f["definition"])))
    return lines


def _csv_cell(value: Any) -> Any:
    # Full precision, as every CSV of dlbench; a value the CSV has no type for as JSON.
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, (int, float, str)) else json.dumps(value)


def _text(experiments: Sequence[dict[str, Any]]) -> list[str]:
    from dlbench.results.keys.lookup import format_value, lookup
    from dlbench.results.text_table import aligned_lines, format_number, one_line

    def peer_value(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return format_number(value)
        return one_line(str(value))

    def dlbench_cell(key: str | None, value: Any) -> str:
        if key is None:
            return ""
        declared = lookup(key)
        unit = f" {declared.unit}" if declared is not None and declared.unit and \
            value is not None else ""
        return one_line(format_value(key, value)) + unit

    lines: list[str] = []
    for experiment in experiments:
        if lines:
            lines.append("")
        warm = f" after {experiment['warmup']} warm-up" if experiment["warmup"] else ""
        lines.append(one_line(f"{experiment['experiment']}: {experiment['requests']} "
                              f"requests{warm}"))
        for peer in experiment["peers"]:
            lines += ["", one_line(f"{peer['title']}: {peer['source']}")]
            rows = []
            previous = None
            for f in peer["figures"]:
                meaning = "" if f["dlbench_key"] is None else (
                    "same" if f["same_meaning"] else "differs")
                # A definition shared by the figures above it is printed once.
                definition = "" if f["definition"] == previous else f["definition"]
                previous = f["definition"]
                rows.append((one_line(f["figure"]), peer_value(f["value"]), f["unit"],
                             f["dlbench_key"] or "", dlbench_cell(f["dlbench_key"],
                                                                 f["dlbench_value"]),
                             meaning, one_line(definition)))
            if not rows:
                rows.append(("(no request after the warm-up)", "", "", "", "", "", ""))
            lines += aligned_lines(COLUMNS, rows, (False, True, False, False, True, False,
                                                   False), markdown=False, free_last=True)
    return lines
