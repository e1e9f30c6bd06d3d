"""Output that says what is true: numbers at their precision, simulated models marked,
contention figures that are possible, errors that name the duplicated value, and the
scorecard's gate."""

from __future__ import annotations

from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.config.spec import load_spec
from dlbench.errors import SpecError
from dlbench.measure.stability import MIN_CPU_SAMPLES, verdict
from dlbench.report.scorecard.baseline import Baseline, Benchmark
from dlbench.report.scorecard.scorecard import scorecard_report
from dlbench.results.text_table import experiment_label, format_number, format_table


@pytest.mark.parametrize(
    ("value", "text"),
    [(41.666, "41.67"), (7.0, "7.00"), (1.0, "1.00"), (0.0, "0.00"), (-2.5, "-2.50"),
     (0.0034, "0.0034"), (0.0487, "0.0487"), (0.79123, "0.7912"), (-0.5, "-0.5"),
     (1.2344e-7, "1.234e-07"), (0.99996, "1.00"), (float("nan"), "nan")],
)
def test_numbers_at_their_precision(value: float, text: str) -> None:
    assert format_number(value) == text


def test_an_explicit_format_still_wins_and_tables_use_the_precision() -> None:
    assert format_number(0.0034, "{:.2f}") == "0.00"
    rows = [{"a": 1234.5678}, {"a": 0.000123456}]
    assert format_table(rows, ["a"]) == ["        a", "---------", "  1234.57", "0.0001235"]


def test_a_simulated_model_is_labelled_as_such() -> None:
    fake = {"exp.framework": "fake", "exp.model": "resnet50", "exp.replica_batch": 8}
    real = {**fake, "exp.framework": "pytorch"}
    assert experiment_label(fake, ["exp.model", "exp.replica_batch"]) == \
        "exp.model=fake(resnet50) exp.replica_batch=8"
    assert experiment_label(fake, ["exp.replica_batch"]) == "fake(resnet50) exp.replica_batch=8"
    assert experiment_label(fake, []) == "fake(resnet50)"
    assert experiment_label(real, ["exp.replica_batch"]) == "exp.replica_batch=8"
    assert experiment_label(real, []) == "resnet50"
    # A parameter's value reads as given, not rounded as a measurement.
    assert experiment_label({**fake, "fake.step_ms": 2.0}, ["fake.step_ms"]) == \
        "fake(resnet50) fake.step_ms=2.0"
    assert format_table([fake, real], ["exp.model"])[2:] == ["fake(resnet50)", "resnet50"]
    assert format_table([fake], ["exp.model"], fmt="csv") == ["exp.model", "resnet50"]


PARAMS = {"exp.cv_threshold": 0.05, "exp.num_batches": 20, "exp.target_ci": 0.01,
          "exp.device_type": "cpu"}


def _use(other: float, own: float, samples: int | None = None) -> dict[str, Any]:
    results: dict[str, Any] = {
        "results.time_cv": 0.01, "results.num_batches": 20, "results.time_data": [1.0] * 20,
        "results.use.other_cpu_percent_mean": other, "results.use.cpu_percent_mean": own,
        "results.use.cpus_available": 2}
    if samples is not None:
        results["results.use.samples"] = samples
    return results


def test_cpu_contention_figures_are_possible_and_need_enough_samples() -> None:
    # The short run: others 2.34 cores of 2. Too few samples: no CPU verdict.
    assert verdict(PARAMS, _use(234.0, 0.0, samples=MIN_CPU_SAMPLES - 1))["results.stable"]
    # Enough samples: clamped to the 2 CPUs, the worker's share first.
    assert verdict(PARAMS, _use(234.0, 0.0, samples=MIN_CPU_SAMPLES))[
        "results.unstable_reasons"] == [
        "cpu contention: other processes used 2.00 of the worker's 2 CPUs (worker 0.00)"]
    assert verdict(PARAMS, _use(150.0, 90.0, samples=8))["results.unstable_reasons"] == [
        "cpu contention: other processes used 1.10 of the worker's 2 CPUs (worker 0.90)"]
    assert verdict(PARAMS, _use(20.0, 400.0, samples=8))["results.stable"]  # worker alone


def test_a_variable_listing_a_value_twice_names_the_value() -> None:
    with pytest.raises(SpecError, match=r"^variable user\.x \(from -V flag\) lists 1 twice: "):
        load_spec(variables=["user.x=[1, 2, 1]"])
    with pytest.raises(SpecError, match=r'lists \{"a": 1\} twice'):
        load_spec(variables=['user.x=[{"a": 1}, {"a": 1}]'])
    assert load_spec(variables=["user.x=[1, '1']"]).variables["user.x"].value == [1, "1"]


def test_shared_log_errors_name_what_differs_not_one_id_twice(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "-P", "exp.framework=fake", "-V", "exp.timeout=[10, 20]"]) == 2
    err = capsys.readouterr().err
    assert "written by experiments 1 and 2 of the sweep, one measurement (exp.id " in err
    assert "they differ only in exp.timeout (10.0 and 20.0), which do not define" in err
    assert main(["plan", "-P", "exp.framework=fake", "-E",
                 '{"cases": [{"user.x": 1}, {"user.x": 1}]}']) == 2
    err = capsys.readouterr().err
    assert "written by identical experiments 1 and 2 of the sweep (exp.id " in err
    exp_id = err.split("(exp.id ")[1].split(")")[0]
    assert err.count(exp_id) == 2  # in the log file's name and once in the message


def test_scorecard_says_what_missed_its_target() -> None:
    def rec(model: str, thr: float) -> dict[str, Any]:
        return {"exp.framework": "pytorch", "exp.model": model, "exp.phase": "training",
                "exp.status": "ok", "results.throughput": thr}

    def bench(name: str) -> Benchmark:
        return Benchmark(name=name, query={"exp.model": f"{name}$"}, target=100.0)

    baseline = Baseline([bench("a"), bench("b"), bench("c")], min_runs=1)
    report = scorecard_report([rec("a", 96.0), rec("b", 90.0)], baseline)
    assert report.missed == ["b: diff -10.0%, outside the tolerance of 5%", "c: MISSING"]
    assert report.passed is False
    met = scorecard_report([rec("a", 101.0)], Baseline([bench("a")], min_runs=1))
    assert (met.missed, met.passed) == ([], True)
