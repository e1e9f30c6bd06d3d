"""Framework backends. Each framework's backend is a package here (``pytorch/``, ``jax/``,
``tensorflow/``, ``onnxruntime/``) whose ``__init__`` defines ``BACKEND``, a
:class:`~dlbench.backends.base.Backend` subclass, beside the modules it alone uses; the
worker imports them lazily from ``dlbench.config.catalog``. ``fake`` is the known-answer
workload; ``base`` and ``trace_summary`` are shared."""

from __future__ import annotations
