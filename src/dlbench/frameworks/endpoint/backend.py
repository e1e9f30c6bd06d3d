"""``exp.framework=endpoint`` in the worker: probe the server, send the experiment's
load, and turn every request's timestamps into results by dlbench's definitions
(:mod:`dlbench.measure.serving.definitions`).

Nothing is timed step by step here: the client (:mod:`.client`) stamps each request's
events as they are read, the load (:mod:`.load`) decides when each request is due,
and the figures are computed once, after the run, from the raw records, which go to
the log whole (``results.request_data``) so that any figure, in any tool's
definitions, can be computed again (``dlbench definitions``).

With ``exp.target_qps=auto`` or ``exp.replica_batch=auto`` the load is a search for the
highest one that meets the SLOs (:mod:`.search`): many runs, one clock (every time
counts from the search's start), and the record's figures those of one probe.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from dlbench.backends.base import Backend
from dlbench.errors import WorkerError
from dlbench.frameworks.endpoint.client import EndpointClient
from dlbench.frameworks.endpoint.energy import EnergyMeter
from dlbench.frameworks.endpoint.load import LoadPlan, LoadRun, open_arrivals, run_load
from dlbench.frameworks.endpoint.prompts import PromptSource
from dlbench.frameworks.endpoint.requests import ClientSettings
from dlbench.frameworks.endpoint.search import (
    AUTO,
    ContinuedPrompts,
    ProbeRun,
    Search,
    axis_of,
    calibration_plan,
    find_peak,
    rate_search,
)
from dlbench.frameworks.endpoint.server_metrics import MetricsScraper, metrics_url
from dlbench.measure.serving.definitions import SLOs, SteadyWindow, serving_results
from dlbench.measure.serving.records import to_rows

__all__ = ["BACKEND", "EndpointBackend"]

#: An open loop without a cap still holds no more than this many connections at once
#: (a pool must have a size); endpoint.max_concurrency raises it.
DEFAULT_OPEN_CAP = 256


class EndpointBackend(Backend):
    """A server over its OpenAI-compatible API (the ``endpoint.*`` parameters)."""

    def setup(self) -> None:
        p = self.params
        key: str | None = None
        name = str(p["endpoint.api_key_env"])
        if name:
            key = os.environ.get(name)
            if not key:
                raise WorkerError(f"endpoint.api_key_env={name}: that environment variable is "
                                  f"not set (or empty) where the worker runs")
        #: The axis searched (exp.target_qps=auto, exp.replica_batch=auto); None: one run.
        self.axis = axis_of(p)
        try:
            # A search's plan at its least load: each probe has its own (_search).
            self.plan = LoadPlan.from_params(
                p if self.axis is None else {**p, self.axis.param: self.axis.minimum})
            self.prompts = PromptSource.from_params(p)
        except ValueError as error:  # a trace, dataset or tokenizer that cannot be read
            raise WorkerError(str(error)) from None
        connections = self.plan.concurrency or DEFAULT_OPEN_CAP
        if self.axis is not None and self.axis.integer:  # its largest probe's
            connections = int(self.axis.maximum)
        self.settings = ClientSettings(
            url=str(p["endpoint.url"]).rstrip("/"), model=str(p["endpoint.model"]),
            api=str(p["endpoint.api"]), stream=bool(p["endpoint.stream"]), api_key=key,
            connect_timeout_s=float(p["endpoint.connect_timeout_s"]),
            read_timeout_s=float(p["endpoint.read_timeout_s"]),
            max_connections=connections, ignore_eos=bool(p["endpoint.ignore_eos"]))
        self.facts: dict[str, Any] = {}

    def step(self, index: int) -> None:
        raise WorkerError("exp.framework=endpoint is measured by the load it sends, not by "
                          "timed steps")

    def throughput_unit(self) -> tuple[str, float]:
        """Output tokens."""
        return "tokens/s", float(self.params["exp.output_tokens"])

    def environment(self) -> dict[str, Any]:
        """What the probe learnt of the server (filled once the load has run)."""
        return {}

    def load_results(self, progress: Any, mark: Any) -> dict[str, Any]:
        """Probe, then the load, then the figures (see the module's docstring)."""
        return asyncio.run(self._run(progress, mark))

    async def _run(self, progress: Any, mark: Any) -> dict[str, Any]:
        p = self.params
        t0 = time.perf_counter_ns()
        async with EndpointClient(self.settings, t0, self.prompts.token_counter) as client:
            # Before any load: an unreachable server, a model it does not serve or an
            # answer that does not stream ends the experiment here, in one line.
            self.facts = await client.probe()
            setting = str(p["endpoint.metrics_url"])
            scraper = MetricsScraper(metrics_url(setting, self.settings.url),
                                     float(p["endpoint.metrics_interval_s"]), t0,
                                     explicit=setting != "auto")
            await scraper.start()
            meter = EnergyMeter.open(str(p["endpoint.energy_gpus"]),
                                     bool(p["endpoint.energy_cpu"]), t0)
            meter.start()
            # Before the timed phase is entered (mark does): the progress counts requests.
            self._describe(progress, self.plan)
            mark("timed_start", 0)
            search: Search | None = None
            try:
                if self.axis is None:
                    plan = self.plan
                    run = await self._send(client, plan, self.prompts, t0, progress)
                    results = self._figures(run)
                else:
                    search = await self._search(client, t0, progress)
                    assert search.chosen is not None and search.chosen.measured is not None
                    results = dict(search.chosen.measured.results)
                    run, plan = search.chosen.measured.payload
            finally:
                meter.stop()
                await scraper.stop()
            mark("timed_end", len(run.records))
        window = SteadyWindow(run.window_start_ns, run.window_end_ns)
        progress.enter("finish")
        results["results.timed_seconds"] = run.wall_s
        results["results.request_data"] = to_rows(run.records)
        results.update({f"results.endpoint.{name}": value
                        for name, value in self.facts.items()})
        results.update(scraper.results((window.start_ns, window.end_ns)))
        results.update(meter.results((window.start_ns, window.end_ns)
                                     if window.seconds > 0 else None, results))
        if plan.mode == "open":  # the serving report's offered load, as LoadGen's
            results["results.qps_target"] = plan.rate
        if search is not None:
            results.update(search.results())
            if search.problems:
                results["results.valid"] = False
                results["results.valid_reasons"] = [*results["results.valid_reasons"],
                                                    *search.problems]
        return results

    async def _send(self, client: EndpointClient, plan: LoadPlan, prompts: PromptSource,
                    t0: int, progress: Any) -> LoadRun:
        """One run of ``plan``; the timed phase's progress counts its completed requests."""
        self._describe(progress, plan)
        progress.enter("timed", first=0)

        def count(completed: int) -> None:
            progress.position.batch = completed

        return await run_load(client, plan, prompts, t0, progress=count)

    def _describe(self, progress: Any, plan: LoadPlan) -> None:
        """Tell the progress writer that a timed "batch" is one request of
        ``exp.output_tokens`` tokens, out of the schedule's requests where the schedule
        fixes them (an open loop, a trace), with no total otherwise."""
        counts: dict[str, Any] = {"exp.effective_batch": 1}
        if plan.mode == "open":
            counts["exp.num_batches"] = len(open_arrivals(plan)) * plan.turns
        elif plan.mode == "trace":
            counts["exp.num_batches"] = len(plan.trace)
        progress.describe(counts, self)

    def _figures(self, run: LoadRun) -> dict[str, Any]:
        """The serving figures of one run, under the experiment's SLOs."""
        p = self.params
        slos = SLOs(ttft_ms=float(p["endpoint.slo_ttft_ms"]),
                    tpot_ms=float(p["endpoint.slo_tpot_ms"]),
                    latency_ms=float(p["endpoint.slo_latency_ms"]))
        window = SteadyWindow(run.window_start_ns, run.window_end_ns)
        return serving_results(run.records, slos, window,
                               client_cpu_percent=run.cpu_percent if run.wall_s > 0 else None,
                               max_client_lag_ms=float(p["endpoint.max_client_lag_ms"]))

    async def _search(self, client: EndpointClient, t0: int, progress: Any) -> Search:
        """The highest load that meets the SLOs (:mod:`.search`): each probe a whole run
        of the experiment's plan at its load, its prompts numbered on from the last."""
        p, axis = self.params, self.axis
        assert axis is not None
        prompts = ContinuedPrompts(self.prompts)

        async def send(plan: LoadPlan) -> LoadRun:
            run = await self._send(client, plan, prompts, t0, progress)
            prompts.first += len(run.records)
            return run

        start = 1.0  # a concurrency starts at one request in flight
        if not axis.integer:
            calibration = await send(calibration_plan(self.plan))
            try:
                axis, start = rate_search(axis, self._figures(calibration), self.plan.turns)
            except ValueError as error:
                raise WorkerError(f"{axis.param}=auto: {error}") from None

        async def measure(load: float, repeat: int) -> ProbeRun:
            # Each search draws its own arrivals: repeats are independent draws.
            seed = int(p["exp.scenario_seed"]) + repeat
            plan = LoadPlan.from_params({**p, axis.param: load, "exp.scenario_seed": seed})
            run = await send(plan)
            return ProbeRun(self._figures(run), run.wall_s, (run, plan))

        repeats = p["endpoint.search_repeats"]
        return await find_peak(axis, start, None if repeats == AUTO else int(repeats),
                               float(p["endpoint.search_attainment"]), measure)


BACKEND = EndpointBackend
