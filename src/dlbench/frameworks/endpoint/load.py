"""When an endpoint run's requests are sent: the load generator of
``exp.framework=endpoint``.

A run is one of four kinds (:class:`LoadPlan`):

- ``closed`` (``exp.scenario=batch``, ``single_stream``): ``concurrency`` requests in
  flight; the moment one ends, the next is due, and that moment is its scheduled time.
- ``open`` (``server``): requests arrive on a schedule (:func:`arrival_times`), each at
  its time whatever the server is doing; with a cap (``endpoint.max_concurrency``) a
  request may wait for a free slot, and its latency still runs from its scheduled
  arrival, so a slow server cannot hide its queue (no coordinated omission).
- ``offline``: every request due at the start (vLLM's ``--request-rate inf``), at most
  ``concurrency`` in flight; the latency of a request includes its wait for a slot.
- ``trace`` (``endpoint.trace``, whatever the scenario): a recorded trace's arrivals
  and lengths replayed (:func:`read_trace`), at most ``concurrency`` in flight (0: no
  cap).

Times are integer nanoseconds of ``time.perf_counter_ns`` counted from the run's
``t0``, as in :class:`~dlbench.measure.serving.records.RequestRecord`. The schedule is
kept with absolute deadlines: the issuer sleeps until about a millisecond before a
request is due (the event loop's timers are that coarse), then yields to the loop
until it is, so the client's own lag stays small and is measured, never hidden. Where
a request may wait for a slot (a cap), the moment it got one is kept apart
(:attr:`LoadRun.released_ns`): ``released - scheduled`` is the wait the cap chose,
``sent - released`` the client's own lag.

**Run length.** As LoadGen's: requests are issued until both ``min_requests`` requests
after the warm-up have been issued and the last one is scheduled at least
``min_duration_s`` after the first of them; then no more are issued and the run waits
for those in flight (the cool-down). An open loop's schedule is generated long enough
for both; a trace is replayed whole.

**Warm-up.** The first ``warmup_requests`` requests in issue order are sent and kept,
marked ``warmup``, and left out of every figure. :func:`auto_warmup_requests` is
``endpoint.warmup_requests=auto``.

**Steady-state window.** From the scheduled time of the first request after the
warm-up to the scheduled time of the last request issued (:attr:`LoadRun.window_start_ns`,
:attr:`LoadRun.window_end_ns`): after it the load drains. In ``offline`` every request
is scheduled at the start, so there the window runs between the moments the same two
requests were taken from the queue instead.

**Multi-turn** (``turns`` > 1): a session's next turn is due when its previous turn
ends, and resends the whole conversation (:class:`~.prompts.Conversation`); a turn
that fails ends its session. In a closed loop each slot runs one session after
another; in an open loop the schedule gives the sessions' starts (``rate`` is new
conversations per second).
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dlbench.frameworks.endpoint.prompts import PromptSource
from dlbench.frameworks.endpoint.requests import Prompt, Sender
from dlbench.measure.loadgen.generator import poisson_schedule
from dlbench.measure.serving.records import RequestRecord
from dlbench.textsafe import safe_text

__all__ = ["ARRIVALS", "AUTO_MIN_REQUESTS", "MODES", "OFFLINE_CAP", "LoadPlan", "LoadRun",
           "TraceRow", "arrival_times", "auto_warmup_requests", "open_arrivals", "read_trace",
           "run_load"]

#: The kinds of run (:class:`LoadPlan`'s ``mode``).
MODES = ("closed", "open", "offline", "trace")
#: Arrival processes of an open loop (``endpoint.arrival``).
ARRIVALS = ("poisson", "gamma", "constant")
#: Requests in flight in ``offline`` when ``endpoint.max_concurrency`` is 0.
OFFLINE_CAP = 256
#: ``exp.scenario_min_queries=auto`` for endpoints: LoadGen's minimum.
AUTO_MIN_REQUESTS = 100
#: How early the issuer stops sleeping and starts yielding: the event loop's timers
#: wake up to a millisecond late (epoll counts whole milliseconds).
_YIELD_NS = 1_500_000
#: A closed loop's prompts made before it starts, at most.
_PREPARED = 100_000
#: How often a closed loop's prompt maker looks whether it is far enough ahead.
_REFILL_SECONDS = 0.005
_NS = 1_000_000_000


def arrival_times(rate: float, count: int, arrival: str = "poisson", burstiness: float = 1.0,
                  seed: int = 0) -> np.ndarray:
    """``count`` arrival times (s, the first at 0) of an open loop at ``rate`` requests
    per second:

    - ``poisson``: exponential gaps of mean 1/rate: the in-process server scenario's
      :func:`~dlbench.measure.loadgen.generator.poisson_schedule`, so one seed gives
      both paths the same schedule;
    - ``gamma``: gaps of a gamma distribution of shape ``burstiness`` and scale
      1/(rate × burstiness), vLLM's ``--burstiness``: mean 1/rate, coefficient of
      variation 1/sqrt(burstiness) (1 is Poisson, and the very same schedule);
    - ``constant``: gaps of exactly 1/rate.

    Random gaps are scaled by one factor so that the last arrival is at exactly
    (count - 1)/rate, as ``poisson_schedule`` and vLLM do (vLLM also waits one gap
    before its first request; here the first is due at once).

    >>> arrival_times(4.0, 3, "constant").tolist()
    [0.0, 0.25, 0.5]
    """
    if not rate > 0 or not math.isfinite(rate):
        raise ValueError(f"an arrival rate must be a positive number, not {rate}")
    if count < 1:
        raise ValueError("a schedule needs at least one request")
    if arrival == "poisson":
        return poisson_schedule(rate, count, seed)
    if arrival == "constant":
        return np.arange(count, dtype=float) / rate
    if arrival != "gamma":
        raise ValueError(f"endpoint.arrival={arrival!r} is not one of {', '.join(ARRIVALS)}")
    if not burstiness > 0:
        raise ValueError(f"endpoint.burstiness must be above 0, not {burstiness}")
    gaps = np.random.default_rng(seed).gamma(burstiness, 1.0 / (rate * burstiness),
                                             size=count - 1)
    arrivals = np.concatenate(([0.0], np.cumsum(gaps)))
    if count > 1:
        arrivals *= ((count - 1) / rate) / arrivals[-1]
        arrivals[-1] = (count - 1) / rate  # exactly, not to the last rounding
    return arrivals


@dataclass(frozen=True)
class TraceRow:
    """One request of a replayed trace: when it arrives (s after the trace's first),
    its prompt and output lengths, and the hash ids of its prompt's shared blocks."""

    at_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()


def read_trace(path: str | Path) -> tuple[TraceRow, ...]:
    """The requests of a Mooncake-style JSONL trace (``endpoint.trace``): one object a
    line with ``timestamp`` (ms, not decreasing), ``input_length`` and
    ``output_length`` (tokens), and optional ``hash_ids`` (the prompt's blocks of 512
    tokens). ValueError naming endpoint.trace and the line when it cannot be used."""
    shown = safe_text(str(path))
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"endpoint.trace: {shown} cannot be read as UTF-8 text "
                         f"({type(error).__name__})") from error
    rows: list[TraceRow] = []
    first = previous = 0.0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"endpoint.trace: {shown} line {number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: not JSON ({error.msg})") from error
        if not isinstance(item, dict):
            raise ValueError(f"{where}: not an object with timestamp, input_length and "
                             f"output_length")
        stamp = item.get("timestamp")
        if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) \
                or not math.isfinite(stamp):
            raise ValueError(f"{where}: `timestamp` must be a number of milliseconds")
        prompt_len, output_len = item.get("input_length"), item.get("output_length")
        if not (type(prompt_len) is int and type(output_len) is int
                and prompt_len >= 1 and output_len >= 1):
            raise ValueError(f"{where}: `input_length` and `output_length` must be whole "
                             f"numbers >= 1")
        hashes = item.get("hash_ids", [])
        if not (isinstance(hashes, list) and all(type(h) is int and h >= 0 for h in hashes)):
            raise ValueError(f"{where}: `hash_ids` must be a list of whole numbers >= 0")
        if not rows:
            first = previous = float(stamp)
        if stamp < previous:
            raise ValueError(f"{where}: `timestamp` {stamp} is before the line above's "
                             f"({previous}); the trace must be in time order")
        previous = float(stamp)
        rows.append(TraceRow((stamp - first) / 1000.0, prompt_len, output_len, tuple(hashes)))
    if not rows:
        raise ValueError(f"endpoint.trace: {shown} holds no request")
    return tuple(rows)


