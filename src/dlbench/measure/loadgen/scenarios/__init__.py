"""The load generator's scenarios, one module each (registered by name in
:mod:`dlbench.config.scenarios.registry`): :mod:`.base` the interface,
:mod:`.single_stream`, :mod:`.multi_stream`, :mod:`.server`, :mod:`.offline`."""

from __future__ import annotations
