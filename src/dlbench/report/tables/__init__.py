"""The exploration, weak-scaling and strong-scaling tables (:mod:`.reports`), their grid
layout (:mod:`.grid`), and the same reports computed a column at a time over a store
(:mod:`.columnar`, :mod:`.columnar_groups`).
"""

from __future__ import annotations
