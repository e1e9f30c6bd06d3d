"""What do the HTML pages cost: Jinja2's start-up, a report page's size and render
time, and a chart's SVG with its text as text or as glyph outlines.

Three measurements, each printed as one line:

- ``import``: a fresh interpreter importing ``dlbench.report.html.page``, then the
  same importing ``jinja2`` as well (fastest and median of ``--rounds``): what Jinja2
  adds to writing a page;
- ``page``: ``render_html`` of an exploration report of ``--records`` records (two
  models, eight batch sizes, three runs each, a few failures): the page's bytes, how
  many of them are its charts' SVG, and the median render time of ``--rounds``;
- ``svg``: one chart of that page saved by matplotlib with ``svg.fonttype`` ``path``
  (glyphs as outlines, what a file of ``dlbench plot`` holds) and ``none`` (text as
  ``<text>``, what a page holds): the bytes of each and their ratio.

Run it with ``PYTHONPATH`` pointing at another checkout's ``src`` to measure that one's
page (the import line then measures Jinja2 on top of it).

    python benchmarks/html_pages.py --records 300 --rounds 7
"""

from __future__ import annotations

import argparse
import io
import random
import re
import statistics
import subprocess
import sys
import time
from typing import Any


def _records(count: int) -> list[dict[str, Any]]:
    """Exploration records: two models by eight batch sizes by runs, one in ten failed."""
    rng = random.Random(0)
    records: list[dict[str, Any]] = []
    for i in range(count):
        model = ("resnet50", "bert_base")[i % 2]
        batch = 2 ** (i // 2 % 8)
        ok = i % 10 != 9
        record: dict[str, Any] = {
            "exp.framework": "fake", "exp.model": model, "exp.phase": "training",
            "exp.device_type": "cpu", "exp.replica_batch": batch, "exp.id": f"e{i}",
            "exp.status": "ok" if ok else "failure", "hw.device_name": "fake",
            "sys.hostname": "node1"}
        if ok:
            throughput = 100.0 * batch ** 0.8 * rng.uniform(0.9, 1.1)
            record.update({"results.throughput": throughput,
                           "results.time": batch * 1000.0 / throughput,
                           "results.ci95_rel": 0.03})
        else:
            record["exp.status_msg"] = "RuntimeError: out of memory"
        records.append(record)
    return records


def _import_seconds(code: str, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    base = _import_seconds("import dlbench.report.html.page", args.rounds)
    more = _import_seconds("import dlbench.report.html.page, jinja2", args.rounds)
    print(f"import: page module {min(base) * 1e3:.0f} ms fastest, "
          f"{statistics.median(base) * 1e3:.0f} ms median; with jinja2 "
          f"{min(more) * 1e3:.0f} ms, {statistics.median(more) * 1e3:.0f} ms")

    from dlbench.report.cells import Report
    from dlbench.report.html.page import render_html
    from dlbench.report.tables.reports import build_table_report

    records = _records(args.records)
    report: Report = build_table_report(records, "exploration")
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        page = render_html(report, records)
        times.append(time.perf_counter() - start)
    charts = sum(len(svg) for svg in re.findall(r"<svg.*?</svg>", page, re.S))
    print(f"page: {len(records)} records, {len(page.encode())} bytes, of which charts "
          f"{charts} ({page.count('<svg')} charts); render {statistics.median(times):.3f} s "
          "median")

    from matplotlib import rc_context

    from dlbench.report.charts.charts import draw_chart
    from dlbench.report.charts.series import build_series

    ok = [r for r in records if r["exp.model"] == "resnet50" and r["exp.status"] == "ok"]
    drawn = draw_chart(build_series(ok, "exp.replica_batch", "results.throughput"),
                       xlabel="exp.replica_batch", ylabel="results.throughput")
    sizes = {}
    for fonttype in ("path", "none"):
        out = io.StringIO()
        with rc_context({"svg.fonttype": fonttype, "svg.hashsalt": "dlbench"}):
            drawn.figure.savefig(out, format="svg", metadata={"Date": None})
        sizes[fonttype] = len(out.getvalue().encode())
    print(f"svg: one chart, text as outlines {sizes['path']} bytes, as text "
          f"{sizes['none']} bytes; ratio={sizes['path'] / sizes['none']:.2f}")


if __name__ == "__main__":
    main()
