"""The command line: argument parsing and printing only; the work is in the library."""

from __future__ import annotations
