"""``exp.replica_batch=auto`` and ``exp.target_qps=auto`` against an endpoint, end to end:
the scripted server answers two requests at a time (``max_running``), each in a known
time, so the highest load that meets a TTFT SLO is known beforehand.

The script: a request that gets one of the two slots has its first text 20 ms later
and its last of 8 tokens 35 ms after that, so a slot serves a request every
SERVICE_MS = 55 ms. A request that has to wait for a slot waits a whole service
(closed loop) or a growing part of one (open loop), so its TTFT is far above the SLO
of 50 ms; one that does not is some 20 ms, far below. Hence:

- closed loop: 2 requests in flight pass, 3 do not (every third request waits 55 ms);
- open loop, arrivals at a constant rate: no request waits while the rate is at most
  2 / SERVICE_MS (36.4 requests/s); above it each request waits longer than the one
  before, and of the 12 requests of a probe the last waits over 30 ms (its TTFT over
  50 ms) from 2 / (SERVICE_MS - 6) = 40.8 requests/s. The peak lies between.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.endpoint_servers import scripted_server

pytest.importorskip("aiohttp", reason="the endpoint extra is not installed")

TTFT_MS, GAP_MS, OUTPUT, SLOTS = 20.0, 5.0, 8, 2
SERVICE_MS = TTFT_MS + (OUTPUT - 1) * GAP_MS
SCRIPT = {"models": {"q": {"ttft_ms": TTFT_MS, "gap_ms": GAP_MS, "max_running": SLOTS}}}
SEARCH = ["-P", "exp.framework=endpoint", "-P", "endpoint.model=q", "-P", "exp.phase=generate",
          "-P", "endpoint.slo_ttft_ms=50", "-P", "exp.scenario_min_queries=10",
          "-P", "exp.scenario_min_duration=0", "-P", f"exp.output_tokens={OUTPUT}",
          "-P", "exp.prompt_tokens=16", "-P", "endpoint.warmup_requests=2",
          # A busy test machine may wake the client late; the SLO's margins are wider.
          "-P", "endpoint.max_client_lag_ms=30"]


def search(url: str, out: Path, *flags: str) -> dict[str, Any]:
    """One search by the CLI, as a user runs it; its record."""
    proc = subprocess.run([sys.executable, "-m", "dlbench", "run", *SEARCH,
                           "-P", f"endpoint.url={url}", *flags, "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run([sys.executable, "-m", "dlbench", "query", "--input", str(out),
                           "--format", "json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    [record] = json.loads(proc.stdout)["data"]
    assert record["exp.status"] == "ok", record.get("exp.status_msg")
    return dict(record)


def test_the_highest_concurrency_and_rate_meeting_the_slo(tmp_path: Path) -> None:
    with scripted_server(SCRIPT) as url:
        closed = search(url, tmp_path / "closed", "-P", "exp.replica_batch=auto")
        open_ = search(url, tmp_path / "open", "-P", "exp.scenario=server",
                       "-P", "exp.target_qps=auto", "-P", "endpoint.arrival=constant",
                       "-P", "exp.qps_search_tolerance=0.05", "-P", "endpoint.search_repeats=1")

    # Concurrency: 1, 2, 4 (fails), 3 (fails), in each of the auto repeats, which agree
    # at once and so stop at the fewest.
    assert closed["exp.replica_batch"] == "auto"
    assert closed["results.peak_load_repeats"] == [2.0, 2.0, 2.0]
    assert closed["results.peak_load"] == 2.0 and closed["results.peak_load_ci95"] == 0.0
    assert closed["results.peak_load_unit"] == "requests"
    probes = closed["results.scenario_probes"]
    assert [p["concurrency"] for p in probes] == [1, 2, 4, 3] * 3
    assert [p["passed"] for p in probes] == [True, True, False, False] * 3
    # The record's figures are the last search's best probe's: 2 in flight, no wait.
    assert closed["results.search_load"] == 2.0 and closed["results.valid"] is True
    assert closed["results.ttft_p99"] < 50 and closed["results.slo_attainment"] == 1.0
    rows = closed["results.request_data"]["rows"]
    assert len(rows) == 2 + closed["results.requests"]  # that probe's requests only

    # Rate: from one stream's pace (1 / its latency, about 18 requests/s), doubled, then
    # bisected to within 5 %.
    capacity = SLOTS * 1000.0 / SERVICE_MS
    assert open_["exp.target_qps"] == "auto"
    assert 0.3 * capacity < open_["results.qps_search_start"] < 0.55 * capacity
    [peak] = open_["results.peak_load_repeats"]
    # Above the bound no timing lets the SLO hold; below, only a slower machine.
    assert 0.7 * capacity < peak < 1.15 * capacity
    assert open_["results.peak_load"] == peak == open_["results.qps_target"]
    assert open_["results.peak_load_ci95"] is None
    passed = [p["qps"] for p in open_["results.scenario_probes"] if p["passed"]]
    failed = [p["qps"] for p in open_["results.scenario_probes"] if not p["passed"]]
    assert max(passed) == peak and min(failed) - peak <= 0.05 * peak
