"""The scenarios of ``exp.scenario``, registered in one place.

A scenario decides how inference work is issued to the backend and what is measured.
It is one module and one registration line at the end of this one: its name, a line
of help (``exp.scenario``'s help is made of them), where its class lives
(``"package.module:Class"``, a :class:`~dlbench.measure.loadgen.scenarios.base.LoadScenario`
imported by the worker only when it runs the scenario) and what the plan checks of it.
Those checks are declared here, as facts, because the parent never imports the
worker's side. ``batch``, the timing loop of back-to-back batches, has no class: it is
the worker's own loop, and every other scenario is a load generator.

Adding a scenario::

    # dlbench/measure/loadgen/scenarios/burst.py
    class Burst(LoadScenario):
        def issue(self, settings, serve, clock):
            ...  # serve queries, return the ScenarioRun

    # here
    register("burst", "queries of exp.replica_batch samples at once",
             "dlbench.measure.loadgen.scenarios.burst:Burst")

The names (``exp.scenario``'s choices, its help, the worker's choice of loop) are read
from here and from nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlbench.plugins import PluginRegistry


@dataclass(frozen=True)
class ScenarioEntry:
    """A registered scenario: its name, a line of help, where its class lives (None:
    the worker's timing loop, no load generator; a test may give the class itself) and
    the facts the plan checks:
    ``one_sample``, each query is one sample (``exp.replica_batch`` must be 1);
    ``arrival_rate``, queries arrive at ``exp.target_qps``, which ``auto`` searches."""

    name: str
    help: str
    implementation: str | type[object] | None
    one_sample: bool = False
    arrival_rate: bool = False

    @property
    def issues_queries(self) -> bool:
        """Whether a load generator issues the work (every scenario but the timing
        loop's)."""
        return self.implementation is not None


_REGISTRY: PluginRegistry[ScenarioEntry] = PluginRegistry("scenario")


def register(name: str, help: str, implementation: str | type[object] | None, *,
             one_sample: bool = False, arrival_rate: bool = False) -> ScenarioEntry:
    """Add a scenario; ``ValueError`` when ``name`` is taken."""
    return _REGISTRY.add(name, ScenarioEntry(name, help, implementation, one_sample,
                                             arrival_rate))


def unregister(name: str) -> None:
    """Remove a scenario (a test's own, once the test is done)."""
    _REGISTRY.remove(name)


def scenario_names() -> tuple[str, ...]:
    """Every registered scenario's name, in registration order."""
    return tuple(_REGISTRY.names())


def scenarios() -> list[ScenarioEntry]:
    """Every registered scenario, in registration order."""
    return _REGISTRY.entries()


def scenario(name: str) -> ScenarioEntry:
    """The registered scenario ``name``; ``ValueError`` naming the accepted ones."""
    return _REGISTRY.get(name)


def issues_queries(name: object) -> bool:
    """Whether ``name`` is a registered scenario that a load generator runs; False for
    the timing loop's and for a name not registered (a record from elsewhere)."""
    return isinstance(name, str) and name in _REGISTRY and _REGISTRY.get(name).issues_queries


def arrives_at_rate(name: object) -> bool:
    """Whether ``name`` is a registered scenario whose queries arrive at
    ``exp.target_qps``; False for any other name."""
    return isinstance(name, str) and name in _REGISTRY and _REGISTRY.get(name).arrival_rate


#: The default scenario, the timing loop: back-to-back batches.
BATCH = "batch"

_LOADGEN = "dlbench.measure.loadgen.scenarios"

register(BATCH, "back-to-back batches, the timing loop", None)
register("single_stream", "one sample per query, the next when it completes",
         f"{_LOADGEN}.single_stream:SingleStream", one_sample=True)
register("multi_stream", "queries of exp.replica_batch samples, back to back",
         f"{_LOADGEN}.multi_stream:MultiStream")
register("server", "one-sample queries arriving as a Poisson process at exp.target_qps, "
         "served by a dynamic batcher of at most exp.replica_batch",
         f"{_LOADGEN}.server:Server", arrival_rate=True)
register("offline", "every sample at once, in batches of exp.replica_batch",
         f"{_LOADGEN}.offline:Offline")
