"""The search of an endpoint's highest load meeting its SLOs (frameworks/endpoint/search.py)
against fake probes whose verdicts are known: what it probes, what it finds, how its
repeats stop, and what the plan refuses."""

from __future__ import annotations

import asyncio
import doctest
import math
from collections.abc import Sequence
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.errors import ConfigError
from dlbench.frameworks.endpoint import search as search_module
from dlbench.frameworks.endpoint.load import LoadPlan
from dlbench.frameworks.endpoint.prompts import PromptSource
from dlbench.frameworks.endpoint.search import (
    AUTO_MAX_REPEATS,
    AUTO_MIN_REPEATS,
    CONCURRENCY,
    MAX_PROBES,
    RATE,
    Axis,
    Bracket,
    ContinuedPrompts,
    ProbeRun,
    Search,
    axis_of,
    calibration_plan,
    find_peak,
    probe_reasons,
    rate_search,
)
from dlbench.results.stats import t_quantile_975

RATES = Axis(RATE, integer=False, minimum=0.01, maximum=1000.0, tolerance=0.02,
             limit="the largest exp.target_qps")
CONCURRENCIES = Axis(CONCURRENCY, integer=True, minimum=1, maximum=64, tolerance=0.02,
                     limit="exp.auto_batch_max=64")


class FakeServer:
    """Probes of a server that meets its SLOs up to ``peaks[k]`` in search k (the last
    one's after the last), and never beyond; every probe's load and search are kept."""

    def __init__(self, peaks: Sequence[float], kept_up: bool = True) -> None:
        self.peaks = list(peaks)
        self.kept_up = kept_up
        self.loads: list[float] = []
        self.repeats: list[int] = []

    async def measure(self, load: float, repeat: int) -> ProbeRun:
        self.loads.append(load)
        self.repeats.append(repeat)
        peak = self.peaks[min(repeat, len(self.peaks) - 1)]
        good = load <= peak
        results = {"results.valid": good,
                   "results.valid_reasons": [] if good else ["p99 TTFT over the SLO"],
                   "results.slo_attainment": 1.0 if good else 0.5,
                   "results.client_kept_up": self.kept_up,
                   "results.requests": 10}
        return ProbeRun(results, seconds=0.5, payload=load)


def search(server: FakeServer, axis: Axis, start: float, repeats: int | None = 1,
           attainment: float = 0.99) -> Search:
    return asyncio.run(find_peak(axis, start, repeats, attainment, server.measure))


def test_a_concurrency_search_doubles_then_bisects_to_adjacent_loads() -> None:
    server = FakeServer([6])
    found = search(server, CONCURRENCIES, start=1)
    assert server.loads == [1, 2, 4, 8, 6, 7]
    assert found.peaks == [6.0] and not found.problems
    assert [p["concurrency"] for p in found.summaries] == [1, 2, 4, 8, 6, 7]
    assert [p["passed"] for p in found.summaries] == [True, True, True, False, True, False]
    # The record's probe is the highest that passed, and only it keeps its measurements.
    assert found.chosen is not None and found.chosen.load == 6
    assert found.chosen.measured is not None and found.chosen.measured.payload == 6
    results = found.results()
    assert results["results.peak_load"] == 6.0 and results["results.search_load"] == 6.0
    assert results["results.peak_load_unit"] == "requests"
    assert results["results.peak_load_ci95"] is None  # one search: no interval
    assert "results.qps_search_start" not in results


@pytest.mark.parametrize("peak", [0.37, 3.7, 37.3, 512.0])
def test_a_rate_search_finds_the_peak_within_the_tolerance(peak: float) -> None:
    server = FakeServer([peak])
    found = search(server, RATES, start=5.0)
    [low] = found.peaks
    high = min(load for load in server.loads if load > peak)
    assert low <= peak < high and high - low <= RATES.tolerance * low
    assert found.results()["results.qps_search_start"] == 5.0
    assert found.summaries[0]["qps"] == 5.0 and not found.problems
    assert len(server.loads) <= MAX_PROBES


def test_no_probe_beyond_the_maximum_and_a_peak_above_it_is_said() -> None:
    server = FakeServer([10_000])
    found = search(server, CONCURRENCIES, start=1)
    assert server.loads == [1, 2, 4, 8, 16, 32, 64]
    assert max(server.loads) <= CONCURRENCIES.maximum
    assert found.peaks == [64.0]
    assert found.problems == ["every probe met the SLOs, up to 64 requests in flight "
                              "(exp.auto_batch_max=64): the peak is higher"]
    rates = FakeServer([10_000.0])
    search(rates, RATES, start=300.0)
    assert rates.loads == [300.0, 600.0, 1000.0]


