"""DLBS's failed-batch memo: a batch that ran out of memory rules out larger batches of
the same configuration, in this sweep and when it is resumed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.config import load_spec, plan_experiments
from dlbench.launch.local.launcher import LocalLauncher
from dlbench.launch.oom_memo import OutOfMemoryMemo, memory_key, skipped_record
from dlbench.launch.sweep import Sweep
from dlbench.results.store import Store

#: batches 4 and above of training run out of memory; inference always fits.
OOM_FROM_4 = ('{"condition": {"exp.replica_batch": [4, 8], "exp.phase": "training"}, '
              '"parameters": {"fake.failure": "oom"}}')


def _plan(out: Path, *params: str) -> list[dict[str, Any]]:
    spec = load_spec(
        params=["exp.framework=fake", "fake.step_ms=1", "exp.num_batches=2",
                "exp.num_warmup_batches=0", "monitor.enabled=false", f"exp.out_dir={out}",
                *params],
        variables=["exp.phase=[training, inference]", "exp.replica_batch=[2, 4, 8]"],
        extensions=[OOM_FROM_4])
    return plan_experiments(spec)


def _by_config(records: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    return {(r["exp.phase"], r["exp.replica_batch"]): str(r["exp.status"]) for r in records}


def _record(batch: int, status: str = "failure", kind: str | None = "oom",
            **params: Any) -> dict[str, Any]:
    record = {"exp.id": f"id{batch}", "exp.framework": "fake", "exp.model": "toy",
              "exp.phase": "training", "exp.dtype": "float32", "exp.gpus": "0",
              "exp.replica_batch": batch, "exp.effective_batch": batch, "exp.num_batches": 10,
              "exp.status": status, "sys.hostname": f"host{batch}", **params}
    if kind is not None:
        record["results.failure_kind"] = kind
    return record


def test_memo_blocks_larger_and_equal_batches_of_the_same_configuration() -> None:
    memo = OutOfMemoryMemo([_record(16)])
    assert memo.blocker(_record(8, "")) is None
    blocker = memo.blocker(_record(32, "", num_batches=99))
    assert blocker is not None and blocker["exp.replica_batch"] == 16
    assert memo.blocker({**_record(32, ""), "exp.id": "other16"}) is not None
    assert memo.blocker(_record(16, "")) is None  # itself: rerun under exp.rerun
    # Another phase, precision, device or option is another configuration.
    for change in ({"exp.phase": "inference"}, {"exp.dtype": "float16"}, {"exp.gpus": "1"},
                   {"exp.image_size": 112}, {"user.tag": "b"}):
        assert memo.blocker({**_record(32, ""), **change}) is None, change


def test_memo_keeps_the_smallest_failed_batch_and_forgets_one_that_now_fits() -> None:
    memo = OutOfMemoryMemo([_record(16), _record(8), _record(4, "failure", "exception")])
    found = memo.blocker(_record(64, ""))
    assert found is not None and found["exp.replica_batch"] == 8
    memo.note(_record(8, "ok", None))
    found = memo.blocker(_record(64, ""))
    assert found is not None and found["exp.replica_batch"] == 16
    memo.note(_record(16, "ok", None))
    assert memo.blocker(_record(64, "")) is None


def test_memory_key_ignores_batch_counts_and_results() -> None:
    assert memory_key(_record(2)) == memory_key(_record(4, "ok", None, **{
        "exp.num_batches": 500, "results.time": 3.0}))
    assert memory_key(_record(2)) != memory_key(_record(2, **{"exp.model": "resnet50"}))


def test_skipped_record_names_the_failed_batch() -> None:
    record = skipped_record(_record(32, ""), _record(16))
    assert record["exp.status"] == "skipped"
    assert "16" in record["exp.status_msg"] and "id16" in record["exp.status_msg"]
    assert "out of memory" in record["exp.status_msg"]


def test_sweep_skips_larger_batches_and_resume_keeps_skipping(tmp_path: Path) -> None:
    out = tmp_path / "out"
    lines: list[str] = []
    runner = Sweep(LocalLauncher(lines.append), report=lines.append)
    try:
        result = runner.run(_plan(out))
    finally:
        runner.close()
    records = [o.record for o in result.outcomes]
    assert _by_config(records) == {
        ("training", 2): "ok", ("training", 4): "failure", ("training", 8): "skipped",
        ("inference", 2): "ok", ("inference", 4): "ok", ("inference", 8): "ok"}
    failed = next(r for r in records if r["exp.status"] == "failure")
    assert failed["results.failure_kind"] == "oom"
    assert failed["exp.status_msg"].startswith("out of memory in the timed batches at batch 0")
    assert "MemoryError" in failed["exp.status_msg"] and "peak RSS" in failed["exp.status_msg"]
    skipped = next(r for r in records if r["exp.status"] == "skipped")
    assert str(failed["exp.id"]) in skipped["exp.status_msg"]
    assert any("skipped" in line and "(not run)" in line for line in lines)
    # The skipped experiment's log says so on its own.
    assert '__exp.status__="skipped"' in Path(skipped["exp.log_file"]).read_text()

    # Resumed: the batch that ran out of memory runs again (exp.rerun=onfail) and
    # fails again, and the larger one is skipped again, from what the store holds.
    lines.clear()
    runner = Sweep(LocalLauncher(lines.append), report=lines.append)
    try:
        again = runner.run(_plan(out))
    finally:
        runner.close()
    assert _by_config([o.record for o in again.outcomes]) == _by_config(records)
    assert sum("(kept)" in line for line in lines) == 4
    with Store.in_directory(out) as store:
        assert _by_config(store.records())[("training", 8)] == "skipped"

    # Once the batch fits (the same experiments, the failure no longer injected),
    # it runs again and so do the larger ones.
    runner = Sweep(LocalLauncher(lambda line: None), report=lambda line: None)
    try:
        fixed = runner.run([{**exp, "fake.failure": "none"} for exp in _plan(out)])
    finally:
        runner.close()
    assert set(_by_config([o.record for o in fixed.outcomes]).values()) == {"ok"}
