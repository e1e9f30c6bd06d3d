"""dlbench: describe a space of deep-learning experiments, run it, and get every number back.

The package is layered and imports flow one way; ``docs/design.md`` states the rule
exactly, and ``tests/unit/test_import_rule.py`` checks it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
