"""The worker on the fake workload: known answers through the real timing loop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.worker import plan_one, run_in_process


def _experiment(tmp_path: Path, *params: str) -> dict[str, Any]:
    return plan_one(tmp_path, "exp.framework=fake", *params)


def _run(experiment: dict[str, Any]) -> dict[str, Any]:
    return run_in_process(experiment)


def test_fake_step_of_20_ms_measures_20_ms(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "fake.step_ms=20", "exp.num_batches=15",
                      "exp.num_warmup_batches=1", "exp.replica_batch=4")
    record = _run(exp)
    assert record["exp.status"] == "ok"
    # The known answer is the typical batch: the median, and the minimum, since
    # a step never ends early. The mean also carries whatever preemption a busy
    # host adds (one 40 ms stall moves a 15-batch mean by 2.7 ms), so it is only
    # bounded from below and loosely from above.
    assert record["results.time_p50"] == pytest.approx(20.0, rel=0.02)
    assert 20.0 <= record["results.time_min"] < 20.0 * 1.02
    assert 20.0 <= record["results.time"] < 20.0 * 1.5
    assert len(record["results.time_data"]) == 15
    assert record["results.throughput"] == pytest.approx(4 * 1000 / record["results.time"])
    # the other mean: of each batch's own throughput, from the same batch times
    per_batch = [4 * 1000 / t for t in record["results.time_data"]]
    assert record["results.throughput_batch_mean"] == pytest.approx(sum(per_batch) / 15)
    assert record["results.throughput_batch_mean"] >= record["results.throughput"]
    assert record["results.num_batches"] == 15
    assert record["results.timing_method"] == "host"  # a CPU workload: the host's clock


def test_log_has_parameters_first_then_results(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "fake.step_ms=1", "exp.num_batches=2")
    _run(exp)
    keys = [ln.split("__=")[0] for ln in Path(exp["exp.log_file"]).read_text().splitlines()
            if ln.startswith("__")]
    assert keys[0] == "__exp.framework" or keys[0].startswith("__exp.")
    assert keys.index("__results.time") > keys.index("__exp.model")
    assert keys[-1] == "__exp.status_msg"


def test_warmup_is_excluded(tmp_path: Path) -> None:
    # The first step takes 200 ms extra; with 2 warm-up batches the timed ones
    # see at most 200 * 0.5**2 = 50 ms extra on the first timed batch only.
    exp = _experiment(tmp_path, "fake.step_ms=5", "fake.warmup_ms=200",
                      "exp.num_warmup_batches=4", "exp.num_batches=5")
    record = _run(exp)
    assert max(record["results.time_data"]) < 5 + 200 * 0.5**4 + 3


def test_nan_loss_names_the_batch(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "fake.step_ms=1", "fake.failure=nan", "fake.failure_batch=4")
    record = _run(exp)
    assert record["exp.status"] == "failure"
    assert record["exp.status_msg"] == "loss is NaN at batch 4"


def test_exception_is_the_experiments_failure(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "fake.step_ms=1", "fake.failure=exception",
                      "fake.failure_batch=2")
    record = _run(exp)
    assert record["exp.status"] == "failure"
    assert "RuntimeError: fake failure at batch 2" in record["exp.status_msg"]


# In a fresh interpreter, as in a worker: a test process that has loaded other
# frameworks may keep freed memory in its allocator's arenas, which says nothing about
# the fake workload.
_RSS_SCRIPT = """
import json, sys
from pathlib import Path
from dlbench.backends.fake import FakeBackend

def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

backend = FakeBackend(json.loads(sys.argv[1]))
before = rss()
backend.setup()
held = rss() - before
backend.teardown()
print(json.dumps([held, rss() - before]))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_fake_memory_is_resident_until_teardown(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "fake.memory_mb=64")
    proc = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, json.dumps(exp)],
                          capture_output=True, text=True, timeout=120, check=True)
    held, after = json.loads(proc.stdout)
    assert held >= 60
    assert after < 10
