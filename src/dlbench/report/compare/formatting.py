"""The A/B comparison as text, markdown, csv or JSON: the table of configurations with
their ratio, p-value and verdict (and, where a side was judged unstable, its flags
beside the verdict), a header saying how verdicts are reached, and a summary (counts,
why each inconclusive verdict is, geometric mean, configurations on one side only). Where both sides
were profiled, text, markdown and JSON add each configuration's operators with their
self time per step in A and B and the change (``aten::mm +18.0%``); csv stays the one
table of configurations.

Example::

    comparison = compare_records(load_records(["old"]), load_records(["new"]),
                                 metric="results.throughput", threshold=0.05)
    print("\\n".join(format_comparison(comparison, "text")))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dlbench.formats import REPORT_FORMATS
from dlbench.report.compare.compare import (
    ALPHA,
    Comparison,
    ConfigComparison,
    shown_value,
    value_text,
)
from dlbench.report.operators import OperatorChange
from dlbench.report.render import csv_lines
from dlbench.results.text_table import aligned_lines, one_line

FORMATS = REPORT_FORMATS


def _number(value: float) -> str:
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.4g}"


def _p_text(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.0001" if p < 0.0001 else f"{p:.4f}"


def _config_text(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={value_text(v)}" for k, v in config.items()) or "(one configuration)"


def _header(c: Comparison) -> list[str]:
    better = "higher" if c.higher_is_better else "lower"
    lines = [
        f"{c.metric} ({better} is better): ratio = B / A; a change counts when p < {ALPHA} "
        f"(Welch's t-test on per-batch values) and |change| > {c.threshold * 100:g}%; "
        "it is inconclusive when a side has too few values to test or a record unstable "
        "for more than its spread (results.unstable_reasons)"
    ]
    if c.differing:
        lines.append("A and B differ in: " + "; ".join(
            f"{name} (A: {shown_value(va)}, B: {shown_value(vb)})"
            for name, (va, vb) in c.differing.items()))
    return lines


def _summary(c: Comparison) -> list[str]:
    counts = c.counts()
    geo = c.geometric_mean()
    lines = [
        ", ".join(f"{name}: {count}" for name, count in counts.items()),
        *(f"inconclusive: {_config_text(row.config)}: {'; '.join(row.why)}"
          for row in c.rows if row.why),
        f"geometric mean of ratios: {geo:.4f} ({(geo - 1) * 100:+.2f}%)",
    ]
    for side, configs in (("A", c.only_a), ("B", c.only_b)):
        if configs:
            lines.append(f"only in {side}: " + " | ".join(_config_text(x) for x in configs))
    lines.extend(f"note: {n}" for n in c.notes)
    lines.append("note: consecutive batches are autocorrelated, so p-values are optimistic")
    return lines


def _as_json(c: Comparison) -> dict[str, Any]:
    return {
        "metric": c.metric, "higher_is_better": c.higher_is_better, "threshold": c.threshold,
        "alpha": ALPHA,
        "differing": {k: {"A": va, "B": vb} for k, (va, vb) in c.differing.items()},
        "rows": [
            {**row.config, "A": row.a, "B": row.b, "ratio": row.ratio,
             "change_pct": row.change_pct, "p_value": row.p_value, "verdict": row.verdict,
             "records_A": row.n_a, "records_B": row.n_b,
             "flags_A": row.noise_a.flags(), "flags_B": row.noise_b.flags(),
             "unstable_reasons_A": list(row.noise_a.reasons),
             "unstable_reasons_B": list(row.noise_b.reasons), "why_inconclusive": row.why,
             **({"operators": [_operator_json(op) for op in row.operators]}
                if row.operators else {})}
            for row in c.rows
        ],
        "counts": c.counts(), "geometric_mean": c.geometric_mean(),
        "only_A": c.only_a, "only_B": c.only_b, "warnings": c.warnings, "notes": c.notes,
    }


def format_comparison(c: Comparison, fmt: str = "text") -> list[str]:
    """The comparison as lines of ``text``, ``markdown``, ``csv`` (the table only, full
    precision) or ``json`` (one document). Warnings are not included: print them apart.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; accepted: {', '.join(FORMATS)}")
    if fmt == "json":
        return json.dumps(_as_json(c), indent=2).splitlines()
    if fmt == "csv":
        raw = [[*(_csv_text(row.config[n]) for n in c.columns), row.a, row.b, row.ratio,
                row.change_pct, row.p_value, row.verdict,
                "" if row.flags() == "-" else row.flags(), "; ".join(row.why)]
               for row in c.rows]
        return csv_lines([[*c.columns, "A", "B", "ratio", "change_pct", "p_value", "verdict",
                           "flags", "why_inconclusive"], *raw])
    # The flags stand beside the verdict they qualify; a column only when some side
    # has one, so that a clean comparison reads as it always has.
    flags = ["flags"] if c.flagged() else []
    headers = [*c.columns, "A", "B", "ratio", "change %", "p-value", *flags, "verdict"]
    cells = [[*(value_text(row.config[n]) for n in c.columns), _number(row.a), _number(row.b),
              f"{row.ratio:.4f}", f"{row.change_pct:+.2f}", _p_text(row.p_value),
              *([row.flags()] if flags else []), row.verdict]
             for row in c.rows]
    # Labels left-aligned; numbers read better right-aligned. The markdown rule has
    # always marked no column right-aligned: kept, so that its output stays the same.
    right = ([False] * len(c.columns) + [True] * (len(headers) - len(c.columns) - 1 - len(flags))
             + [False] * (1 + len(flags)))
    table = aligned_lines([one_line(h) for h in headers],
                          [[one_line(cell) for cell in line] for line in cells],
                          right, markdown=fmt == "markdown", mark_right=False)
    return [*_header(c), "", *table, "", *_summary(c),
            *_operator_sections(c, markdown=fmt == "markdown")]


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if value >= 1 else f"{value:.3g}"


def _operator_json(op: OperatorChange) -> dict[str, Any]:
    return {"name": op.name, "A_ms": op.a_ms, "B_ms": op.b_ms, "change_pct": op.change_pct,
            "change": op.change_text()}


def _operator_table(row: ConfigComparison, markdown: bool) -> list[str]:
    cells = [[one_line(op.name), _ms(op.a_ms), _ms(op.b_ms), op.change_text()]
             for op in row.operators or []]
    return aligned_lines(["operator", "A ms/step", "B ms/step", "change"], cells,
                         [False, True, True, True], markdown=markdown)


def _operator_sections(c: Comparison, markdown: bool) -> list[str]:
    """Per configuration profiled on both sides: its operators, largest change first."""
    profiled = [row for row in c.rows if row.operators]
    if not profiled:
        return []
    lines = ["", "operators by self time per step, the largest change in ms first; "
             "'only in A': not among B's top operators (exp.profile_top), and the reverse"]
    for row in profiled:
        lines += ["", f"{one_line(_config_text(row.config))}:", "",
                  *_operator_table(row, markdown)]
    return lines




def _csv_text(value: Any) -> Any:
    """A configuration value for csv: lists and dicts as compact JSON."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return value
