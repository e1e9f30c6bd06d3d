"""Inference scenarios in the manner of MLPerf's LoadGen: the load generator and its query
issuers, the server scenario's Poisson arrivals among them (:mod:`.generator`), the
worker's entry point (:mod:`.scenario`), a run's figures and validity (:mod:`.results`),
early stopping (:mod:`.early_stopping`) and the peak server load (:mod:`.peak_search`).
"""

from __future__ import annotations
