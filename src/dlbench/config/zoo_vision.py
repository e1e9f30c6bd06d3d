"""DLBS's image classification models beyond the core set, and today's common
references (mobilenet_v2, vit_b16).

Plain metadata (``ModelInfo``); the builders live in ``dlbench.models``.
"""

from __future__ import annotations

from dlbench.config.modelinfo import ModelInfo

VISION_MODELS: tuple[ModelInfo, ...] = ()
