"""The type of a declared result key (:class:`ResultKey`) and the ways the values of
several processes combine; the tables themselves are :mod:`dlbench.results.keys.table`
and the modules it gathers."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["AGGREGATES", "BETTER", "ResultKey"]


class ResultKey(NamedTuple):
    """One declared key (or family of keys, when ``name`` holds placeholders).

    ``type`` is the JSON value's type as Python spells it (``float``,
    ``list[float]``, ``dict``, ``object`` for any); ``unit`` is empty for a pure
    number or text; ``fmt`` is the format specification a number is shown with
    (``.2f``, ``.3g``, ``.1%``), empty for text and containers; ``aggregate`` says how
    the values of several processes of one experiment (``exp.repeat`` runs,
    ``exp.parallel_jobs`` copies) combine into its record: ``mean``, ``sum``,
    ``max``, ``min``, ``all`` or ``any`` (of booleans), ``first`` (the same in every
    process), ``concat`` (lists joined, texts comma-joined, in process order),
    ``pooled`` (computed again from the joined ``results.time_data``),
    ``recomputed`` (computed again from the combined figures) or ``none`` (not
    combined: each process's own log keeps it); ``repeats``, where not empty, is the
    rule for ``exp.repeat`` processes when it differs from that of copies (which ran
    at the same time): copies' throughputs add up to the node's, repeats' measure one
    throughput again (:mod:`dlbench.measure.combine` applies both). ``better`` says
    which way the value improves: ``higher`` (a throughput, an MFU, an accuracy),
    ``lower`` (a time, a latency, memory, energy) or empty where neither is better (a
    count, a setting, a list); compare, history, baselines, scorecards and every gate
    read it from here (:func:`dlbench.results.keys.lookup.higher_is_better`).
    """

    name: str
    type: str
    unit: str
    description: str
    fmt: str = ""
    aggregate: str = "none"
    better: str = ""
    repeats: str = ""


#: The ways a key's values may combine (:attr:`ResultKey.aggregate`).
AGGREGATES = ("mean", "sum", "max", "min", "all", "any", "first", "concat", "pooled",
              "recomputed", "none")


#: Which way a key's value improves (:attr:`ResultKey.better`); empty: neither.
BETTER = ("higher", "lower", "")
