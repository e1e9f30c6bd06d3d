"""``dlbench definitions`` end to end, on run directories written here: one whose log
holds an endpoint experiment's raw requests (and a fake experiment without any), and
the same records in a results store. Known answers are those of
tests/unit/test_serving_peers.py's shared requests; the run directory must be byte for
byte as it was after every command."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.commands.definitions import PEER_CHOICES
from dlbench.cli.main import main
from dlbench.measure.serving.records import RequestRecord, to_rows
from dlbench.results.store import Store
from tests.conftest import CliRunner
from tests.unit.test_serving_peers import MS, shared

#: The endpoint experiment's parameters and what dlbench recorded of it (one figure, so
#: that the command is seen to show the recorded value; the others it computes).
ENDPOINT = {
    "exp.id": "e0", "exp.status": "ok", "exp.framework": "endpoint", "exp.model": "served:m",
    "exp.phase": "generate", "exp.scenario": "server", "endpoint.api": "chat",
    "endpoint.slo_ttft_ms": 25.0, "results.ttft_p99": 29.5,
}
FAKE = {"exp.id": "f0", "exp.status": "ok", "exp.framework": "fake", "exp.model": "resnet50",
        "exp.phase": "inference", "results.time": 1.5}


def _requests() -> list[RequestRecord]:
    warm = RequestRecord(9, 0, 0, chunk_ns=[1 * MS, 2 * MS], usage_output_tokens=2,
                         done_ns=3 * MS, warmup=True)
    return [warm, *shared()]


def _endpoint_record() -> dict[str, Any]:
    return {**ENDPOINT, "results.request_data": to_rows(_requests())}


def _write_log(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"__{k}__={json.dumps(v)}\n" for k, v in record.items()),
                    encoding="utf-8")


@pytest.fixture
def logs_run(tmp_path: Path) -> Path:
    """A run directory of logs only: the endpoint experiment and a fake one."""
    run = tmp_path / "logs_run"
    _write_log(run / "logs" / "e0.log", _endpoint_record())
    _write_log(run / "logs" / "f0.log", FAKE)
    return run


@pytest.fixture
def store_run(tmp_path: Path) -> Path:
    """The same two experiments in a run directory's results store."""
    run = tmp_path / "store_run"
    run.mkdir()
    with Store.in_directory(run) as store:
        store.put_many([_endpoint_record(), FAKE])
    return run


def _files(run: Path) -> dict[str, str]:
    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file()}


def _figures(document: dict[str, Any], peer: str) -> dict[str, dict[str, Any]]:
    (experiment,) = document["experiments"]
    (chosen,) = [p for p in experiment["peers"] if p["peer"] == peer]
    return {f["figure"]: f for f in chosen["figures"]}


