"""Inference scenarios on the parent's side: the registry of ``exp.scenario``'s names
(:mod:`.registry`) and the scenario parameters with their checks (:mod:`.params`). The
scenarios themselves run in the worker (``measure/loadgen/scenarios/``)."""

from __future__ import annotations
