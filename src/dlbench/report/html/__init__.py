"""The self-contained HTML report: the page (:mod:`.page`), its throughput charts
(:mod:`.charts`), the memory breakdown chart (:mod:`.memory_chart`) and the operator
tables of profiled records (:mod:`.profile_section`).
"""

from __future__ import annotations