@dataclass(frozen=True)
class LoadPlan:
    """How one run sends its requests (see the module's description of each mode)."""

    #: ``closed``, ``open``, ``offline`` or ``trace``.
    mode: str
    #: closed: requests in flight; offline: in flight at most; open and trace: the cap
    #: on requests in flight, 0 for none.
    concurrency: int = 1
    #: open: mean arrivals per second (requests, or conversations when turns > 1).
    rate: float = 0.0
    arrival: str = "poisson"
    burstiness: float = 1.0
    min_requests: int = AUTO_MIN_REQUESTS
    min_duration_s: float = 0.0
    warmup_requests: int = 0
    #: Seed of the open loop's arrival schedule.
    seed: int = 0
    #: Turns of each conversation; 1: independent requests.
    turns: int = 1
    trace: tuple[TraceRow, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"a load plan's mode is one of {', '.join(MODES)}, "
                             f"not {self.mode!r}")
        if self.mode in ("closed", "offline") and self.concurrency < 1:
            raise ValueError(f"a {self.mode} run needs at least one request in flight")
        if self.concurrency < 0 or self.min_requests < 1 or self.warmup_requests < 0 \
                or self.turns < 1 or not self.min_duration_s >= 0:
            raise ValueError("a load plan needs concurrency >= 0, min_requests >= 1, "
                             "warmup_requests >= 0, turns >= 1 and min_duration_s >= 0")
        if self.mode == "open":
            arrival_times(self.rate, 1, self.arrival, self.burstiness)  # checks them
        if self.mode == "trace":
            if not self.trace or self.turns != 1:
                raise ValueError("a trace run needs the trace's rows and one turn")
            if self.warmup_requests >= len(self.trace):
                raise ValueError(f"endpoint.warmup_requests={self.warmup_requests} leaves "
                                 f"none of the trace's {len(self.trace)} requests to measure")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> LoadPlan:
        """The plan of an endpoint experiment: ``exp.scenario`` (batch,
        single_stream, server, offline) gives the mode, ``endpoint.trace`` replaces it
        with a replay; ``exp.scenario_min_queries=auto`` is :data:`AUTO_MIN_REQUESTS`,
        ``endpoint.warmup_requests=auto`` is :func:`auto_warmup_requests`."""
        scenario = params["exp.scenario"]
        cap = int(params.get("endpoint.max_concurrency", 0))
        rate = 0.0
        trace: tuple[TraceRow, ...] = ()
        if params.get("endpoint.trace"):
            mode, trace = "trace", read_trace(params["endpoint.trace"])
        elif scenario == "server":
            mode, rate = "open", float(params["exp.target_qps"])
        elif scenario == "offline":
            mode, cap = "offline", cap or OFFLINE_CAP
        elif scenario in ("batch", "single_stream"):
            mode = "closed"
            cap = 1 if scenario == "single_stream" else int(params["exp.replica_batch"])
        else:
            raise ValueError(f"exp.scenario={scenario!r} is not run against an endpoint; "
                             f"accepted: batch, single_stream, server, offline")
        min_requests = params.get("exp.scenario_min_queries", "auto")
        warmup = params.get("endpoint.warmup_requests", "auto")
        if warmup == "auto":
            warmup = auto_warmup_requests(mode, cap, rate, trace)
        return cls(mode=mode, concurrency=cap, rate=rate,
                   arrival=str(params.get("endpoint.arrival", "poisson")),
                   burstiness=float(params.get("endpoint.burstiness", 1.0)),
                   min_requests=AUTO_MIN_REQUESTS if min_requests == "auto"
                   else int(min_requests),
                   min_duration_s=float(params.get("exp.scenario_min_duration", 0.0)),
                   warmup_requests=int(warmup), seed=int(params.get("exp.scenario_seed", 0)),
                   turns=int(params.get("endpoint.turns", 1)), trace=trace)


