"""``single_stream``: one query of one sample at a time, the next one when the previous
completes; latency = that query's time."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from dlbench.measure.loadgen.generator import ScenarioRun
from dlbench.measure.loadgen.scenarios.base import LoadScenario

if TYPE_CHECKING:
    from dlbench.measure.loadgen.generator import Clock, ScenarioSettings, Serve


class SingleStream(LoadScenario):
    """Queries back to back, each of :meth:`query_size` samples."""

    default_percentile: ClassVar[float] = 90.0
    estimates_percentile: ClassVar[bool] = True

    def query_size(self, settings: ScenarioSettings) -> int:
        """Samples in one query: one."""
        return 1

    def issue(self, settings: ScenarioSettings, serve: Serve, clock: Clock) -> ScenarioRun:
        """A query when the previous one is done, until ``min_queries`` queries and
        ``min_duration_s`` seconds to the last issue."""
        size = self.query_size(settings)
        result = ScenarioRun(settings)
        start = clock.now()
        while True:
            issued = clock.now()
            serve(size)
            done = clock.now()
            result.latencies.append(done - issued)
            result.service.append(done - issued)
            result.batch_sizes.append(size)
            result.last_start = issued - start
            if (len(result.latencies) >= settings.min_queries
                    and result.last_start >= settings.min_duration_s):
                break
        result.planned = len(result.latencies)
        result.end = done - start
        return result
