"""The stability verdict: whether a result can be trusted, and if not, why.

Every result carries ``results.stable`` and ``results.unstable_reasons`` (a list of
short strings, empty when stable). The verdict is a function of the record alone
(parameters, batch times and monitor summaries), so it can be recomputed from any
stored record. A result is unstable when:

- the coefficient of variation of batch times is above ``exp.cv_threshold``;
- with ``exp.num_batches=auto``, the target confidence interval was not reached;
- fewer than :data:`MIN_BATCHES` batches were timed;
- warm-up is still visible: the median of the first tenth of the timed batches (at
  least 3) is above the 95th percentile of the rest and more than
  :data:`WARMUP_TOLERANCE` above their median; or auto warm-up hit its cap;
- another process competed for the CPU: on the CPUs the worker may run on, other
  processes used at least :data:`OTHER_CPU_CORES` of a core on average while the
  worker and they together kept at least :data:`CPU_SATURATION` of those CPUs
  busy. Both conditions: a busy neighbour on an idle 64-core machine does not slow
  a 4-thread worker, and a worker that saturates the CPUs by itself is not
  competing with anyone. The figures are clamped to what the CPUs allow (the
  worker's use to its CPUs, the others' to what the worker left), and a timed
  section with fewer than :data:`MIN_CPU_SAMPLES` monitor samples gets no CPU
  verdict at all: over a fraction of a sampling interval the kernel's tick counters
  say more about when they were last updated than about who used the CPUs;
- (GPU experiments) another process ran on a GPU the worker used, or a GPU's clocks
  were held down (NVML reasons other than idle and an application clock setting)
  in at least :data:`GPU_SAMPLE_SHARE` of the samples.

Example::

    verdict(params, results)  # {"results.stable": False,
                              #  "results.unstable_reasons": ["cv 12.0% > 5%"]}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from dlbench.results.magnitude import duration_text
from dlbench.results.noise import CPU_CONTENTION, GPU_SHARED, SPREAD_PREFIXES
from dlbench.results.stats import percentile

#: Fewer timed batches than this say little about the spread.
MIN_BATCHES = 5
#: The head of the timed batches must be this much (relative) slower to count.
WARMUP_TOLERANCE = 0.02
#: Other processes' mean CPU use, in cores, that counts as competition...
OTHER_CPU_CORES = 0.5
#: ...when the worker's CPUs were at least this busy in all.
CPU_SATURATION = 0.9
#: Fewest monitor samples in the timed section (``results.use.samples``) for a CPU
#: verdict: the end mark's sample and at least two periodic ones.
MIN_CPU_SAMPLES = 3
#: Share of samples a GPU condition must hold in to count.
GPU_SAMPLE_SHARE = 0.1
#: Throttle reasons that do not slow a busy GPU down.
BENIGN_THROTTLE = ("gpu_idle", "applications_clocks_setting")


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def warmup_visible(times_ms: Sequence[float]) -> str | None:
    """A reason when the first timed batches are clearly slower than the rest.

    A rank rule rather than a t-test: warm-up makes the first few batches many times
    slower with a huge spread, where a t-test on three values has no power; a median
    above the rest's 95th percentile happens by chance with probability < 1% for three
    values and far less for more.
    """
    n = len(times_ms)
    if n < 10:
        return None
    head_count = max(3, n // 10)
    head, rest = list(times_ms[:head_count]), list(times_ms[head_count:])
    head_median, rest_median = percentile(head, 50), percentile(rest, 50)
    if head_median > percentile(rest, 95) and head_median > rest_median * (1 + WARMUP_TOLERANCE):
        return (f"warm-up visible: first {head_count} batches median "
                f"{duration_text(head_median)} vs {duration_text(rest_median)} for the rest")
    return None


def _cpu_competition(results: Mapping[str, Any]) -> str | None:
    other = results.get("results.use.other_cpu_percent_mean")
    own = results.get("results.use.cpu_percent_mean")
    cpus = results.get("results.use.cpus_available")
    if not (isinstance(other, (int, float)) and isinstance(own, (int, float))
            and isinstance(cpus, int) and cpus > 0):
        return None
    samples = results.get("results.use.samples")
    if isinstance(samples, int) and samples < MIN_CPU_SAMPLES:
        return None  # too short a window for the monitor to tell
    # Rates from counters that advance in ticks can add up to more than the CPUs
    # there are: no process uses more than all of them, nor more than the worker left.
    own_cores = min(max(float(own) / 100, 0.0), float(cpus))
    other_cores = min(max(float(other) / 100, 0.0), cpus - own_cores)
    if other_cores >= OTHER_CPU_CORES and own_cores + other_cores >= CPU_SATURATION * cpus:
        return (f"{CPU_CONTENTION}: other processes used {other_cores:.2f} of the worker's "
                f"{cpus} CPUs (worker {own_cores:.2f})")
    return None


def _gpu_problems(results: Mapping[str, Any]) -> list[str]:
    reasons = []
    used = sorted(
        int(m.group(1)) for key, value in results.items()
        if (m := re.fullmatch(r"results\.use\.gpu(\d+)_used", key)) and value)
    for i in used:
        others = results.get(f"results.use.gpu{i}_other_processes_mean")
        if isinstance(others, (int, float)) and others >= GPU_SAMPLE_SHARE:
            most = results.get(f"results.use.gpu{i}_other_processes_max")
            reasons.append(f"gpu {i}: {most} {GPU_SHARED}")
        shares = results.get(f"results.use.gpu{i}_throttle_reasons") or {}
        held = sorted(
            f"{name} {_percent(share)} of samples" for name, share in shares.items()
            if name not in BENIGN_THROTTLE and share >= GPU_SAMPLE_SHARE)
        if held:
            reasons.append(f"gpu {i} clocks throttled: {', '.join(held)}")
    return reasons


def stability_reasons(params: Mapping[str, Any], results: Mapping[str, Any]) -> list[str]:
    """Why the result in ``results`` (``results.*`` values) is unstable; empty if not."""
    reasons: list[str] = []
    cv, threshold = results.get("results.time_cv"), float(params["exp.cv_threshold"])
    if isinstance(cv, (int, float)) and cv > threshold:
        reasons.append(f"{SPREAD_PREFIXES[0]}{_percent(cv)} > {100 * threshold:g}%")
    if params.get("exp.num_batches") == "auto":
        rel, target = results.get("results.ci95_rel"), float(params["exp.target_ci"])
        if not isinstance(rel, (int, float)) or rel > target:
            shown = f"±{_percent(rel)}" if isinstance(rel, (int, float)) else "unknown"
            reasons.append(f"{SPREAD_PREFIXES[1]}{shown} > ±{100 * target:g}% target")
    count = results.get("results.num_batches")
    if isinstance(count, int) and count < MIN_BATCHES:
        reasons.append(f"only {count} timed batches (< {MIN_BATCHES})")
    if results.get("results.warmup_settled") is False:
        reasons.append(f"warm-up did not settle in {results.get('results.num_warmup_batches')} "
                       "batches")
    times = results.get("results.time_data")
    if isinstance(times, list):
        visible = warmup_visible(times)
        if visible:
            reasons.append(visible)
    cpu = _cpu_competition(results)
    if cpu:
        reasons.append(cpu)
    if params.get("exp.device_type") == "gpu":
        reasons.extend(_gpu_problems(results))
    return reasons


def verdict(params: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
    """``results.stable`` and ``results.unstable_reasons`` of one process's result."""
    reasons = stability_reasons(params, results)
    return {"results.stable": not reasons, "results.unstable_reasons": reasons}


def repeat_verdict(
    params: Mapping[str, Any], processes: Sequence[Mapping[str, Any]], repeat_cv: float | None
) -> dict[str, Any]:
    """The verdict of an experiment measured by several processes: each process's
    reasons, prefixed with its number, and the spread between the processes' means
    against ``exp.cv_threshold``."""
    reasons: list[str] = []
    for number, record in enumerate(processes, start=1):
        own = record.get("results.unstable_reasons")
        if not isinstance(own, list):
            own = stability_reasons(params, record)
        reasons.extend(f"process {number}: {reason}" for reason in own)
    threshold = float(params["exp.cv_threshold"])
    if repeat_cv is not None and repeat_cv > threshold:
        reasons.append(f"between-process cv {_percent(repeat_cv)} > {100 * threshold:g}%")
    return {"results.stable": not reasons, "results.unstable_reasons": reasons}
