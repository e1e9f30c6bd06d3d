"""A known-answer workload: each step takes a configured time.

It goes through exactly the same timing loop as a real framework, so it tests the
harness (timing, statistics, logs, the runner, reports) against answers known in
advance, on any machine. It can also fail on purpose, in each of the ways a real
worker fails, so that failure handling is tested for real.
"""

from __future__ import annotations

import datetime
import os
import random
import signal
import time
from typing import Any

from dlbench.backends.base import Backend
from dlbench.errors import NonFiniteLoss

# Sleep until this close to the deadline, then spin: time.sleep alone overshoots by
# 50-100 µs, which is 0.5-1 % of a 10 ms step.
_SPIN_SECONDS = 0.0003


def _wait(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    if seconds > _SPIN_SECONDS:
        time.sleep(seconds - _SPIN_SECONDS)
    while time.perf_counter() < deadline:
        pass


class FakeBackend(Backend):
    """``exp.framework=fake``: see the ``fake.*`` parameters."""

    flops_counter = "fake.flops_per_sample"

    def setup(self) -> None:
        p = self.params
        self.step_s = float(p["fake.step_ms"]) / 1000.0
        self.jitter_s = float(p["fake.jitter_ms"]) / 1000.0
        self.warmup_s = float(p["fake.warmup_ms"]) / 1000.0
        self.failure = str(p["fake.failure"])
        self.failure_batch = int(p["fake.failure_batch"])
        self.rank = int(os.environ.get("RANK", "0"))
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        failure_rank = int(p["fake.failure_rank"])
        if failure_rank >= 0 and failure_rank != self.rank:
            self.failure = "none"
        self.group: Any = None
        if self.world_size > 1:
            self._join()
        self.random = random.Random(int(p["fake.seed"]))
        self.nan_batch: int | None = None
        size = int(p["fake.memory_mb"]) * 2**20
        # The batch's own memory, so that a batch too large for fake.memory_cap_mb runs
        # out of memory as a real model does, at a batch known in advance.
        size += int(float(p["fake.sample_memory_mb"]) * 2**20 * int(p["exp.replica_batch"]))
        cap = float(p["fake.memory_cap_mb"])
        if cap and size > cap * 2**20:
            raise MemoryError(f"fake: {size / 2**20:g} MiB do not fit in "
                              f"fake.memory_cap_mb={cap:g}")
        self.memory = bytearray(size)
        # Write one byte per page so the memory is resident, not just reserved.
        for offset in range(0, size, 4096):
            self.memory[offset] = 1

    def _join(self) -> None:
        """Replicas under torchrun meet in a gloo group, as data-parallel PyTorch does,
        so that steps are synchronised and the harness's gathering is tested for real.
        Imported here: the fake workload needs no framework otherwise."""
        import torch.distributed

        timeout = datetime.timedelta(seconds=float(self.params["exp.collective_timeout"]))
        torch.distributed.init_process_group("gloo", timeout=timeout)
        self.group = torch.distributed

    def step(self, index: int) -> None:
        if self.failure != "none" and index == self.failure_batch:
            self._fail(index)
        extra = self.warmup_s * 0.5**index if self.warmup_s else 0.0
        jitter = self.random.uniform(0.0, self.jitter_s) if self.jitter_s else 0.0
        _wait(self.step_s + extra + jitter)
        if self.group is not None:
            self.group.barrier()  # the step ends for everyone when the slowest is done

    def gather_times(self, times_ms: list[float]) -> list[list[float]]:
        if self.group is None:
            return [list(times_ms)]
        gathered: list[Any] = [None] * self.world_size
        self.group.all_gather_object(gathered, list(times_ms))
        return [list(map(float, times)) for times in gathered]

    def _fail(self, index: int) -> None:
        if self.failure == "exception":
            raise RuntimeError(f"fake failure at batch {index}")
        if self.failure == "exit":
            os._exit(3)
        if self.failure == "signal":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.failure == "oom":
            # What an allocation that does not fit raises: no message.
            raise MemoryError
        if self.failure == "hang":
            while True:
                time.sleep(3600)
        if self.failure == "nan" and self.nan_batch is None:
            self.nan_batch = index

    def finish(self, num_steps: int) -> dict[str, Any]:
        if self.nan_batch is not None and self.nan_batch < num_steps:
            raise NonFiniteLoss(self.nan_batch)
        return {}

    def memory_breakdown(self) -> dict[str, Any]:
        return {}  # no model: nothing to break down

    def flops_per_sample(self) -> float | None:
        flops = float(self.params["fake.flops_per_sample"])
        return flops or None

    def environment(self) -> dict[str, Any]:
        return {"sys.framework_version": "fake", "hw.device_name": "fake"}

    def teardown(self) -> None:
        self.memory = bytearray()
        if self.group is not None and self.group.is_initialized():
            self.group.destroy_process_group()


BACKEND = FakeBackend


def available_devices() -> list[str]:
    """The fake workload runs anywhere: it only waits."""
    return ["cpu (simulated)"]
