"""The exploration, weak-scaling and strong-scaling tables: what their rows, columns and
tables are (:mod:`.reports`), their grid layout (:mod:`.grid`), and the one computation
of them, a column at a time over a store or records written to one in memory
(:mod:`.columnar`, :mod:`.columnar_groups`).
"""

from __future__ import annotations
