"""History reports: change points in each configuration's time series
(:mod:`.changepoint`), the regressions and what changed with them (:mod:`.changes`), and
the history as one HTML page (:mod:`.page`).
"""

from __future__ import annotations
