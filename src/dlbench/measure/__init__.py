"""Measurement: the timing loop, statistics of batch times, and system information.

Everything here runs in the worker process; nothing here decides what to run.
"""

from __future__ import annotations
