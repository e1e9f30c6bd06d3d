"""The garbage collector's cost in a long test process, and the fixture that keeps it
small. Each directory's ``conftest.py`` imports :func:`frozen_heap`, so it applies to
every test module of the suite.

Late in a run of the suite this process holds millions of objects: TensorFlow, JAX,
PyTorch and their caches, imported by earlier tests. A full collection walks every one
of them, most of a second each time, and tests make many: Keras's ``clear_session()``
and the worker's batch search call ``gc.collect()`` after each model, and the
interpreter starts full passes of its own as objects pile up. Together that was about
a seventh of the time ``tests/unit`` and ``tests/integration`` take.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module", autouse=True)
def frozen_heap() -> Iterator[None]:
    """What exists when a test module starts stays out of the collector's passes until
    the module ends (``gc.freeze``): a collection then walks only what the module made.
    Garbage the module makes is collected as before; garbage earlier modules left in
    reference cycles is collected after this module, not during it."""
    gc.freeze()
    yield
    gc.unfreeze()
