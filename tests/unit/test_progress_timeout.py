"""exp.timeout=auto: the rule, its bound for Slurm, and the progress values it reads
(what the worker writes: totals, elapsed time, samples and unit)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from dlbench.config.spec import load_spec
from dlbench.config.validate import plan_experiments
from dlbench.launch.deadline import Deadline, timeout_bound
from dlbench.launch.launchers import Finish, LaunchContext, Launcher
from dlbench.launch.local.launcher import LocalLauncher
from dlbench.launch.order import INTERLEAVED
from dlbench.launch.progress_bar import Reporter
from dlbench.launch.slurm.options import default_time_minutes
from dlbench.launch.sweep import Sweep
from dlbench.measure.timing import run_batches
from dlbench.results.log.file import LogWriter
from dlbench.results.log.progress_keys import phase_text, rate
from dlbench.worker.heartbeat import ProgressWriter


def _plan(*params: str) -> dict[str, Any]:
    [experiment] = plan_experiments(load_spec(params=["exp.framework=fake", *params]))
    return experiment


def test_timeout_is_auto_by_default_and_a_number_stays_fixed() -> None:
    assert _plan()["exp.timeout"] == "auto"
    fixed = Deadline(_plan("exp.timeout=5"), started=100.0)
    fixed.note({"phase": "timed", "done": 10, "elapsed": 1.0}, now=101.0)
    assert fixed.at == 105.0 and not fixed.expired(104.9) and fixed.expired(105.0)
    assert Deadline(_plan("exp.timeout=0"), started=100.0).at is None  # no limit


def test_auto_timeout_follows_the_measured_pace() -> None:
    deadline = Deadline(_plan("exp.num_warmup_batches=3", "exp.num_batches=20"), started=0.0)
    assert deadline.at == 600.0  # set-up 300 s + first batch 300 s
    deadline.note({"phase": "setup", "elapsed": 0.0}, now=1.0)
    assert deadline.at == 600.0
    deadline.note({"phase": "warmup", "done": 0, "elapsed": 0.0}, now=400.0)
    assert deadline.at == 700.0  # a late set-up still gets 300 s for the first batch
    # 2 warm-up batches in 4 s: 2 s a batch, 1 + 20 batches left: 2 x 42 s + 120 s.
    deadline.note({"phase": "warmup", "done": 2, "elapsed": 4.0}, now=404.0)
    assert deadline.pace == 2.0 and deadline.at == pytest.approx(404.0 + 84.0 + 120.0)
    # Timed batches run faster (1 s each): 5 done, 15 left.
    deadline.note({"phase": "timed", "done": 5, "elapsed": 5.0}, now=410.0)
    assert deadline.at == pytest.approx(410.0 + 30.0 + 120.0)
    deadline.note({"phase": "finish", "elapsed": 0.0}, now=430.0)
    assert deadline.at == 730.0 and deadline.silence_limit() == 60.0


def test_auto_timeout_of_auto_batches_counts_max_duration() -> None:
    experiment = _plan("exp.num_batches=auto", "exp.max_duration=60")
    deadline = Deadline(experiment, started=0.0)
    deadline.note({"phase": "timed", "done": 10, "elapsed": 20.0}, now=30.0)
    # 40 s of the 60 left, plus one 2 s batch past it.
    assert deadline.at == pytest.approx(30.0 + 2 * 42.0 + 120.0)
    deadline.note({"phase": "timed", "done": 30, "elapsed": 90.0}, now=100.0)  # past it
    assert deadline.at == pytest.approx(100.0 + 2 * 3.0 + 120.0)


def test_slow_batches_stretch_the_silence_limit() -> None:
    deadline = Deadline(_plan(), started=0.0)
    deadline.note({"phase": "warmup", "done": 1, "elapsed": 100.0}, now=100.0)
    assert deadline.silence_limit() == 300.0


def test_bound_known_before_the_run_and_slurm_time_limit() -> None:
    default = _plan("exp.num_warmup_batches=3", "exp.num_batches=20")
    assert timeout_bound(default) == 2100.0  # 600 + 2 x 23 x 30 + 120
    auto = _plan("exp.num_warmup_batches=auto", "exp.max_warmup_batches=10",
                 "exp.num_batches=auto", "exp.max_duration=60")
    assert timeout_bound(auto) == 600 + 2 * (10 * 30 + 60 + 30) + 120
    assert timeout_bound(_plan("exp.timeout=60")) == 60.0
    assert default_time_minutes([default]) == math.ceil((2100 + 300) / 60)
    repeated = _plan("exp.num_warmup_batches=3", "exp.num_batches=20", "exp.repeat=2")
    assert default_time_minutes([default, repeated]) == math.ceil((4200 + 300) / 60)


def test_a_launcher_that_runs_workers_elsewhere_gets_the_bound_up_front() -> None:
    class Elsewhere(Launcher):  # as the Slurm launcher: it does not watch the workers
        @classmethod
        def create(cls, options: Mapping[str, Any], report: Reporter) -> Elsewhere:
            return cls()

        def launch(self, batch: Sequence[tuple[int, Mapping[str, Any]]],
                   finish: Finish, context: LaunchContext) -> bool:
            return False

    experiment = _plan("exp.num_warmup_batches=3", "exp.num_batches=20")
    assert Sweep(LocalLauncher())._timed(experiment) is experiment
    assert Sweep(Elsewhere())._timed(experiment)["exp.timeout"] == 2100.0
    fixed = _plan("exp.timeout=7")
    assert Sweep(Elsewhere())._timed(fixed) is fixed
    # Only a launcher that runs each process here can be told which runs next.
    with pytest.raises(ValueError, match="Elsewhere cannot run a sweep in the interleaved"):
        Sweep(Elsewhere(), INTERLEAVED)


def test_phase_text_and_rate_of_progress_values() -> None:
    assert phase_text({"phase": "warmup", "done": 2, "total": 5}) == "warm-up 2/5"
    assert phase_text({"phase": "warmup", "done": 2, "max": 50}) == "warm-up 2 (at most 50)"
    assert phase_text({"phase": "timed", "done": 4, "max_seconds": 60.0}) == (
        "timed 4 (at most 60 s)")
    assert phase_text({"phase": "setup", "elapsed": 1.0}) == "set-up"
    assert phase_text({"phase": "finish"}) == "finishing"
    assert phase_text({"phase": "timed", "done": "x"}) == "timed"
    assert phase_text({"phase": "nowhere"}) == phase_text([1]) == ""
    value = {"phase": "timed", "done": 40, "samples": 1280.0, "elapsed": 10.0,
             "unit": "images/s"}
    assert rate(value) == (128.0, "images/s")
    assert rate({**value, "samples": 0.0}) is None and rate({**value, "unit": 3}) is None
    assert rate({**value, "phase": "warmup"}) is None


def test_worker_writes_totals_elapsed_and_samples(tmp_path: Path) -> None:
    """The progress writer is told what the phases run (the experiment's params and
    backend, and the first timed batch by the loop's mark), as the worker runs it."""

    class Backend:
        def throughput_unit(self) -> tuple[str, float]:
            return "tokens/s", 8.0

    def run(writer: ProgressWriter) -> None:
        def mark(name: str, batch: int) -> None:
            if name == "timed_start":
                writer.enter("timed", first=batch)

        writer.enter("warmup")
        writer.start()
        try:
            run_batches(lambda index: time.sleep(0.02), lambda: None, 2, 6, mark=mark,
                        position=writer.position)
        finally:
            writer.stop()

    path = tmp_path / "x.log"
    params = {"exp.num_warmup_batches": 2, "exp.num_batches": 6, "exp.effective_batch": 4}
    with LogWriter(path) as log:
        writer = ProgressWriter(log, interval=0.03)
        writer.describe(params, Backend())
        run(writer)
    values = [json.loads(line.split("=", 1)[1]) for line in path.read_text().splitlines()]
    assert values[0] == {"phase": "warmup", "elapsed": 0.0, "done": 0, "total": 2}
    timed = [v for v in values if v["phase"] == "timed"]
    assert timed[0] == {"phase": "timed", "elapsed": 0.0, "done": 0, "total": 6,
                        "samples": 0.0, "unit": "tokens/s"}
    later = timed[-1]
    assert later["batch"] == later["done"] + 2 and 0 < later["done"] < 6
    assert later["samples"] == later["done"] * 4 * 8.0 and later["elapsed"] > 0
