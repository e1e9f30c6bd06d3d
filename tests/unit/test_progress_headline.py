"""The progress line of a finished experiment sums it up by what its record has: a
throughput, or for a run to a target accuracy the time to target or the accuracy
reached, or ``-``; a record without a throughput never stops the sweep."""

from __future__ import annotations

from typing import Any

import pytest

from dlbench.launch.progress_bar import Progress, headline
from dlbench.launch.sweep import Outcome

REACHED = {
    "exp.status": "ok", "exp.phase": "train_to_accuracy", "exp.target_accuracy": 0.9,
    "results.accuracy_curve": [0.666, 0.897, 0.933], "results.accuracy_final": 0.933,
    "results.accuracy_reached": True, "results.time_to_target": 3.4125,
    "results.epochs_to_target": 3, "results.time": 29.7,
}
NOT_REACHED = {
    **REACHED, "results.accuracy_curve": [0.4, 0.62], "results.accuracy_final": 0.62,
    "results.accuracy_reached": False, "results.time_to_target": None,
    "results.epochs_to_target": None,
}


@pytest.mark.parametrize(("record", "expected"), [
    ({"results.throughput": 9.923, "results.throughput_unit": "images/s"},
     "9.92 images/s"),
    ({"results.throughput": 12}, "12.00 samples/s"),
    (REACHED, "time to target 3.41 s (accuracy 0.933 after 3 epochs)"),
    (NOT_REACHED, "target 0.9 not reached: accuracy 0.62 after 2 epochs"),
    ({**NOT_REACHED, "results.accuracy_curve": [0.5], "results.accuracy_final": 0.5,
      "exp.target_accuracy": None},
     "target not reached: accuracy 0.5 after 1 epoch"),
    ({"results.accuracy_final": 0.5}, "target not reached: accuracy 0.5"),
    ({}, "-"),
    ({"results.throughput": None, "results.time": 3.0}, "-"),
    ({"results.throughput": True}, "-"),  # a bool is not a measurement
])
def test_headline(record: dict[str, Any], expected: str) -> None:
    assert headline(record) == expected


def test_done_prints_records_without_a_throughput_fresh_and_kept() -> None:
    lines: list[str] = []
    progress = Progress(3, lines.append, ["exp.phase"])
    progress.done(Outcome(dict(REACHED), ran=True, seconds=2.0))
    progress.done(Outcome({"exp.status": "ok", "exp.phase": "training"}, ran=False))
    progress.done(Outcome({**NOT_REACHED, "results.stable": False,
                           "results.unstable_reasons": ["cv 9.0% > 5%"]}, ran=False))
    assert lines == [
        "[######..............] 1/3 ok          exp.phase=train_to_accuracy: time to target "
        "3.41 s (accuracy 0.933 after 3 epochs) (2.0 s) ETA 0:00:04",
        "[#############.......] 2/3 ok (kept)   exp.phase=training: - (earlier run) "
        "ETA 0:00:02",
        "[####################] 3/3 ok (kept)   exp.phase=train_to_accuracy: target 0.9 not "
        "reached: accuracy 0.62 after 2 epochs (unstable: cv 9.0% > 5%) (earlier run) done",
    ]
