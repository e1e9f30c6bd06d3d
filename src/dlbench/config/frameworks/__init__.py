"""The frameworks dlbench knows, each registered by one line: the path of the module
that declares it.

A framework is declared by a module's ``FRAMEWORK``, a
:class:`~dlbench.config.frameworks.base.FrameworkInfo` (no framework import at the
module's top: the parent imports it to plan). Its backend, the module that
``FRAMEWORK.module`` names, is imported only in the worker. Either:

- one module holds both: the declaration, ``module=__name__``, and its ``BACKEND``
  class, which imports its framework inside its methods (a plug-in; see
  docs/extending.md), or
- the declaration is a module of this package and the backend one of
  :mod:`dlbench.backends`, which imports its framework at its top: every built-in
  framework, so that the parent's start-up never pays for the backend module.

Adding a framework is then that module plus one line in :data:`MODULES`. The lines
are strings, imported by :func:`~dlbench.config.frameworks.base.load_declaration`, so
that a module outside this package (outside dlbench, on ``PYTHONPATH``) may be listed
without the config layer importing it statically. A one-module framework may import,
at its top, only what imports no framework and nothing of the catalog that is loading
it: :mod:`dlbench.config.frameworks.base`, :mod:`dlbench.config.params` and
:mod:`dlbench.backends.base`.
"""

from __future__ import annotations

from dlbench.config.frameworks.base import FrameworkInfo, load_declaration

#: The registration lines: each framework's declaration module, in the order dlbench
#: lists the frameworks.
MODULES: tuple[str, ...] = (
    "dlbench.config.frameworks.pytorch",
    "dlbench.config.frameworks.jax",
    "dlbench.config.frameworks.onnxruntime",
    "dlbench.config.frameworks.tensorflow",
    "dlbench.config.frameworks.fake",
    "dlbench.frameworks.endpoint.declaration",
)

#: Every framework's declaration, imported from :data:`MODULES`, in that order.
DECLARATIONS: tuple[FrameworkInfo, ...] = tuple(load_declaration(path) for path in MODULES)
