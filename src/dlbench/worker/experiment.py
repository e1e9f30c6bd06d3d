"""Runs one experiment inside the worker process.

The log gets, in order: every resolved parameter, the environment, the framework's
own output (the worker's stdout and stderr go to the same file), then the monitor's
series, the results with their stability verdict, and the status. Each line is
flushed as it is written, so a worker killed at any point leaves a log that parses
to what it had reached.
"""

from __future__ import annotations

import json
import math
import os
import sys
import traceback
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dlbench.backends.base import Backend, DrivesLoad, load_backend
from dlbench.config.catalog import FRAMEWORKS
from dlbench.config.registry import found_batch_parameters
from dlbench.config.scenarios.registry import issues_queries
from dlbench.errors import WorkerError
from dlbench.measure.loadgen.scenario import run_scenario
from dlbench.measure.monitor import ResourceMonitor
from dlbench.measure.peak.peaks import lookup_peak, measured_peaks, model_flops_utilization
from dlbench.measure.stability import verdict
from dlbench.measure.sysinfo import host_info, split_cores
from dlbench.measure.timing import AutoStop, AutoWarmup, Marker, Timing, run_batches
from dlbench.results.log.file import LOG_FILE_ENV, LogWriter
from dlbench.results.log.progress_keys import FAILURE_KIND_KEY, where_text
from dlbench.results.stats import (
    rank_results,
    step_times,
    summarize_times,
    throughput,
    throughput_batch_mean,
)
from dlbench.worker.accuracy import train_to_accuracy
from dlbench.worker.autobatch import find_largest_batch
from dlbench.worker.extras import measure_memory, profile_window
from dlbench.worker.flops import flop_results, framework_source
from dlbench.worker.generate import generate_results
from dlbench.worker.heartbeat import (
    ProgressWriter,
    is_out_of_memory,
    peak_rss_text,
)

AUTO = "auto"


def _now() -> str:
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="milliseconds")


def _failure_message(error: BaseException, phase: str, batch: int | None = None) -> str:
    """The error first (its type, and its message when it has one), then where it was
    raised and how far the run had got; the whole traceback is in the log. Running out
    of memory says so first, with the memory the process held at its peak."""
    where = where_text({"phase": phase, "batch": batch})
    if isinstance(error, WorkerError):
        return str(error)
    text = str(error)
    message = f"{type(error).__name__}: {text}" if text else type(error).__name__
    frames = traceback.extract_tb(error.__traceback__)
    if frames:
        last = frames[-1]
        message += f" (at {Path(last.filename).name}:{last.lineno} in {last.name})"
    if is_out_of_memory(error):
        prefix = f"out of memory {where}" if where else "out of memory"
        return f"{prefix} (peak RSS {peak_rss_text()}): {message}"
    return f"{message}, {where}" if where else message


def policies(params: Mapping[str, Any]) -> tuple[int | AutoWarmup, int | AutoStop]:
    """The warm-up and stopping policies ``exp.num_warmup_batches`` and
    ``exp.num_batches`` ask for: counts, or ``auto``."""
    warmup: int | AutoWarmup = (
        AutoWarmup(max_batches=int(params["exp.max_warmup_batches"]))
        if params["exp.num_warmup_batches"] == AUTO
        else int(params["exp.num_warmup_batches"])
    )
    stop: int | AutoStop = (
        AutoStop(
            min_batches=int(params["exp.min_batches"]),
            min_seconds=float(params["exp.min_duration"]),
            max_seconds=float(params["exp.max_duration"]),
            target_ci=float(params["exp.target_ci"]),
            max_batches=int(params["exp.max_batches"]),
        )
        if params["exp.num_batches"] == AUTO
        else int(params["exp.num_batches"])
    )
    return warmup, stop


def backend_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """What the backend sees: ``auto`` batch counts replaced by the most that may
    run, so a backend can size what it prepares per batch (a buffer of losses)."""
    bounded = dict(params)
    if bounded["exp.num_warmup_batches"] == AUTO:
        bounded["exp.num_warmup_batches"] = int(params["exp.max_warmup_batches"])
    if bounded["exp.num_batches"] == AUTO:
        bounded["exp.num_batches"] = int(params["exp.max_batches"])
    return bounded


