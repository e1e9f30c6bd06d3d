"""A declared parameter, and the shared knobs frameworks declare their own under.

:class:`Param` lives here, below the registry and the framework declarations, so
that each framework's declaration module (``dlbench.config.frameworks``) can
declare its parameters without importing the registry that gathers them.

A :class:`Knob` is a setting most frameworks have under a name of their own
(``pytorch.num_threads``, ``onnxruntime.intra_op_threads``): its type, default,
allowed values and smallest value are declared once here, and each framework says
which knobs it supports, under which parameter name, with :meth:`Knob.param`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The types a parameter may declare. ``any`` accepts every JSON value.
PARAM_TYPES = ("str", "int", "float", "bool", "list", "dict", "any")

_UNSET: Any = object()

#: How a check names a parameter in its message: ``name=value (from source)``, given
#: the name.
Shown = Callable[[str], str]

# Upper bounds of counts and durations: far above what a real benchmark needs, low
# enough that a mistyped value (1e21 batches) is refused by the plan instead of
# starting a run that cannot finish.
#: Most batches of any kind a parameter may ask for (warm-up, timed, profiled).
MAX_BATCHES = 10_000_000
#: Most seconds a duration parameter may ask for: a day.
MAX_SECONDS = 86_400
#: Most seconds one worker may run (exp.timeout), and train (exp.max_train_seconds): a
#: week.
MAX_WORKER_SECONDS = 7 * MAX_SECONDS
#: Most worker processes exp.repeat may run one after another.
MAX_REPEAT = 1_000
#: Largest accepted exp.replica_batch, and so the largest batch exp.replica_batch=auto
#: may probe: far above any batch a device holds, and low enough that a mistyped size
#: (1e26) is an error, not an absurd throughput.
MAX_REPLICA_BATCH = 2**20


@dataclass(frozen=True)
class Param:
    """One declared parameter."""

    name: str
    type: str
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    identity: bool = True
    settable: bool = True
    special: tuple[str, ...] = ()  # words accepted besides values of the type (`auto`)
    knob: str = ""  # the shared knob (Knob.id) this parameter is a framework's name of
    minimum: float | None = None  # smallest accepted value; the plan refuses less
    minimum_note: str = ""  # what the smallest value means, shown with the refusal
    #: Largest accepted value; the plan refuses more. Counts, durations and
    #: percentiles declare one so that a mistyped value is refused, not a run that
    #: cannot finish.
    maximum: float | None = None
    #: Computes the value from others (given a getter of resolved values) when the
    #: spec does not set it: for a value an expression would write badly (a lookup
    #: in a table). ``default`` then says in words what it is derived from.
    derive: Callable[[Callable[[str], Any]], Any] | None = None
    #: The value is a choice of the user's even though ``derive`` fills its default
    #: (``exp.model``: ``served:<name>`` for a framework measuring a server, resnet50
    #: otherwise), so it is an identity parameter as if set, never a derived one.
    chosen: bool = False

    def __post_init__(self) -> None:
        if self.type not in PARAM_TYPES:
            raise ValueError(f"parameter {self.name}: unknown type {self.type!r}")

    @property
    def derived(self) -> bool:
        """True when the default is computed from other parameters."""
        return (self.derive is not None and not self.chosen) or (
            isinstance(self.default, str) and ("${" in self.default or "$(" in self.default))

    @property
    def accepted_range(self) -> str:
        """The declared range in words (``between 1 and 10000000``, ``>= 0``), or ''
        when neither bound is declared; shown by ``help --params`` and the refusal.

        >>> Param("x.n", "int", 1, "N.", minimum=1, maximum=10).accepted_range
        'between 1 and 10'
        """
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            return f"between {_number(low)} and {_number(high)}"
        if low is not None:
            return f">= {_number(low)}"
        return f"<= {_number(high)}" if high is not None else ""

    def out_of_range(self, value: Any) -> bool:
        """True when ``value`` is a number outside the declared range (NaN included);
        other values (words such as ``auto``) are checked elsewhere."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return not ((self.minimum is None or value >= self.minimum)
                    and (self.maximum is None or value <= self.maximum))

    @property
    def namespace(self) -> str:
        """The part of the name before the first dot (``exp``, ``pytorch``, ...)."""
        return self.name.split(".", 1)[0]


def _number(value: float) -> str:
    """A bound as a user types it: whole numbers in full (10000000, not 1e+07)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Knob:
    """A setting shared by frameworks, declared once: each framework that supports it
    declares its own parameter for it with :meth:`param`."""

    id: str
    type: str
    default: Any
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None

    def param(self, name: str, help: str, *, default: Any = _UNSET, minimum_note: str = "",
              identity: bool = True) -> Param:
        """The framework's parameter ``name`` for this knob; ``help`` says what it does
        in that framework, ``default`` replaces the knob's own (a container image).

        >>> SEED.param("x.seed", "Seed.").default
        0
        """
        return Param(name, self.type, self.default if default is _UNSET else default, help,
                     choices=self.choices, identity=identity, knob=self.id,
                     minimum=self.minimum, minimum_note=minimum_note)


#: Seed of the initial weights and the synthetic data.
SEED = Knob("seed", "int", 0)
#: CPU threads that parallelise one operator; 0 keeps the framework's default.
THREADS = Knob("threads", "int", 0, minimum=0)
#: CPU threads that run independent operators at once; 0 keeps the default.
INTER_OP_THREADS = Knob("inter_op_threads", "int", 0, minimum=0)
#: Optimizer of the training phase.
OPTIMIZER = Knob("optimizer", "str", "sgd", choices=("sgd", "adam"))
#: Compile the model or the step (torch.compile, XLA).
COMPILE = Knob("compile", "bool", False)
#: Container image of the worker when exp.docker_image is empty.
DOCKER_IMAGE = Knob("docker_image", "str", "")

#: Every shared knob, by id.
KNOBS: dict[str, Knob] = {k.id: k for k in (SEED, THREADS, INTER_OP_THREADS, OPTIMIZER,
                                              COMPILE, DOCKER_IMAGE)}
