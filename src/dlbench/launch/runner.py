"""Run a planned sweep: one fresh worker process per experiment, one after another.

For each experiment the runner writes the resolved parameters to
``<out>/experiments/<exp.id>.json``, starts the worker with its output going to the
experiment's log, waits for it under ``exp.timeout``, turns the log into a record and
commits that record to the run directory's store in one transaction. Whatever happens
to one worker (an exception, a crash, a signal, a hang, a NaN loss) marks only its
own experiment, and the sweep goes on. Running the same sweep into the same run
directory resumes it, following ``exp.rerun``.

With ``exp.repeat=N`` the experiment is measured by N independent worker processes,
one after another (as pyperf does: a fresh process is a fresh draw of memory layout,
clocks and placement). Process k writes ``<exp.log_file>.k`` (outside the ``*.log``
pattern that ``dlbench parse`` reads in a directory); ``exp.log_file`` then gets the
one combined record (:func:`~dlbench.measure.stats.combine_repeats`) and the store
gets that record. The first process that does not end ok ends the experiment, with
its status and its reason.

With ``exp.parallel_jobs=N`` the experiment is N copies run at the same time, each
on its own share of the node (:mod:`dlbench.launch.partition`); ``exp.log_file``
and the store get the one combined record, whose throughput is the copies' sum.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from dlbench.config.registry import varying_parameters
from dlbench.launch import partition
from dlbench.launch.command import worker_argv, worker_env
from dlbench.launch.local import kill_worker, start_worker
from dlbench.measure.stability import repeat_verdict
from dlbench.measure.stats import combine_repeats
from dlbench.results.logfile import LINE_RE, LogWriter
from dlbench.results.parser import parse_log
from dlbench.results.store import Store

#: Lines of the worker's own output quoted in ``exp.status_msg`` after a crash.
OUTPUT_TAIL_LINES = 3

Reporter = Callable[[str], None]


@dataclass
class Outcome:
    """What became of one experiment of the sweep."""

    record: dict[str, Any]
    ran: bool  # False when an earlier result was kept (exp.rerun)
    seconds: float = 0.0

    @property
    def status(self) -> str:
        """The experiment's ``exp.status``."""
        return str(self.record.get("exp.status", ""))


@dataclass
class SweepResult:
    """Every experiment's outcome, in plan order; ``interrupted`` after Ctrl-C/SIGTERM."""

    outcomes: list[Outcome] = field(default_factory=list)
    interrupted: bool = False

    @property
    def failed(self) -> list[Outcome]:
        """Outcomes that did not end ok."""
        return [o for o in self.outcomes if o.status != "ok"]


def should_run(experiment: Mapping[str, Any], earlier: Mapping[str, Any] | None) -> bool:
    """Whether to run ``experiment`` given the record an earlier run left (or None),
    following its ``exp.rerun`` policy."""
    policy = experiment["exp.rerun"]
    if earlier is None or policy == "always":
        return True
    if policy == "never":
        return False
    return earlier.get("exp.status") != "ok"  # onfail


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _output_tail(log_path: Path, lines: int = OUTPUT_TAIL_LINES) -> str:
    """The last lines of the worker's own output (not ``__key__=`` lines)."""
    try:
        text = log_path.read_bytes()[-64_000:].decode("utf-8", errors="replace")
    except OSError:
        return ""
    own = [ln.strip() for ln in text.splitlines() if ln.strip() and not LINE_RE.match(ln)]
    return " | ".join(own[-lines:])


def rank_logs(log_path: Path) -> list[Path]:
    """The logs of a data-parallel run's other replicas, ``<log>.rank<N>``, by rank."""
    found = [(int(p.name.rsplit(".rank", 1)[1]), p)
             for p in log_path.parent.glob(f"{log_path.name}.rank*")
             if p.name.rsplit(".rank", 1)[1].isdigit()]
    return [p for _, p in sorted(found)]


