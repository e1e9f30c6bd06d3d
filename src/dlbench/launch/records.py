"""A worker's log made into its experiment's record, on the parent side: the status
and reason of a worker that timed out, was interrupted, crashed or left a damaged log;
the one record of several processes (``exp.repeat``); the combined log."""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlbench.measure.combine import combine_repeats, found_batch_outcome
from dlbench.measure.ncu import summarize_ncu_file
from dlbench.measure.stability import repeat_verdict
from dlbench.results.keys.lookup import KEY_PREFIXES
from dlbench.results.log.file import LINE_RE, LogWriter
from dlbench.results.log.parser import parse_log
from dlbench.results.log.progress_keys import FAILURE_KIND_KEY, PROGRESS_KEY, where_text

#: Lines of the worker's own output quoted in ``exp.status_msg`` after a crash.
OUTPUT_TAIL_LINES = 3


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


def worker_record(
    experiment: Mapping[str, Any],
    log_path: Path,
    returncode: int,
    timed_out: bool,
    interrupted: bool,
) -> dict[str, Any]:
    """The record of one worker process of ``experiment``: what its log says, with
    the status and reason the runner knows better (a timeout, an interrupt, a crash
    without a status, a damaged log) appended to the log too, so that parsing the log
    gives the record."""
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
    if status == "ok" and experiment.get("exp.profile") == "ncu":
        ncu = ncu_results(log_path)
        with LogWriter(log_path) as log:
            log.write_many(ncu)
        record.update(ncu)
    return record


def ncu_results(log_path: Path) -> dict[str, Any]:
    """``results.profile.ncu`` from the CSV ``ncu`` wrote next to the log when the
    worker it wrapped exited (``exp.profile=ncu``: the worker itself cannot read it),
    or a note saying why there is none."""
    path = Path(f"{log_path}.ncu.csv")
    try:
        return {"results.profile.ncu": summarize_ncu_file(path)}
    except OSError as error:
        note = f"ncu wrote no readable CSV at {path.name}: {error.strerror or error}"
    except (ValueError, KeyError) as error:
        note = f"ncu's CSV {path.name} could not be read: {error}"
    return {"results.profile.note": note}


def combine_processes(
    experiment: Mapping[str, Any], processes: list[dict[str, Any]]
) -> dict[str, Any]:
    """One record from the records of the processes that measured ``experiment``:
    the first process's environment, the combined results and verdict. Monitor series
    stay in the per-process logs (``results.repeat_log_files``)."""
    first = processes[0]
    # Every declared key (results.*, sys.*, hw.*) combines by its rule; the rest are
    # the experiment's parameters.
    record = {k: v for k, v in first.items() if not k.startswith(KEY_PREFIXES)}
    record.update(experiment)
    record.update(combine_repeats(processes))
    record.update(repeat_verdict(experiment, processes, record.get("results.repeat_cv")))
    record.update(found_batch_outcome(record))  # exp.replica_batch=auto: the batch found
    record["results.repeat_log_files"] = [str(p["exp.log_file"]) for p in processes]
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
