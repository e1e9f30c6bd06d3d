"""Small predicates on record values, shared by the results and report layers."""

from __future__ import annotations

import numbers
from typing import Any, TypeGuard


def is_number(value: Any) -> TypeGuard[int | float]:
    """Whether ``value`` is a measurement: a real number that is not a bool.

    ``bool`` is an ``int`` subclass, but ``true`` is never a measurement of 1: it must
    not sort, align, compare or plot as one. NumPy's numbers count (they are
    registered as ``numbers.Real``), NumPy's ``bool_`` does not.

    >>> is_number(1.5), is_number(2), is_number(True), is_number("3")
    (True, True, False, False)
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
