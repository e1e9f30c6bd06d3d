"""The self-contained HTML report: the page (:mod:`.page`), its throughput charts
(:mod:`.charts`), the memory breakdown (:mod:`.memory`), the operator
table of profiled records (:mod:`.operator_table`), and the escaping and page shell
every dlbench page shares (:mod:`.markup`).
"""

from __future__ import annotations
