"""Sweep configuration: spec files and flags in, resolved and checked experiments out.

>>> from dlbench.config import load_spec, plan_experiments
>>> spec = load_spec(params=["exp.framework=fake", "exp.model=toy"],
...                  variables=["exp.replica_batch=[8,16]"])
>>> [e["exp.replica_batch"] for e in plan_experiments(spec)]
[8, 16]
"""

from __future__ import annotations

from dlbench.config.spec import Source, SweepSpec, load_spec
from dlbench.config.validate import plan_experiments

__all__ = ["Source", "SweepSpec", "load_spec", "plan_experiments"]
