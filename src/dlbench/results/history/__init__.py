"""The history store: what a history keeps of a record (:mod:`.records`) and the store of
every imported record for years (:mod:`.store`).
"""

from __future__ import annotations
