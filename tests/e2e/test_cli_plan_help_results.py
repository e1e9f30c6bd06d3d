"""``dlbench plan``, ``help``, ``parse`` and ``query`` end to end, and bad input."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from dlbench.cli.commands import help as commands_help
from dlbench.cli.commands.help import framework_devices
from dlbench.cli.main import main
from dlbench.config.catalog import FRAMEWORKS
from tests.conftest import CliRunner

REPO = Path(__file__).resolve().parents[2]


def test_plan_lists_four_experiments(dlbench: CliRunner) -> None:
    proc = dlbench("plan", "-V", "exp.model=[resnet18, alexnet]",
                   "-V", "exp.replica_batch=[8,16]", "-P", "exp.num_batches=3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("4 experiments")
    assert "resnet18" in proc.stdout and "alexnet" in proc.stdout


def test_plan_json_is_resolved_and_stable(dlbench: CliRunner) -> None:
    args = ("plan", "--format", "json", "-V", "exp.replica_batch=[8,16]", "-P", "exp.gpus=")
    first = json.loads(dlbench(*args).stdout)["data"]
    second = json.loads(dlbench(*args).stdout)["data"]
    assert [e["exp.id"] for e in first] == [e["exp.id"] for e in second]
    assert len({e["exp.id"] for e in first}) == 2
    assert first[1]["exp.effective_batch"] == 16
    assert first[0]["exp.device_type"] == "cpu"
    assert first[0]["exp.log_file"].endswith(f"{first[0]['exp.id']}.log")


def test_unsafe_computed_value_is_refused_and_nothing_runs(
    dlbench: CliRunner, tmp_path: Path
) -> None:
    proc = dlbench("run", "-P", 'user.x=$(__import__("os").system("touch f"))$',
                   "-P", "exp.framework=fake", "--out", "out")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("dlbench: error:")
    assert "user.x" in proc.stderr
    assert not (tmp_path / "f").exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-V", "exp.replica_bach=[1]"], "did you mean exp.replica_batch"),
        (["-P", "exp.replica_batch=abc"], "exp.replica_batch"),
        (["-P", "exp.phase=testing"], "training"),
        (["-P", "exp.model=resnet5"], "resnet50"),
        (["-P", "user.a=${user.b}", "-P", "user.b=${user.a}"], "user.a"),
        (["-P", "user.a=${user.nope}"], "user.nope"),
        (["-P", "exp.num_nodes=2"], "exp.rendezvous"),
        (["-E", "{not json"], "-E"),
        (["-P", "noequals"], "-P"),
    ],
)
def test_bad_input_gives_one_line_and_status_2(
    dlbench: CliRunner, tmp_path: Path, args: list[str], expected: str
) -> None:
    proc = dlbench("run", "-P", "exp.framework=fake", *args, "--out", "out")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("dlbench: error:")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert expected in proc.stderr
    assert not (tmp_path / "out").exists()


def test_malformed_yaml_names_file_and_line(dlbench: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("parameters:\n  exp.model: toy\n  exp.phase: [training\n")
    proc = dlbench("plan", "--config", "bad.yaml")
    assert proc.returncode == 2
    assert "bad.yaml:" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_spec_file_with_variables_and_extension(dlbench: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "sweep.yaml").write_text(
        "parameters:\n  exp.framework: fake\n"
        "variables:\n  exp.model: [resnet18, resnet50, toy]\n"
        "extensions:\n"
        "  - condition: {exp.model: 'resnet(\\d+)'}\n"
        "    parameters: {user.depth: '${__condition.exp.model_1}'}\n"
    )
    proc = dlbench("plan", "--config", "sweep.yaml", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)["data"]
    assert [e.get("user.depth") for e in data] == ["18", "50", None]


def test_help_params_models_frameworks(dlbench: CliRunner) -> None:
    params = dlbench("help", "--params", "^exp.replica_batch$")
    assert params.returncode == 0
    assert "exp.replica_batch  (int, default 16)" in params.stdout
    text = dlbench("help", "--text", "cuDNN")
    assert "pytorch.cudnn_benchmark" in text.stdout
    models = dlbench("help", "--models")
    assert "25,557,032" in models.stdout and "resnet50" in models.stdout
    frameworks = dlbench("help", "--frameworks")
    assert frameworks.returncode == 0 and frameworks.stderr == ""
    header, _rule, *table = frameworks.stdout.splitlines()
    assert header.split() == ["id", "title", "phases", "installed", "versions", "devices"]
    rows = {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in table)}
    assert list(rows) == list(FRAMEWORKS)
    # the CPU first, then any CUDA GPU PyTorch sees ("cpu, cuda:0 NVIDIA H100 ...")
    assert len(rows["pytorch"]) == 6 and rows["pytorch"][3] == "yes"
    assert re.fullmatch(r"cpu(, cuda:\d+ .+)*", rows["pytorch"][5]), rows["pytorch"][5]
    assert rows["pytorch"][4].startswith("torch 2.")
    assert rows["onnxruntime"][2] == "inference" and "onnxruntime 1." in rows["onnxruntime"][4]
    assert rows["fake"][3:] == ["yes", "(built in)", "cpu (simulated)"]
    fake = dlbench("help", "--frameworks", "fake")
    assert "fake.step_ms" in fake.stdout
    bad = dlbench("help", "--frameworks", "caffe")
    assert bad.returncode == 2 and f"known: {', '.join(FRAMEWORKS)}" in bad.stderr


def test_framework_devices_reports_failures_briefly() -> None:
    devices = framework_devices({"fake": "dlbench.backends.fake", "none": "dlbench.errors",
                                 "broken": "dlbench.backends.no_such_backend"})
    assert devices == {
        "fake": "cpu (simulated)",
        "none": "unknown: its backend has no available_devices()",
        "broken": "unknown: ModuleNotFoundError: No module named "
                  "'dlbench.backends.no_such_backend'",
    }
    slow = framework_devices({"fake": "dlbench.backends.fake"}, timeout=0.001)
    assert slow == {"fake": "unknown: no answer within 0.001 s"}


def test_framework_not_installed_shows_its_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = dataclasses.replace(FRAMEWORKS["jax"], requires=("jax", "dlbench_no_such_pkg"))
    monkeypatch.setattr(commands_help, "FRAMEWORKS", {"jax": missing})
    (row,) = commands_help._framework_rows()
    assert row["installed"] == "no: pip install dlbench[jax] (dlbench_no_such_pkg missing)"
    assert row["versions"].startswith("jax ") and row["devices"] == "-"


def test_parse_and_query_round_trip(dlbench: CliRunner, tmp_path: Path) -> None:
    run = dlbench("run", "-P", "exp.framework=fake", "-P", "fake.step_ms=1",
                  "-P", "exp.num_batches=2", "-V", "exp.replica_batch=[1,2,3]", "--out", "out")
    assert run.returncode == 0, run.stderr
    for name in ("all.json", "all.json.gz", "all.jsonl", "all.csv"):
        proc = dlbench("parse", "out", "--recursive", "--output", name)
        assert proc.returncode == 0, proc.stderr
        query = dlbench("query", "--input", name, "--where", '{"exp.replica_batch": 2}',
                        "--format", "json")
        assert query.returncode == 0, query.stderr
        (record,) = json.loads(query.stdout)["data"]
        assert record["exp.effective_batch"] == 2
    table = dlbench("query", "--input", "out", "--where", '{"exp.status": "ok"}')
    assert table.returncode == 0
    assert len(table.stdout.strip().splitlines()) == 2 + 3  # header, rule, three rows
    none = dlbench("query", "--input", "out", "--where", '{"exp.replica_batch": 7}')
    assert none.returncode == 2
    assert "exp.replica_batch: 1, 2, 3" in none.stderr
    bad = dlbench("query", "--input", "out", "--where", "{oops")
    assert bad.returncode == 2 and "--where" in bad.stderr
    missing = dlbench("query", "--input", "nowhere")
    assert missing.returncode == 2 and "nowhere" in missing.stderr


def test_parse_warns_about_a_truncated_log(dlbench: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text('__exp.model__="toy"\n__results.time__=1.5\n')
    (tmp_path / "b.log").write_text('__exp.model__="resnet50"\n__results.time_data__=[1.0, 2.')
    proc = dlbench("parse", "a.log", "b.log")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)["data"]
    assert [r["exp.model"] for r in data] == ["toy", "resnet50"]
    assert "b.log:2" in proc.stderr


def test_readme_test_command_is_what_ci_runs() -> None:
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci in (REPO / "README.md").read_text()


def test_suites_are_listed_and_planned(dlbench: CliRunner) -> None:
    listed = dlbench("help", "--suites")
    assert listed.returncode == 0 and "smoke" in listed.stdout
    plan = dlbench("plan", "--suite", "smoke")
    assert plan.returncode == 0, plan.stderr
    unknown = dlbench("plan", "--suite", "nope")
    assert unknown.returncode == 2 and "known: " in unknown.stderr


def test_sysinfo_prints_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    # In this process (PyTorch already imported): test_cli_measure.py runs the command.
    assert main(["sysinfo", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["hw.cpu_count"] >= 1 and info["sys.dlbench_version"]