def test_when_no_load_passes_the_search_halves_to_the_least_and_says_so() -> None:
    server = FakeServer([0])
    found = search(server, CONCURRENCIES, start=8, repeats=None)
    assert server.loads == [8, 4, 2, 1]
    assert found.peaks == [] and found.results()["results.peak_load"] is None
    assert found.problems == ["no probe met the SLOs, down to 1 request in flight"]
    # The record shows the lowest load probed; no other search follows.
    assert found.chosen is not None and found.chosen.load == 1
    assert len(found.summaries) == 4


def test_a_search_that_runs_out_of_probes_says_where_the_peak_was() -> None:
    bracket = Bracket(RATES, start=1.0, max_probes=3)
    loads = []
    while (load := bracket.next_load()) is not None:
        loads.append(load)
        bracket.add(load, load <= 1.5)
    assert loads == [1.0, 2.0, 1.5]
    assert bracket.problem == ("the search stopped at 3 probes with the peak between "
                               "1.5 requests/s and 2 requests/s")


def test_repeats_give_the_mean_peak_and_student_s_interval() -> None:
    server = FakeServer([6, 7, 6])
    found = search(server, CONCURRENCIES, start=1, repeats=3)
    assert found.peaks == [6.0, 7.0, 6.0]
    assert server.repeats == [0] * 6 + [1] * 6 + [2] * 6
    results = found.results()
    assert results["results.peak_load"] == pytest.approx(19 / 3)
    sd = math.sqrt(((6 - 19 / 3) ** 2 * 2 + (7 - 19 / 3) ** 2) / 2)
    assert results["results.peak_load_ci95"] == pytest.approx(
        t_quantile_975(2) * sd / math.sqrt(3))
    assert results["results.peak_load_repeats"] == [6.0, 7.0, 6.0]
    assert [p["repeat"] for p in found.summaries][-1] == 2
    # The record's figures: the last search's highest passing probe.
    assert found.chosen is not None and (found.chosen.repeat, found.chosen.load) == (2, 6)


def test_auto_repeats_stop_by_themselves() -> None:
    # Peaks that agree: the fewest searches.
    steady = search(FakeServer([6]), CONCURRENCIES, start=1, repeats=None)
    assert len(steady.peaks) == AUTO_MIN_REPEATS
    assert steady.results()["results.peak_load_ci95"] == 0
    # Peaks far apart: the most, the interval still wide.
    noisy = search(FakeServer([4, 16, 4, 16, 4, 16, 4]), CONCURRENCIES, start=1, repeats=None)
    assert len(noisy.peaks) == AUTO_MAX_REPEATS
    # Rates: three searches leave the interval wider than 2 % of the mean, a fourth
    # brings it within.
    rates = search(FakeServer([10.0, 10.25, 10.0]), RATES, start=10.0, repeats=None)
    assert rates.peaks == [10.0, 10.15625, 10.0, 10.0]
    wide = Search(RATES, 10.0, peaks=rates.peaks[:3]).ci95
    assert wide is not None and wide > 0.02 * sum(rates.peaks[:3]) / 3
    assert rates.ci95 is not None and rates.ci95 <= 0.02 * sum(rates.peaks) / 4


def test_a_failure_where_the_client_fell_behind_is_said() -> None:
    found = search(FakeServer([6], kept_up=False), CONCURRENCIES, start=1)
    assert found.peaks == [6.0]
    assert found.problems == ["at 7 requests in flight the client fell behind its schedule "
                              "(results.client_kept_up false): the peak found may be the "
                              "client's, not the server's"]


@pytest.mark.parametrize(("results", "reasons"), [
    ({"results.valid_reasons": [], "results.slo_attainment": 0.99}, []),
    ({"results.valid_reasons": [], "results.slo_attainment": 0.985},
     ["98.5 % of the requests met every SLO, under endpoint.search_attainment=0.99"]),
    ({"results.valid_reasons": ["1 of 100 requests failed (http 1)"],
      "results.slo_attainment": 0.99}, ["1 of 100 requests failed (http 1)"]),
])
def test_a_probe_passes_when_valid_and_enough_requests_meet_the_slos(
        results: dict[str, Any], reasons: list[str]) -> None:
    assert probe_reasons(results, 0.99) == reasons


def test_the_rate_starts_at_one_stream_s_pace_and_goes_no_lower_than_a_sixteenth() -> None:
    plan = calibration_plan(LoadPlan(mode="open", rate=3.0, seed=7, turns=2))
    assert (plan.mode, plan.concurrency, plan.warmup_requests, plan.turns) == ("closed", 1, 1, 2)
    one_stream = {"results.latency_mean": 50.0, "results.slo_attainment": 0.8}
    axis, start = rate_search(RATES, one_stream)
    assert (start, axis.minimum) == (20.0, 1.25)
    assert rate_search(RATES, one_stream, turns=2)[1] == 10.0
    # No rate is searched where one request at a time already misses the SLOs.
    with pytest.raises(ValueError, match="no request succeeded"):
        rate_search(RATES, {"results.latency_mean": None, "results.valid_reasons": []})
    with pytest.raises(ValueError, match="one request at a time, 40 % of the requests met "
                                         "the SLOs, so no rate meets them"):
        rate_search(RATES, {"results.latency_mean": 50.0, "results.slo_attainment": 0.4})
    # Halving stops at the floor.
    server = FakeServer([0.0])
    found = search(server, axis, start=start)
    assert server.loads == [20.0, 10.0, 5.0, 2.5, 1.25]
    assert found.problems == ["no probe met the SLOs, down to 1.25 requests/s"]