def auto_warmup_requests(mode: str, concurrency: int, rate: float,
                         trace: Sequence[TraceRow] = ()) -> int:
    """``endpoint.warmup_requests=auto``: a closed loop's (and offline's) concurrency,
    one second of an open loop's arrivals (at least 1), and the requests of a trace's
    first second (at least 1, and fewer than the trace).

    >>> auto_warmup_requests("closed", 8, 0.0), auto_warmup_requests("open", 0, 2.5)
    (8, 3)
    """
    if mode in ("closed", "offline"):
        return concurrency
    if mode == "trace":
        first_second = sum(1 for row in trace if row.at_s < 1.0)
        return max(1, min(first_second, len(trace) - 1)) if len(trace) > 1 else 0
    return max(1, math.ceil(rate))


def open_arrivals(plan: LoadPlan) -> np.ndarray:
    """The open loop's arrivals (s from its start), long enough for the run-length
    rule: at least ``min_requests`` requests after the warm-up, the last arriving
    ``min_duration_s`` or more after the first of them. With several turns the
    arrivals are conversations, counted as ``turns`` requests each."""
    warm = math.ceil(plan.warmup_requests / plan.turns)
    count = warm + max(math.ceil(plan.min_requests / plan.turns),
                       math.ceil(plan.min_duration_s * plan.rate) + 1)
    while True:
        arrivals = arrival_times(plan.rate, count, plan.arrival, plan.burstiness, plan.seed)
        span = float(arrivals[-1] - arrivals[min(warm, count - 1)])
        if span >= plan.min_duration_s - 1e-9:  # not a rounding's worth over
            return arrivals
        count += max(1, math.ceil((plan.min_duration_s - span) * plan.rate))


