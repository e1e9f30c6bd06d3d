"""Values kept as the JSON text they were read from, where decoding them only to
encode them again would give back the same text.

``dlbench parse`` writes records as JSON; a log's batch times and monitor series are
lists of hundreds of numbers, written by ``json.dumps``. When such a list is exactly
what ``json.dumps`` writes for it (:data:`NUMBER_LIST`, checked by one regular
expression at C speed), the log's text of it is the output's, and the reader keeps it
as a :class:`RawJSON` instead of decoding it (:func:`dlbench.results.log.scan.scan_bytes`
with ``raw_lists``). Anything the expression does not accept is decoded as always.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A number exactly as ``json.dumps`` writes it, so that decoding and encoding it again
# would give back the same text: an integer of at most 18 digits; a float in
# ``repr``'s plain notation (from 1e-4 up to 1e7) with at most 15 significant digits,
# which ``repr`` writes as they are (its shortest form); NaN and the infinities.
# Longer or exponent forms are not accepted here, and are decoded as always.
_FLOAT = r"-?(?:[1-9]\d{0,6}\.(?:\d{0,7}[1-9]|0)|0\.(?:0{0,3}[1-9](?:\d{0,10}[1-9])?|0))"
_NUMBER = rf"(?:{_FLOAT}|0|-?[1-9]\d{{0,17}}|NaN|-?Infinity)"
#: A JSON list of numbers exactly as ``json.dumps`` writes it (``", "`` between them).
NUMBER_LIST = re.compile(rf"\[(?:{_NUMBER}(?:, {_NUMBER})*+)?\]")


class RawJSON:
    """A value kept as its JSON text: a list of numbers in a log that is exactly what
    ``json.dumps`` writes for it (:data:`NUMBER_LIST`), read with ``raw_lists`` by a
    caller that writes records out as JSON (:func:`dlbench.results.export.write_logs`)
    and would otherwise decode hundreds of batch times only to encode them again."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def value(self) -> Any:
        """The decoded list."""
        return json.loads(self.text)
