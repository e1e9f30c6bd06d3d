"""The self-contained HTML report: the page (:mod:`.page`), its throughput charts
(:mod:`.charts`), the memory breakdown chart (:mod:`.memory_chart`), the operator
tables of profiled records (:mod:`.profile_section`), and the escaping and page shell
every dlbench page shares (:mod:`.markup`).
"""

from __future__ import annotations
