"""dlbench: describe a space of deep-learning experiments, run it, and get every number back.

The package is layered; imports flow one way:
``errors/config ← results ← measure ← backends/models ← worker``; ``launch`` uses
``config`` and ``results``; ``cli`` uses everything.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
