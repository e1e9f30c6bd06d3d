"""Reports: what the numbers mean. Tables (exploration, weak and strong scaling), a
scorecard against a baseline, A/B comparison, charts and a self-contained HTML page.

Reports read records (``dlbench.results``) and never run anything.
"""

from __future__ import annotations
