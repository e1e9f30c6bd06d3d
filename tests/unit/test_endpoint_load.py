"""When an endpoint run sends its requests (frameworks/endpoint/load.py), against a
fake server: an asyncio sender that answers after scripted delays.

Timing here is real, so only what the schedule fixes exactly (arrival times, which
request waited for which) and what the delays guarantee from below (a request sent
behind a slow one is sent at least that late) is asserted; nothing has an upper
bound on time.
"""

from __future__ import annotations

import asyncio
import doctest
import itertools
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dlbench.frameworks.endpoint import load
from dlbench.frameworks.endpoint.load import (
    OFFLINE_CAP,
    LoadPlan,
    LoadRun,
    TraceRow,
    arrival_times,
    auto_warmup_requests,
    open_arrivals,
    read_trace,
    run_load,
)
from dlbench.frameworks.endpoint.prompts import BLOCK_TOKENS, PromptSource
from dlbench.frameworks.endpoint.requests import Prompt
from dlbench.measure.loadgen.generator import poisson_schedule
from dlbench.measure.serving.records import RequestRecord

MS = 1_000_000


class FakeServer:
    """A ``Sender`` whose answers take ``service(index)`` seconds: three text events
    spread over that time. It records what it was sent and how many requests were
    in flight at most; ``fail`` indices answer with an error."""

    def __init__(self, t0_ns: int, service: Callable[[int], float] = lambda i: 0.002,
                 fail: frozenset[int] = frozenset(), crash_at: int = -1) -> None:
        self.t0_ns, self.service, self.fail, self.crash_at = t0_ns, service, fail, crash_at
        self.in_flight = self.max_in_flight = 0
        self.prompts: dict[int, Prompt] = {}
        self.warmup: dict[int, bool] = {}

    def now(self) -> int:
        return time.perf_counter_ns() - self.t0_ns

    async def send(self, prompt: Prompt, index: int, scheduled_ns: int,
                   warmup: bool = False) -> tuple[RequestRecord, str]:
        if index == self.crash_at:
            raise RuntimeError("a bug in the sender")
        self.prompts[index], self.warmup[index] = prompt, warmup
        record = RequestRecord(index=index, scheduled_ns=scheduled_ns, sent_ns=self.now(),
                               max_tokens=prompt.max_tokens, status=200)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            for _ in range(3):
                await asyncio.sleep(self.service(index) / 3)
                record.chunk_ns.append(self.now())
                record.chunk_chars.append(4)
        finally:
            self.in_flight -= 1
        record.done_ns = self.now()
        if index in self.fail:
            record.error, record.error_detail = "http", "scripted failure"
        return record, f"answer {index}"


def run(plan: LoadPlan, source: PromptSource | None = None, **fake: Any
        ) -> tuple[LoadRun, FakeServer]:
    """``plan`` run against a fake server; the run and the server."""
    source = source or PromptSource(prompt_tokens=8, output_tokens=4)
    t0 = time.perf_counter_ns()
    server = FakeServer(t0, **fake)
    return asyncio.run(run_load(server, plan, source, t0)), server


# --- arrival processes ---------------------------------------------------------------


def gaps(arrivals: np.ndarray) -> np.ndarray:
    return np.diff(arrivals)


def test_poisson_is_the_in_process_server_schedule() -> None:
    assert arrival_times(7.0, 500, "poisson", seed=3).tolist() == \
        poisson_schedule(7.0, 500, seed=3).tolist()


def test_arrivals_have_the_mean_rate_exactly() -> None:
    for arrival, burstiness in (("poisson", 1.0), ("gamma", 0.3), ("gamma", 5.0),
                                ("constant", 1.0)):
        arrivals = arrival_times(20.0, 1001, arrival, burstiness, seed=1)
        assert arrivals[0] == 0.0
        assert arrivals[-1] == pytest.approx(1000 / 20.0, rel=1e-12)
        assert np.all(gaps(arrivals) >= 0)


