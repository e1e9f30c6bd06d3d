"""Grouping and per-group means over arrays, for reports computed a column at a time.

The rules are those of :mod:`dlbench.report.aggregate`, which works on dicts: groups
come in the order their first record appears, and a group's mean and spread are
:func:`~dlbench.report.aggregate.summarize` of its values, so the numbers are the
same to the last bit (``math.fsum`` is exact whatever the order of the values).

Example::

    ids, firsts = first_appearance([np.array([5, 3, 5, 7])])
    # ids = [0, 1, 0, 2], firsts = [0, 1, 3]
    group_means(ids, 3, np.array([1.0, 2.0, 3.0, 4.0]))
    # [Measured(mean=2.0, sd=1.414..., n=2), Measured(mean=2.0, sd=None, n=1), ...]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlbench.report.aggregate import Measured, summarize

#: Combined keys up to this many possible values are grouped without sorting.
_DIRECT = 1 << 22


def first_appearance(columns: Sequence[np.ndarray], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Group the ``size`` rows by their values in every one of ``columns`` (arrays of
    non-negative integers of that length): each row's group, the groups numbered in
    the order their first row appears, and the index of each group's first row.

    No columns (or one value everywhere) is one group; no rows, no group.
    """
    if size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = np.zeros(size, dtype=np.int64)
    span = 1
    for column in columns:
        width = int(column.max()) + 1
        if span * width > _DIRECT:
            # Too many combinations for a table: renumber densely first (a sort).
            _, key = np.unique(key, return_inverse=True)
            key, span = key.reshape(-1), int(key.max()) + 1
            _, dense = np.unique(column, return_inverse=True)
            column, width = dense.reshape(-1), int(dense.max()) + 1
        key = key * width + column
        span *= width
        if span > _DIRECT:
            _, key = np.unique(key, return_inverse=True)
            key, span = key.reshape(-1), int(key.max()) + 1
    # The first row of each combination, by a scatter-min rather than a sort.
    first = np.full(span, size, dtype=np.int64)
    np.minimum.at(first, key, np.arange(size, dtype=np.int64))
    used = np.flatnonzero(first < size)
    used = used[np.argsort(first[used], kind="stable")]
    rank = np.zeros(span, dtype=np.int64)
    rank[used] = np.arange(used.size)
    return rank[key], first[used]


def stable_order(ids: np.ndarray, count: int) -> np.ndarray:
    """The indices that sort ``ids`` (integers below ``count``), ties in their order:
    a radix sort in O(n) where the ids fit in 16 bits, as they do for groups."""
    if count <= 1 << 16:
        return np.argsort(ids.astype(np.uint16), kind="stable")
    return np.argsort(ids, kind="stable")


def distinct(codes: np.ndarray) -> np.ndarray:
    """The distinct values of ``codes`` (non-negative integers) in order: what
    ``numpy.unique`` gives, by a count instead of a sort."""
    return np.flatnonzero(np.bincount(codes)) if codes.size else np.zeros(0, dtype=np.int64)


def count_distinct(codes: np.ndarray) -> int:
    """How many distinct values ``codes`` (non-negative integers) holds."""
    return int(distinct(codes).size)


def group_means(ids: np.ndarray, count: int, values: np.ndarray) -> list[Measured]:
    """:func:`~dlbench.report.aggregate.summarize` of the ``values`` of each of the
    ``count`` groups ``ids`` number (every group has at least one value)."""
    order = stable_order(ids, count)
    ordered = values[order].tolist()  # Python floats, as the dict path averages
    bounds = np.concatenate([[0], np.cumsum(np.bincount(ids, minlength=count))]).tolist()
    return [summarize(ordered[bounds[i]:bounds[i + 1]]) for i in range(count)]


def ordered_counts(
    ids: np.ndarray, codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``codes`` in the order they first appear when the rows are taken
    group by group (``ids``, numbered in order) and in order within a group, how many
    rows hold each, and the row where each first appears."""
    order = stable_order(ids, int(ids.max()) + 1 if ids.size else 0)
    walked = codes[order]
    found, firsts, counts = np.unique(walked, return_index=True, return_counts=True)
    first_order = np.argsort(firsts, kind="stable")
    return found[first_order], counts[first_order], order[firsts[first_order]]
