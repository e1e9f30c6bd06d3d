"""Hardening corpus: limits the plan enforces and the records that follow from them.

- exp.replica_batch=auto never probes or records a batch the plan would refuse, and
  the batch it found is in every alias of every record, the combined record of repeats
  and copies included (or, when the processes found different batches, each one's,
  with the result marked unstable);
- ``dlbench run`` refuses an experiment that asks for a GPU where no CUDA device is
  visible, before any worker starts;
- a read that fails prints one line, its error, with what reading found in it;
- durations declare their largest value.

Each refusal goes through ``dlbench.cli.main.main`` in this process and is exactly one
line on stderr with exit status 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.config import devices, load_spec, plan_experiments
from dlbench.config.params import MAX_REPLICA_BATCH
from dlbench.config.registry import found_batch_parameters
from dlbench.errors import ConfigError
from dlbench.launch.copies.copies import copies_outcome
from dlbench.launch.records import combine_processes
from dlbench.measure.combine import COPIES, REPEATS, combine_results, found_batch_outcome
from dlbench.results.store import Store
from dlbench.worker import autobatch
from tests.io_helpers import one_error_line as _one_error_line

# ------------------------------------------------------------ declared bounds

#: (flag, the range the one-line refusal names). The bound itself is accepted.
BOUNDS = [
    ("exp.auto_batch_max=1000000000000", "exp.auto_batch_max=1000000000000 (from -P flag) "
                                         "must be between 1 and 1048576"),
    ("exp.auto_batch_max=1048577", "between 1 and 1048576"),
    ("exp.timeout=1e300", "exp.timeout=1e+300 (from -P flag) must be between 0 and 604800, "
                          "or 'auto'"),
    ("exp.timeout=604801", "between 0 and 604800, or 'auto'"),
    ("exp.timeout=-1", "between 0 and 604800, or 'auto'"),
    ("exp.collective_timeout=86401", "exp.collective_timeout=86401.0 (from -P flag) must be "
                                     "between 1 and 86400"),
    ("exp.collective_timeout=0.5", "between 1 and 86400"),
    ("monitor.frequency=1e9", "monitor.frequency=1000000000.0 (from -P flag) must be between "
                              "0 and 86400"),
    ("fake.step_ms=1e20", "between 0 and 86400000"),
    ("fake.jitter_ms=1e10", "between 0 and 86400000"),
]


@pytest.mark.parametrize(("flag", "says"), BOUNDS, ids=[f for f, _ in BOUNDS])
def test_a_value_past_its_declared_bound_is_one_line(
        flag: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "-P", "exp.framework=fake", "-P", flag]) == 2
    _one_error_line(capsys, says)


def test_the_bounds_themselves_are_accepted_and_shown_by_help() -> None:
    spec = load_spec(params=["exp.framework=fake", "exp.replica_batch=auto",
                             "exp.auto_batch_max=1048576", "exp.timeout=604800",
                             "exp.collective_timeout=86400", "monitor.frequency=86400"])
    [planned] = plan_experiments(spec)
    assert (planned["exp.auto_batch_max"], planned["exp.timeout"]) == (2**20, 604800.0)


def test_help_params_names_the_ranges(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "--params", "^exp[.](timeout|collective_timeout|auto_batch_max)$"]) == 0
    out = capsys.readouterr().out
    assert "accepted: between 0 and 604800, or auto" in out
    assert "accepted: between 1 and 86400" in out
    assert "accepted: between 1 and 1048576" in out


# ------------------------------------------------------------ exp.replica_batch=auto

def test_the_aliases_follow_the_plans_rule() -> None:
    # exp.effective_batch = exp.num_replicas x exp.replica_batch, as planned.
    assert found_batch_parameters({"exp.num_replicas": 4}, 40) == {
        "exp.replica_batch": 40, "exp.device_batch": 40, "exp.effective_batch": 160}
    spec = load_spec(params=["exp.framework=fake", "exp.replica_batch=40",
                             "exp.num_local_replicas=4"])
    [planned] = plan_experiments(spec)
    assert found_batch_parameters(planned, 40) == {
        name: planned[name] for name in
        ("exp.replica_batch", "exp.device_batch", "exp.effective_batch")}


def test_the_search_never_passes_the_largest_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    # An input file written by hand with a huge exp.auto_batch_max: every batch "fits",
    # and the search stops at the plan's bound after 21 doublings.
    probed: list[int] = []
    monkeypatch.setattr(autobatch, "probe_batch",
                        lambda params, batch, steps: probed.append(batch) or "")
    batch, probes = autobatch.find_largest_batch(
        {"exp.auto_batch_max": 10**12, "exp.auto_batch_steps": 1})
    assert batch == MAX_REPLICA_BATCH == max(probed) == 2**20
    assert probed == [2**k for k in range(21)] and len(probes) == 21


def _process(batch: int | None, time: float = 10.0) -> dict[str, Any]:
    record = {"exp.status": "ok", "exp.log_file": f"/r/{time}.log", "results.time": time,
              "results.time_data": [time] * 5, "results.throughput": 1000.0 / time,
              "results.stable": True, "results.unstable_reasons": []}
    return record if batch is None else {**record, "results.auto_batch": batch}


AUTO = {"exp.replica_batch": "auto", "exp.device_batch": "auto",
        "exp.effective_batch": "auto", "exp.num_replicas": 1, "exp.gpus": "",
        "exp.cv_threshold": 0.5}


@pytest.mark.parametrize("axis", [COPIES, REPEATS])
def test_processes_that_agree_keep_the_batch(axis: str) -> None:
    combined = combine_results([_process(40), _process(40), _process(40)], axis)
    assert combined["results.auto_batch"] == 40
    assert combined["results.auto_batches"] == [40, 40, 40]
    assert "results.auto_batch" not in combine_results([_process(None)] * 2, axis)
    assert "results.auto_batches" not in combine_results([_process(None)] * 2, axis)


@pytest.mark.parametrize("axis", [COPIES, REPEATS])
def test_processes_that_differ_keep_each_batch(axis: str) -> None:
    combined = combine_results([_process(40), _process(36)], axis)
    assert "results.auto_batch" not in combined
    assert combined["results.auto_batches"] == [40, 36]
    # One process without a batch: no list either (nothing is guessed).
    assert "results.auto_batches" not in combine_results([_process(40), _process(None)], axis)


def test_the_combined_repeats_say_the_batch_or_why_there_is_none() -> None:
    agreed = combine_processes(AUTO, [_process(40), _process(40)])
    assert [agreed[k] for k in ("exp.replica_batch", "exp.device_batch",
                                "exp.effective_batch", "results.auto_batch")] == [40] * 4
    assert agreed["results.stable"] is True
    differ = combine_processes(AUTO, [_process(40), _process(36)])
    assert differ["exp.replica_batch"] == "auto" and "results.auto_batch" not in differ
    assert differ["results.auto_batches"] == [40, 36]
    assert differ["results.stable"] is False
    assert differ["results.unstable_reasons"][-1] == (
        "the processes found different batches with exp.replica_batch=auto (40, 36)")
    assert differ["exp.status"] == "ok"


def test_the_combined_copies_say_the_batch_or_why_there_is_none() -> None:
    agreed = copies_outcome(AUTO, [_process(40), _process(40)], None, ["", ""], "affinity")
    assert [agreed[k] for k in ("exp.replica_batch", "exp.device_batch",
                                "exp.effective_batch")] == [40, 40, 40]
    differ = copies_outcome(AUTO, [_process(32), _process(40)], None, ["", ""], "affinity")
    assert differ["exp.effective_batch"] == "auto" and differ["results.stable"] is False
    assert differ["results.unstable_reasons"] == [
        "the processes found different batches with exp.replica_batch=auto (32, 40)"]


def test_an_experiment_with_a_batch_is_left_alone() -> None:
    assert found_batch_outcome({**AUTO, "exp.replica_batch": 16,
                                "results.auto_batch": 40}) == {}
    assert found_batch_outcome(AUTO) == {}  # no process found one: nothing to say


# 10 MiB of fake device, 0.25 MiB a sample: batch 40 fits, 41 does not.
FAKE_AUTO = ["-P", "exp.framework=fake", "-P", "exp.model=toy", "-P", "exp.replica_batch=auto",
             "-P", "fake.step_ms=0.1", "-P", "fake.sample_memory_mb=0.25",
             "-P", "fake.memory_cap_mb=10", "-P", "exp.num_batches=3",
             "-P", "exp.num_warmup_batches=0", "-P", "monitor.frequency=0"]


@pytest.mark.parametrize("processes", ["exp.repeat=2", "exp.parallel_jobs=2"])
def test_auto_batch_of_several_processes_end_to_end(
        processes: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", *FAKE_AUTO, "-P", processes, "--out", str(out)]) == 0, (
        capsys.readouterr().err)
    with Store.in_directory(out, create=False) as store:
        [record] = store.records()
    assert record["exp.status"] == "ok"
    assert [record[k] for k in ("exp.replica_batch", "exp.device_batch",
                                "exp.effective_batch", "results.auto_batch")] == [40] * 4
    assert record["results.auto_batches"] == [40, 40]


# ------------------------------------------------------------ a GPU where there is none

def _no_nvidia(monkeypatch: pytest.MonkeyPatch, visible: bool = False) -> None:
    monkeypatch.setattr(devices.glob, "glob",
                        lambda pattern: ["/dev/nvidia0"] if visible else [])


def test_run_refuses_a_gpu_where_none_is_visible(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _no_nvidia(monkeypatch)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    out = tmp_path / "run"
    assert main(["run", "-P", "exp.model=resnet18", "-P", "exp.gpus=0", "--out",
                 str(out)]) == 2
    _one_error_line(capsys, "exp.gpus='0' (from -P flag) asks for a GPU",
                    "framework pytorch sees no CUDA device", "no /dev/nvidia* device",
                    "exp.gpus=''")
    assert not out.exists()  # nothing ran, nothing was written


def test_hidden_gpus_are_none(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_nvidia(monkeypatch, visible=True)
    spec = load_spec(params=["exp.model=resnet18", "exp.gpus=0,1"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert [e["exp.gpus"] for e in plan_experiments(spec, runs_here=True)] == ["0,1"]
    for hidden in ("", "-1"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        with pytest.raises(ConfigError, match=f"CUDA_VISIBLE_DEVICES='{hidden}' hides every"):
            plan_experiments(spec, runs_here=True)


def test_what_is_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_nvidia(monkeypatch)
    # The CPU; the fake framework, which only pretends to use its GPUs; a plan for
    # another machine (dlbench plan, a Slurm job's nodes).
    for params in (["exp.model=resnet18"], ["exp.framework=fake", "exp.gpus=0,1"]):
        assert plan_experiments(load_spec(params=params), runs_here=True)
    assert plan_experiments(load_spec(params=["exp.model=resnet18", "exp.gpus=0"]))


# ------------------------------------------------------------ a failed read is one line

@pytest.fixture
def unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Inputs the log reader warns about, holding no record (or, ``run``, one that
    did not end), and one good store."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DLBENCH_HOME", str(tmp_path / "home"))
    Path("empty.log").write_bytes(b"")
    Path("binary.log").write_bytes(bytes(range(256)) * 8)
    Path("cut.log.gz").write_bytes(b"\x1f\x8b\x08\x00cut")  # a gzip header, then nothing
    Path("run/logs").mkdir(parents=True)
    Path("run/logs/a.log").write_text('__exp.id__="a"\n__results.ti')  # cut mid-line
    with Store.in_directory("good") as store:
        store.put({"exp.id": "g", "exp.status": "ok", "exp.model": "toy",
                   "results.time": 1.0, "results.throughput": 10.0})
    return tmp_path


#: (input, what its one line says). The record of ``run`` did not end: each command
#: but query (which shows it) refuses it its own way (no ok record, no exp.framework
#: for a history), with the read's warnings in the same line.
UNREADABLE = [
    ("empty.log", ("holds no records", "(empty.log: empty file; no record)")),
    ("binary.log", ("holds no records", "(binary.log:1: NUL bytes in the file: part of it "
                                        "may be lost; and 1 more warning)")),
    ("cut.log.gz", ("holds no records", "(cut.log.gz:1: cannot read further")),
    ("run", ("(run/logs/a.log:2: last line has no line end (cut while being written); "
             "dropped; and 1 more warning)",)),
]
COMMANDS = [
    ("report", lambda f: ["report", "--input", f]),
    ("query", lambda f: ["query", "--input", f]),
    ("query-json", lambda f: ["query", "--input", f, "--format", "json"]),
    ("compare", lambda f: ["compare", f, "good"]),
    ("plot", lambda f: ["plot", "--input", f, "--x", "exp.replica_batch",
                        "--output", "chart.png"]),
    ("history-import", lambda f: ["history", "import", f, "--store", "h.sqlite"]),
]


CASES = [(command, argv, source, says) for command, argv in COMMANDS
         for source, says in UNREADABLE if not (command.startswith("query") and source == "run")]


@pytest.mark.parametrize(("command", "argv", "source", "says"), CASES,
                         ids=[f"{c}-{s}" for c, _, s, _ in CASES])
def test_a_failed_read_is_one_line(
        unreadable: Path, capsys: pytest.CaptureFixture[str], command: str, argv: Any,
        source: str, says: tuple[str, ...]) -> None:
    assert main(argv(source)) == 2
    _one_error_line(capsys, *says)
    assert not Path("h.sqlite").exists() and not Path("chart.png").exists()


def test_warnings_of_a_read_that_goes_on_are_warnings(
        unreadable: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("some.log").write_text('__exp.id__="s"\n__exp.model__="toy"\n__exp.status__="ok"\n'
                                '__results.time__=2.0\n__results.thr')
    assert main(["query", "--input", "some.log", "--columns", "exp.id"]) == 0
    captured = capsys.readouterr()
    assert captured.out.split() == ["exp.id", "------", "s"]
    assert captured.err == ("dlbench: warning: some.log:5: last line has no line end (cut "
                            "while being written); dropped\n")
    # Nothing matches: the error, with the warning in its line.
    assert main(["query", "--input", "some.log", "--where", '{"exp.model": "x"}']) == 2
    _one_error_line(capsys, "matches none", "(some.log:5: last line has no line end")
