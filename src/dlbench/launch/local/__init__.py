"""``dlbench run --launcher local`` (the default): the launcher that runs each worker
process on this machine (:mod:`.launcher`), and how one worker process is started
and stopped for good (:mod:`.process`).
"""

from __future__ import annotations
