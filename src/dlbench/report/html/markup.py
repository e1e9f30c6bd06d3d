"""HTML text: the one escaping rule of every page dlbench writes (the HTML report, the
history page, their charts and sections)."""

from __future__ import annotations

import html


def escape(value: object) -> str:
    """``value`` as text safe inside an HTML element or a quoted attribute: ``&``, ``<``,
    ``>``, ``"`` and ``'`` escaped."""
    return html.escape(str(value), quote=True)
