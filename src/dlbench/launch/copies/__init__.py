"""N users per node (``exp.parallel_jobs``): running the copies of an experiment
(:mod:`.copies`), holding each to its share of the node (:mod:`.limits`), and the cgroup
the runner sits in (:mod:`.cgroups`).
"""

from __future__ import annotations
