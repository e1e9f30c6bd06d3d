"""``dlbench run --launcher slurm``: the launcher that submits a sweep through submitit
(:mod:`.launcher`), the ``--slurm-*`` options (:mod:`.options`), what one Slurm task
runs on its node (:mod:`.node`), and what Slurm says of the jobs (:mod:`.queue`).
"""

from __future__ import annotations
