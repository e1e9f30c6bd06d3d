"""The ``serving`` report: server-scenario records as latency-throughput curves
(:mod:`.curves`), their table (:mod:`.report`) and their chart (:mod:`.chart`); and
generate-phase records (language-model serving) as token curves (:mod:`.tokens`; a
load search's probes, :mod:`.token_search`), their tables (:mod:`.token_tables`) and
charts (:mod:`.token_chart`).
"""

from __future__ import annotations
