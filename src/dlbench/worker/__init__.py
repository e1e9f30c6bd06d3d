"""The child side: one process runs one experiment and writes its log.

Entry point: ``python -m dlbench.worker EXP.json``. The parent and the worker meet
only through files: the resolved parameters come in as JSON, the log goes out.
"""

from __future__ import annotations
