"""dlbench's public API: plan and run a sweep, read its records, and add a framework,
model, scenario, report type or launcher.

Everything a script or a plug-in needs is importable from here; the modules these
names live in are dlbench's own business and may move. A name is imported from its
home module only when it is first used (PEP 562), for two reasons: ``import
dlbench.api`` stays as cheap as the command line's start-up, and a plug-in framework
listed in dlbench's registration list may import ``FrameworkInfo``, ``Param`` and
``Backend`` from here while the catalog is still loading it. Nothing inside the
``dlbench`` package imports this module (``tests/unit/test_import_rule.py``).

Run a sweep and read it back::

    from dlbench.api import plan_sweep, run_sweep, load_records

    experiments = plan_sweep(parameters={"exp.framework": "fake", "exp.num_batches": 2},
                             variables={"exp.replica_batch": [1, 2]}, out="runs/demo")
    result = run_sweep(experiments)
    records = load_records(["runs/demo"])

Add a report type (the other axes alike, see ``docs/extending.md``)::

    from dlbench.api import Report, ReportType, Table, register_report

    class CountReport(ReportType):
        def build(self, records, options):
            return Report(title="Count", tables=[Table("records", ["n"], [[len(records)]])])

    register_report("count", "the number of records", CountReport)

The names, by what they are for:

- running: :func:`plan_sweep` (the experiments of a spec, as ``dlbench plan``),
  :func:`run_sweep` (run them, as ``dlbench run``), ``SweepResult`` and ``Outcome``
  (what a run returns), ``main`` (the command line itself, for a script that
  registers a plug-in first);
- reading: ``load_records`` (records of run directories, stores, logs and exports),
  ``Store`` (a run directory's SQLite store), ``parse_query`` (a ``--where`` query);
- frameworks: ``register_framework``, ``unregister_framework``, ``FrameworkInfo``
  (the declaration), ``Param`` (a parameter), ``SEED``, ``THREADS``,
  ``DOCKER_IMAGE`` (common parameters a framework declares under its own name),
  ``Backend`` (the worker-side class);
- models: ``register_model``, ``unregister_model``, ``ModelInfo``;
- scenarios: ``register_scenario``, ``unregister_scenario``, ``LoadScenario`` (the
  class a scenario subclasses), ``ScenarioRun`` (what it returns),
  ``ScenarioSettings``, ``VirtualClock``, ``run_scenario`` and
  ``summarize_scenario`` (the load generator, to try a scenario without a model);
- report types: ``register_report``, ``unregister_report``, ``ReportType``,
  ``ReportOptions``, ``Report``, ``Table``;
- launchers: ``register_launcher``, ``unregister_launcher``, ``Launcher``,
  ``ProcessLauncher``, ``Flag``;
- errors: ``DlbenchError``, the base of every exception a user's mistake raises
  (the command line shows it as one line, exit status 2), and its subclasses
  ``SpecError``, ``ConfigError``, ``UnsafeExpressionError``, ``ResultsError``,
  ``MetricError``, ``QueryError``, ``CompareError``, ``ChartError``, ``WorkerError``,
  ``NonFiniteLoss``, ``UsageError``, ``PathError``, ``MeasurementRefused``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlbench.backends.base import Backend as Backend
    from dlbench.cli.main import main as main
    from dlbench.config.catalog import ModelInfo as ModelInfo
    from dlbench.config.frameworks.base import FrameworkInfo as FrameworkInfo
    from dlbench.config.params import DOCKER_IMAGE as DOCKER_IMAGE
    from dlbench.config.params import SEED as SEED
    from dlbench.config.params import THREADS as THREADS
    from dlbench.config.params import Param as Param
    from dlbench.config.registry import register_framework as register_framework
    from dlbench.config.registry import register_model as register_model
    from dlbench.config.registry import unregister_framework as unregister_framework
    from dlbench.config.registry import unregister_model as unregister_model
    from dlbench.config.scenarios.registry import register as register_scenario
    from dlbench.config.scenarios.registry import unregister as unregister_scenario
    from dlbench.errors import ChartError as ChartError
    from dlbench.errors import CompareError as CompareError
    from dlbench.errors import ConfigError as ConfigError
    from dlbench.errors import DlbenchError as DlbenchError
    from dlbench.errors import MeasurementRefused as MeasurementRefused
    from dlbench.errors import MetricError as MetricError
    from dlbench.errors import NonFiniteLoss as NonFiniteLoss
    from dlbench.errors import PathError as PathError
    from dlbench.errors import QueryError as QueryError
    from dlbench.errors import ResultsError as ResultsError
    from dlbench.errors import SpecError as SpecError
    from dlbench.errors import UnsafeExpressionError as UnsafeExpressionError
    from dlbench.errors import UsageError as UsageError
    from dlbench.errors import WorkerError as WorkerError
    from dlbench.launch.launchers import Flag as Flag
    from dlbench.launch.launchers import Launcher as Launcher
    from dlbench.launch.launchers import ProcessLauncher as ProcessLauncher
    from dlbench.launch.launchers import register as register_launcher
    from dlbench.launch.launchers import unregister as unregister_launcher
    from dlbench.launch.outcome import Outcome as Outcome
    from dlbench.launch.outcome import SweepResult as SweepResult
    from dlbench.measure.loadgen.generator import ScenarioRun as ScenarioRun
    from dlbench.measure.loadgen.generator import ScenarioSettings as ScenarioSettings
    from dlbench.measure.loadgen.generator import VirtualClock as VirtualClock
    from dlbench.measure.loadgen.generator import run as run_scenario
    from dlbench.measure.loadgen.results import summarize as summarize_scenario
    from dlbench.measure.loadgen.scenarios.base import LoadScenario as LoadScenario
    from dlbench.report.cells import Report as Report
    from dlbench.report.cells import Table as Table
    from dlbench.report.registry import ReportOptions as ReportOptions
    from dlbench.report.registry import ReportType as ReportType
    from dlbench.report.registry import register as register_report
    from dlbench.report.registry import unregister as unregister_report
    from dlbench.results.io import load_records as load_records
    from dlbench.results.query import parse_query as parse_query
    from dlbench.results.store import Store as Store

#: Each public name that lives elsewhere: its home module and its name there. The
#: TYPE_CHECKING imports above say the same for the type checker (a test compares).
_HOMES: dict[str, tuple[str, str]] = {
    "main": ("dlbench.cli.main", "main"),
    "SweepResult": ("dlbench.launch.outcome", "SweepResult"),
    "Outcome": ("dlbench.launch.outcome", "Outcome"),
    "load_records": ("dlbench.results.io", "load_records"),
    "Store": ("dlbench.results.store", "Store"),
    "parse_query": ("dlbench.results.query", "parse_query"),
    "register_framework": ("dlbench.config.registry", "register_framework"),
    "unregister_framework": ("dlbench.config.registry", "unregister_framework"),
    "FrameworkInfo": ("dlbench.config.frameworks.base", "FrameworkInfo"),
    "Param": ("dlbench.config.params", "Param"),
    "SEED": ("dlbench.config.params", "SEED"),
    "THREADS": ("dlbench.config.params", "THREADS"),
    "DOCKER_IMAGE": ("dlbench.config.params", "DOCKER_IMAGE"),
    "Backend": ("dlbench.backends.base", "Backend"),
    "register_model": ("dlbench.config.registry", "register_model"),
    "unregister_model": ("dlbench.config.registry", "unregister_model"),
    "ModelInfo": ("dlbench.config.catalog", "ModelInfo"),
    "register_scenario": ("dlbench.config.scenarios.registry", "register"),
    "unregister_scenario": ("dlbench.config.scenarios.registry", "unregister"),
    "LoadScenario": ("dlbench.measure.loadgen.scenarios.base", "LoadScenario"),
    "ScenarioRun": ("dlbench.measure.loadgen.generator", "ScenarioRun"),
    "ScenarioSettings": ("dlbench.measure.loadgen.generator", "ScenarioSettings"),
    "VirtualClock": ("dlbench.measure.loadgen.generator", "VirtualClock"),
    "run_scenario": ("dlbench.measure.loadgen.generator", "run"),
    "summarize_scenario": ("dlbench.measure.loadgen.results", "summarize"),
    "register_report": ("dlbench.report.registry", "register"),
    "unregister_report": ("dlbench.report.registry", "unregister"),
    "ReportType": ("dlbench.report.registry", "ReportType"),
    "ReportOptions": ("dlbench.report.registry", "ReportOptions"),
    "Report": ("dlbench.report.cells", "Report"),
    "Table": ("dlbench.report.cells", "Table"),
    "register_launcher": ("dlbench.launch.launchers", "register"),
    "unregister_launcher": ("dlbench.launch.launchers", "unregister"),
    "Launcher": ("dlbench.launch.launchers", "Launcher"),
    "ProcessLauncher": ("dlbench.launch.launchers", "ProcessLauncher"),
    "Flag": ("dlbench.launch.launchers", "Flag"),
    **{name: ("dlbench.errors", name) for name in (
        "DlbenchError", "SpecError", "ConfigError", "UnsafeExpressionError",
        "ResultsError", "MetricError", "QueryError", "CompareError", "ChartError",
        "WorkerError", "UsageError", "PathError", "MeasurementRefused", "NonFiniteLoss")},
}

#: Sorted; the module docstring groups them by use.
__all__ = [
    "DOCKER_IMAGE",
    "SEED",
    "THREADS",
    "Backend",
    "ChartError",
    "CompareError",
    "ConfigError",
    "DlbenchError",
    "Flag",
    "FrameworkInfo",
    "Launcher",
    "LoadScenario",
    "MeasurementRefused",
    "MetricError",
    "ModelInfo",
    "NonFiniteLoss",
    "Outcome",
    "Param",
    "PathError",
    "ProcessLauncher",
    "QueryError",
    "Report",
    "ReportOptions",
    "ReportType",
    "ResultsError",
    "ScenarioRun",
    "ScenarioSettings",
    "SpecError",
    "Store",
    "SweepResult",
    "Table",
    "UnsafeExpressionError",
    "UsageError",
    "VirtualClock",
    "WorkerError",
    "load_records",
    "main",
    "parse_query",
    "plan_sweep",
    "register_framework",
    "register_launcher",
    "register_model",
    "register_report",
    "register_scenario",
    "run_scenario",
    "run_sweep",
    "summarize_scenario",
    "unregister_framework",
    "unregister_launcher",
    "unregister_model",
    "unregister_report",
    "unregister_scenario",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its home module on first use (then kept here)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _HOMES[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _flags(values: Mapping[str, Any]) -> list[str]:
    # As -P/-V flags: the values go through the same parsing and checks as the
    # command line's, so a sweep planned here is the one `dlbench plan` prints.
    return [f"{name}={json.dumps(value)}" for name, value in values.items()]


def plan_sweep(
    config_files: Sequence[str | Path] = (),
    parameters: Mapping[str, Any] | None = None,
    variables: Mapping[str, Sequence[Any]] | None = None,
    extensions: Sequence[Mapping[str, Any]] = (),
    *,
    out: str | Path | None = None,
    max_experiments: int | None = None,
    launcher: str = "local",
) -> list[dict[str, Any]]:
    """The experiments of a sweep, resolved and checked, as ``dlbench plan`` plans them.

    ``config_files`` are spec files (merged in order); ``parameters``, ``variables``
    and ``extensions`` are what ``-P``, ``-V`` and ``-E`` give, as Python values;
    ``out`` is ``--out``, the run directory (default: ``exp.out_dir``'s). A mistake
    raises a :class:`~dlbench.errors.DlbenchError` whose message names it.

    >>> from dlbench.api import plan_sweep
    >>> experiments = plan_sweep(parameters={"exp.framework": "fake", "exp.model": "toy"},
    ...                          variables={"exp.replica_batch": [8, 16]})
    >>> [e["exp.replica_batch"] for e in experiments]
    [8, 16]
    """
    from dlbench.cli.commands.run import planned_experiments
    from dlbench.config.expand import MAX_EXPERIMENTS

    arguments = argparse.Namespace(
        config=[str(path) for path in config_files], suite=[],
        params=_flags(parameters or {}), variables=_flags(variables or {}),
        extensions=[json.dumps(extension) for extension in extensions],
        out=None if out is None else str(out), launcher=launcher,
        max_experiments=MAX_EXPERIMENTS if max_experiments is None else max_experiments)
    chosen = _launcher(launcher, {}, _to_stderr)
    try:
        return planned_experiments(arguments, chosen)
    finally:
        chosen.close()


def run_sweep(
    experiments: Sequence[Mapping[str, Any]],
    *,
    launcher: str = "local",
    options: Mapping[str, Any] | None = None,
    interleave: bool = False,
    report: Callable[[str], None] | None = None,
) -> SweepResult:
    """Run planned experiments (:func:`plan_sweep`) as ``dlbench run`` does: each in
    a fresh worker process started by ``launcher`` (with ``options``, the values of
    its own flags by their argparse names), resuming what the run directory already
    holds (``exp.rerun``), each record committed to its run directory's store as it
    ends. ``interleave``: ``--interleave``. ``report`` gets the progress lines
    (default: standard error). Returns every experiment's outcome.

    ::

        from dlbench.api import plan_sweep, run_sweep

        result = run_sweep(plan_sweep(parameters={"exp.framework": "fake"}, out="runs/x"))
        print([outcome.record["results.time"] for outcome in result.outcomes])
    """
    from dlbench.cli.commands.run import check_run_paths
    from dlbench.errors import UsageError
    from dlbench.launch.order import INTERLEAVED, SEQUENTIAL
    from dlbench.launch.sweep import Sweep

    progress = _to_stderr if report is None else report
    chosen = _launcher(launcher, dict(options or {}), progress)
    order = INTERLEAVED if interleave else SEQUENTIAL
    if not order.supports(chosen):
        chosen.close()
        raise UsageError(f"interleave: only with the local launcher (the launcher is "
                         f"{launcher})")
    sweep = Sweep(chosen, order, progress)
    try:
        planned = [dict(experiment) for experiment in experiments]
        chosen.check(planned)
        check_run_paths(planned, out_flag=False)
        return sweep.run(planned)
    finally:
        sweep.close()


def _launcher(name: str, options: dict[str, Any], report: Callable[[str], None]) -> Launcher:
    """The launcher registered as ``name``, set up with ``options``; UsageError naming
    the registered ones for a name that is not."""
    from dlbench.errors import UsageError
    from dlbench.launch.launchers import launcher, launchers

    try:
        entry = launcher(name)
    except ValueError:
        known = ", ".join(entry.name for entry in launchers())
        raise UsageError(f"launcher {name!r}: not a registered launcher; one of {known}") from None
    return entry.create(options, report)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
