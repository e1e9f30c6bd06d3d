"""Run a planned sweep: one fresh worker process per experiment, one after another.

For each experiment the runner writes the resolved parameters to
``<out>/experiments/<exp.id>.json``, starts the worker with its output going to the
experiment's log, waits for it under ``exp.timeout``, turns the log into a record and
commits that record to the run directory's store in one transaction. Whatever happens
to one worker (an exception, a crash, a signal, a hang, a NaN loss) marks only its
own experiment, and the sweep goes on. Running the same sweep into the same run
directory resumes it, following ``exp.rerun``. Larger batches of a configuration
that ran out of memory are skipped (:mod:`dlbench.launch.memo`); SIGUSR1 stops the
sweep after the running experiment, Ctrl-C and SIGTERM interrupt it
(:mod:`dlbench.launch.signals`).

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
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlbench.config.registry import varying_parameters
from dlbench.launch import partition
from dlbench.launch.command import worker_argv, worker_env
from dlbench.launch.local import kill_worker, start_worker
from dlbench.launch.memo import OutOfMemoryMemo, skipped_record
from dlbench.launch.progress import Progress, Reporter, stability_note
from dlbench.launch.signals import SignalState, hold_interrupts, sigterm_as_interrupt, sweep_signals
from dlbench.measure.stability import repeat_verdict
from dlbench.measure.stats import combine_repeats
from dlbench.results.logfile import LINE_RE, LogWriter
from dlbench.results.parser import parse_log
from dlbench.results.progress import FAILURE_KIND_KEY, PROGRESS_KEY, where_text
from dlbench.results.store import Store

__all__ = ["Outcome", "Progress", "Reporter", "Runner", "SweepResult", "combine_processes",
           "rank_logs", "should_run", "sigterm_as_interrupt", "stability_note", "write_combined",
           "write_input"]

#: Lines of the worker's own output quoted in ``exp.status_msg`` after a crash.
OUTPUT_TAIL_LINES = 3


@dataclass
class Outcome:
    """What became of one experiment of the sweep."""

    record: dict[str, Any]
    ran: bool  # False when an earlier result was kept (exp.rerun) or it was skipped
    seconds: float = 0.0
    skipped: bool = False  # not run: a smaller batch ran out of memory (launch.memo)

    @property
    def status(self) -> str:
        """The experiment's ``exp.status``."""
        return str(self.record.get("exp.status", ""))


@dataclass
class SweepResult:
    """Every experiment's outcome, in plan order; ``interrupted`` after Ctrl-C/SIGTERM,
    ``stopped`` after SIGUSR1 (the experiments after the last one here never started)."""

    outcomes: list[Outcome] = field(default_factory=list)
    interrupted: bool = False
    stopped: bool = False

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


#: The last line of a Python traceback: the exception's type, then its message.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)\b.*$")


def _own_output(log_path: Path) -> list[str]:
    """The worker's own output lines at the end of its log: not ``__key__=`` lines,
    nor dlbench's notes (``dlbench: monitor: ...``), which say nothing of a crash."""
    try:
        text = log_path.read_bytes()[-64_000:].decode("utf-8", errors="replace")
    except OSError:
        return []
    return [ln.strip() for ln in text.splitlines()
            if ln.strip() and not LINE_RE.match(ln) and not ln.startswith("dlbench: ")]


def _output_tail(log_path: Path, lines: int = OUTPUT_TAIL_LINES) -> str:
    """The last lines of the worker's own output, or the exception a Python traceback
    ends with when there is one (its type and message)."""
    own = _own_output(log_path)
    if "Traceback (most recent call last):" in own:
        after = own[len(own) - own[::-1].index("Traceback (most recent call last):"):]
        errors = [ln for ln in after if _EXCEPTION_LINE.match(ln)]
        if errors:
            return errors[-1]
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


