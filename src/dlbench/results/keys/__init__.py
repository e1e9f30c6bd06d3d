"""The declared result keys: the type of a key and how values combine (:mod:`.types`), the
tables of every key (:mod:`.table`, with its profile and scenario parts), and
looking a key up (:mod:`.lookup`).
"""

from __future__ import annotations
