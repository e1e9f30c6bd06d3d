"""``exp.phase=generate``: a decoder model generates tokens for requests, timed here.

The backend exposes two hooks, ``prefill(requests)`` (the prompts of that many
requests through the model, each one's first output token chosen) and
``decode_step()`` (the next token of each); this module times each one, with the
device synchronised after it, so every framework would be measured by the same
code. One *generation* serves a batch of requests together: its prefill and first
token, then ``exp.output_tokens - 1`` decoding steps.

- ``exp.scenario=batch``: generations of ``exp.replica_batch`` requests back to back,
  warm-up and timed ones as the timing loop runs batches (``results.time`` is a whole
  generation).
- any other scenario: a query of the load generator (``measure/loadgen/scenario.py``) is a
  request; ``serve(n)`` is one generation of ``n`` requests, so the server's dynamic
  batcher decides how many requests are generated together.

Per request: TTFT, the time to its first token, counted from its scheduled arrival in
the server scenario (the wait for its batch included) and from its generation's start
otherwise; its inter-token latencies (each decoding step of its generation); its
output tokens per second of its whole latency. Percentiles by LoadGen's rule.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from dlbench.config.scenarios.registry import issues_queries
from dlbench.errors import WorkerError
from dlbench.measure.loadgen.scenario import run_scenario
from dlbench.measure.timing import AutoStop, AutoWarmup, run_batches
from dlbench.results.stats import loadgen_percentile, mean, mean_or_none, summarize_times
from dlbench.worker.heartbeat import ProgressWriter

__all__ = ["Generation", "Generator", "generate", "generate_results", "generation_results"]

_NS_PER_MS = 1e6


@runtime_checkable
class Generator(Protocol):
    """What a backend offers for ``exp.phase=generate``; the hooks may return before
    the device is done (``synchronize`` waits)."""

    def prefill(self, requests: int) -> None:
        """Start ``requests`` requests: their prompts, and their first tokens."""

    def decode_step(self) -> None:
        """The next token of every request started."""

    def synchronize(self) -> None:
        """Wait until the device has done all the work queued."""

    def generate_facts(self) -> dict[str, Any]:
        """``results.*`` that say how tokens are generated (``generate_cache``)."""


@dataclass(frozen=True)
class Generation:
    """One generation: how many requests, and the time of each of its tokens in ms,
    the first from the generation's start (prefill and first token), each later one
    from the token before."""

    requests: int
    token_ms: list[float]

    @property
    def ttft_ms(self) -> float:
        """Prefill and first token."""
        return self.token_ms[0]

    @property
    def total_ms(self) -> float:
        """The whole generation."""
        return math.fsum(self.token_ms)


def generate(backend: Generator, requests: int, output_tokens: int,
             clock: Callable[[], int] = time.perf_counter_ns) -> Generation:
    """Generate ``output_tokens`` tokens for ``requests`` requests, timing each token."""
    began = clock()
    backend.prefill(requests)
    backend.synchronize()
    last = clock()
    times = [(last - began) / _NS_PER_MS]
    for _ in range(output_tokens - 1):
        backend.decode_step()
        backend.synchronize()
        now = clock()
        times.append((now - last) / _NS_PER_MS)
        last = now
    return Generation(requests, times)


def generation_results(generations: Sequence[Generation], waits_ms: Sequence[float],
                       output_tokens: int) -> dict[str, Any]:
    """The ``results.*`` of ``generations`` (in order) whose requests, in the same
    order, waited ``waits_ms`` before their generation started."""
    requests = sum(g.requests for g in generations)
    if requests != len(waits_ms) or not requests:
        raise WorkerError(f"{len(waits_ms)} request waits for {requests} requests generated")
    ttft: list[float] = []
    latency: list[float] = []
    inter: list[float] = []  # every request's inter-token latencies
    waits = iter(waits_ms)
    for g in generations:
        for _ in range(g.requests):
            wait = next(waits)
            ttft.append(wait + g.ttft_ms)
            latency.append(wait + g.total_ms)
            inter.extend(g.token_ms[1:])
    per_request = [output_tokens * 1000.0 / ms for ms in latency]
    return {
        "results.ttft_mean": mean(ttft),
        "results.ttft_p50": loadgen_percentile(ttft, 50),
        "results.ttft_p99": loadgen_percentile(ttft, 99),
        "results.tpot_mean": mean_or_none(inter),
        "results.tpot_p50": loadgen_percentile(inter, 50) if inter else None,
        "results.tpot_p99": loadgen_percentile(inter, 99) if inter else None,
        "results.request_tokens_per_s_p50": loadgen_percentile(per_request, 50),
        "results.ttft_data": ttft,
        "results.token_data": [list(g.token_ms) for g in generations],
    }


class _Requests:
    """The backend seen as the generation loop uses it: given to the live progress
    (``worker/heartbeat.py``) so that it counts a generation as its output tokens."""

    def __init__(self, backend: Generator, output_tokens: int) -> None:
        self.backend = backend
        self.output_tokens = output_tokens

    def throughput_unit(self) -> tuple[str, float]:
        """Output tokens: ``exp.output_tokens`` per request."""
        return "tokens/s", float(self.output_tokens)


def _waits(results: Mapping[str, Any], generations: Sequence[Generation]) -> list[float]:
    """Each request's wait before its generation, ms: in the server scenario its
    latency less its batch's serving time (batches are first in, first out), else 0."""
    if "results.wait_mean" not in results:
        return [0.0] * sum(g.requests for g in generations)
    latencies, service = results["results.latency_data"], results["results.service_data"]
    waits: list[float] = []
    for g, served in zip(generations, service, strict=True):
        waits.extend(max(0.0, latency - served)
                     for latency in latencies[len(waits):len(waits) + g.requests])
    return waits


