"""``offline``: every sample is there from the start; batches of ``max_batch`` back to
back; the figure is samples per second."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from dlbench.measure.loadgen.generator import ScenarioRun
from dlbench.measure.loadgen.scenarios.base import LOADGEN_MIN_QUERIES, LoadScenario

if TYPE_CHECKING:
    from dlbench.measure.loadgen.generator import Clock, ScenarioSettings, Serve


class Offline(LoadScenario):
    """Full batches back to back; LoadGen counts its samples as queries."""

    counted: ClassVar[str] = "samples"
    last_start_text: ClassVar[str] = "the last sample completed"
    keeps_service: ClassVar[bool] = True

    def issue(self, settings: ScenarioSettings, serve: Serve, clock: Clock) -> ScenarioRun:
        """Every sample queued at the start; full batches back to back until
        ``min_queries`` samples and ``min_duration_s`` seconds."""
        result = ScenarioRun(settings)
        start = clock.now()
        done = start
        while result.samples < settings.min_queries or done - start < settings.min_duration_s:
            began = clock.now()
            serve(settings.max_batch)
            done = clock.now()
            result.service.append(done - began)
            result.batch_sizes.append(settings.max_batch)
        result.planned = result.samples
        result.end = result.last_start = done - start
        return result

    def queries(self, run: ScenarioRun) -> int:
        """Samples served: LoadGen's offline query count."""
        return run.samples

    def default_min_queries(self, percentile: float) -> int:
        """LoadGen's 100: no latency estimate to feed."""
        return LOADGEN_MIN_QUERIES
