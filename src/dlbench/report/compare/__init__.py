"""A/B comparison: matching configurations and their verdicts (:mod:`.compare`), paired
runs (:mod:`.paired`), and the comparison as text, markdown, csv or JSON
(:mod:`.formatting`).
"""

from __future__ import annotations
