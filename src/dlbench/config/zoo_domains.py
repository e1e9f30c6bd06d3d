"""The multi-domain suite in Mila's manner: language, translation, generation,
recommendation, super-resolution, style transfer, detection, regression, time series
and reinforcement learning.

Plain metadata (``ModelInfo``); the builders live in ``dlbench.models``.
"""

from __future__ import annotations

from dlbench.config.modelinfo import ModelInfo

DOMAIN_MODELS: tuple[ModelInfo, ...] = ()
