"""The exceptions dlbench raises for problems a user can cause and fix.

Every one of them carries a one-line message that names the parameter, file or flag
at fault and what would be accepted; the command line prints that line and exits
with status 2. Anything else that escapes is a bug and keeps its traceback.
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
