"""``dlbench compare`` and ``dlbench history`` on language-model serving records (an
endpoint swept over requests/s): configurations matched by load, the serving figures'
directions taken from the key table (a higher TTFT is slower, a higher goodput
faster), and a history whose TTFT rises; small runs built here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.measure.serving.records import RequestRecord, to_rows
from dlbench.report.compare.compare import compare_records
from dlbench.results.export import write_records

RATES = (1.0, 2.0, 4.0)


def _record(rate: float, run: int, ttft_p99: float, tokens: float) -> dict[str, Any]:
    """An ok endpoint record at ``rate`` requests/s, repeat ``run`` (``user.run``): its
    TTFT p99 and output tokens/s as given, the rest derived from them; one raw request
    in ``results.request_data``, as a log stores it."""
    request = RequestRecord(index=0, scheduled_ns=0, sent_ns=1000, chunk_ns=[5_000_000],
                            chunk_chars=[4])
    return {
        "exp.status": "ok", "exp.framework": "endpoint", "exp.model": "served:llama",
        "exp.phase": "generate", "exp.scenario": "server", "exp.target_qps": rate,
        "exp.prompt_tokens": 512, "exp.output_tokens": 128,
        "endpoint.url": "http://127.0.0.1:8000/v1", "endpoint.model": "llama",
        "endpoint.slo_ttft_ms": 500.0, "user.run": run, "sys.hostname": "node1",
        "results.ttft_p50": ttft_p99 / 2, "results.ttft_p99": ttft_p99,
        "results.tpot_p99": 25.0, "results.output_tokens_per_s": tokens,
        "results.throughput": tokens, "results.throughput_unit": "tokens/s",
        "results.goodput_tokens_per_s": tokens * 0.98, "results.slo_attainment": 0.99,
        "results.requests_failed": 0, "results.client_kept_up": True, "results.valid": True,
        "results.valid_reasons": [], "results.request_data": to_rows([request]),
    }


def _side(ttft_at_4: tuple[float, float], tokens_at_4: tuple[float, float]
          ) -> list[dict[str, Any]]:
    """Two repeats at each rate; at 1 and 2 requests/s the same in A and B (within 1 %),
    at 4 as given."""
    records = []
    for rate in RATES:
        for run, jitter in ((1, 0.995), (2, 1.005)):
            ttft = ttft_at_4[run - 1] if rate == 4 else 100.0 * rate * jitter
            tokens = tokens_at_4[run - 1] if rate == 4 else 120.0 * rate * jitter
            records.append(_record(rate, run, ttft, tokens))
    return records


A = _side(ttft_at_4=(300.0, 310.0), tokens_at_4=(470.0, 480.0))
#: B: at 4 requests/s, TTFT p99 up 50 %, output tokens/s down 20 %.
B = _side(ttft_at_4=(450.0, 465.0), tokens_at_4=(376.0, 384.0))


@pytest.mark.parametrize(("metric", "higher_better", "ratio"), [
    ("results.ttft_p99", False, 457.5 / 305.0),
    ("results.output_tokens_per_s", True, 380.0 / 475.0),
    ("results.goodput_tokens_per_s", True, 380.0 / 475.0),
])
def test_a_slower_server_is_slower_by_each_figure_at_the_load_where_it_is(
        metric: str, higher_better: bool, ratio: float) -> None:
    comparison = compare_records(A, B, metric=metric)
    assert comparison.higher_is_better is higher_better
    # One configuration per load; repeats (user.run) pooled.
    by_rate = {row.config["exp.target_qps"]: row for row in comparison.rows}
    assert sorted(by_rate) == list(RATES) and all(r.n_a == 2 for r in comparison.rows)
    assert by_rate[4.0].ratio == pytest.approx(ratio)
    assert by_rate[4.0].verdict == "slower"
    assert by_rate[1.0].verdict == by_rate[2.0].verdict == "unchanged"
    assert comparison.warnings == [] and comparison.has_regression()


def test_the_command_line_compares_two_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_records(A, a)
    write_records(B, b)
    assert main(["compare", str(a), str(b), "--metric", "results.ttft_p99",
                 "--fail-on-regression", "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [row["verdict"] for row in document["rows"]] == ["unchanged", "unchanged", "slower"]
    # SLO attainment is the same on both sides: nothing to flag.
    assert main(["compare", str(a), str(b), "--metric", "results.slo_attainment",
                 "--fail-on-regression"]) == 0
    capsys.readouterr()


def test_a_history_flags_a_rise_of_ttft_as_a_regression(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Ten nightly runs of one configuration (4 requests/s); TTFT p99 rises by half
    # from the seventh on, output tokens/s unchanged.
    store = str(tmp_path / "h.sqlite")
    for night in range(10):
        ttft = (450.0 if night >= 6 else 300.0) * (1 + 0.002 * (night % 3))
        source = tmp_path / f"night{night}.jsonl"
        record = {k: v for k, v in _record(4.0, 1, ttft, 480.0).items() if k != "user.run"}
        write_records([record], source)
        assert main(["history", "import", str(source), "--store", store, "--run-id",
                     f"n{night}", "--timestamp", f"2024-01-{night + 1:02d}T02:00:00Z"]) == 0
    assert capsys.readouterr().out.endswith("h.sqlite: 10 records\n")
    assert main(["history", "check", "--store", store, "--metric", "results.ttft_p99",
                 "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["new_regressions"] == 1
    (change,) = document["changes"]
    assert change["change"] == pytest.approx(0.5, abs=0.01)
    assert main(["history", "check", "--store", store, "--metric",
                 "results.output_tokens_per_s"]) == 0
