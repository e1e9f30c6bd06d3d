"""The fake workload's declaration; its backend is :mod:`dlbench.backends.fake`."""

from __future__ import annotations

from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.config.params import MAX_SECONDS, SEED, Param

FRAMEWORK = FrameworkInfo(
    id="fake",
    title="Fake workload",
    module="dlbench.backends.fake",
    simulated=True,
    requires=(),
    install_hint="",
    data_parallel="torchrun",
    description=(
        "A known-answer workload: each step takes fake.step_ms (plus jitter), "
        "timed through the same loop as real frameworks. For tests and for "
        "checking the harness itself."
    ),
    devices="dlbench.backends.fake:available_devices",
    params=(
        Param("fake.step_ms", "float", 10.0, "Time each step of the fake workload takes, ms.",
              minimum=0, maximum=MAX_SECONDS * 1000),
        Param("fake.jitter_ms", "float", 0.0,
              "Uniform random jitter added to each fake step, in [0, fake.jitter_ms] ms.",
              minimum=0, maximum=MAX_SECONDS * 1000),
        Param("fake.warmup_ms", "float", 0.0,
              "Extra time of the first warm-up step, decaying by half each following step: a "
              "slow warm-up to test warm-up handling.", minimum=0, maximum=MAX_SECONDS * 1000),
        Param("fake.memory_mb", "int", 0,
              "MiB the fake workload allocates (and touches) at set-up and holds until the "
              "end.", minimum=0),
        Param("fake.sample_memory_mb", "float", 0.0,
              "MiB the fake workload allocates per sample of exp.replica_batch at set-up, "
              "beside fake.memory_mb.", minimum=0),
        Param("fake.memory_cap_mb", "float", 0.0,
              "Memory the fake device holds, MiB: a set-up that needs more (fake.memory_mb "
              "plus the batch's) runs out of memory (a MemoryError). 0: no cap. The largest "
              "batch that fits is (cap - fake.memory_mb) / fake.sample_memory_mb.",
              minimum=0),
        Param("fake.failure", "str", "none",
              "Failure to inject at batch fake.failure_batch: `exception` (a Python error), "
              "`exit` (exit status 3), `signal` (SIGKILL itself), `hang` (stops responding), "
              "`nan` (a non-finite loss), `oom` (out of memory: a MemoryError).",
              choices=("none", "exception", "exit", "signal", "hang", "nan", "oom")),
        Param("fake.failure_batch", "int", 0,
              "Batch (counted from 0 across warm-up and timed batches) at which fake.failure "
              "happens.", minimum=0),
        Param("fake.failure_rank", "int", -1,
              "In a data-parallel run, the replica (rank) where fake.failure happens; -1: "
              "all."),
        SEED.param("fake.seed", "Seed of the jitter's random numbers."),
        Param("fake.flops_per_sample", "float", 0.0,
              "Floating-point operations the fake workload claims per sample (0: unknown), so "
              "that results.tflops and results.mfu have known answers."),
    ),
)