def test_gamma_gaps_vary_as_one_over_the_root_of_burstiness() -> None:
    for burstiness in (0.25, 1.0, 4.0):
        spread = gaps(arrival_times(10.0, 40_001, "gamma", burstiness, seed=5))
        cv = spread.std() / spread.mean()
        assert cv == pytest.approx(1 / math.sqrt(burstiness), rel=0.05)
    poisson = gaps(arrival_times(10.0, 40_001, "poisson", seed=5))
    assert poisson.std() / poisson.mean() == pytest.approx(1.0, rel=0.05)


def test_gamma_of_shape_one_is_the_poisson_schedule() -> None:
    assert arrival_times(3.0, 300, "gamma", 1.0, seed=9).tolist() == \
        pytest.approx(arrival_times(3.0, 300, "poisson", seed=9).tolist(), abs=1e-12)


def test_constant_arrivals_are_exact() -> None:
    assert arrival_times(8.0, 5, "constant").tolist() == [0.0, 0.125, 0.25, 0.375, 0.5]


def test_arrivals_are_seeded() -> None:
    for arrival, b in (("poisson", 1.0), ("gamma", 0.5)):
        first = arrival_times(5.0, 100, arrival, b, seed=11)
        assert first.tolist() == arrival_times(5.0, 100, arrival, b, seed=11).tolist()
        assert first.tolist() != arrival_times(5.0, 100, arrival, b, seed=12).tolist()


@pytest.mark.parametrize("args", [(0.0, 5, "poisson"), (1.0, 0, "poisson"),
                                  (1.0, 5, "uniform"), (float("inf"), 5, "constant")])
def test_bad_arrivals_are_refused(args: tuple[float, int, str]) -> None:
    with pytest.raises(ValueError):
        arrival_times(*args)


def test_the_open_schedule_is_long_enough_for_both_rules() -> None:
    plan = LoadPlan("open", rate=10.0, arrival="constant", min_requests=5,
                    min_duration_s=2.0, warmup_requests=3)
    arrivals = open_arrivals(plan)
    # 3 warm-up, then 21 measured: the 21st is 20 gaps of 0.1 s after the first.
    assert len(arrivals) == 24
    plan = LoadPlan("open", rate=10.0, min_requests=50, min_duration_s=1.0,
                    warmup_requests=2, seed=4)
    arrivals = open_arrivals(plan)
    assert len(arrivals) - 2 >= 50 and arrivals[-1] - arrivals[2] >= 1.0
    plan = LoadPlan("open", rate=50.0, min_requests=3, min_duration_s=2.0, seed=4)
    arrivals = open_arrivals(plan)
    assert arrivals[-1] - arrivals[0] >= 2.0


# --- closed loop -----------------------------------------------------------------------


def test_a_closed_loop_keeps_exactly_n_in_flight() -> None:
    plan = LoadPlan("closed", concurrency=4, min_requests=40, warmup_requests=4)
    result, server = run(plan, service=lambda i: 0.001 + 0.001 * (i % 3))
    records = result.records
    assert server.max_in_flight == 4
    assert [r.index for r in records] == list(range(44))  # the rule's exact count
    start = records[0].scheduled_ns
    assert all(r.scheduled_ns == start for r in records[:4])
    # Every later request was due the moment an earlier one ended: its slot freed.
    ends = {r.done_ns for r in records}
    assert all(r.scheduled_ns in ends for r in records[4:])
    assert all(r.sent_ns >= r.scheduled_ns for r in records)
    assert result.released_ns == [r.scheduled_ns for r in records]  # no slot to wait for


def test_warm_up_requests_are_marked_and_told_to_the_sender() -> None:
    result, server = run(LoadPlan("closed", concurrency=2, min_requests=6, warmup_requests=3))
    assert [r.warmup for r in result.records] == [True] * 3 + [False] * 6
    assert [server.warmup[i] for i in range(9)] == [True] * 3 + [False] * 6
    assert result.window_start_ns == result.records[3].scheduled_ns
    assert result.window_end_ns == max(r.scheduled_ns for r in result.records)


