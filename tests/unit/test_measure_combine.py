"""Copies and repeats combine through one function, by each key's declared rule,
against answers worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from dlbench.launch.copies.copies import combine_copies
from dlbench.measure.combine import (
    _RECOMPUTED,
    COPIES,
    REPEATS,
    combine_repeats,
    combine_results,
    rule_of,
)
from dlbench.results.keys.table import AGGREGATES, RESULT_KEYS


def _process(time: float, times: list[float], **extra: Any) -> dict[str, Any]:
    return {"results.time": time, "results.time_data": times,
            "results.throughput": 8 * 1000.0 / time, "results.num_batches": len(times),
            "results.stop_reason": "fixed", "results.stable": True,
            "results.unstable_reasons": [], **extra}


def test_every_declared_rule_is_known() -> None:
    for key in RESULT_KEYS:
        assert key.aggregate in AGGREGATES, key.name
        assert key.repeats in ("", *AGGREGATES), key.name
    # The one key whose copies and repeats differ most: copies add up to the node's.
    assert rule_of("results.throughput", COPIES) == "sum"
    assert rule_of("results.throughput", REPEATS) == "recomputed"
    assert rule_of("user.note", COPIES) == "none"
    # Every key declared recomputed has its recipe, and no recipe is for another key.
    recomputed = {k.name for k in RESULT_KEYS if "recomputed" in (k.aggregate, k.repeats)}
    assert recomputed == set(_RECOMPUTED)


def test_copies_keep_the_monitor_energy_and_memory_by_their_rules() -> None:
    a = _process(10.0, [9.0, 11.0], **{
        "results.use.cpu_percent_mean": 90.0, "results.use.cpu_percent_max": 120.0,
        "results.use.energy_j": 30.0, "results.use.samples_per_joule": 2.0,
        "results.use.samples": 4, "results.use.gpu0_used": False,
        "results.memory.peak_bytes": 100, "results.use.cpu_percent": [1.0, 2.0]})
    b = _process(20.0, [20.0, 20.0], **{
        "results.use.cpu_percent_mean": 70.0, "results.use.cpu_percent_max": 150.0,
        "results.use.energy_j": 10.0, "results.use.samples_per_joule": 6.0,
        "results.use.samples": 5, "results.use.gpu0_used": True,
        "results.memory.peak_bytes": 300, "results.use.cpu_percent": [3.0]})
    out = combine_results([a, b], COPIES, devices=1, label="copy")
    assert out["results.use.cpu_percent_mean"] == 80.0  # mean of 90 and 70
    assert out["results.use.cpu_percent_max"] == 150.0  # max of maxima
    assert out["results.use.energy_j"] == 40.0  # 30 + 10
    # samples: 2 x 30 + 6 x 10 = 120 over 40 J = 3 per joule, not the mean 4
    assert out["results.use.samples_per_joule"] == pytest.approx(3.0)
    assert out["results.use.samples"] == 9 and isinstance(out["results.use.samples"], int)
    assert out["results.use.gpu0_used"] is True
    assert out["results.memory.peak_bytes"] == 300
    assert "results.use.cpu_percent" not in out  # a series: each copy's log keeps it
    assert out["results.throughput"] == pytest.approx(800.0 + 400.0)
    assert out["results.time"] == 15.0 and out["results.time_max"] == 20.0


def test_a_boolean_is_not_a_number() -> None:
    a = _process(10.0, [10.0], **{"results.tflops": True})
    b = _process(10.0, [10.0], **{"results.tflops": 1.0})
    assert "results.tflops" not in combine_results([a, b], COPIES, devices=1)


def test_a_key_some_copy_lacks_stays_in_the_copies_logs() -> None:
    a = _process(10.0, [10.0], **{"results.use.energy_j": 3.0})
    b = _process(10.0, [10.0])
    assert "results.use.energy_j" not in combine_results([a, b], COPIES, devices=1)


def test_unstable_reasons_are_labelled_and_stop_reasons_joined_once() -> None:
    a = _process(10.0, [10.0], **{"results.unstable_reasons": ["cv 9%"],
                                  "results.stable": False})
    b = _process(10.0, [10.0], **{"results.stop_reason": "ci_reached"})
    c = _process(10.0, [10.0])
    out = combine_results([a, b, c], COPIES, devices=1, label="copy")
    assert out["results.unstable_reasons"] == ["copy 1: cv 9%"]
    assert out["results.stable"] is False
    assert out["results.stop_reason"] == "fixed,ci_reached"


@pytest.mark.parametrize(("gpus", "mfu"), [("", 0.15), ("0,1", 0.075)])
def test_copies_mfu_is_their_share_of_the_devices_they_had(gpus: str, mfu: float) -> None:
    experiment = {"exp.id": "x", "exp.gpus": gpus, "exp.log_file": "x.log"}
    copies = [{**_process(10.0, [10.0], **{"results.mfu": 0.1, "results.tflops": 1.0}),
               "exp.log_file": "a.log"},
              {**_process(10.0, [10.0], **{"results.mfu": 0.05, "results.tflops": 0.5}),
               "exp.log_file": "b.log"}]
    record = combine_copies(experiment, copies, "rlimit")
    # Two copies on two GPUs: (0.1 + 0.05) / 2; sharing the one CPU: 0.1 + 0.05.
    assert record["results.mfu"] == pytest.approx(mfu)
    assert record["results.tflops"] == pytest.approx(1.5)


def test_repeats_recompute_the_throughput_from_the_combined_time() -> None:
    first = _process(10.0, [10.0, 10.0], **{"results.tflops": 2.0, "results.mfu": 0.2})
    second = _process(30.0, [30.0, 30.0], **{"results.tflops": 2.0 / 3, "results.mfu": 0.2 / 3})
    out = combine_repeats([first, second])
    # Mean time 20 ms: 8 x 1000 / 20 = 400/s (not the sum 1066.7, nor the mean 533.3);
    # TFLOP/s and MFU scale the same way: 2 x 10 / 20 = 1, 0.2 x 10 / 20 = 0.1.
    assert out["results.time"] == 20.0
    assert out["results.throughput"] == pytest.approx(400.0)
    assert out["results.tflops"] == pytest.approx(1.0)
    assert out["results.mfu"] == pytest.approx(0.1)
    assert out["results.num_batches"] == 4
    assert out["results.repeat_times"] == [10.0, 30.0]


def test_the_mean_over_batches_stays_one_over_every_batch() -> None:
    # Batch 8: process 1 at 10 and 20 ms (800 and 400/s: mean 600), process 2 at 40 ms
    # (200/s). Over the three batches (800 + 400 + 200) / 3 = 466.67, not (600 + 200) / 2;
    # copies, running at once, add theirs up: 600 + 200.
    first = _process(15.0, [10.0, 20.0], **{"results.throughput_batch_mean": 600.0})
    second = _process(40.0, [40.0], **{"results.throughput_batch_mean": 200.0})
    repeats = combine_results([first, second], REPEATS)
    assert repeats["results.throughput_batch_mean"] == pytest.approx(1400 / 3)
    copies = combine_results([first, second], COPIES, devices=1)
    assert copies["results.throughput_batch_mean"] == pytest.approx(800.0)
