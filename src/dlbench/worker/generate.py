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

Each request becomes a :class:`~dlbench.measure.serving.records.RequestRecord`, as a
request to an ``endpoint`` would: scheduled at its arrival in the server scenario (its
wait for its generation is known: its latency less its generation's serving time) and
at its generation's start otherwise, sent then too (no client stands between it and
the model), one text event per token at the moment the token was ready, and
``exp.output_tokens`` as its output tokens. Every serving figure (TTFT, TPOT, ITL,
latency, tokens/s) is then computed by :mod:`dlbench.measure.serving.definitions`, so
a key means here what it means for an endpoint. The rates of the batch scenario are
over the timed generations, from the first one's start to the last one's last token.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Protocol, runtime_checkable

from dlbench.config.scenarios.registry import issues_queries
from dlbench.errors import WorkerError
from dlbench.measure.loadgen.scenario import run_scenario
from dlbench.measure.serving.definitions import SteadyWindow, serving_results
from dlbench.measure.serving.records import RequestRecord, to_rows
from dlbench.measure.timing import AutoStop, AutoWarmup, run_batches
from dlbench.results.stats import summarize_times
from dlbench.worker.heartbeat import ProgressWriter

__all__ = ["Generation", "Generator", "generate", "generate_results", "generation_records",
           "generation_results"]

_NS_PER_MS = 1e6
#: The client's self-check of the serving figures: in process, a request reaches the
#: model's queue the moment it is due (sent = scheduled), so there is no client to check.
_NO_CLIENT = ("results.client_lag_mean", "results.client_lag_p99",
              "results.client_cpu_percent", "results.client_kept_up")


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
    #: When it started, ns on the clock of :func:`generate`.
    start_ns: int = 0

    def token_times_ns(self) -> list[int]:
        """When each token was ready, ns on the same clock as ``start_ns``.

        >>> Generation(1, [30.0, 10.0, 2.5], start_ns=100).token_times_ns()
        [30000100, 40000100, 42500100]
        """
        # Each time was an integer ns difference over 1e6: rounding gives it back exactly.
        return [self.start_ns + ns for ns in accumulate(round(ms * _NS_PER_MS)
                                                        for ms in self.token_ms)]

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
    return Generation(requests, times, began)


def generation_records(generations: Sequence[Generation], waits_ms: Sequence[float],
                       output_tokens: int, t0_ns: int = 0, *, first_index: int = 0,
                       warmup: bool = False) -> list[RequestRecord]:
    """One record per request of ``generations`` (in order), whose requests, in the same
    order, waited ``waits_ms`` before their generation started; times in ns from
    ``t0_ns`` (on the clock of :func:`generate`), indices from ``first_index``."""
    requests = sum(g.requests for g in generations)
    if requests != len(waits_ms):
        raise WorkerError(f"{len(waits_ms)} request waits for {requests} requests generated")
    records: list[RequestRecord] = []
    waits = iter(waits_ms)
    for g in generations:
        tokens = [ns - t0_ns for ns in g.token_times_ns()]
        for _ in range(g.requests):
            scheduled = g.start_ns - t0_ns - round(next(waits) * _NS_PER_MS)
            records.append(RequestRecord(
                index=first_index + len(records), scheduled_ns=scheduled, sent_ns=scheduled,
                chunk_ns=list(tokens), chunk_chars=[0] * len(tokens),
                first_event_ns=tokens[0] if tokens else None,
                done_ns=tokens[-1] if tokens else None, max_tokens=output_tokens,
                usage_output_tokens=output_tokens, warmup=warmup))
    return records


def generation_results(generations: Sequence[Generation], waits_ms: Sequence[float],
                       output_tokens: int, *, warmup: Sequence[Generation] = (),
                       t0_ns: int = 0, back_to_back: bool = False) -> dict[str, Any]:
    """The ``results.*`` of ``generations`` (in order) whose requests, in the same
    order, waited ``waits_ms`` before their generation started, after the ``warmup``
    generations (kept in ``results.request_data``, counted in no figure). With
    ``back_to_back`` (the batch scenario), the rates are over the generations, from
    the first one's start to the last one's last token; else over the steady-state
    window of the requests' arrivals."""
    if not generations or not sum(g.requests for g in generations):
        raise WorkerError("no request was generated")
    records = generation_records(warmup, [0.0] * sum(g.requests for g in warmup),
                                 output_tokens, t0_ns, warmup=True)
    records += generation_records(generations, waits_ms, output_tokens, t0_ns,
                                  first_index=len(records))
    window = None
    if back_to_back:
        ends = generations[-1].token_times_ns()
        window = SteadyWindow(generations[0].start_ns - t0_ns,
                        (ends[-1] if ends else generations[-1].start_ns) - t0_ns)
    results = serving_results(records, window=window)
    for name in _NO_CLIENT:
        del results[name]
    results["results.token_data"] = [list(g.token_ms) for g in generations]
    results["results.request_data"] = to_rows(records)
    return results


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
    t0 = time.perf_counter_ns()  # the run's start: every request's times count from it
    progress.enter("warmup")
    if not issues_queries(params["exp.scenario"]):
        progress.start()
        try:
            timing = run_batches(step, generator.synchronize, warmup, stop, mark=mark,
                                 position=progress.position)
        finally:
            progress.stop()
        warm, timed = generations[:timing.num_warmup], generations[timing.num_warmup:]
        results: dict[str, Any] = dict(summarize_times(timing.times_ms))
        results.update({
            "results.num_batches": len(timing.times_ms),
            "results.num_warmup_batches": timing.num_warmup,
            "results.stop_reason": timing.stop_reason,
            "results.timed_seconds": timing.elapsed_s,
            "results.time_data": timing.times_ms})
        waits = [0.0] * requests * len(timed)
    else:
        num_warmup = run_batches(step, generator.synchronize, warmup, 0,
                                 position=progress.position).num_warmup
        warm = list(generations)
        generations.clear()

        def serve(samples: int) -> None:  # a query is a request
            generations.append(generate(generator, samples, output_tokens))

        progress.enter("timed", first=num_warmup)
        mark("timed_start", num_warmup)
        results = run_scenario(params, serve)
        mark("timed_end", num_warmup + len(generations))
        results["results.num_warmup_batches"] = num_warmup
        timed = generations
        waits = _waits(results, timed)
    progress.enter("finish")
    serving = generation_results(timed, waits, output_tokens, warmup=warm, t0_ns=t0,
                                 back_to_back=not issues_queries(params["exp.scenario"]))
    # The load generator's rules (queries, duration, latency bound) and the serving
    # gates both judge the run.
    serving["results.valid_reasons"] = [*results.get("results.valid_reasons", []),
                                        *serving["results.valid_reasons"]]
    serving["results.valid"] = not serving["results.valid_reasons"]
    results.update(serving)
    results.update(generator.generate_facts())
    return results
