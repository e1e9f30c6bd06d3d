"""Fixtures for every test module in this folder."""

from __future__ import annotations

from tests.heap import frozen_heap

__all__ = ["frozen_heap"]  # autouse: each module runs with the heap before it frozen
