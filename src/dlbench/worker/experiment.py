"""Runs one experiment inside the worker process.

The log gets, in order: every resolved parameter, the environment, the framework's
own output (the worker's stdout and stderr go to the same file), then the results
and the status. Each line is flushed as it is written, so a worker killed at any
point leaves a log that parses to what it had reached.
"""

from __future__ import annotations

import json
import math
import sys
import traceback
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dlbench.backends.base import load_backend
from dlbench.errors import WorkerError
from dlbench.measure.stats import summarize_times, throughput
from dlbench.measure.sysinfo import host_info
from dlbench.measure.timing import time_batches
from dlbench.results.logfile import LogWriter


def _now() -> str:
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="milliseconds")


def _failure_message(error: BaseException) -> str:
    """The error first, then where it was raised; the whole traceback is in the log."""
    if isinstance(error, WorkerError):
        return str(error)
    message = f"{type(error).__name__}: {error}"
    frames = traceback.extract_tb(error.__traceback__)
    if frames:
        last = frames[-1]
        message += f" (at {Path(last.filename).name}:{last.lineno} in {last.name})"
    return message


def run_experiment(params: Mapping[str, Any], log: LogWriter) -> bool:
    """Run the experiment described by ``params``, writing everything to ``log``.

    Returns True when it ended ok. Errors are written to the log as the
    experiment's status, not raised: one failed experiment never stops a sweep.
    """
    log.write_many(params)
    log.write_many(host_info())
    log.write("results.start_time", _now())
    backend = None
    try:
        backend = load_backend(params)
        backend.setup()
        log.write_many(backend.environment())
        sys.stdout.flush()
        num_warmup = int(params["exp.num_warmup_batches"])
        times_ms = time_batches(
            backend.step, backend.synchronize, num_warmup, int(params["exp.num_batches"])
        )
        extra = backend.finish(num_warmup + len(times_ms))
        results: dict[str, Any] = summarize_times(times_ms)
        unit, per_sample = backend.throughput_unit()
        samples_per_second = throughput(
            int(params["exp.effective_batch"]), results["results.time"]
        )
        results["results.throughput"] = samples_per_second * per_sample
        results["results.throughput_unit"] = unit
        flops = backend.flops_per_sample()
        if flops:
            results["results.flops_per_sample"] = flops
            results["results.tflops"] = flops * samples_per_second / 1e12
        results["results.num_batches"] = len(times_ms)
        results["results.time_data"] = times_ms
        results.update(extra)
        if not all(math.isfinite(v) for v in times_ms):
            raise WorkerError("a batch time is not finite")
    except Exception as error:  # any failure is this experiment's, reported in its log
        traceback.print_exc()
        sys.stderr.flush()
        log.write("results.end_time", _now())
        log.write("exp.status", "failure")
        log.write("exp.status_msg", _failure_message(error))
        return False
    finally:
        if backend is not None:
            try:
                backend.teardown()
            except Exception:  # a failing teardown must not hide the result
                traceback.print_exc()
    log.write_many(results)
    log.write("results.end_time", _now())
    log.write("exp.status", "ok")
    log.write("exp.status_msg", "")
    return True


def main(argv: list[str]) -> int:
    """Worker entry point: ``argv`` is ``[EXP.json]``. Exit status 0 when ok, 1 when not."""
    if len(argv) != 1:
        print("usage: python -m dlbench.worker EXP.json", file=sys.stderr)
        return 2
    params = json.loads(Path(argv[0]).read_text())
    with LogWriter(params["exp.log_file"]) as log:
        ok = run_experiment(params, log)
    return 0 if ok else 1
