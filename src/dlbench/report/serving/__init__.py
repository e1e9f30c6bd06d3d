"""The ``serving`` report: server-scenario records as latency-throughput curves
(:mod:`.curves`), their table (:mod:`.report`) and their chart (:mod:`.chart`).
"""

from __future__ import annotations
