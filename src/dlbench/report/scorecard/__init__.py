"""The scorecard against a baseline in Mila's manner: the baseline file (:mod:`.baseline`),
per-GPU reports (:mod:`.gpu_reports`), the verdicts (:mod:`.verdicts`) and the scorecard
itself (:mod:`.scorecard`).
"""

from __future__ import annotations