def _rank_failure(log_path: Path, main: Mapping[str, Any]) -> str | None:
    """``rank N: <its reason>`` for the replica that failed first, from the logs of a
    data-parallel run (``main``: what the first replica's log parsed to). The first
    failure is the cause: the replicas still running fail next ("connection closed by
    peer", a collective timeout) or are stopped by torchrun."""
    others = rank_logs(log_path)
    if not others:
        return None
    failures = []
    for name, parsed in [("0", main)] + [
        (path.name.rsplit(".rank", 1)[1], parse_log(path)[0]) for path in others
    ]:
        if parsed.get("exp.status") == "failure":
            failures.append((str(parsed.get("results.end_time", "")), int(name),
                             str(parsed.get("exp.status_msg", ""))))
    if not failures:
        return None
    _, first, message = min(failures)
    return f"rank {first}: {message}"


def _crash_message(returncode: int, log_path: Path) -> str:
    how = (
        f"worker killed by {_signal_name(returncode)}"
        if returncode < 0
        else f"worker exited with status {returncode}"
    )
    tail = _output_tail(log_path)
    return f"{how}: {tail}" if tail else how


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C while a sweep runs, so the worker is stopped and the
    experiment marked interrupted either way."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def write_input(experiment: Mapping[str, Any], out_dir: Path, suffix: str = "") -> Path:
    """Write ``experiment`` atomically as the worker's input,
    ``<out_dir>/experiments/<exp.id><suffix>.json``, and return its path."""
    path = out_dir / "experiments" / f"{experiment['exp.id']}{suffix}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(experiment, indent=1, sort_keys=True))
    os.replace(tmp, path)
    return path


