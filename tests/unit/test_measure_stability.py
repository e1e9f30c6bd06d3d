"""The stability verdict's rules on hand-made records."""

from __future__ import annotations

from typing import Any

from dlbench.measure.stability import repeat_verdict, verdict, warmup_visible

PARAMS = {"exp.cv_threshold": 0.05, "exp.num_batches": 20, "exp.target_ci": 0.01,
          "exp.device_type": "cpu"}


def _results(**values: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"results.time_cv": 0.01, "results.num_batches": 20,
                            "results.ci95_rel": 0.005, "results.time_data": [10.0] * 20}
    base.update({k.replace("__", "."): v for k, v in values.items()})
    return base


def test_a_clean_result_is_stable() -> None:
    assert verdict(PARAMS, _results()) == {"results.stable": True,
                                           "results.unstable_reasons": []}


def test_cv_above_threshold() -> None:
    assert verdict(PARAMS, _results(results__time_cv=0.123))["results.unstable_reasons"] == [
        "cv 12.3% > 5%"]


def test_target_ci_not_reached_only_counts_in_auto_mode() -> None:
    results = _results(results__ci95_rel=0.018)
    assert verdict(PARAMS, results)["results.stable"]
    auto = {**PARAMS, "exp.num_batches": "auto"}
    assert verdict(auto, results)["results.unstable_reasons"] == ["ci ±1.8% > ±1% target"]


def test_too_few_batches() -> None:
    results = _results(results__num_batches=3, results__time_data=[10.0] * 3)
    assert verdict(PARAMS, results)["results.unstable_reasons"] == [
        "only 3 timed batches (< 5)"]


def test_warmup_visible_rule_by_hand() -> None:
    # 20 batches: head = first max(3, 20 // 10) = 3. Head [30, 20, 15] has median 20;
    # the rest are 10 except one 12, so p95 of the rest is at most 12 < 20: visible.
    times = [30.0, 20.0, 15.0, *([10.0] * 16), 12.0]
    assert warmup_visible(times) == (
        "warm-up visible: first 3 batches median 20.00 ms vs 10.00 ms for the rest")
    # One slow batch at the start is an outlier, not warm-up: the head median is 10.
    assert warmup_visible([30.0, *([10.0] * 19)]) is None
    # A head within 2% of the rest is not warm-up even above the rest's p95.
    assert warmup_visible([10.1, 10.1, 10.1, *([10.0] * 17)]) is None
    assert warmup_visible([30.0] * 5) is None  # too few to tell


def test_auto_warmup_that_never_settled() -> None:
    results = _results(results__warmup_settled=False, results__num_warmup_batches=50)
    assert verdict(PARAMS, results)["results.unstable_reasons"] == [
        "warm-up did not settle in 50 batches"]


def test_cpu_contention_needs_others_and_a_busy_machine() -> None:
    # 2 CPUs; others use 1.5 cores and the worker 0.4: 1.9 >= 0.9 * 2 -> contention.
    busy = _results(results__use__other_cpu_percent_mean=150.0,
                    results__use__cpu_percent_mean=40.0, results__use__cpus_available=2)
    assert verdict(PARAMS, busy)["results.unstable_reasons"] == [
        "cpu contention: other processes used 1.50 of the worker's 2 CPUs (worker 0.40)"]
    # Others use 1.5 of 16 CPUs: plenty left, no contention.
    roomy = {**busy, "results.use.cpus_available": 16}
    assert verdict(PARAMS, roomy)["results.stable"]
    # The worker saturates the CPUs alone; others are a trickle (0.2 core).
    alone = {**busy, "results.use.other_cpu_percent_mean": 20.0,
             "results.use.cpu_percent_mean": 195.0}
    assert verdict(PARAMS, alone)["results.stable"]


def test_gpu_reasons_only_for_gpu_experiments_on_gpus_used() -> None:
    results = _results(**{
        "results__use__gpu0_used": True,
        "results__use__gpu0_other_processes_mean": 1.0,
        "results__use__gpu0_other_processes_max": 1,
        "results__use__gpu0_throttle_reasons": {"gpu_idle": 0.5, "sw_power_cap": 0.4,
                                                "hw_slowdown": 0.05},
        "results__use__gpu1_used": False,
        "results__use__gpu1_other_processes_mean": 3.0,
    })
    gpu = {**PARAMS, "exp.device_type": "gpu"}
    assert verdict(gpu, results)["results.unstable_reasons"] == [
        "gpu 0: 1 other process(es) on the GPU",
        "gpu 0 clocks throttled: sw_power_cap 40.0% of samples",
    ]
    assert verdict(PARAMS, results)["results.stable"]  # a CPU experiment


def test_repeat_verdict_prefixes_processes_and_checks_the_spread() -> None:
    processes = [
        {"results.unstable_reasons": []},
        {"results.unstable_reasons": ["cv 9.0% > 5%"]},
    ]
    result = repeat_verdict(PARAMS, processes, repeat_cv=0.08)
    assert result == {"results.stable": False, "results.unstable_reasons": [
        "process 2: cv 9.0% > 5%", "between-process cv 8.0% > 5%"]}
    assert repeat_verdict(PARAMS, processes[:1], repeat_cv=0.01)["results.stable"]
