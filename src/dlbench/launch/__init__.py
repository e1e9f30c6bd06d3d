"""The parent side: start one fresh worker process per experiment and collect its result."""

from __future__ import annotations
