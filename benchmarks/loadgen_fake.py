"""The load generator against the fake workload, in real time: what each scenario
reports for a system of known service time, and how close the real-time issuer comes
to an ideal one (the same schedule and the same measured service times, replayed on a
virtual clock).

    python benchmarks/loadgen_fake.py --step-ms 5 --seconds 5

Prints one line per scenario, then the peak search's probes. With a step of S ms:
single-stream p50 is S; the server at half load (rho = 0.5) waits rho S / (2 (1 - rho))
= S / 2 on average (M/D/1), give or take the sample's spread; the peak is near 1000 / S
queries per second, how near depending on the bound.
"""

from __future__ import annotations

import argparse
import itertools
from typing import Any

from dlbench.backends.fake import FakeBackend
from dlbench.config import load_spec, plan_experiments
from dlbench.measure.loadgen.generator import RealClock, ScenarioSettings, Serve, VirtualClock, run
from dlbench.measure.loadgen.peak_search import find_peak_qps, start_qps
from dlbench.measure.loadgen.results import summarize, validity


def fake_serve(step_ms: float) -> Serve:
    """One fake step per call, as the worker's ``serve`` runs a backend step."""
    params = plan_experiments(load_spec(params=[
        "exp.framework=fake", "exp.model=toy", "exp.phase=inference",
        f"fake.step_ms={step_ms}"]))[0]
    backend = FakeBackend(params)
    backend.setup()
    index = itertools.count()

    def serve(samples: int) -> None:
        backend.step(next(index))
        backend.synchronize()

    return serve


def replayed_wait(settings: ScenarioSettings, service: list[float]) -> float:
    """Mean wait (ms) of an ideal issuer on the same schedule and service times."""
    clock = VirtualClock()
    durations = iter(service)
    result = run(settings, lambda samples: clock.advance(next(durations)), clock)
    return float(summarize(result)["results.wait_mean"])


def line(name: str, out: dict[str, Any]) -> str:
    figures = [f"{name:14s} queries={out['results.queries']}"]
    for key, label in (("results.latency_p50", "p50"), ("results.latency_p99", "p99"),
                       ("results.wait_mean", "wait"), ("results.qps_achieved", "qps"),
                       ("results.throughput", "samples/s")):
        if key in out:
            figures.append(f"{label}={out[key]:.3f}")
    figures.append(f"valid={out['results.valid']}")
    return " ".join(figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-ms", type=float, default=5.0)
    parser.add_argument("--seconds", type=float, default=5.0, help="min duration per run")
    parser.add_argument("--bound-steps", type=float, default=100.0,
                        help="the server's p99 latency bound, in steps")
    args = parser.parse_args()
    serve = fake_serve(args.step_ms)
    step = args.step_ms / 1000.0
    single = ScenarioSettings("single_stream", min_queries=100,
                              min_duration_s=args.seconds, percentile=90.0)
    print(line("single_stream", summarize(run(single, serve))))
    server = ScenarioSettings("server", min_queries=100, min_duration_s=args.seconds,
                              target_qps=0.5 / step, latency_bound_s=args.bound_steps * step,
                              seed=12)
    result = run(server, serve)
    out = summarize(result)
    print(line("server", out), f"md1_wait={step * 1000 / 2:.3f}",
          f"replayed_wait={replayed_wait(server, result.service):.3f}")
    offline = ScenarioSettings("offline", min_queries=100, min_duration_s=args.seconds,
                               max_batch=16)
    print(line("offline", summarize(run(offline, serve))))
    clock = RealClock()
    start = start_qps(server, serve, clock)
    search = find_peak_qps(server, serve, clock, start, tolerance=0.02)
    for probe in search.probes:
        p99 = summarize(probe).get("results.latency_p99", float("nan"))
        print(f"probe qps={probe.settings.target_qps:8.2f} queries={probe.queries:5d} "
              f"p99={p99:8.2f} ms early={probe.stopped_early} valid={not validity(probe)}")
    best = search.best.settings.target_qps if search.best else None
    print(f"start={start:.2f} peak={best} capacity={1 / step:.2f} {search.problem}")


if __name__ == "__main__":
    main()