def test_a_closed_loop_stops_at_the_first_request_meeting_both_rules() -> None:
    plan = LoadPlan("closed", concurrency=2, min_requests=5, min_duration_s=0.03,
                    warmup_requests=2)
    result, _ = run(plan, service=lambda i: 0.004)
    measured = result.records[2:]
    start = measured[0].scheduled_ns

    def both(k: int) -> bool:  # the (k+1)-th measured request met both rules
        return k + 1 >= 5 and measured[k].scheduled_ns - start >= 0.03e9

    assert both(len(measured) - 1)
    assert not any(both(k) for k in range(len(measured) - 1))
    assert result.window_seconds >= 0.03


def test_progress_counts_completed_requests() -> None:
    seen: list[int] = []
    t0 = time.perf_counter_ns()
    asyncio.run(run_load(FakeServer(t0), LoadPlan("closed", concurrency=3, min_requests=7),
                         PromptSource(4, 4), t0, progress=seen.append))
    assert seen == list(range(1, 8))


def test_a_sender_bug_stops_the_run() -> None:
    with pytest.raises(RuntimeError, match="a bug in the sender"):
        run(LoadPlan("closed", concurrency=2, min_requests=10), crash_at=4)
    with pytest.raises(RuntimeError, match="a bug in the sender"):
        run(LoadPlan("open", rate=500.0, arrival="constant", min_requests=10), crash_at=2)


def test_the_client_cpu_and_wall_time_are_kept() -> None:
    result, _ = run(LoadPlan("closed", concurrency=1, min_requests=3))
    assert result.wall_s > 0 and result.client_cpu_s >= 0
    assert result.cpu_percent == pytest.approx(100 * result.client_cpu_s / result.wall_s)


# --- open loop, offline --------------------------------------------------------------------


def test_open_loop_requests_are_due_on_the_schedule() -> None:
    plan = LoadPlan("open", rate=400.0, arrival="poisson", min_requests=12, seed=2)
    result, _ = run(plan)
    arrivals = open_arrivals(plan)
    start = result.records[0].scheduled_ns
    assert [r.scheduled_ns - start for r in result.records] == \
        [round(a * 1e9) for a in arrivals]
    assert all(r.sent_ns >= r.scheduled_ns for r in result.records)
    assert result.window_end_ns == result.records[-1].scheduled_ns


def test_a_capped_open_loop_counts_the_wait_for_a_slot() -> None:
    # Arrivals every 5 ms, one slot, 20 ms answers: request k cannot be sent before
    # k answers have ended, so it waits at least k * 15 ms past its arrival, and its
    # latency runs from the arrival (no coordinated omission).
    plan = LoadPlan("open", concurrency=1, rate=200.0, arrival="constant", min_requests=8)
    result, server = run(plan, service=lambda i: 0.020)
    records = result.records
    assert server.max_in_flight == 1
    assert [r.scheduled_ns - records[0].scheduled_ns for r in records] == \
        [k * 5 * MS for k in range(8)]
    for k, record in enumerate(records):
        assert record.sent_ns - record.scheduled_ns >= k * 15 * MS - MS
    # Each waited for the slot the one before freed; the wait is told apart from the
    # client's own lag (sent - released).
    released = result.released_ns
    assert released[0] == records[0].scheduled_ns
    for before, after, at in zip(records, records[1:], released[1:], strict=False):
        assert at >= before.done_ns and after.sent_ns >= at > after.scheduled_ns


def test_offline_requests_are_all_due_at_the_start() -> None:
    plan = LoadPlan("offline", concurrency=3, min_requests=9, warmup_requests=3)
    result, server = run(plan)
    assert server.max_in_flight == 3
    assert len(result.records) == 12
    assert len({r.scheduled_ns for r in result.records}) == 1
    assert all(r.sent_ns >= at >= r.scheduled_ns
               for r, at in zip(result.records, result.released_ns, strict=True))
    # The window runs between the moments its requests were taken, not their due time.
    assert result.window_end_ns > result.window_start_ns >= result.records[0].scheduled_ns