def _results(
    params: Mapping[str, Any], timing: Timing, backend: Backend, environment: Mapping[str, Any],
    rank_times: list[list[float]],
) -> dict[str, Any]:
    """The ``results.*`` of a finished timing loop. With several replicas
    (``rank_times`` holds each one's batch times) a step's time is the slowest
    replica's, and each replica's own figures are kept beside."""
    times_ms = step_times(rank_times) if len(rank_times) > 1 else timing.times_ms
    if not times_ms:
        raise WorkerError("no batch was timed (exp.max_duration or exp.max_batches too small)")
    if not all(math.isfinite(v) for v in times_ms):
        raise WorkerError("a batch time is not finite")
    results: dict[str, Any] = summarize_times(times_ms)
    if len(rank_times) > 1:
        results.update(rank_results(rank_times, int(params["exp.replica_batch"])))
    unit, per_sample = backend.throughput_unit()
    samples_per_second = throughput(int(params["exp.effective_batch"]), results["results.time"])
    results["results.throughput"] = samples_per_second * per_sample
    results["results.throughput_batch_mean"] = per_sample * throughput_batch_mean(
        int(params["exp.effective_batch"]), times_ms)
    results["results.throughput_unit"] = unit
    # After the timed batches: the count builds the model on PyTorch's meta device.
    flop_figures, note = flop_results(params, backend.flops_per_sample(),
                                      framework_source(backend, params))
    if note:
        print(f"dlbench: {note}", file=sys.stderr, flush=True)
    results.update(flop_figures)
    flops = flop_figures.get("results.flops_per_sample")
    if flops:
        results["results.tflops"] = flops * samples_per_second / 1e12
        peak = lookup_peak(environment.get("hw.device_name"), str(params["exp.dtype"]),
                           cpu_model=environment.get("hw.cpu_model"))
        if peak is not None:
            results.update(model_flops_utilization(results["results.tflops"], peak))
        for kind, value in measured_peaks(environment.get("hw.device_name"),
                                          str(params["exp.dtype"]),
                                          cpu_model=environment.get("hw.cpu_model")).items():
            results[f"results.peak_{kind}_tflops"] = value
    results["results.num_batches"] = len(times_ms)
    results["results.num_warmup_batches"] = timing.num_warmup
    results["results.stop_reason"] = timing.stop_reason
    results["results.timing_method"] = timing.method
    results["results.timed_seconds"] = timing.elapsed_s
    if timing.warmup_times_ms:
        results["results.warmup_time_data"] = timing.warmup_times_ms
        results["results.warmup_settled"] = not timing.warmup_capped
    results["results.time_data"] = times_ms
    return results


def _monitor_results(
    params: Mapping[str, Any], monitor: ResourceMonitor, results: Mapping[str, Any]
) -> dict[str, Any]:
    summary = monitor.summary()
    energy = summary.get("results.use.energy_j")
    count = results.get("results.num_batches")
    if isinstance(energy, float) and energy > 0 and isinstance(count, int):
        samples = int(params["exp.effective_batch"]) * count
        summary["results.use.samples_per_joule"] = samples / energy
    return summary


def _auto_batch(params: Mapping[str, Any], log: LogWriter) -> dict[str, Any]:
    """``exp.replica_batch=auto``: find the largest batch that runs (every probe goes to
    the log) and return the parameters with it; the log's later ``exp.replica_batch``,
    ``exp.device_batch`` and ``exp.effective_batch`` lines replace the ``auto`` written
    first."""
    batch, probes = find_largest_batch(backend_params(params))
    batches = found_batch_parameters(params, batch)
    log.write_many({**batches, "results.auto_batch": batch, "results.auto_batch_probes": probes})
    return {**params, **batches}


def _serves(params: Mapping[str, Any]) -> bool:
    """Whether the experiment measures a model served elsewhere
    (``exp.framework=endpoint``): there ``exp.replica_batch=auto`` is the backend's
    search of the highest concurrency meeting the SLOs, not the memory probe of the
    largest batch that fits."""
    framework = FRAMEWORKS.get(str(params["exp.framework"]))
    return framework is not None and bool(framework.served_model)


