"""Charts of a result against a parameter: the data (:mod:`.series`), drawing with
matplotlib (:mod:`.charts`) and checks that a drawn chart does not mislead
(:mod:`.checks`).
"""

from __future__ import annotations
