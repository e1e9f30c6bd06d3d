"""``multi_stream``: as ``single_stream``, with ``samples_per_query`` samples per query."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from dlbench.measure.loadgen.scenarios.single_stream import SingleStream

if TYPE_CHECKING:
    from dlbench.measure.loadgen.generator import ScenarioSettings


class MultiStream(SingleStream):
    """Queries back to back, each of ``samples_per_query`` samples."""

    default_percentile: ClassVar[float] = 99.0

    def query_size(self, settings: ScenarioSettings) -> int:
        """Samples in one query: ``samples_per_query``."""
        return settings.samples_per_query
