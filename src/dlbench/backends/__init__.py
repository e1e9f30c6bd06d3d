"""Framework backends. Each module defines ``BACKEND``, a :class:`~dlbench.backends.base.Backend`
subclass; they are imported lazily by the worker from ``dlbench.config.catalog``."""

from __future__ import annotations
