"""What makes two experiments one configuration is one function, asked when called:
its arguments against hand-picked names, and its users (exp.id, the out-of-memory
memo, a history's configuration, compare's match) agreeing with it, a framework
registered after import included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.config.identity import belongs_to, configuration_hash, identity_parameters
from dlbench.config.params import Param
from dlbench.config.registry import register_framework, unregister_framework
from dlbench.launch.oom_memo import memory_key
from dlbench.report.compare.compare import compare_records
from dlbench.results.history.records import config_key, configuration

PLUG = FrameworkInfo(
    id="plug",
    title="Plug",
    module="dlbench.backends.fake",  # what it runs does not matter here
    requires=(),
    install_hint="",
    description="A framework registered by a test, after every module was imported.",
    models=("toy",),
    dtypes=("float32",),
    params=(Param("plug.level", "int", 1, "How hard plug tries."),),
)


@pytest.fixture
def plug() -> Iterator[FrameworkInfo]:
    register_framework(PLUG)
    try:
        yield PLUG
    finally:
        unregister_framework(PLUG.id)


NAMES = ["user.run", "exp.log_file", "exp.effective_batch", "exp.replica_batch",
         "fake.step_ms", "pytorch.num_threads", "exp.proj", "exp.model", "user."]


def test_registry_order_then_labels_in_their_order() -> None:
    # exp.log_file: not identity; exp.effective_batch: derived; "user." is no label.
    # Registry order: dlbench's own, then each framework's (pytorch before fake).
    assert identity_parameters(NAMES) == [
        "exp.model", "exp.replica_batch", "pytorch.num_threads", "fake.step_ms"]
    assert identity_parameters(NAMES, user=True) == [
        "exp.model", "exp.replica_batch", "pytorch.num_threads", "fake.step_ms", "user.run"]
    # exp.proj is a DLBS name carried as written.
    assert identity_parameters(NAMES, user=True, carried=True)[-2:] == ["user.run", "exp.proj"]
    assert identity_parameters(NAMES, derived=True)[:3] == [
        "exp.model", "exp.replica_batch", "exp.effective_batch"]


def test_framework_and_exclude_narrow_it() -> None:
    assert identity_parameters(NAMES, framework="fake") == [
        "exp.model", "exp.replica_batch", "fake.step_ms"]
    assert identity_parameters(NAMES, framework="", exclude={"exp.model"}) == [
        "exp.replica_batch"]
    assert belongs_to("exp.gpus", "fake") and not belongs_to("pytorch.num_threads", "fake")
    # Every declared parameter when no names are given: none derived, none that is not
    # an identity parameter.
    everything = identity_parameters()
    assert "exp.gpus" in everything and "exp.log_file" not in everything
    assert "exp.effective_batch" not in everything


def test_configuration_hash_known_answer() -> None:
    import hashlib
    text = '{"exp.model":"resnet50","exp.replica_batch":16}'
    assert configuration_hash({"exp.replica_batch": 16, "exp.model": "resnet50"}) == (
        hashlib.sha256(text.encode()).hexdigest()[:16])


def test_a_framework_registered_later_is_part_of_every_configuration(
    plug: FrameworkInfo,
) -> None:
    assert "plug.level" in identity_parameters()

    def rec(level: int, time: float, run: int = 0) -> dict[str, Any]:
        return {"exp.framework": "plug", "exp.model": "toy", "exp.phase": "training",
                "exp.replica_batch": 8, "exp.effective_batch": 8, "exp.status": "ok",
                "plug.level": level, "user.run": run, "exp.log_file": f"{level}-{run}.log",
                "results.time": time, "results.throughput": 8000.0 / time,
                "results.time_data": [time, time, time]}

    # A and B each hold levels 1 and 2: two configurations, never pooled.
    a, b = [rec(1, 10.0), rec(2, 20.0)], [rec(1, 10.0), rec(2, 40.0)]
    comparison = compare_records(a, b, metric="results.throughput")
    assert comparison.columns == ["plug.level"]
    # Level 1: 800 → 800, ratio 1; level 2: 400 → 200, ratio 0.5.
    assert sorted((r.config["plug.level"], r.ratio) for r in comparison.rows) == [
        (1, 1.0), (2, 0.5)]
    # The memo and a history keep the two levels apart; a log file moves neither.
    assert memory_key(rec(1, 10.0)) != memory_key(rec(2, 10.0))
    assert memory_key(rec(1, 10.0)) == memory_key({**rec(1, 10.0), "exp.log_file": "x"})
    assert config_key(configuration(rec(2, 10.0))) != config_key(configuration(rec(1, 10.0)))
    # History: plug.level 1 is its default, so it is left out; 2 is kept.
    assert "plug.level" not in configuration(rec(1, 10.0))
    assert configuration(rec(2, 10.0))["plug.level"] == 2


def test_compare_sets_apart_only_what_differs_throughout() -> None:
    def rec(threads: int, batch: int, time: float) -> dict[str, Any]:
        return {"exp.framework": "pytorch", "exp.model": "resnet50",
                "exp.replica_batch": batch, "pytorch.num_threads": threads,
                "exp.status": "ok", "results.time": time, "results.time_data": [time] * 3}

    # Threads 1 throughout A, 2 throughout B: the thing compared, left out of the
    # match; the batch sizes pair up: 10 → 8 (0.8) and 20 → 15 (0.75).
    comparison = compare_records([rec(1, 16, 10.0), rec(1, 32, 20.0)],
                                 [rec(2, 16, 8.0), rec(2, 32, 15.0)], metric="results.time")
    assert comparison.differing == {"pytorch.num_threads": (1, 2)}
    assert [(r.config["exp.replica_batch"], r.ratio) for r in comparison.rows] == [
        (16, 0.8), (32, 0.75)]
