"""``dlbench run -P exp.parallel_jobs=2`` end to end with a real PyTorch model."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlbench.results.store import Store
from tests.conftest import CliRunner


@pytest.mark.slow
def test_two_pytorch_copies_each_on_a_core_report_their_own_and_the_sum(
    dlbench: CliRunner, tmp_path: Path, two_cores: None
) -> None:
    proc = dlbench("run", "-P", "exp.framework=pytorch", "-P", "exp.model=toy",
                   "-P", "exp.replica_batch=8", "-P", "exp.num_warmup_batches=2",
                   "-P", "exp.num_batches=10", "-P", "exp.parallel_jobs=2",
                   "-P", "monitor.enabled=false", "--out", "out")
    assert proc.returncode == 0, proc.stderr
    with Store.in_directory(tmp_path / "out", create=False) as store:
        (record,) = store.records()
    own = record["results.copy_throughput"]
    assert len(own) == 2 and all(t > 0 for t in own)
    assert record["results.throughput"] == pytest.approx(sum(own))
    # What the table prints is the node's throughput: the sum.
    assert f"{record['results.throughput']:.2f}" in proc.stdout
    assert len(set(record["results.copy_cpu_affinity"])) == 2
    for number, log in enumerate(record["results.copy_log_files"], start=1):
        text = Path(log).read_text()
        assert f"__exp.copy__={number}" in text
        assert "__pytorch.num_threads__=1" in text  # one core: one thread
