"""The local runner's fork server: the parent's side that starts it and asks it for workers
(:mod:`.client`), and the server process that imports the framework once and forks each
worker (:mod:`.server`).
"""

from __future__ import annotations
