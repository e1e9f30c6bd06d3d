"""The frameworks dlbench knows: one declaration module each, registered below.

Adding a framework is a declaration module here (a ``FRAMEWORK``
:class:`~dlbench.config.frameworks.base.FrameworkInfo`, no framework import), its
backend module under ``dlbench.backends``, and one line in :data:`DECLARATIONS`.
"""

from __future__ import annotations

from dlbench.config.frameworks import fake, jax, onnxruntime, pytorch, tensorflow
from dlbench.config.frameworks.base import FrameworkInfo

#: Every framework's declaration, in the order dlbench lists them.
DECLARATIONS: tuple[FrameworkInfo, ...] = (
    pytorch.FRAMEWORK,
    jax.FRAMEWORK,
    onnxruntime.FRAMEWORK,
    tensorflow.FRAMEWORK,
    fake.FRAMEWORK,
)