@dataclass
class LoadRun:
    """What a run sent: every request's record in issue order (warm-up included), the
    client's CPU time and the run's wall time, and the steady-state window."""

    records: list[RequestRecord]
    #: CPU seconds of the client's thread (the event loop's) over the run.
    client_cpu_s: float
    wall_s: float
    #: The steady-state window, ns from t0.
    window_start_ns: int
    window_end_ns: int
    #: When each request (in issue order) got its slot and was handed to the sender, ns
    #: from t0: its scheduled time, unless it waited for a slot under a cap (capped
    #: open loops, offline). ``sent - released`` is the client's own lag;
    #: ``released - scheduled`` the wait for a slot, which the user's cap chose.
    released_ns: list[int] = field(default_factory=list)

    @property
    def window_seconds(self) -> float:
        """The steady-state window's length, s."""
        return (self.window_end_ns - self.window_start_ns) / _NS

    @property
    def cpu_percent(self) -> float:
        """The client thread's CPU use over the run, % of one core."""
        return 100.0 * self.client_cpu_s / self.wall_s if self.wall_s > 0 else 0.0


async def run_load(sender: Sender, plan: LoadPlan, prompts: PromptSource, t0_ns: int,
                   progress: Callable[[int], None] | None = None) -> LoadRun:
    """Send ``plan``'s requests through ``sender``, with ``prompts``' prompts, timed
    from ``t0_ns`` (``time.perf_counter_ns()`` at the run's start); ``progress`` is
    told the number of requests completed after each one."""
    run = _Run(sender, plan, prompts, t0_ns, progress)
    # An open loop's prompts are made first, outside the run's time and CPU: their
    # making must neither delay an arrival nor count as the client falling behind.
    run.prepare()
    # The thread's CPU, not the process's: the event loop is one thread, and it is
    # that thread which falls behind when it is busy (the worker's resource monitor,
    # another thread, would count in the process's time).
    cpu, wall = time.thread_time(), time.perf_counter_ns()
    if plan.mode in ("closed", "offline"):
        refill = asyncio.ensure_future(run.refill()) if plan.turns == 1 else None
        try:
            await _all(run.slot() for _ in range(plan.concurrency))
        finally:
            if refill is not None:
                refill.cancel()
                await asyncio.gather(refill, return_exceptions=True)
    else:
        await run.open_loop()
    cpu, wall = time.thread_time() - cpu, time.perf_counter_ns() - wall
    records = [run.records[i] for i in range(len(run.issued_ns))]
    released = [run.released[i] for i in range(len(run.issued_ns))]
    return LoadRun(records, cpu, wall / _NS, *run.window(), released_ns=released)


