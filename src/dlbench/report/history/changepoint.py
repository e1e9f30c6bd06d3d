"""Change points in a series of measurements: E-divisive means with a permutation test.

The detector of Matteson and James ("A nonparametric approach for multiple change
point analysis of multivariate data", JASA 2014), in the form MongoDB's
signal-processing package and Hunter use it on nightly performance results:

- the divergence of a split at ``tau`` of a segment of ``n`` values (``X`` before,
  ``Y`` after) is the energy statistic, with ``alpha = 1``::

      Q(tau) = tau (n - tau) / n * ( 2 mean|X - Y| - mean|X - X'| - mean|Y - Y'| )

  (the within-segment means over distinct pairs). The segment's end stays fixed at
  its last value, as in those packages, which leaves one split point to search;
- the most divergent split of all current segments is a candidate; a permutation
  test says whether it is real: each segment's values are shuffled (seeded, so a
  result is reproducible), the largest divergence over all segments recomputed, and
  ``p = (1 + #{permuted >= observed}) / (1 + permutations)``;
- a significant candidate splits its segment and the search goes on; the first
  candidate with ``p > p_threshold`` ends it.

No distribution is assumed (the statistic uses distances between values only), so a
single outlier moves it little: with ``alpha = 1`` it grows with ``|x - y|``, not
its square. Everything is NumPy on an ``n x n`` distance matrix: prefix sums give
``Q`` for every split of a segment in ``O(n)`` once the matrix's ``O(n^2)`` sums are
known, so a permutation costs ``O(n^2)``; the permutations of a test stop early
once the candidate cannot reach ``p_threshold``.

Example::

    points = detect_change_points(values, p_threshold=0.01, seed=0)
    for point in points:
        print(point.index, f"{point.change:+.1%}", point.p_value)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Defaults of :func:`detect_change_points`, shared with the command line.
DEFAULT_P_THRESHOLD = 0.01
DEFAULT_PERMUTATIONS = 199
DEFAULT_MIN_SIZE = 4

_Array = npt.NDArray[np.float64]


def fewest_values(min_size: int = DEFAULT_MIN_SIZE) -> int:
    """The shortest series in which a change can be found: a segment of ``min_size``
    values on each side of it. A shorter series has no change point whatever its
    values: its verdict is not "no change" but "too few runs to tell"."""
    return 2 * min_size


@dataclass(frozen=True)
class ChangePoint:
    """A change between ``index - 1`` and ``index`` of the series.

    ``mean_before`` and ``mean_after`` are the means of the segments on either side
    (between the neighbouring change points); ``p_value`` is the permutation test's
    when the point was found; ``statistic`` is its divergence ``Q``.
    """

    index: int
    p_value: float
    statistic: float
    mean_before: float
    mean_after: float

    @property
    def change(self) -> float:
        """Relative change of the mean: ``mean_after / mean_before - 1`` (NaN when the
        mean before is 0)."""
        if self.mean_before == 0:
            return math.nan
        return self.mean_after / self.mean_before - 1.0


def _prefix_sums(distances: _Array) -> _Array:
    """``P[a, b] = distances[:a, :b].sum()``, with a zero first row and column."""
    n = distances.shape[0]
    prefix = np.zeros((n + 1, n + 1))
    prefix[1:, 1:] = distances.cumsum(axis=0).cumsum(axis=1)
    return prefix


def _best_split(distances: _Array, min_size: int) -> tuple[int, float]:
    """The split ``tau`` (values ``[:tau]`` against ``[tau:]``) of a segment with the
    largest divergence, and that divergence; ``(-1, -inf)`` when the segment is too
    short to split into two of ``min_size``."""
    n = distances.shape[0]
    if n < fewest_values(min_size):
        return -1, -math.inf
    prefix = _prefix_sums(distances)
    tau = np.arange(min_size, n - min_size + 1)
    total = prefix[n, n]
    left_block = prefix[tau, tau]  # sum over ordered pairs within [:tau]
    cross = prefix[tau, n] - left_block  # sum over i < tau <= j
    right_block = total - 2.0 * prefix[tau, n] + left_block
    left = tau.astype(np.float64)
    right = n - left
    # Within-segment means over distinct pairs: the ordered-pair sums count each
    # pair twice and the diagonal is zero.
    divergence = (
        2.0 * cross / (left * right)
        - left_block / (left * (left - 1.0))
        - right_block / (right * (right - 1.0))
    )
    statistic = left * right / n * divergence
    best = int(np.argmax(statistic))
    return int(tau[best]), float(statistic[best])


def _candidate(
    distances: _Array, bounds: Sequence[int], min_size: int
) -> tuple[int, float]:
    """The most divergent split over all segments ``bounds[k]:bounds[k+1]``, as an
    index into the whole series, and its divergence."""
    best_index, best_stat = -1, -math.inf
    for start, end in itertools.pairwise(bounds):
        tau, stat = _best_split(distances[start:end, start:end], min_size)
        if tau >= 0 and stat > best_stat:
            best_index, best_stat = start + tau, stat
    return best_index, best_stat


def _permutation_p_value(
    distances: _Array,
    bounds: Sequence[int],
    observed: float,
    *,
    permutations: int,
    p_threshold: float,
    min_size: int,
    rng: np.random.Generator,
) -> float:
    """``(1 + #{permuted max >= observed}) / (1 + permutations)``, where each
    permutation shuffles the values within every segment. Stops early (and returns
    a p-value above ``p_threshold``) once that many exceedances make the candidate
    insignificant whatever the remaining permutations give."""
    limit = p_threshold * (permutations + 1) - 1.0  # exceedances still significant
    exceed = 0
    # Segments too short to split never give a candidate, shuffled or not.
    blocks = [
        distances[start:end, start:end]
        for start, end in itertools.pairwise(bounds)
        if end - start >= fewest_values(min_size)
    ]
    for done in range(1, permutations + 1):
        stat = -math.inf
        for block in blocks:
            order = rng.permutation(block.shape[0])
            stat = max(stat, _best_split(block[np.ix_(order, order)], min_size)[1])
        if stat >= observed:
            exceed += 1
            if exceed > limit:
                return (1 + exceed) / (1 + done)
    return (1 + exceed) / (1 + permutations)


def _check(values: Sequence[float], p_threshold: float, permutations: int,
           min_size: int) -> _Array:
    series = np.asarray(values, dtype=np.float64)
    if series.ndim != 1:
        raise ValueError("values must be a one-dimensional series")
    if not np.all(np.isfinite(series)):
        raise ValueError("values must be finite numbers")
    if not 0.0 < p_threshold < 1.0:
        raise ValueError(f"p_threshold must be between 0 and 1, not {p_threshold}")
    if permutations < 1:
        raise ValueError(f"permutations must be at least 1, not {permutations}")
    if min_size < 2:
        raise ValueError(f"min_size must be at least 2, not {min_size}")
    return series


def detect_change_points(
    values: Sequence[float],
    *,
    p_threshold: float = DEFAULT_P_THRESHOLD,
    permutations: int = DEFAULT_PERMUTATIONS,
    min_size: int = DEFAULT_MIN_SIZE,
    seed: int = 0,
) -> list[ChangePoint]:
    """The significant change points of ``values`` (in time order), by index.

    ``p_threshold``: the largest permutation p-value that counts as a change (the
    smallest one ``permutations`` can give is ``1 / (permutations + 1)``).
    ``min_size``: the fewest values a segment may have, so a change is found at
    the earliest ``min_size`` values after it. ``seed`` seeds the permutations: the
    same series always gives the same answer. ValueError for values that are not a
    finite one-dimensional series, or an out-of-range setting.
    """
    series = _check(values, p_threshold, permutations, min_size)
    n = len(series)
    distances = np.abs(series[:, None] - series[None, :])
    rng = np.random.default_rng(seed)
    bounds = [0, n]
    found: dict[int, tuple[float, float]] = {}
    while True:
        index, observed = _candidate(distances, bounds, min_size)
        if index < 0:
            break
        p_value = _permutation_p_value(
            distances, bounds, observed, permutations=permutations,
            p_threshold=p_threshold, min_size=min_size, rng=rng)
        if p_value > p_threshold:
            break
        found[index] = (p_value, observed)
        bounds = sorted([*bounds, index])
    points = []
    for k in range(1, len(bounds) - 1):
        index = bounds[k]
        p_value, statistic = found[index]
        points.append(ChangePoint(
            index=index, p_value=p_value, statistic=statistic,
            mean_before=float(series[bounds[k - 1]:index].mean()),
            mean_after=float(series[index:bounds[k + 1]].mean())))
    return points


def segment_means(values: Sequence[float], points: Sequence[ChangePoint]) -> list[float]:
    """The mean of each value's segment between change points, one per value: the
    step line a chart draws through the series."""
    series = np.asarray(values, dtype=np.float64)
    bounds = [0, *(p.index for p in points), len(series)]
    means: list[float] = []
    for start, end in itertools.pairwise(bounds):
        means.extend([float(series[start:end].mean())] * (end - start))
    return means