class Runner:
    """Runs experiments one at a time into their run directories' stores."""

    def __init__(self, report: Reporter = print, python: str | None = None) -> None:
        self.report = report
        self.python = python
        self._stores: dict[Path, Store] = {}

    def store(self, out_dir: Path) -> Store:
        """The store of run directory ``out_dir`` (opened once)."""
        if out_dir not in self._stores:
            out_dir.mkdir(parents=True, exist_ok=True)
            self._stores[out_dir] = Store.in_directory(out_dir)
        return self._stores[out_dir]

    def close(self) -> None:
        """Close every store opened."""
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def run(self, experiments: Sequence[Mapping[str, Any]]) -> SweepResult:
        """Run (or keep earlier results of) every experiment, in order."""
        result = SweepResult()
        progress = Progress(len(experiments), self.report, varying_parameters(experiments))
        with sigterm_as_interrupt():
            for experiment in experiments:
                out_dir = Path(experiment["exp.out_dir"])
                store = self.store(out_dir)
                earlier = store.get(str(experiment["exp.id"]))
                if not should_run(experiment, earlier):
                    assert earlier is not None
                    outcome = Outcome(record=dict(earlier), ran=False)
                else:
                    started = time.monotonic()
                    record, interrupted = self._run_one(experiment, out_dir)
                    store.put(record)
                    outcome = Outcome(record, ran=True, seconds=time.monotonic() - started)
                    if interrupted:
                        result.outcomes.append(outcome)
                        result.interrupted = True
                        progress.done(outcome)
                        break
                result.outcomes.append(outcome)
                progress.done(outcome)
        return result

    def _run_one(self, experiment: Mapping[str, Any], out_dir: Path) -> tuple[dict[str, Any], bool]:
        repeat = int(experiment.get("exp.repeat", 1) or 1)
        run = self._run_copies if partition.copy_count(experiment) > 1 else self._run_process
        if repeat <= 1:
            return run(experiment, out_dir)
        log_path = Path(experiment["exp.log_file"])
        processes: list[dict[str, Any]] = []
        for number in range(1, repeat + 1):
            own = {**experiment, "exp.log_file": f"{log_path}.{number}"}
            record, interrupted = run(own, out_dir, f".{number}")
            if interrupted or record["exp.status"] != "ok":
                failed = {**record, "exp.log_file": str(log_path),
                          "exp.status_msg": f"process {number} of {repeat}: "
                                            f"{record['exp.status_msg']}"}
                write_combined(log_path, failed)
                return failed, interrupted
            processes.append(record)
        combined = combine_processes(experiment, processes)
        write_combined(log_path, combined)
        return combined, False

    def _run_process(
        self, experiment: Mapping[str, Any], out_dir: Path, suffix: str = ""
    ) -> tuple[dict[str, Any], bool]:
        exp_json = write_input(experiment, out_dir, suffix)
        log_path = Path(experiment["exp.log_file"])
        log_path.parent.mkdir(parents=True, exist_ok=True)
        for stale in rank_logs(log_path):  # an earlier run's replicas
            stale.unlink()
        timeout = float(experiment["exp.timeout"]) or None
        interrupted = timed_out = False
        log_path.unlink(missing_ok=True)  # a rerun starts a fresh log
        # Appending: with a plain write handle the worker's output would go at the
        # handle's own offset, over the lines its log writer appended.
        with open(log_path, "ab") as log:
            process = start_worker(
                worker_argv(experiment, exp_json, self.python), log, worker_env(experiment)
            )
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_worker(process)
            except KeyboardInterrupt:
                interrupted = True
                kill_worker(process)
            except BaseException:
                kill_worker(process)
                raise
        return self._record(experiment, log_path, process.returncode, timed_out, interrupted), (
            interrupted
        )

    def _run_copies(
        self, experiment: Mapping[str, Any], out_dir: Path, suffix: str = ""
    ) -> tuple[dict[str, Any], bool]:
        """``exp.parallel_jobs``: every copy at once, each held to its share of the node
        (:mod:`dlbench.launch.partition`); the first copy that fails stops the others."""
        shares = partition.plan_shares(experiment)
        processes: list[subprocess.Popen[bytes]] = []
        failed: int | None = None
        interrupted = timed_out = False
        with partition.Limits(experiment, shares) as limits, ExitStack() as logs:
            copies = [partition.copy_experiment(experiment, share, limits.note(share))
                      for share in shares]
            try:
                for share, copy in zip(shares, copies, strict=True):
                    exp_json = write_input(copy, out_dir, f"{suffix}.copy{share.number}")
                    copy_log = Path(copy["exp.log_file"])
                    copy_log.parent.mkdir(parents=True, exist_ok=True)
                    copy_log.unlink(missing_ok=True)
                    # Appending: the worker's output and its log lines share the file.
                    log = logs.enter_context(open(copy_log, "ab"))
                    try:
                        processes.append(start_worker(
                            worker_argv(copy, exp_json, self.python), log,
                            partition.copy_env(worker_env(copy), share), limits.setup(share)))
                    except (OSError, subprocess.SubprocessError) as error:
                        log.write(f"dlbench: cannot start copy {share.number}: {error}\n".encode())
                        log.flush()
                        failed = len(processes)
                        break
                else:
                    failed, timed_out = partition.wait_copies(
                        processes, float(experiment["exp.timeout"]) or None)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                for process in processes:
                    kill_worker(process)
            codes = [p.returncode for p in processes] + [1] * (len(copies) - len(processes))
            records = [self._record(copy, Path(copy["exp.log_file"]), code, timed_out,
                                    interrupted) for copy, code in zip(copies, codes, strict=True)]
            notes = [limits.out_of_memory(share, str(r["exp.status_msg"])) for share, r in
                     zip(shares, records, strict=True)]
        record = partition.copies_outcome(experiment, records, failed, notes, limits.mechanism)
        write_combined(Path(experiment["exp.log_file"]), record)
        return record, interrupted

    @staticmethod
    def _record(
        experiment: Mapping[str, Any],
        log_path: Path,
        returncode: int,
        timed_out: bool,
        interrupted: bool,
    ) -> dict[str, Any]:
        parsed, warnings = parse_log(log_path)
        record = {**experiment, **parsed}
        status, message = str(parsed.get("exp.status", "")), str(parsed.get("exp.status_msg", ""))
        if timed_out:
            status, message = "timeout", f"timed out after {experiment['exp.timeout']:g} s"
        elif interrupted:
            status, message = "interrupted", "interrupted by the user (Ctrl-C or SIGTERM)"
        elif returncode != 0 and (rank_failure := _rank_failure(log_path, parsed)):
            status, message = "failure", rank_failure
        elif returncode != 0 and status != "failure":
            status, message = "failure", _crash_message(returncode, log_path)
        elif returncode == 0 and status != "ok":
            status, message = "failure", "worker exited without writing results"
        if warnings and status == "ok":
            status, message = "failure", f"log is damaged: {warnings[0]}"
        if (status, message) != (parsed.get("exp.status"), parsed.get("exp.status_msg")):
            with LogWriter(log_path) as log:
                log.write("exp.status", status)
                log.write("exp.status_msg", message)
        record["exp.status"], record["exp.status_msg"] = status, message
        return record


