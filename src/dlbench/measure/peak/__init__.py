"""Device peaks for ``dlbench peak`` and MFU: the peaks, stored and looked up
(:mod:`.peaks`), and measuring them with PyTorch (:mod:`.pytorch`).
"""

from __future__ import annotations