def generate_results(
    params: Mapping[str, Any], backend: Any,
    policies: tuple[int | AutoWarmup, int | AutoStop], progress: ProgressWriter, mark: Any,
) -> dict[str, Any]:
    """Warm-up and timed generations (``exp.scenario=batch``) or a scenario whose
    queries are requests; their ``results.*``, throughput in output tokens/s."""
    if not isinstance(backend, Generator):
        raise WorkerError(f"exp.framework={params['exp.framework']}: its backend has no "
                          f"prefill and decode_step for exp.phase=generate")
    generator: Generator = backend
    output_tokens = int(params["exp.output_tokens"])
    requests = int(params["exp.replica_batch"])
    # The live progress counts a timed batch in the backend's unit: here a generation,
    # counted in output tokens.
    progress.describe(params, _Requests(generator, output_tokens))
    generations: list[Generation] = []

    def step(index: int) -> None:  # one generation of a full batch of requests
        generations.append(generate(generator, requests, output_tokens))

    warmup, stop = policies
    progress.enter("warmup")
    if not issues_queries(params["exp.scenario"]):
        progress.start()
        try:
            timing = run_batches(step, generator.synchronize, warmup, stop, mark=mark,
                                 position=progress.position)
        finally:
            progress.stop()
        timed = generations[timing.num_warmup:]
        results: dict[str, Any] = dict(summarize_times(timing.times_ms))
        results.update({
            "results.num_batches": len(timing.times_ms),
            "results.num_warmup_batches": timing.num_warmup,
            "results.stop_reason": timing.stop_reason,
            "results.timed_seconds": timing.elapsed_s,
            "results.requests_per_s": requests * 1000.0 / results["results.time"],
            "results.time_data": timing.times_ms})
        waits = [0.0] * requests * len(timed)
    else:
        num_warmup = run_batches(step, generator.synchronize, warmup, 0,
                                 position=progress.position).num_warmup
        generations.clear()

        def serve(samples: int) -> None:  # a query is a request
            generations.append(generate(generator, samples, output_tokens))

        progress.enter("timed", first=num_warmup)
        mark("timed_start", num_warmup)
        results = run_scenario(params, serve)
        mark("timed_end", num_warmup + len(generations))
        results["results.num_warmup_batches"] = num_warmup
        results["results.requests_per_s"] = results["results.throughput"]
        timed = generations
        waits = _waits(results, timed)
    progress.enter("finish")
    results["results.throughput"] = results["results.requests_per_s"] * output_tokens
    results["results.throughput_unit"] = "tokens/s"
    results["results.output_tokens_per_s"] = results["results.throughput"]
    results.update(generation_results(timed, waits, output_tokens))
    results.update(generator.generate_facts())
    return results
