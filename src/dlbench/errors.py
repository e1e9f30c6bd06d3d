"""The exceptions dlbench raises for problems a user can cause and fix.

Every one of them carries a one-line message that names the parameter, file or flag
at fault and what would be accepted; the command line prints that line and exits
with status 2. Anything else that escapes is a bug and keeps its traceback.

The one hierarchy (all defined here; the two marked * by the model builders,
``dlbench.models``, which subclass :class:`WorkerError`)::

    DlbenchError
    ├── SpecError               a sweep spec or -P/-V/-E flag
    ├── ConfigError             a parameter's value
    │   └── UnsafeExpressionError
    ├── ResultsError            a run directory, store or exported file
    ├── MetricError             a metric with no direction
    ├── QueryError              a --where/--query
    ├── CompareError            a comparison option
    ├── ChartError              a chart that cannot be built as asked
    ├── WorkerError             inside the worker, as the experiment's status message
    │   ├── NonFiniteLoss       the training loss became NaN or infinite
    │   ├── EndpointError       a served model's endpoint cannot be benchmarked as asked
    │   ├── ImageTooSmall *
    │   └── FlopsNotCounted *
    ├── UsageError              the command line itself
    ├── PathError               a path that cannot be used
    └── MeasurementRefused      a measurement that cannot be what it claims
"""

from __future__ import annotations


class DlbenchError(Exception):
    """Base class: a user-facing error with a one-line message."""

    exit_status = 2


class SpecError(DlbenchError):
    """A sweep spec (file or -P/-V/-E flag) cannot be read."""


class ConfigError(DlbenchError):
    """A parameter is unknown, of the wrong type, outside its allowed values,
    or a reference or computed value cannot be resolved."""


class UnsafeExpressionError(ConfigError):
    """A ``$(...)$`` computed value uses something the safe evaluator refuses."""


class ResultsError(DlbenchError):
    """A results source (run directory, store, exported file) cannot be read or written."""


class MetricError(DlbenchError):
    """A result key named as the metric of a comparison, a history check, a baseline or
    a scorecard cannot be judged: it declares no direction (neither higher nor lower is
    better) and none was given."""


class QueryError(DlbenchError):
    """A ``--where``/``--query`` JSON query is malformed."""


class CompareError(DlbenchError):
    """A comparison option (such as --threshold) has a value that is not accepted."""


class ChartError(DlbenchError):
    """A chart cannot be built as asked (keys, legend, baseline, units, chart type)."""


class WorkerError(DlbenchError):
    """An experiment failed inside its worker; the message says why.

    Raised inside the worker process only; the runner sees it as the experiment's
    ``exp.status_msg``.
    """


class UsageError(DlbenchError):
    """The command line itself is malformed: an unknown flag, a missing or ill-typed
    value, a value outside a flag's choices."""


class PathError(DlbenchError):
    """A path given on the command line or in a parameter cannot be used: a file where
    a directory is needed, a directory where a file is, or no permission."""


class MeasurementRefused(DlbenchError):
    """A measurement that cannot be what it claims to be (``dlbench peak`` under CPU
    contention, far below the peak already saved) is not stored; the message says why
    and which flag stores it anyway."""


class EndpointError(WorkerError):
    """An OpenAI-compatible endpoint cannot be benchmarked as asked: it is unreachable,
    refuses the key, does not serve the model or the API, or does not stream. Found by
    the client's probe before any load is sent; the message names the ``endpoint.*``
    parameter to change and never holds the API key."""


class NonFiniteLoss(WorkerError):
    """The training loss became NaN or infinite."""

    def __init__(self, batch: int) -> None:
        super().__init__(f"loss is NaN at batch {batch}")
        self.batch = batch
