"""``compare`` and ``history check`` end to end on inputs that cannot support a
direction: records the worker flagged as contended, and too few runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import CliRunner

CONTENTION = ("cpu contention: other processes used 1.52 of the worker's 2 CPUs "
              "(worker 0.40)")


def _record(step_ms: float, contended: bool) -> dict[str, Any]:
    """A deep_mnist record as a run writes it: 20 batch times and the worker's
    stability verdict."""
    times = [step_ms * (1 + 0.01 * (i % 5 - 2)) for i in range(20)]
    mean = sum(times) / len(times)
    return {
        "exp.status": "ok", "exp.framework": "fake", "exp.model": "deep_mnist",
        "exp.phase": "training", "exp.replica_batch": 16, "exp.effective_batch": 16,
        "exp.id": "0123456789abcdef", "results.time": mean,
        "results.throughput": 16 * 1000 / mean, "results.time_data": times,
        "results.start_time": "2026-01-05T02:00:00+00:00",
        "results.stable": not contended,
        "results.unstable_reasons": [CONTENTION] if contended else [],
    }


def _write(path: Path, record: dict[str, Any]) -> str:
    path.write_text(json.dumps(record) + "\n")
    return str(path)


def test_a_contended_pair_is_inconclusive_with_the_reason(dlbench: CliRunner,
                                                          tmp_path: Path) -> None:
    # B's batches take 7x A's: "slower 0.14x, p < 0.0001", were B not contended.
    a = _write(tmp_path / "a.jsonl", _record(10.0, contended=False))
    b = _write(tmp_path / "b.jsonl", _record(70.0, contended=True))
    proc = dlbench("compare", a, b, "--fail-on-regression")
    assert proc.returncode == 0, proc.stderr  # nothing conclusive to fail on
    table = proc.stdout.splitlines()
    (row,) = [line for line in table if line.startswith("fake ")]
    assert row.split()[-3:] == ["B:", "contention", "inconclusive"]
    assert "faster: 0, slower: 0, unchanged: 0, inconclusive: 1" in table
    assert (f"inconclusive: exp.framework=fake, exp.model=deep_mnist, exp.phase=training: "
            f"B: contention "
            f"({CONTENTION})") in table

    gated = dlbench("compare", a, b, "--fail-on-inconclusive")
    assert gated.returncode == 1 and "inconclusive: 1" in gated.stdout, gated.stderr

    doc = json.loads(dlbench("compare", a, b, "--format", "json").stdout)
    (only,) = doc["rows"]
    assert only["verdict"] == "inconclusive" and only["flags_B"] == ["contention"]
    assert only["p_value"] < 0.0001  # the test is confident; the inputs are not


def test_a_clean_pair_keeps_its_direction_and_fails_the_gate(dlbench: CliRunner,
                                                             tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", _record(10.0, contended=False))
    b = _write(tmp_path / "b.jsonl", _record(70.0, contended=False))
    proc = dlbench("compare", a, b, "--fail-on-regression")
    assert proc.returncode == 1
    (row,) = [line for line in proc.stdout.splitlines() if line.startswith("fake ")]
    assert row.split()[-1] == "slower" and "flags" not in proc.stdout


def _import(dlbench: CliRunner, store: Path, source: str, day: int) -> None:
    proc = dlbench("history", "import", source, "--store", str(store), "--run-id",
                   f"night{day}", "--timestamp", f"2026-01-{day:02d}T02:00:00+00:00")
    assert proc.returncode == 0, proc.stderr


def test_history_check_says_two_runs_are_too_few(dlbench: CliRunner, tmp_path: Path) -> None:
    store = tmp_path / "history.sqlite"
    _import(dlbench, store, _write(tmp_path / "one.jsonl", _record(10.0, False)), 1)
    _import(dlbench, store, _write(tmp_path / "two.jsonl", _record(70.0, False)), 2)
    proc = dlbench("history", "check", "--store", str(store))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("inconclusive: fake deep_mnist training") and line.endswith(
        ": 2 runs; the change-point detector needs at least 8 (2 x --min-size 4) to tell "
        "a change") for line in lines), proc.stdout
    assert lines[-1].endswith("0 regressions, 0 new (in the last 10 runs), 1 inconclusive")

    gated = dlbench("history", "check", "--store", str(store), "--fail-on-inconclusive")
    assert gated.returncode == 1
    assert "dlbench: warning: --fail-on-inconclusive: 1 verdict(s) inconclusive" in gated.stderr

    doc = json.loads(dlbench("history", "check", "--store", str(store), "--min-size", "3",
                             "--format", "json").stdout)
    assert doc["min_runs"] == 6
    assert [item["why"] for item in doc["inconclusive"]] == [
        "2 runs; the change-point detector needs at least 6 (2 x --min-size 3) to tell a "
        "change"]


def test_fail_on_inconclusive_is_listed_among_the_flags(dlbench: CliRunner) -> None:
    proc = dlbench("help", "--flags")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("history"))
    check = next(i for i in range(start, len(lines)) if lines[i].split()[:1] == ["check"])
    block = " ".join(lines[check:next(i for i in range(check + 1, len(lines))
                                      if lines[i].split()[:1] == ["html"])])
    assert "--fail-on-inconclusive" in block and "--all" in block
