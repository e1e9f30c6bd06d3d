"""The Slurm launcher's pure parts: flag values, job parameters, and the command each
node of a multi-node job runs (this machine has one node, so that part is checked here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlbench.errors import ConfigError
from dlbench.launch.command import LOG_FILE_ENV
from dlbench.launch.slurm.launcher import _other_node_failure
from dlbench.launch.slurm.node import (
    AUTO_RENDEZVOUS,
    RENDEZVOUS_BASE_PORT,
    NodeResult,
    ProcessResult,
    node_command,
    node_experiment,
    node_log_file,
    process_experiment,
    rendezvous_port,
)
from dlbench.launch.slurm.options import (
    default_time_minutes,
    executor_parameters,
    parse_time_limit,
    slurm_options,
)
from dlbench.launch.slurm.queue import log_files as _log_files
from dlbench.launch.slurm.queue import traceback_line as _traceback_line
from tests.integration.worker import plan_one


def _plan(tmp_path: Path, *params: str) -> dict[str, Any]:
    # As `dlbench run --launcher slurm` plans: the rendezvous is found when the job starts.
    return plan_one(tmp_path, "exp.framework=fake", f"exp.rendezvous={AUTO_RENDEZVOUS}", *params)


@pytest.mark.parametrize(("text", "minutes"), [
    ("1", 1), ("90", 90), ("00:00:01", 1), ("1:30:00", 90), ("01:29:31", 90),
    ("2-00:00:00", 2880), (" 45 ", 45),
])
def test_time_limit_in_minutes(text: str, minutes: int) -> None:
    assert parse_time_limit(text) == minutes


@pytest.mark.parametrize("text", ["", "0", "00:00:00", "1h", "1:30", "1:60:00", "1:00:75",
                                  "-5", "1.5", "2-1"])
def test_bad_time_limit_is_one_line_naming_the_flag(text: str) -> None:
    with pytest.raises(ConfigError, match=r"^--slurm-time .*") as error:
        parse_time_limit(text)
    assert "\n" not in str(error.value)


def test_options_are_checked_and_kept() -> None:
    options = slurm_options("gpu,debug", "gpu:a100:2", "1:00:00", "3", "proj-1",
                            ["cpus-per-task=8", "exclusive"])
    assert (options.partition, options.gres, options.time_minutes) == ("gpu,debug",
                                                                      "gpu:a100:2", 60)
    assert (options.array_parallelism, options.account) == (3, "proj-1")
    assert options.sbatch == {"cpus-per-task": "8", "exclusive": True}
    assert slurm_options() == slurm_options(None, None, None, None, None, [])


@pytest.mark.parametrize(("kwargs", "flag"), [
    ({"partition": "a b"}, "--slurm-partition"),
    ({"partition": ""}, "--slurm-partition"),
    ({"partition": "gpu,"}, "--slurm-partition"),
    ({"gres": "gpu 1"}, "--slurm-gres"),
    ({"gres": "1:gpu"}, "--slurm-gres"),
    ({"gres": ""}, "--slurm-gres"),
    ({"array_parallelism": "0"}, "--slurm-array-parallelism"),
    ({"array_parallelism": "two"}, "--slurm-array-parallelism"),
    ({"array_parallelism": "-1"}, "--slurm-array-parallelism"),
    ({"account": "a;b"}, "--slurm-account"),
    ({"time_limit": "soon"}, "--slurm-time"),
    ({"sbatch_options": ["--exclusive"]}, "--slurm-option"),
    ({"sbatch_options": ["mem="]}, "--slurm-option"),
    ({"sbatch_options": ["array=0-3"]}, "--slurm-option"),
    ({"sbatch_options": ["time=5"]}, "--slurm-option"),
])
def test_bad_flag_values_name_the_flag(kwargs: dict[str, Any], flag: str) -> None:
    with pytest.raises(ConfigError) as error:
        slurm_options(**kwargs)
    message = str(error.value)
    assert message.startswith(flag) and "\n" not in message
    assert "expected" in message or "itself" in message or "at least" in message


def test_job_parameters_follow_the_flags() -> None:
    options = slurm_options("debug", "gpu:1", None, "2", "acct", ["cpus-per-task=4"])
    params = executor_parameters(options, nodes=1, time_minutes=35)
    assert params["partition"] == "debug" and params["gres"] == "gpu:1"
    assert params["account"] == "acct" and params["array_parallelism"] == 2
    assert params["time"] == 35 and params["signal_delay_s"] == 90
    assert params["nodes"] == 1 and params["ntasks_per_node"] == 1
    assert params["additional_parameters"] == {"cpus-per-task": "4"}
    assert params["job_name"] == "dlbench"
    bare = executor_parameters(slurm_options(), nodes=3, time_minutes=None)
    assert bare["time"] is None and bare["nodes"] == 3 and bare["ntasks_per_node"] == 1
    assert not {"partition", "gres", "account", "array_parallelism",
                "additional_parameters"} & set(bare)
    # A short job gets a short warning before its time limit.
    assert executor_parameters(slurm_options(), 1, 1)["signal_delay_s"] == 10


def test_default_time_covers_timeout_times_repeats(tmp_path: Path) -> None:
    short = _plan(tmp_path, "exp.timeout=60")
    long = _plan(tmp_path, "exp.timeout=600", "exp.repeat=3")
    assert default_time_minutes([short]) == 6  # 60 s + 300 s start-up margin
    assert default_time_minutes([short, long]) == 35
    assert default_time_minutes([short, _plan(tmp_path, "exp.timeout=0")]) is None


def test_one_node_runs_the_plain_worker_into_its_log(tmp_path: Path) -> None:
    exp = _plan(tmp_path)
    argv, env, log = node_command(exp, Path("e.json"), "py", {"PATH": "/bin"})
    assert argv == ["py", "-m", "dlbench.worker", "e.json"]
    assert log == Path(exp["exp.log_file"])
    assert LOG_FILE_ENV not in env and env["PYTHONUNBUFFERED"] == "1"


def test_each_node_of_a_multi_node_job_meets_at_the_first(tmp_path: Path) -> None:
    exp = _plan(tmp_path, "exp.num_nodes=2", "exp.num_local_replicas=2")
    hosts = ["gpu017", "gpu018"]
    commands = []
    for node in (0, 1):
        own = node_experiment(exp, node, hosts, "4242")
        assert own["exp.node_rank"] == node
        assert own["exp.rendezvous"] == f"gpu017:{RENDEZVOUS_BASE_PORT + 242}"
        commands.append(node_command(own, Path(f"e.node{node}.json"), "py", {"PATH": "/bin"}))
    for node, (argv, _env, _log) in enumerate(commands):
        assert argv[:3] == ["py", "-m", "torch.distributed.run"]
        assert argv[-3:] == ["-m", "dlbench.worker", f"e.node{node}.json"]
        assert "--nnodes=2" in argv and "--nproc-per-node=2" in argv
        assert f"--rdzv-endpoint=gpu017:{RENDEZVOUS_BASE_PORT + 242}" in argv
        assert f"--rdzv-id={exp['exp.id']}" in argv and "--standalone" not in argv
    # Node 0 writes exp.log_file; node 1 its own file, which its worker learns from the env.
    (_, env0, log0), (_, env1, log1) = commands
    assert log0 == Path(exp["exp.log_file"]) and LOG_FILE_ENV not in env0
    assert log1 == Path(exp["exp.log_file"] + ".node1") and env1[LOG_FILE_ENV] == str(log1)
    # A rendezvous in the spec is kept; `auto` host or port 0 are filled in.
    for given, made in (("login:30000", "login:30000"), ("auto:30000", "gpu017:30000"),
                        ("login:0", "login:29507"), ("", "gpu017:29507")):
        assert node_experiment({**exp, "exp.rendezvous": given}, 1, hosts, "7")[
            "exp.rendezvous"] == made


def test_a_later_node_in_a_container_gets_its_own_log_file(tmp_path: Path) -> None:
    exp = _plan(tmp_path, "exp.num_nodes=2", "exp.num_local_replicas=2")
    # Set after planning: the plan wants the engine on PATH, which this machine may lack.
    exp = {**exp, "exp.docker": True, "exp.container_engine": "apptainer",
           "exp.docker_image": "images/bench.sif"}
    own = node_experiment(exp, 1, ["gpu017", "gpu018"], "4242")
    argv, env, log = node_command(own, Path("e.node1.json"), "py", {"PATH": "/bin"})
    assert env[LOG_FILE_ENV] == str(log)
    # apptainer starts from a clean environment: the log's path goes in as a value.
    assert f"APPTAINERENV_{LOG_FILE_ENV}={log}" in argv


def test_static_rendezvous_takes_slurms_node_id(tmp_path: Path) -> None:
    exp = _plan(tmp_path, "exp.num_nodes=3", "exp.rendezvous_backend=static")
    argv, _, log = node_command(node_experiment(exp, 2, ["a", "b", "c"], "9"), Path("e"))
    assert "--node-rank=2" in argv and "--rdzv-endpoint=a:29509" in argv
    assert log == Path(exp["exp.log_file"] + ".node2")


def test_rendezvous_ports_stay_in_their_range() -> None:
    ports = {rendezvous_port(str(job)) for job in range(5000)}
    assert min(ports) == RENDEZVOUS_BASE_PORT and len(ports) == 1000
    assert rendezvous_port("123_4") == rendezvous_port("1234")


def test_logs_of_repeats_and_nodes(tmp_path: Path) -> None:
    exp = _plan(tmp_path, "exp.num_nodes=2", "exp.repeat=2")
    log = exp["exp.log_file"]
    assert process_experiment(exp, 2, 2)[0]["exp.log_file"] == f"{log}.2"
    assert process_experiment(exp, 2, 2)[1] == ".2"
    assert process_experiment(exp, 1, 1) == (exp, "")
    assert node_log_file(exp, 0) == log and node_log_file(exp, 3) == f"{log}.node3"
    assert [str(p) for p in _log_files(exp)] == sorted(
        [log, f"{log}.1", f"{log}.1.node1", f"{log}.2", f"{log}.2.node1"])


def test_a_failure_on_another_node_is_named(tmp_path: Path) -> None:
    exp = _plan(tmp_path, "exp.num_nodes=2")
    ok = ProcessResult(0, False, 1.0)
    nodes = [NodeResult(0, "a", (ok,)), NodeResult(1, "b", (ProcessResult(3, False, 1.0),))]
    assert _other_node_failure(exp, nodes, 1) == (
        f"node 1 (b): the worker exited with status 3; see {exp['exp.log_file']}.node1")
    assert _other_node_failure(exp, [nodes[0], NodeResult(1, "b", (ok,))], 1) == ""
    lost = [nodes[0], NodeResult(1, "b", (), "SIGTERM")]
    assert _other_node_failure(exp, lost, 1) == "node 1 (b) did not run process 1"


def test_the_exception_line_of_a_task_traceback() -> None:
    error = ("Job (task=0) failed during processing with trace:\n----------------------\n"
             "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
             "PermissionError: [Errno 13] Permission denied: '/out/logs'\n"
             "----------------------\nYou can check full logs with 'job.stderr(0)'")
    assert _traceback_line(error) == "PermissionError: [Errno 13] Permission denied: '/out/logs'"
    assert _traceback_line("plain message\n") == "plain message"