def _scenario_results(
    params: Mapping[str, Any], backend: Backend, progress: ProgressWriter, mark: Marker,
) -> dict[str, Any]:
    """An ``exp.scenario`` that a load generator runs: warm-up, then the load generator issues
    queries (measure.loadgen.scenario); each query is one step of the backend's batch, done on
    the device before the query counts as answered."""
    warmup, _ = policies(params)
    progress.enter("warmup")
    warm = run_batches(backend.step, backend.synchronize, warmup, 0, position=progress.position)
    next_step = warm.num_warmup

    def serve(samples: int) -> None:  # a short batch is served as a full one (padding)
        nonlocal next_step
        backend.step(next_step)
        next_step += 1
        backend.synchronize()

    progress.enter("timed")  # queries, not batches: no count of batches done
    mark("timed_start", next_step)
    results = run_scenario(params, serve)
    mark("timed_end", next_step)
    progress.enter("finish")
    unit, per_sample = backend.throughput_unit()
    results["results.throughput"] = float(results["results.throughput"]) * per_sample
    results["results.throughput_unit"] = unit
    results.update(backend.finish(next_step))
    return results


def monitor_marker(progress: ProgressWriter, monitor: ResourceMonitor | None) -> Marker:
    """The timing loop's ``mark``: the progress writer enters the timed phase, and the
    monitor takes a sample at the timed section's start and end."""
    def mark(name: str, batch: int) -> None:  # called outside timed intervals
        if name == "timed_start":
            progress.enter("timed", first=batch)
        if monitor is not None:
            monitor.mark(name)
    return mark


def timed_batches(
    backend: Backend, warmup: int | AutoWarmup, stop: int | AutoStop,
    progress: ProgressWriter, mark: Marker,
) -> Timing:
    """The warm-up and timed batches of ``backend``, with the progress writer looking on
    (told the experiment's parameters beforehand, :meth:`ProgressWriter.describe`)."""
    progress.enter("warmup")
    progress.start()
    try:
        return run_batches(backend.step, backend.synchronize, warmup, stop, mark=mark,
                           timer=backend.batch_timer(), position=progress.position)
    finally:
        progress.stop()


def _timed_results(
    params: Mapping[str, Any], backend: Backend, environment: Mapping[str, Any],
    progress: ProgressWriter, mark: Marker, log_path: str,
) -> dict[str, Any]:
    """Warm-up and timed batches, then (untimed) the profiling window and the memory
    breakdown; the ``results.*`` of all of them."""
    warmup, stop = policies(params)
    timing = timed_batches(backend, warmup, stop, progress, mark)
    progress.enter("finish")
    steps = timing.num_warmup + len(timing.times_ms)
    extra = profile_window(params, backend, steps, log_path)
    extra.update(measure_memory(params, backend))
    extra.update(backend.finish(steps))
    rank_times = backend.gather_times(timing.times_ms)
    results = _results(params, timing, backend, environment, rank_times)
    results.update(extra)
    return results