def combine_processes(
    experiment: Mapping[str, Any], processes: list[dict[str, Any]]
) -> dict[str, Any]:
    """One record from the records of the processes that measured ``experiment``:
    the first process's environment, the combined results and verdict. Monitor series
    stay in the per-process logs (``results.repeat_log_files``)."""
    first = processes[0]
    record = {k: v for k, v in first.items() if not k.startswith("results.")}
    record.update(experiment)
    record.update(combine_repeats(processes))
    record.update(repeat_verdict(experiment, processes, record.get("results.repeat_cv")))
    record["results.repeat_log_files"] = [str(p["exp.log_file"]) for p in processes]
    record["results.end_time"] = processes[-1].get("results.end_time")
    record["exp.status"], record["exp.status_msg"] = "ok", ""
    return record


def write_combined(log_path: Path, record: Mapping[str, Any]) -> None:
    """Write ``record`` as the experiment's log, so that parsing the log gives the
    record the store holds."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.unlink(missing_ok=True)  # a rerun starts a fresh log
    with LogWriter(log_path) as log:
        files = record.get("results.repeat_log_files") or record.get("results.copy_log_files")
        if files:
            log.write_text(f"dlbench: combined from {len(files)} processes: {', '.join(files)}")
        log.write_many({k: v for k, v in record.items() if k not in ("exp.status",
                                                                      "exp.status_msg")})
        log.write("exp.status", record.get("exp.status", ""))
        log.write("exp.status_msg", record.get("exp.status_msg", ""))


def stability_note(record: Mapping[str, Any], shown: int = 2) -> str:
    """`` (unstable: cv 12.0% > 5%; ...)`` for an unstable result, else empty; at
    most ``shown`` reasons, then how many more (all are in the record)."""
    reasons = record.get("results.unstable_reasons")
    if record.get("results.stable") is not False or not isinstance(reasons, list):
        return ""
    text = "; ".join(map(str, reasons[:shown]))
    more = len(reasons) - shown
    return f" (unstable: {text}{f'; {more} more' if more > 0 else ''})" if reasons else ""


def _format_duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class Progress:
    """A progress bar and ETA, one line per finished experiment."""

    WIDTH = 20

    def __init__(self, total: int, report: Reporter, label_keys: Sequence[str]) -> None:
        self.total = total
        self.report = report
        self.label_keys = label_keys
        self.finished = 0
        self.run_seconds: list[float] = []

    def done(self, outcome: Outcome) -> None:
        self.finished += 1
        if outcome.ran:
            self.run_seconds.append(outcome.seconds)
        filled = self.WIDTH * self.finished // max(self.total, 1)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        remaining = self.total - self.finished
        if remaining == 0:
            eta = "done"
        elif self.run_seconds:
            eta = "ETA " + _format_duration(
                sum(self.run_seconds) / len(self.run_seconds) * remaining
            )
        else:
            eta = "ETA ?"
        r = outcome.record
        label = " ".join(f"{key}={r.get(key, '-')}" for key in self.label_keys) or str(
            r.get("exp.model"))
        if outcome.status == "ok":
            unit = r.get("results.throughput_unit") or "samples/s"
            detail = f"{float(r['results.throughput']):.2f} {unit}{stability_note(r)}"
        else:
            detail = str(r.get("exp.status_msg", ""))[:120]
        status = outcome.status if outcome.ran else f"{outcome.status} (kept)"
        took = f"{outcome.seconds:.1f} s" if outcome.ran else "earlier run"
        self.report(
            f"[{bar}] {self.finished}/{self.total} {status:<11} {label}: {detail} "
            f"({took}) {eta}"
        )