def _crash_message(returncode: int, log_path: Path, progress: Any) -> str:
    """Why a worker that wrote no status ended: the signal or exit status, where it
    was (its last progress line), and the end of its own output."""
    how = (
        f"worker killed by {_signal_name(returncode)}"
        if returncode < 0
        else f"worker exited with status {returncode}"
    )
    where = where_text(progress)
    if where:
        how += f" {where}"
    tail = _output_tail(log_path)
    return f"{how}: {tail}" if tail else how


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
        self._memos: dict[Path, OutOfMemoryMemo] = {}
        self._signals: SignalState | None = None

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

    def memo(self, out_dir: Path) -> OutOfMemoryMemo:
        """The failed-batch memo of run directory ``out_dir``, from its store."""
        if out_dir not in self._memos:
            self._memos[out_dir] = OutOfMemoryMemo(self.store(out_dir).records())
        return self._memos[out_dir]

    def run(self, experiments: Sequence[Mapping[str, Any]]) -> SweepResult:
        """Run (or keep earlier results of, or skip) every experiment, in order, until
        the end, an interrupt, or a SIGUSR1 stop request."""
        result = SweepResult()
        progress = Progress(len(experiments), self.report, varying_parameters(experiments))
        with sweep_signals() as self._signals:
            try:
                for experiment in experiments:
                    if self._signals.stop_requested:
                        result.stopped = True
                        break
                    outcome, interrupted = self._outcome(experiment)
                    result.outcomes.append(outcome)
                    progress.done(outcome)
                    if interrupted:
                        result.interrupted = True
                        break
            finally:
                self._signals = None
        return result

    def _outcome(self, experiment: Mapping[str, Any]) -> tuple[Outcome, bool]:
        """Keep, skip or run one experiment; True with an interrupted one."""
        out_dir = Path(experiment["exp.out_dir"])
        store = self.store(out_dir)
        earlier = store.get(str(experiment["exp.id"]))
        if not should_run(experiment, earlier):
            assert earlier is not None
            return Outcome(record=dict(earlier), ran=False), False
        memo = self.memo(out_dir)
        blocker = memo.blocker(experiment)
        if blocker is not None:
            record = skipped_record(experiment, blocker)
            write_combined(Path(experiment["exp.log_file"]), record)
            store.put(record)
            return Outcome(record, ran=False, skipped=True), False
        started = time.monotonic()
        record, interrupted = self._run_one(experiment, out_dir)
        store.put(record)
        memo.note(record)
        return Outcome(record, ran=True, seconds=time.monotonic() - started), interrupted

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
                hold_interrupts(self._signals)
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
                hold_interrupts(self._signals)
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
        kind = parsed.get(FAILURE_KIND_KEY)
        if timed_out:
            where = where_text(parsed.get(PROGRESS_KEY))
            status = "timeout"
            message = f"timed out after {experiment['exp.timeout']:g} s" + (
                f" {where}" if where else "")
            kind = "timeout"
        elif interrupted:
            status, message = "interrupted", "interrupted by the user (Ctrl-C or SIGTERM)"
            kind = "interrupted"
        elif returncode != 0 and (rank_failure := _rank_failure(log_path, parsed)):
            status, message = "failure", rank_failure
        elif returncode != 0 and status != "failure":
            status = "failure"
            message = _crash_message(returncode, log_path, parsed.get(PROGRESS_KEY))
            kind = "signal" if returncode < 0 else "exit"
        elif returncode == 0 and status != "ok":
            status, message = "failure", "worker exited without writing results"
        if warnings and status == "ok":
            status, message = "failure", f"log is damaged: {warnings[0]}"
        if (status, message) != (parsed.get("exp.status"), parsed.get("exp.status_msg")):
            with LogWriter(log_path) as log:
                if kind is not None and kind != parsed.get(FAILURE_KIND_KEY):
                    log.write(FAILURE_KIND_KEY, kind)
                log.write("exp.status", status)
                log.write("exp.status_msg", message)
        if kind is not None:
            record[FAILURE_KIND_KEY] = kind
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