def run_experiment(params: Mapping[str, Any], log: LogWriter, start: str = "fresh") -> bool:
    """Run the experiment described by ``params``, writing everything to ``log``;
    ``start`` (``sys.worker_start``) says how this process began: ``fresh`` (``python -m
    dlbench.worker``) or ``forked`` (by the fork server, which says so when it calls
    :func:`main`).

    Returns True when it ended ok. Errors are written to the log as the
    experiment's status, not raised: one failed experiment never stops a sweep.
    """
    log.write_many(params)
    host = host_info()
    # Told by the fork server's call, never read from the environment (where a user's
    # value would lie): a forked worker shares the server's pages, so its resident
    # memory reads lower.
    host["sys.worker_start"] = start
    log.write_many(host)
    log.write("results.start_time", _now())
    monitor = None
    if params.get("monitor.enabled", True):
        monitor = ResourceMonitor(float(params.get("monitor.frequency", 0.5)))
        monitor.start()
        for note in monitor.notes:
            log.write_text(f"dlbench: {note}")
    backend = None
    results: dict[str, Any] = {}
    progress = ProgressWriter(log)
    mark = monitor_marker(progress, monitor)
    try:
        progress.enter("setup")
        if params["exp.replica_batch"] == AUTO and not _serves(params):
            params = _auto_batch(params, log)
        backend = load_backend(backend_params(params))
        backend.setup()
        progress.describe(params, backend)
        own_environment = backend.environment()
        log.write_many(own_environment)
        environment = {**host, **own_environment}
        sys.stdout.flush()
        if params["exp.phase"] == "train_to_accuracy":
            progress.enter("timed")
            results, steps = train_to_accuracy(params, backend)
            progress.enter("finish")
            results.update(backend.finish(steps))
        elif isinstance(backend, DrivesLoad):  # a server measured by its own client
            # The requests completed go to the log as they end (results.progress), so
            # that a long run, or a search of many runs, is seen to move on.
            progress.start()
            try:
                results = backend.load_results(progress, mark)
            finally:
                progress.stop()
        elif params["exp.phase"] == "generate":  # timed token by token: worker/generate.py
            results = generate_results(params, backend, policies(params), progress, mark)
        elif issues_queries(params["exp.scenario"]):
            results = _scenario_results(params, backend, progress, mark)
        else:
            results = _timed_results(params, backend, environment, progress, mark, str(log.path))
    except Exception as error:  # any failure is this experiment's, reported in its log
        traceback.print_exc()
        sys.stderr.flush()
        if monitor is not None:
            monitor.stop()
            log.write_many(monitor.series())
        log.write("results.end_time", _now())
        log.write(FAILURE_KIND_KEY, "oom" if is_out_of_memory(error) else "exception")
        log.write("exp.status", "failure")
        log.write("exp.status_msg",
                  _failure_message(error, progress.phase, progress.current().get("batch")))
        return False
    finally:
        if monitor is not None:
            monitor.stop()
        if backend is not None:
            try:
                backend.teardown()
            except Exception:  # a failing teardown must not hide the result
                traceback.print_exc()
    if monitor is not None:
        log.write_many(monitor.series())
        results.update(_monitor_results(params, monitor, results))
    if params["exp.phase"] != "train_to_accuracy":  # no batch times to judge
        results.update(verdict(params, results))
    log.write_many(results)
    log.write("results.end_time", _now())
    log.write("exp.status", "ok")
    log.write("exp.status_msg", "")
    return True


def log_path(params: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """Where this process writes its log. One process, or the first replica on a
    node: ``exp.log_file`` (or what the Slurm node put in ``DLBENCH_LOG_FILE``, for a
    node that shares the run directory with the first; no launcher passes on a value
    from the user's environment). Every other replica of a
    data-parallel run (torchrun sets ``LOCAL_RANK`` and ``RANK``): its own file,
    ``<exp.log_file>.rank<RANK>``, so that its figures and failures are kept."""
    if int(env.get("LOCAL_RANK", "0")) == 0:
        return env.get(LOG_FILE_ENV) or str(params["exp.log_file"])
    return f"{params['exp.log_file']}.rank{env.get('RANK', env['LOCAL_RANK'])}"


def _pin_replica(params: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """On the CPU, hold each of several local replicas to its own cores."""
    local_world = int(env.get("LOCAL_WORLD_SIZE", "1"))
    if local_world <= 1 or params.get("exp.gpus") or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= local_world:
        os.sched_setaffinity(0, split_cores(cores, local_world)[int(env.get("LOCAL_RANK", "0"))])


def main(argv: list[str], start: str = "fresh") -> int:
    """Worker entry point: ``argv`` is ``[EXP.json]``; ``start`` is ``forked`` when the
    fork server calls it in the child it forked. Exit status 0 when ok, 1 when not."""
    if len(argv) != 1:
        print("usage: python -m dlbench.worker EXP.json", file=sys.stderr)
        return 2
    params = json.loads(Path(argv[0]).read_text())
    _pin_replica(params, os.environ)
    with LogWriter(log_path(params, os.environ)) as log:
        ok = run_experiment(params, log, start)
    return 0 if ok else 1