# --- multi-turn ----------------------------------------------------------------------------


def test_each_turn_resends_the_conversation_when_the_last_one_ends() -> None:
    plan = LoadPlan("closed", concurrency=2, min_requests=12, turns=3)
    result, server = run(plan)
    by_session: dict[int, list[RequestRecord]] = {}
    for record in result.records:
        by_session.setdefault(record.session, []).append(record)
    assert len(result.records) == 12
    for session, records in by_session.items():
        assert [r.turn for r in records] == list(range(len(records)))
        for before, after in itertools.pairwise(records):
            assert after.scheduled_ns == before.done_ns
            messages = server.prompts[after.index].messages
            assert messages is not None
            previous = server.prompts[before.index].messages
            assert previous is not None
            assert list(messages[:-2]) == list(previous)
            assert dict(messages[-2]) == {"role": "assistant",
                                          "content": f"answer {before.index}"}
            assert messages[-1]["role"] == "user"
        first = server.prompts[records[0].index]
        assert first.session == session and first.messages is not None \
            and len(first.messages) == 1


def test_a_failed_turn_ends_its_conversation() -> None:
    plan = LoadPlan("closed", concurrency=1, min_requests=5, turns=3)
    result, _ = run(plan, fail=frozenset({1}))
    assert [(r.session, r.turn) for r in result.records] == [(0, 0), (0, 1), (1, 0), (1, 1),
                                                             (1, 2)]


def test_open_loop_conversations_start_on_the_schedule() -> None:
    plan = LoadPlan("open", rate=100.0, arrival="constant", min_requests=6, turns=2)
    result, _ = run(plan)
    firsts = [r for r in result.records if r.turn == 0]
    seconds = {r.session: r for r in result.records if r.turn == 1}
    assert len(firsts) == 3 and len(seconds) == 3
    start = firsts[0].scheduled_ns
    assert [r.scheduled_ns - start for r in firsts] == [0, 10 * MS, 20 * MS]
    for first in firsts:
        assert seconds[first.session].scheduled_ns == first.done_ns


# --- trace replay ---------------------------------------------------------------------------


def write(tmp_path: Path, lines: list[Any], name: str = "trace.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n"
                            for x in lines))
    return path


def test_a_trace_is_replayed_with_its_times_lengths_and_shared_blocks(tmp_path: Path) -> None:
    path = write(tmp_path, [
        {"timestamp": 1000, "input_length": 600, "output_length": 7, "hash_ids": [1, 2]},
        {"timestamp": 1010, "input_length": 700, "output_length": 9, "hash_ids": [1, 3]},
        "",
        {"timestamp": 1030, "input_length": 20, "output_length": 3},
    ])
    rows = read_trace(path)
    assert rows == (TraceRow(0.0, 600, 7, (1, 2)), TraceRow(0.01, 700, 9, (1, 3)),
                    TraceRow(0.03, 20, 3, ()))
    result, server = run(LoadPlan("trace", trace=rows))
    start = result.records[0].scheduled_ns
    assert [r.scheduled_ns - start for r in result.records] == [0, 10 * MS, 30 * MS]
    words = [server.prompts[i].text.split() for i in range(3)]
    assert [len(w) for w in words] == [600, 700, 20]
    assert [server.prompts[i].max_tokens for i in range(3)] == [7, 9, 3]
    assert words[0][:BLOCK_TOKENS] == words[1][:BLOCK_TOKENS]  # hash id 1, shared
    assert words[0][BLOCK_TOKENS:] != words[1][BLOCK_TOKENS:600]


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "line 2: not JSON"),
    ([1, 2], "line 2: not an object"),
    ({"timestamp": "soon", "input_length": 1, "output_length": 1}, "`timestamp`"),
    ({"timestamp": 5, "input_length": 0, "output_length": 1}, "`input_length`"),
    ({"timestamp": 5, "input_length": 2, "output_length": 1, "hash_ids": [-1]}, "`hash_ids`"),
    ({"timestamp": 1, "input_length": 2, "output_length": 1}, "line 2: `timestamp` 1 is before"),
])
def test_bad_traces_are_refused_naming_the_line(tmp_path: Path, line: Any, message: str) -> None:
    path = write(tmp_path, [{"timestamp": 2, "input_length": 3, "output_length": 4}, line])
    with pytest.raises(ValueError, match=r"endpoint\.trace") as error:
        read_trace(path)
    assert message in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(ValueError, match="holds no request"):
        read_trace(write(tmp_path, [""], "empty.jsonl"))


