"""What a framework declares about itself, without importing it.

A :class:`FrameworkInfo` is a framework's declaration: its id and title, the backend
module that implements it (imported only in the worker), what it needs installed,
its parameters (with the shared knobs of :mod:`dlbench.config.params` it supports),
the checks of an experiment only it needs, and where its device query lives. A
module declares a framework as its ``FRAMEWORK``, read by :func:`load_declaration`
from the module's path (the registration lines of :mod:`dlbench.config.frameworks`);
the plan, the launcher and the CLI ask the declaration, never the framework's name.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dlbench.config.params import Param
from dlbench.config.params import Shown as Shown  # importable here too, where a check is typed
from dlbench.plugins import load_attribute

#: A framework's own checks of one resolved experiment: raise ConfigError, naming
#: the parameter with ``shown(name)``, when the framework cannot run it.
Check = Callable[[Mapping[str, Any], Shown], None]

#: Every dtype exp.dtype accepts.
ALL_DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class FrameworkInfo:
    """A framework's declaration: which module implements it, what it needs installed,
    its parameters and its checks."""

    id: str
    title: str
    # The module whose BACKEND (a dlbench.backends.base.Backend) runs it, imported only
    # in the worker: a backend module of its own, or the declaration's module itself
    # (`module=__name__`: a framework in one module).
    module: str
    requires: tuple[str, ...]  # importable top-level packages it needs
    install_hint: str  # what to run when a requirement is missing
    phases: tuple[str, ...] = ("training", "inference")
    description: str = ""
    # Its builder table: model id -> `module:function` building the model, imported
    # only in the worker (dlbench.models.builders.load_builders); derived from the models' zoo
    # entries (dlbench.config.zoo.zoo_builders). The models it defines are this
    # table's, unless `models` says otherwise.
    builders: Mapping[str, str] = field(default_factory=dict)
    # Models this framework defines when it has no builders of its own (ONNX Runtime
    # runs PyTorch's); None: every model of the catalog.
    models: tuple[str, ...] | None = None
    # How several replicas (exp.num_replicas > 1) run: "torchrun" starts one worker
    # process per replica; "in_process" lets one worker drive every local device (JAX's
    # sharding, TensorFlow's MirroredStrategy); "none" refuses more than one replica.
    data_parallel: str = "none"
    # Its own parameters, all named `<id>.*`, in the order `dlbench help` lists them.
    params: tuple[Param, ...] = ()
    # The exp.dtype values it runs, and why not the others (shown when refused).
    dtypes: tuple[str, ...] = ALL_DTYPES
    dtype_note: str = ""
    # Its checks of an experiment beyond the shared ones; None: none.
    check: Check | None = None
    #: The exp.profile values its backend runs besides ``none`` (``torch``, ``nsys``...);
    #: the plan refuses any other (docs/profiling.md).
    profilers: tuple[str, ...] = ()
    #: Its step is simulated and runs no model: labels show ``fake(resnet50)``, never a
    #: bare model id that would pass for a real measurement.
    simulated: bool = False
    #: The parameter naming the model a server holds, for a framework that measures a
    #: model served elsewhere (``endpoint.model``): ``exp.model`` is then
    #: ``served:<its value>``, and no model of the catalog applies. Empty: none.
    served_model: str = ""
    # `module:function` listing the devices it sees, imported only in a child process
    # of `dlbench help --frameworks`; empty: it does not say.
    devices: str = ""

    def __post_init__(self) -> None:
        if self.builders and self.models is None:
            object.__setattr__(self, "models", tuple(self.builders))
        for param in self.params:
            if param.namespace != self.id:
                raise ValueError(f"framework {self.id}: parameter {param.name} is not "
                                 f"under {self.id}.")

    def missing_requirements(self) -> list[str]:
        """Names of required packages that cannot be imported here (checked without importing)."""
        return [name for name in self.requires if importlib.util.find_spec(name) is None]

    def defines(self, model_id: str) -> bool:
        """Whether this framework runs the model ``model_id``."""
        return self.models is None or model_id in self.models

    def knob_param(self, knob: str) -> str | None:
        """The name of this framework's parameter for the shared knob ``knob`` (see
        :data:`dlbench.config.params.KNOBS`), or None when it does not support it.

        >>> FrameworkInfo("x", "X", "x", (), "", params=(
        ...     Param("x.threads", "int", 0, "", knob="threads"),)).knob_param("threads")
        'x.threads'
        """
        return next((p.name for p in self.params if p.knob == knob), None)


def load_declaration(module: str) -> FrameworkInfo:
    """The framework that the module ``module`` (a dotted path) declares as its
    ``FRAMEWORK``, importing the module now. ``TypeError`` when ``FRAMEWORK`` is not
    a :class:`FrameworkInfo`; a module that cannot be imported, or declares none,
    raises its own ``ImportError`` or ``AttributeError``.

    >>> load_declaration("dlbench.config.frameworks.fake").title
    'Fake workload'
    """
    info = load_attribute(f"{module}:FRAMEWORK")
    if not isinstance(info, FrameworkInfo):
        raise TypeError(f"{module}.FRAMEWORK is a {type(info).__name__}, not a FrameworkInfo")
    return info


def image_layout(sample_shape: tuple[int, ...], channels_last: bool) -> str | None:
    """``sys.layout``: ``NHWC`` or ``NCHW`` for a model whose sample is an image (the
    catalog's ``(C, H, W)``, a 4-D batch), by ``channels_last``; None for other inputs.

    >>> image_layout((3, 224, 224), True), image_layout((128,), True)
    ('NHWC', None)
    """
    if len(sample_shape) != 3:
        return None
    return "NHWC" if channels_last else "NCHW"