async def _all(coroutines: Iterable[Awaitable[None]]) -> None:
    """Run the coroutines together; on the first failure cancel the rest and raise."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class _Run:
    """One run's state: the issue counter, the stop rule, and the records."""

    def __init__(self, sender: Sender, plan: LoadPlan, prompts: PromptSource, t0_ns: int,
                 progress: Callable[[int], None] | None) -> None:
        self.sender, self.plan, self.prompts = sender, plan, prompts
        self.t0_ns, self.progress = t0_ns, progress
        self.start_ns = self.now()
        #: When each request was issued (its index's), ns from t0.
        self.issued_ns: list[int] = []
        self.records: dict[int, RequestRecord] = {}
        self.released: dict[int, int] = {}
        self.sessions = 0
        self.stopped = False
        self.completed = 0
        #: An open loop's arrivals (s from the start) and prompts (:meth:`prepare`).
        self.arrivals: list[float] = []
        self.ready: list[Prompt | None] = []

    def now(self) -> int:
        """ns from t0."""
        return time.perf_counter_ns() - self.t0_ns

    def take(self, issued_ns: int, rule: bool = True) -> int | None:
        """The next request's index, issued at ``issued_ns``; None once the run-length
        rule (checked when ``rule``) has stopped issuing."""
        if self.stopped:
            return None
        index = len(self.issued_ns)
        self.issued_ns.append(issued_ns)
        warm = self.plan.warmup_requests
        if rule and index >= warm:
            counted = index - warm + 1
            lasted = issued_ns - self.issued_ns[warm]
            if counted >= self.plan.min_requests and lasted >= self.plan.min_duration_s * _NS:
                self.stopped = True
        return index

    def window(self) -> tuple[int, int]:
        """The steady-state window: the first measured request's issue to the last's."""
        warm = min(self.plan.warmup_requests, len(self.issued_ns) - 1)
        return self.issued_ns[warm], max(self.issued_ns)

    async def send(self, prompt: Prompt, index: int, scheduled_ns: int, released_ns: int
                   ) -> tuple[RequestRecord, str, int]:
        """Send one request, which got its slot at ``released_ns``; its record (kept
        under ``index``), its answer, and when its slot freed: the end of its answer,
        or now when it has none."""
        warmup = index < self.plan.warmup_requests
        self.released[index] = released_ns
        record, answer = await self.sender.send(prompt, index, scheduled_ns, warmup)
        # What the load decided is the load's to record, whatever the sender wrote.
        record.index, record.warmup = index, warmup
        record.released_ns = None if released_ns == scheduled_ns else released_ns
        record.session, record.turn = prompt.session, prompt.turn
        self.records[index] = record
        self.completed += 1
        if self.progress is not None:
            self.progress(self.completed)
        now = self.now()
        ended = record.done_ns if record.done_ns is not None and record.done_ns <= now else now
        return record, answer, ended

    async def slot(self) -> None:
        """One slot of a closed loop (or of offline): a request, and the next the moment
        it ends, until the run-length rule stops them; sessions one after another
        when there are several turns."""
        offline = self.plan.mode == "offline"
        free_ns = self.start_ns
        while True:
            session = self.sessions
            self.sessions += 1
            talk = self.prompts.conversation(session, self.plan.turns) \
                if self.plan.turns > 1 else None
            for turn in range(self.plan.turns):
                # Offline: every first turn is due at the start; its issue is when its
                # slot takes it (the window's clock there).
                first_offline = offline and turn == 0
                issued = self.now() if first_offline else free_ns
                index = self.take(issued)
                if index is None:
                    return
                scheduled = self.start_ns if first_offline else free_ns
                prompt = talk.next_prompt() if talk is not None else self._prompt(index)
                record, answer, free_ns = await self.send(prompt, index, scheduled, issued)
                if talk is not None:
                    if not record.ok:
                        break  # a conversation cannot go on without its answer
                    talk.add_answer(answer)

    def _prompt(self, index: int) -> Prompt:
        """Request ``index``'s prompt: made beforehand, or now (its making then counts
        in the client's lag, where it belongs)."""
        ready = self.ready[index] if index < len(self.ready) else None
        return ready if ready is not None else self.prompts.prompt(index)

    async def refill(self) -> None:
        """A closed loop's prompts beyond those :meth:`prepare` made, made while requests
        are in flight, one at a time, twice the concurrency ahead of the requests
        issued. Made when a slot frees, they would delay its request; and a closed loop's
        slots free together (their answers come at the same pace), so the last to free
        would wait for every other's making: with 32k-token prompts, tens of ms."""
        ahead = 2 * self.plan.concurrency
        while not self.stopped:
            issued = len(self.issued_ns)
            if len(self.ready) < issued:  # fallen behind: those are made by their slots
                self.ready.extend([None] * (issued - len(self.ready)))
            if len(self.ready) < issued + ahead:
                self.ready.append(self.prompts.prompt(len(self.ready)))
                await asyncio.sleep(0)  # let what came in meanwhile be stamped
            else:
                await asyncio.sleep(_REFILL_SECONDS)

    def prepare(self) -> None:
        """An open loop's or a trace's arrivals (s from the start) and prompts (None
        for a conversation's, made turn by turn); a closed loop's first prompts, as
        many as it will surely send (up to :data:`_PREPARED`)."""
        plan = self.plan
        if plan.mode in ("closed", "offline") and plan.turns == 1:
            count = min(plan.warmup_requests + plan.min_requests, _PREPARED)
            self.ready = [self.prompts.prompt(i) for i in range(count)]
        elif plan.mode == "trace":
            self.arrivals = [row.at_s for row in plan.trace]
            self.ready = [
                self.prompts.trace_prompt(i, row.input_tokens, row.output_tokens, row.hash_ids)
                for i, row in enumerate(plan.trace)]
        elif plan.mode == "open":
            self.arrivals = open_arrivals(plan).tolist()
            self.ready = [self.prompts.prompt(i) if plan.turns == 1 else None
                          for i in range(len(self.arrivals))]
        self.start_ns = self.now()

    async def open_loop(self) -> None:
        """An open loop or a trace: each request (or conversation) started at its
        arrival, waiting for a slot under the cap with its latency already running."""
        cap = asyncio.Semaphore(self.plan.concurrency) if self.plan.concurrency > 0 else None
        tasks: list[asyncio.Task[None]] = []
        failures: list[BaseException] = []

        def check(task: asyncio.Task[None]) -> None:
            error = None if task.cancelled() else task.exception()
            if error is not None:
                failures.append(error)

        try:
            for number, (at_s, prompt) in enumerate(zip(self.arrivals, self.ready,
                                                        strict=True)):
                due = self.start_ns + round(at_s * _NS)
                await self._until(due)
                if failures:
                    raise failures[0]  # a sender's bug: the run stops with its traceback
                request = self._request(prompt, due, cap) if prompt is not None \
                    else self._session(number, due, cap)
                tasks.append(asyncio.ensure_future(request))
                tasks[-1].add_done_callback(check)
            await _all(tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _request(self, prompt: Prompt, due: int, cap: asyncio.Semaphore | None) -> None:
        """One request of an open loop, issued at its arrival ``due``."""
        index = self.take(due, rule=False)
        assert index is not None
        if cap is None:
            await self.send(prompt, index, due, due)
            return
        waits = cap.locked()
        async with cap:
            await self.send(prompt, index, due, self.now() if waits else due)

    async def _session(self, session: int, due: int, cap: asyncio.Semaphore | None) -> None:
        """One conversation of an open loop: its first turn at its arrival ``due``, each
        next turn the moment the one before ends."""
        talk = self.prompts.conversation(session, self.plan.turns)
        for _ in range(self.plan.turns):
            index = self.take(due, rule=False)
            assert index is not None
            prompt = talk.next_prompt()
            if cap is None:
                record, answer, due = await self.send(prompt, index, due, due)
            else:
                waits = cap.locked()
                async with cap:
                    released = self.now() if waits else due
                    record, answer, due = await self.send(prompt, index, due, released)
            if not record.ok:
                return
            talk.add_answer(answer)

    async def _until(self, due_ns: int) -> None:
        """Return at ``due_ns`` (ns from t0): sleep until about a millisecond before,
        then yield to the event loop until it is."""
        while True:
            left = due_ns - self.now()
            if left <= 0:
                return
            await asyncio.sleep((left - _YIELD_NS) / _NS if left > _YIELD_NS else 0)
