"""HTML text: the one escaping rule and the one page shell of every page dlbench writes
(the HTML report, the history page, their charts and sections)."""

from __future__ import annotations

import html

import dlbench


def escape(value: object) -> str:
    """``value`` as text safe inside an HTML element or a quoted attribute: ``&``, ``<``,
    ``>``, ``"`` and ``'`` escaped."""
    return html.escape(str(value), quote=True)


def page_shell(title: str, style: str, body: str, script: str) -> str:
    """A whole self-contained page: the document, its head (charset, viewport, the
    generator with dlbench's version, the escaped ``title``, no favicon request), the
    page's own ``style`` and, after ``body`` (HTML, inserted as it is), its ``script``."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="dlbench {escape(dlbench.__version__)}">
<title>{escape(title)}</title>
<link rel="icon" href="data:,">
<style>{style}</style>
</head>
<body>
{body}
<script>{script}</script>
</body>
</html>
"""