@pytest.mark.parametrize("source", ["logs_run", "store_run"])
def test_json_gives_every_peer_beside_dlbench_and_leaves_the_run_as_it_was(
        dlbench: CliRunner, source: str, request: pytest.FixtureRequest) -> None:
    run: Path = request.getfixturevalue(source)
    before = _files(run)
    done = dlbench("definitions", str(run), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert _files(run) == before  # reads never write: no file changed, none added
    document = json.loads(done.stdout)
    (experiment,) = document["experiments"]  # the fake experiment has no requests
    assert experiment["exp.id"] == "e0"
    assert (experiment["requests"], experiment["warmup"]) == (3, 1)
    assert [p["peer"] for p in experiment["peers"]] == list(PEER_CHOICES)
    vllm = _figures(document, "vllm")
    # vLLM's TTFT, send to the role-only chunk: 6, 20, 9 ms.
    assert vllm["mean_ttft_ms"]["value"] == pytest.approx(35 / 3)
    # Beside it, dlbench's value as the run recorded it...
    assert vllm["p99_ttft_ms"]["dlbench_key"] == "results.ttft_p99"
    assert vllm["p99_ttft_ms"]["dlbench_value"] == 29.5
    assert vllm["p99_ttft_ms"]["same_meaning"] is False
    # ... or, for a key the run did not record, computed from its requests: 120 ms of
    # gaps over 9.
    assert vllm["mean_itl_ms"]["dlbench_value"] == pytest.approx(120 / 9)
    sglang = _figures(document, "sglang")
    assert sglang["mean_itl_ms"]["same_meaning"] is True
    assert sglang["mean_itl_ms"]["value"] == pytest.approx(120 / 9)
    mlperf = _figures(document, "mlperf")
    # The run's scenario and SLO reach the peers: LoadGen's p99 TTFT, 30, is over 25.
    assert mlperf["Result is"]["value"] == "INVALID"
    assert mlperf["Completed samples per second"]["value"] == pytest.approx(2 / 0.252)


def test_text_prints_a_table_per_peer(dlbench: CliRunner, logs_run: Path) -> None:
    done = dlbench("definitions", str(logs_run))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "exp.model=served:m exp.scenario=server: 3 requests after 1 warm-up"
    titles = [line for line in lines if line.startswith(("vLLM ", "SGLang ", "aiperf ",
                                                         "GuideLLM", "MLPerf ",
                                                         "inference-perf "))]
    assert len(titles) == len(PEER_CHOICES)
    headers = [line.split() for line in lines if line.startswith("figure ")]
    assert headers and all(h == ["figure", "value", "unit", "dlbench", "key", "dlbench",
                                 "meaning", "definition"] for h in headers)
    row = next(line for line in lines if line.startswith("mean_ttft_ms"))
    # vLLM from the send to the role-only chunk (6, 20, 9); dlbench from the scheduled
    # moment to the first text (30, 20, 10).
    assert row.split()[:5] == ["mean_ttft_ms", "11.67", "ms", "results.ttft_mean", "20.000"]
    assert "differs" in row and "role-only" in row


def test_csv_has_a_row_per_figure(capsys: pytest.CaptureFixture[str],
                                  logs_run: Path) -> None:
    assert main(["definitions", str(logs_run), "--as", "sglang", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["peer"] for r in rows} == {"sglang"} and {r["exp.id"] for r in rows} == {"e0"}
    itl = next(r for r in rows if r["figure"] == "mean_itl_ms")
    assert float(itl["value"]) == pytest.approx(120 / 9)
    assert (itl["dlbench_key"], itl["same_meaning"]) == ("results.itl_mean", "true")


@pytest.mark.parametrize("peer", PEER_CHOICES)
def test_as_one_peer_prints_that_peer_only(capsys: pytest.CaptureFixture[str],
                                           logs_run: Path, peer: str) -> None:
    assert main(["definitions", str(logs_run), "--as", peer, "--format", "json"]) == 0
    (experiment,) = json.loads(capsys.readouterr().out)["experiments"]
    assert [p["peer"] for p in experiment["peers"]] == [peer]
    assert experiment["peers"][0]["figures"]


def test_where_selects_the_experiments(capsys: pytest.CaptureFixture[str],
                                       logs_run: Path) -> None:
    code = main(["definitions", str(logs_run), "--where", '{"exp.framework": "endpoint"}',
                 "--as", "vllm", "--format", "json"])
    assert code == 0
    assert len(json.loads(capsys.readouterr().out)["experiments"]) == 1


def test_an_unknown_peer_is_one_line(dlbench: CliRunner, logs_run: Path) -> None:
    done = dlbench("definitions", str(logs_run), "--as", "tgi")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("dlbench: error: --as: ")
    assert "'tgi'" in line and "vllm" in line and "inference-perf" in line


def test_a_run_without_request_data_is_one_line(dlbench: CliRunner, tmp_path: Path) -> None:
    run = tmp_path / "fake_run"
    _write_log(run / "logs" / "f0.log", FAKE)
    before = _files(run)
    done = dlbench("definitions", str(run))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "results.request_data" in line
    assert "exp.framework=endpoint" in line and "exp.phase=generate" in line
    assert _files(run) == before


def test_damaged_request_data_is_one_line(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    run = tmp_path / "damaged"
    _write_log(run / "logs" / "e0.log", {**ENDPOINT, "results.request_data": {"rows": []}})
    assert main(["definitions", str(run)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "results.request_data is not a table of fields and rows" in line
