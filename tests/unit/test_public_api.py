"""The public API, ``dlbench.api``: its names are pinned, each importable and
documented, and a sweep planned, run and read back through it alone."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import dlbench.api as api
from dlbench.api import (
    ConfigError,
    DlbenchError,
    Report,
    ReportOptions,
    ReportType,
    SpecError,
    Store,
    Table,
    UsageError,
    load_records,
    main,
    plan_sweep,
    register_report,
    run_sweep,
    unregister_report,
)

#: The public names. A change here is a change of the API, made on purpose.
PUBLIC = [
    "DOCKER_IMAGE", "SEED", "THREADS", "Backend", "ChartError", "CompareError",
    "ConfigError", "DlbenchError", "Flag", "FrameworkInfo", "Launcher", "LoadScenario",
    "MeasurementRefused", "MetricError", "ModelInfo", "NonFiniteLoss", "Outcome",
    "Param", "PathError", "ProcessLauncher", "QueryError", "Report", "ReportOptions",
    "ReportType", "ResultsError", "ScenarioRun", "ScenarioSettings", "SpecError",
    "Store", "SweepResult", "Table", "UnsafeExpressionError", "UsageError",
    "VirtualClock", "WorkerError", "load_records", "main", "parse_query", "plan_sweep",
    "register_framework", "register_launcher", "register_model", "register_report",
    "register_scenario", "run_scenario", "run_sweep", "summarize_scenario",
    "unregister_framework", "unregister_launcher", "unregister_model",
    "unregister_report", "unregister_scenario",
]

FRAMEWORKS = ("torch", "jax", "tensorflow", "onnxruntime")


def test_the_public_names_are_pinned() -> None:
    assert api.__all__ == PUBLIC


@pytest.mark.parametrize("name", PUBLIC)
def test_each_name_is_importable_and_documented(name: str) -> None:
    value = getattr(api, name)
    assert f"``{name}``" in api.__doc__ or f":func:`{name}`" in api.__doc__, \
        f"{name}: not in dlbench.api's list of names"
    doc = inspect.getdoc(value)
    assert doc and doc.strip(), f"{name}: no docstring"


def test_each_name_is_its_home_module_s_object() -> None:
    # Re-exported, never copied: dlbench.api.Store is dlbench's one Store.
    for name, (module, attribute) in api._HOMES.items():
        assert getattr(api, name) is getattr(importlib.import_module(module), attribute)
    assert set(api._HOMES) | {"plan_sweep", "run_sweep"} == set(PUBLIC)


def test_the_type_checker_sees_the_same_homes() -> None:
    # The TYPE_CHECKING imports and the table of homes state one fact twice.
    tree = ast.parse(Path(api.__file__).read_text())
    guarded = next(node for node in tree.body if isinstance(node, ast.If))
    seen = {alias.asname or alias.name: (node.module, alias.name)
            for node in guarded.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}
    assert seen == api._HOMES


def test_a_name_not_in_the_api_is_refused() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Sweep'"):
        api.Sweep  # noqa: B018


def test_importing_it_loads_no_framework_and_nothing_it_does_not_need() -> None:
    code = ("import sys, dlbench.api\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{FRAMEWORKS!r} or m.startswith('dlbench.')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "['dlbench.api']"


def test_plan_sweep_plans_what_the_command_line_plans(
    tmp_path: Path, dlbench: Any
) -> None:
    out = tmp_path / "run"
    planned = plan_sweep(parameters={"exp.framework": "fake", "exp.model": "toy",
                                     "exp.num_batches": 2, "user.note": "a b"},
                         variables={"exp.replica_batch": [1, 2]}, out=out)
    done = dlbench("plan", "--format", "json", "-P", "exp.framework=fake",
                   "-P", "exp.model=toy", "-P", "exp.num_batches=2", "-P", "user.note=a b",
                   "-V", "exp.replica_batch=[1,2]", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert planned == json.loads(done.stdout)["data"]


def test_plan_sweep_reads_spec_files_and_extensions(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("parameters:\n  exp.framework: fake\n  exp.model: toy\n")
    planned = plan_sweep([spec], extensions=[{"condition": {"exp.model": "toy"},
                                              "parameters": {"exp.num_batches": 3}}])
    assert [e["exp.num_batches"] for e in planned] == [3]


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: plan_sweep(parameters={"exp.framework": "nope"}), ConfigError, "exp.framework"),
    (lambda: plan_sweep(parameters={"exp.no_such_thing": 1}), DlbenchError,
     "exp.no_such_thing"),
    (lambda: plan_sweep(["/nonexistent/spec.yaml"]), DlbenchError, "spec.yaml"),
    (lambda: plan_sweep(parameters={"exp.framework": "fake"}, launcher="nope"), UsageError,
     "launcher 'nope': not a registered launcher; one of local"),
    (lambda: plan_sweep(parameters={"exp.framework": "fake"},
                        variables={"exp.replica_batch": []}), SpecError, "exp.replica_batch"),
])
def test_mistakes_are_dlbench_errors_naming_the_culprit(
    call: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(")):
        call()


def test_run_sweep_refuses_an_unknown_launcher_and_an_interleaved_slurm_run() -> None:
    with pytest.raises(UsageError, match="launcher 'nope'"):
        run_sweep([], launcher="nope")
    with pytest.raises(UsageError, match="interleave: only with the local launcher"):
        run_sweep([], launcher="slurm", interleave=True)


class CountReport(ReportType):
    """The number of records."""

    def build(self, records: Sequence[dict[str, Any]], options: ReportOptions) -> Report:
        return Report(title="Count", tables=[Table("records", ["n"], [[len(records)]])])


@pytest.fixture
def count_report() -> Iterator[None]:
    register_report("count", "the number of records", CountReport)
    yield
    unregister_report("count")


def test_a_sweep_runs_and_reads_back_through_the_api(
    tmp_path: Path, count_report: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    lines: list[str] = []
    experiments = plan_sweep(parameters={"exp.framework": "fake", "exp.model": "toy",
                                         "exp.num_warmup_batches": 1, "exp.num_batches": 2},
                             variables={"exp.replica_batch": [1, 2]}, out=out)
    result = run_sweep(experiments, report=lines.append)
    assert [o.status for o in result.outcomes] == ["ok", "ok"]
    assert not result.interrupted and not result.stopped
    assert len(lines) >= 2  # a progress line per experiment, to the caller's reporter

    records = load_records([out], series=False)
    assert [r["exp.replica_batch"] for r in records] == [1, 2]
    assert [r["exp.id"] for r in records] == [e["exp.id"] for e in experiments]
    assert all(r["results.time"] > 0 for r in records)
    with Store.in_directory(out, create=False) as store:
        assert len(store) == 2
        assert store.get(experiments[0]["exp.id"])["exp.status"] == "ok"

    # Run again into the same directory: both kept (exp.rerun=onfail), none re-run.
    again = run_sweep(experiments, report=lines.append)
    assert [o.ran for o in again.outcomes] == [False, False]

    capsys.readouterr()
    assert main(["report", "--type", "count", "--input", str(out)]) == 0
    assert capsys.readouterr().out.split() == ["Count", "=====", "records", "n", "-", "2"]
