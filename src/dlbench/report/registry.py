"""The report types of ``dlbench report --type``, registered in one place.

A report type is a class with one entry point, :meth:`ReportType.build` (records in,
a :class:`~dlbench.report.cells.Report` out), and one registration line at the end of
this module: its name, a line of help, and where the class lives. The command line
takes its ``--type`` choices and their help from here without importing the classes
(a report pulls in code that ``dlbench plan`` must not pay for); a class is imported
when its report is built.

Adding a report type::

    # dlbench/report/count.py
    class CountReport(ReportType):
        def build(self, records, options):
            return Report(title="Count", summary=[f"{len(records)} record(s)"])

    # here
    register("count", "the number of records", "dlbench.report.count:CountReport")
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from dlbench.plugins import PluginRegistry, load_class

if TYPE_CHECKING:
    from dlbench.report.cells import Report


@dataclass(frozen=True)
class ReportOptions:
    """What ``dlbench report`` passes to a report besides the records: the measured
    value the tables are built from, and the baseline file of a scorecard."""

    target: str = "results.time"
    baseline: str | None = None


class ReportType(ABC):
    """One kind of report. ``uses_baseline``: it needs ``--baseline FILE``, and no
    other type accepts one."""

    uses_baseline: ClassVar[bool] = False

    @abstractmethod
    def build(self, records: Sequence[dict[str, Any]], options: ReportOptions) -> Report:
        """The report of ``records`` (already selected by ``--query``)."""


@dataclass(frozen=True)
class ReportTypeEntry:
    """A registered report type: its name, a line of help, and its class (or where to
    import it from, ``"package.module:Class"``)."""

    name: str
    help: str
    implementation: str | type[ReportType]

    def load(self) -> ReportType:
        """An instance of the report type's class, imported now if need be."""
        return load_class(self.implementation, ReportType)()


_REGISTRY: PluginRegistry[ReportTypeEntry] = PluginRegistry("report type")


def register(name: str, help: str, implementation: str | type[ReportType]) -> ReportTypeEntry:
    """Add a report type; ``ValueError`` when ``name`` is taken."""
    return _REGISTRY.add(name, ReportTypeEntry(name, help, implementation))


def unregister(name: str) -> None:
    """Remove a report type (a test's own, once the test is done)."""
    _REGISTRY.remove(name)


def report_types() -> list[ReportTypeEntry]:
    """Every registered report type, in registration order."""
    return _REGISTRY.entries()


def report_type(name: str) -> ReportTypeEntry:
    """The registered report type ``name``; ``ValueError`` for an unknown one."""
    return _REGISTRY.get(name)


register("exploration", "models by replica batch size (batch time, throughput)",
         "dlbench.report.tables.reports:Exploration")
register("weak-scaling", "models by replica count, the replica batch fixed (throughput, "
         "speedup, efficiency)", "dlbench.report.tables.reports:WeakScaling")
register("strong-scaling", "models by replica count, the effective batch fixed "
         "(throughput, speedup, efficiency)", "dlbench.report.tables.reports:StrongScaling")
register("scorecard", "pass or fail against the targets of --baseline FILE",
         "dlbench.report.scorecard.scorecard:Scorecard")
register("serving", "latency vs achieved throughput per offered load of server-scenario "
         "runs, and output tokens/s, TTFT and TPOT per load of generate-phase runs (in "
         "process or an endpoint's, a load search's probes too), with their knees",
         "dlbench.report.serving.report:Serving")
