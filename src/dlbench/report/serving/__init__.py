"""The ``serving`` report: server-scenario records as latency-throughput curves
(:mod:`.curves`), their table (:mod:`.report`) and their chart (:mod:`.chart`); and
generate-phase records (language-model serving) as token curves, in :mod:`.tokens`
(curves and knees, tables, charts, a load search's probes).
"""

from __future__ import annotations