# --- plans -----------------------------------------------------------------------------------


PARAMS: dict[str, Any] = {
    "exp.scenario": "batch", "exp.replica_batch": 8, "exp.target_qps": 0.0,
    "exp.scenario_min_queries": "auto", "exp.scenario_min_duration": 10.0,
    "exp.scenario_seed": 5, "endpoint.max_concurrency": 0, "endpoint.arrival": "gamma",
    "endpoint.burstiness": 0.5, "endpoint.warmup_requests": "auto", "endpoint.turns": 1,
    "endpoint.trace": "", "endpoint.seed": 9,
}


def test_plans_follow_the_scenario(tmp_path: Path) -> None:
    batch = LoadPlan.from_params(PARAMS)
    assert (batch.mode, batch.concurrency, batch.warmup_requests, batch.min_requests,
            batch.min_duration_s, batch.seed) == ("closed", 8, 8, 100, 10.0, 5)
    single = LoadPlan.from_params({**PARAMS, "exp.scenario": "single_stream"})
    assert (single.mode, single.concurrency, single.warmup_requests) == ("closed", 1, 1)
    server = LoadPlan.from_params({**PARAMS, "exp.scenario": "server", "exp.target_qps": 2.5,
                                   "endpoint.max_concurrency": 16,
                                   "exp.scenario_min_queries": 30})
    assert (server.mode, server.rate, server.concurrency, server.warmup_requests,
            server.min_requests, server.arrival, server.burstiness) == \
        ("open", 2.5, 16, 3, 30, "gamma", 0.5)
    offline = LoadPlan.from_params({**PARAMS, "exp.scenario": "offline",
                                    "endpoint.warmup_requests": 0})
    assert (offline.mode, offline.concurrency, offline.warmup_requests) == \
        ("offline", OFFLINE_CAP, 0)
    path = write(tmp_path, [{"timestamp": t, "input_length": 4, "output_length": 2}
                            for t in (0, 500, 900, 1500)])
    trace = LoadPlan.from_params({**PARAMS, "exp.scenario": "server",
                                  "endpoint.trace": str(path)})
    assert (trace.mode, len(trace.trace), trace.warmup_requests) == ("trace", 4, 3)


def test_auto_warm_up() -> None:
    assert auto_warmup_requests("closed", 4, 0.0) == 4
    assert auto_warmup_requests("offline", 256, 0.0) == 256
    assert auto_warmup_requests("open", 0, 0.2) == 1
    assert auto_warmup_requests("open", 0, 7.5) == 8
    rows = [TraceRow(t, 1, 1) for t in (0.0, 0.5, 0.99, 1.0)]
    assert auto_warmup_requests("trace", 0, 0.0, rows) == 3
    assert auto_warmup_requests("trace", 0, 0.0, rows[:3]) == 2  # one is left to measure


@pytest.mark.parametrize("kwargs", [
    {"mode": "burst"}, {"mode": "closed", "concurrency": 0}, {"mode": "open", "rate": 0.0},
    {"mode": "closed", "min_requests": 0}, {"mode": "trace"},
    {"mode": "trace", "trace": (TraceRow(0.0, 1, 1),), "warmup_requests": 1},
    {"mode": "open", "rate": 1.0, "arrival": "gamma", "burstiness": 0.0},
])
def test_impossible_plans_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        LoadPlan(**kwargs)


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(load).failed == 0