def test_each_probe_s_prompts_are_new_to_the_server() -> None:
    source = PromptSource(prompt_tokens=6, output_tokens=4, seed=3)
    prompts = ContinuedPrompts(source)
    first = [prompts.prompt(i) for i in range(3)]
    prompts.first += 3
    second = [prompts.prompt(i) for i in range(3)]
    assert second == [source.prompt(i) for i in range(3, 6)]
    assert {p.text for p in first}.isdisjoint(p.text for p in second)
    assert prompts.conversation(0, 2).session == 3


def test_the_axis_of_an_experiment() -> None:
    base = {"exp.qps_search_tolerance": 0.05, "exp.auto_batch_max": 128}
    assert axis_of({**base, RATE: 2.0, CONCURRENCY: 4}) is None
    rate = axis_of({**base, RATE: "auto", CONCURRENCY: 4})
    assert rate is not None and (rate.param, rate.integer, rate.tolerance) == (RATE, False, 0.05)
    concurrency = axis_of({**base, RATE: 0.0, CONCURRENCY: "auto"})
    assert concurrency is not None and (concurrency.integer, concurrency.maximum) == (True, 128)
    assert CONCURRENCIES.resolution(6.0) == 1.0 and RATES.resolution(50.0) == 1.0


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(search_module).failed == 0


# ----------------------------------------------------------------------- the plan

ENDPOINT = ["exp.framework=endpoint", "endpoint.url=http://127.0.0.1:9/v1",
            "endpoint.model=m", "exp.phase=generate"]


def planned(params: Sequence[str]) -> dict[str, Any]:
    return plan_experiments(load_spec(params=[*ENDPOINT, *params]))[0]


def refusal(params: Sequence[str]) -> str:
    with pytest.raises(ConfigError) as error:
        planned(params)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_the_plan_takes_both_searches_with_an_slo() -> None:
    pytest.importorskip("aiohttp", reason="the endpoint extra is not installed")
    rate = planned(["exp.scenario=server", "exp.target_qps=auto", "endpoint.slo_ttft_ms=100"])
    assert rate["exp.target_qps"] == "auto" and rate["endpoint.search_repeats"] == "auto"
    closed = planned(["exp.replica_batch=auto", "endpoint.slo_tpot_ms=20",
                      "endpoint.search_repeats=2"])
    assert closed["exp.replica_batch"] == "auto" and closed["endpoint.search_repeats"] == 2


@pytest.mark.parametrize(("params", "message"), [
    (["exp.scenario=server", "exp.target_qps=auto"],
     "exp.target_qps='auto' (from -P flag) searches the highest load meeting the SLOs, and "
     "none is given: set endpoint.slo_ttft_ms, endpoint.slo_tpot_ms or "
     "endpoint.slo_latency_ms (ms, > 0)"),
    (["exp.replica_batch=auto"],
     "exp.replica_batch='auto' (from -P flag) searches the highest load meeting the SLOs, "
     "and none is given: set endpoint.slo_ttft_ms, endpoint.slo_tpot_ms or "
     "endpoint.slo_latency_ms (ms, > 0)"),
    (["exp.scenario=server", "exp.target_qps=4", "exp.replica_batch=auto",
      "endpoint.slo_ttft_ms=100"],
     "exp.replica_batch='auto' (from -P flag) searches the highest concurrency of a closed "
     "loop meeting the SLOs: set exp.scenario=batch (exp.scenario='server' (from -P flag)), "
     "or give a number"),
    (["exp.scenario=server", "exp.target_qps=auto", "endpoint.slo_ttft_ms=100",
      "endpoint.search_attainment=1.5"],
     "endpoint.search_attainment=1.5 (from -P flag) must be between 0.01 and 1"),
])
def test_the_plan_refuses_a_search_it_cannot_run(params: list[str], message: str) -> None:
    pytest.importorskip("aiohttp", reason="the endpoint extra is not installed")
    assert refusal(params) == message


def test_a_trace_is_not_searched(tmp_path: Any) -> None:
    pytest.importorskip("aiohttp", reason="the endpoint extra is not installed")
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 4, "output_length": 4}\n')
    message = refusal(["exp.scenario=server", "exp.target_qps=auto",
                       "endpoint.slo_ttft_ms=100", f"endpoint.trace={trace}"])
    assert message.startswith("exp.target_qps='auto' (from -P flag): a replayed trace brings "
                              "its own arrivals and is not searched")
