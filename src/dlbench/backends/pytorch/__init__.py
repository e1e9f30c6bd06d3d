"""The PyTorch backend: eager mode (optionally torch.compile), on CPU or CUDA.

What a step does is the model's workload (``dlbench.models.pytorch.workloads``): a
classifier, a language model, a GAN and a reinforcement-learning agent all run
through the same few lines here. Synthetic data is made on the device once, at
set-up, so the input pipeline is not part of the measurement; with
``exp.data_dir`` each step waits for its batch from the real-data loader instead,
which is what a real-data run measures. Mixed precision goes through autocast;
float16 training on CUDA uses a gradient scaler as real float16 training does.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from dlbench.backends.base import Backend
from dlbench.backends.pytorch.extras import PyTorchExtras
from dlbench.backends.pytorch.generate import PyTorchGenerate
from dlbench.backends.pytorch.step import fast_step
from dlbench.config.catalog import MODELS, model_info
from dlbench.config.frameworks.base import image_layout
from dlbench.config.frameworks.pytorch import use_channels_last
from dlbench.errors import NonFiniteLoss, WorkerError
from dlbench.measure.timers import BatchTimer, EventTimer
from dlbench.models.flops import FlopsNotCounted, architecture_flops
from dlbench.models.pytorch.flops import count_step_flops
from dlbench.models.pytorch.workload_base import Batch, Workload
from dlbench.models.pytorch.workloads import make_workload

#: What the fork server (dlbench.launch.forkserver.server) imports beside this module, once
#: for every worker it forks: an optimizer's first step imports torch._dynamo, as long to
#: import as PyTorch itself.
FORK_PRELOAD = ("torch._dynamo",)

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _channels_last(batch: Batch, enabled: bool) -> Batch:
    inputs, targets = batch
    if enabled and inputs.dim() == 4 and inputs.is_floating_point():
        inputs = inputs.contiguous(memory_format=torch.channels_last)
    return inputs, targets


class PyTorchBackend(PyTorchGenerate, PyTorchExtras, Backend):
    """``exp.framework=pytorch``: see the ``pytorch.*`` parameters."""

    flops_counter = "pytorch-flopcounter"

    def setup(self) -> None:
        p = self.params
        threads = int(p["pytorch.num_threads"])
        if threads > 0:
            torch.set_num_threads(threads)
        # Set by torchrun for each replica of a data-parallel run.
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.device = self._device(str(p["exp.gpus"]), local_rank)
        self.on_cuda = self.device.type == "cuda"
        if self.world_size > 1:
            self._join_process_group()
        # The same initial weights and synthetic data in every run of the experiment,
        # so that two runs differ only by what is measured.
        torch.manual_seed(int(p["pytorch.seed"]))
        if self.device.type == "cuda":
            torch.backends.cudnn.benchmark = bool(p["pytorch.cudnn_benchmark"])
        self.layout: str | None = None
        if p["exp.phase"] == "generate":  # its own model and prompts: pytorch_generate.py
            return self.setup_generate()
        info = model_info(p)
        self.training = p["exp.phase"] in ("training", "train_to_accuracy")
        dtype = _DTYPES[str(p["exp.dtype"])]
        self.workload = make_workload(info, int(p["exp.image_size"]), int(p["exp.seq_len"]))
        self.channels_last = use_channels_last(p["pytorch.channels_last"], self.on_cuda,
                                               info.input_shape)
        self.layout = image_layout(info.input_shape, self.channels_last)

        module = self.workload.build().to(self.device)
        if self.channels_last:
            module = module.to(memory_format=torch.channels_last)
        module.train(self.training)
        self.module: nn.Module = module
        self.replicated: nn.Module = module
        if self.world_size > 1:
            self.replicated = self._data_parallel(module)

        self.batches: Iterator[Batch] | None = None
        self.batch: Batch | None = None
        data_dir = str(p.get("exp.data_dir", ""))
        if p["exp.phase"] == "train_to_accuracy":
            self.start_epoch()  # a held-out split (dlbench.backends.pytorch.accuracy_data)
        elif data_dir:
            if not info.real_data_kind:
                raise WorkerError(
                    f"exp.data_dir={data_dir!r}: model {info.id} reads synthetic data only"
                )
            # Imported here: Pillow and the loader are needed only for real data.
            from dlbench.backends.pytorch.data import real_batches

            self.batches = real_batches(p, info, self.workload.input_shape, self.device)
        elif not self.workload.runs_model:
            raise WorkerError(f"model {info.id} times the input pipeline: it needs exp.data_dir")
        else:
            batch = self.workload.synthetic_batch(int(p["exp.replica_batch"]), self.device)
            self.batch = _channels_last(batch, self.channels_last)

        self.autocast: Any = (
            (lambda: torch.autocast(device_type=self.device.type, dtype=dtype))
            if dtype != torch.float32
            else contextlib.nullcontext
        )
        self.optimizers: list[torch.optim.Optimizer] = []
        use_scaler = False
        if self.training and self.workload.runs_model:
            name = str(p["pytorch.optimizer"])
            rate = self.workload.learning_rates[name]
            for group in self.workload.parameter_groups(module):
                self.optimizers.append(
                    torch.optim.Adam(group, lr=rate)
                    if name == "adam"
                    else torch.optim.SGD(group, lr=rate, momentum=0.9)
                )
            use_scaler = dtype == torch.float16 and self.device.type == "cuda"
            self.scaler = torch.amp.GradScaler("cuda", enabled=use_scaler)
        # Losses stay on the device and are checked once at the end: reading each one
        # back would synchronise the device inside the timed loop. A list, not a
        # preallocated tensor: writing into one is a device copy on every step.
        self.losses: list[torch.Tensor] = []

        # Counted on the eager module, before compilation hides its operators.
        self.flops = self._count_flops() if self.workload.runs_model else None
        self.model: Any = self.replicated
        if bool(p["pytorch.compile"]) and self.workload.runs_model:
            self.model = self.workload.compile(self.replicated, str(p["pytorch.compile_mode"]))
        self._step = fast_step(
            self.workload, self.model, self.batch if self.batches is None else None,
            self.training, self.optimizers, self.autocast if dtype != torch.float32 else None,
            use_scaler, self.losses) or self._general_step

    @staticmethod
    def _device(gpus: str, local_rank: int = 0) -> torch.device:
        """Replica ``local_rank``'s device: the GPU at that position of ``exp.gpus``."""
        if not gpus:
            return torch.device("cpu")
        if not torch.cuda.is_available():
            raise WorkerError(f"exp.gpus='{gpus}' asks for a GPU but CUDA is not available here")
        index = int(gpus.split(",")[local_rank])
        if index >= torch.cuda.device_count():
            raise WorkerError(
                f"exp.gpus='{gpus}': GPU {index} does not exist "
                f"({torch.cuda.device_count()} visible)"
            )
        torch.cuda.set_device(index)
        return torch.device("cuda", index)

    def _join_process_group(self) -> None:
        """Meet the other replicas (torchrun's environment says where)."""
        p = self.params
        backend = str(p["exp.dist_backend"])
        if backend == "auto":
            backend = "nccl" if self.device.type == "cuda" else "gloo"
        # A replica that waits longer than this in a collective fails with an error
        # instead of hanging its experiment until exp.timeout.
        timeout = datetime.timedelta(seconds=float(p["exp.collective_timeout"]))
        torch.distributed.init_process_group(
            backend, timeout=timeout,
            device_id=self.device if self.device.type == "cuda" else None)

    def _data_parallel(self, module: nn.Module) -> nn.Module:
        """``module`` under DistributedDataParallel: gradients are averaged across the
        replicas during the backward pass, as real data-parallel training does."""
        workload = self.workload
        if type(workload).training_losses is not Workload.training_losses:
            # Several losses with optimizers taking turns (a GAN) need one DDP wrapper
            # per sub-network, with the workload's cooperation.
            raise WorkerError(f"model {self.params['exp.model']} does not run data-parallel: "
                              f"its training step alternates several optimizers")
        if not self.training:
            return module  # inference has no gradients to exchange: replicas run alone
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(module, device_ids=device_ids)

    def gather_times(self, times_ms: list[float]) -> list[list[float]]:
        if self.world_size <= 1:
            return [list(times_ms)]
        gathered: list[Any] = [None] * self.world_size
        torch.distributed.all_gather_object(gathered, list(times_ms))
        return [list(map(float, times)) for times in gathered]

    def _next_batch(self) -> Batch:
        if self.batches is None:
            assert self.batch is not None
            return self.batch
        inputs, targets = next(self.batches)
        if not self.workload.runs_model:
            return inputs, targets
        return _channels_last(self.workload.real_batch(inputs, targets), self.channels_last)

    def _train(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """One training step: each loss of the workload, its backward pass and its
        optimizer's step, in turn. Returns the sum of the losses (on the device)."""
        losses = self.workload.training_losses(model, inputs, targets)
        total = torch.zeros((), device=self.device)
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=True)
            with self.autocast():
                loss = next(losses)
            self.scaler.scale(loss).backward()
            self.scaler.step(optimizer)
            total = total + loss.detach().float()
        self.scaler.update()
        return total

    def _count_flops(self) -> float | None:
        """PyTorch's own count of one sample's FLOPs in the phase measured, on one real
        batch on the device (the cross-check of the architecture's count, which the
        worker makes on the meta device: ``dlbench.models.flops``)."""
        inputs, targets = self._next_batch()
        total = count_step_flops(self.workload, self.module, inputs, targets,
                                 self.training, self.autocast)
        return total / inputs.shape[0] if total else None

    def step(self, index: int) -> None:
        # Specialised at set-up (backends.pytorch.step), else the general step below.
        self._step(index)

    def _general_step(self, index: int) -> None:
        inputs, targets = self._next_batch()
        if not self.workload.runs_model:
            return  # the loader: waiting for the batch was the step
        if self.training:
            self.losses.append(self._train(self.model, inputs, targets))
        else:
            with torch.inference_mode(), self.autocast():
                self.workload.infer(self.model, inputs)

    def synchronize(self) -> None:
        # A flag set once: reading ``device.type`` costs more than half a microsecond,
        # inside every timed interval.
        if self.on_cuda:
            torch.cuda.synchronize(self.device)

    def batch_timer(self) -> BatchTimer:
        """On CUDA, CUDA events on the current stream around every step
        (:class:`~dlbench.measure.timers.EventTimer`), so that the host launches the
        next step while the GPU runs this one; the CPU keeps the host's clock."""
        if not self.on_cuda:
            return super().batch_timer()
        return EventTimer(lambda: torch.cuda.Event(enable_timing=True), self.synchronize)

    def finish(self, num_steps: int) -> dict[str, Any]:
        if not self.losses:
            return {}
        # One read of the device for every loss of the run.
        losses = torch.stack(self.losses[:num_steps]).float().cpu()
        bad = (~torch.isfinite(losses)).nonzero()
        if len(bad):
            raise NonFiniteLoss(int(bad[0].item()))
        extra: dict[str, Any] = {
            "results.loss_last": float(losses[-1].item()) if num_steps else None,
            "results.loss_data": losses.tolist()}
        if self.params["exp.phase"] == "train_to_accuracy":
            extra["results.accuracy_data"] = self.accuracy_data()
        return extra

    def throughput_unit(self) -> tuple[str, float]:
        return self.workload.throughput_unit(self.training)

    def flops_per_sample(self) -> float | None:
        return self.flops

    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {
            "sys.framework_version": torch.__version__,
            "sys.framework_build": {
                "cuda": torch.version.cuda,
                "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None,
                "mkldnn": torch.backends.mkldnn.is_available(),
                "openmp": torch.backends.openmp.is_available(),
                "num_threads": torch.get_num_threads(),
            },
            "sys.model_params": sum(t.numel() for t in self.module.parameters()),
        }
        if self.layout is not None:
            env["sys.layout"] = self.layout
        if self.device.type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            env["hw.device_name"] = props.name
            env["hw.device_memory_gib"] = round(props.total_memory / 2**30, 2)
            env["hw.device_capability"] = f"{props.major}.{props.minor}"
            if torch.distributed.is_available() and hasattr(torch.cuda, "nccl"):
                with contextlib.suppress(Exception):
                    env["sys.nccl_version"] = ".".join(map(str, torch.cuda.nccl.version()))
        else:
            env["hw.device_name"] = "cpu"
        return env

    def teardown(self) -> None:
        # Closing the real-data iterator shuts its loader's worker processes down now
        # rather than at garbage collection.
        close = getattr(getattr(self, "batches", None), "close", None)
        if close is not None:
            close()
        if getattr(self, "device", None) is not None and self.device.type == "cuda":
            torch.cuda.empty_cache()
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


BACKEND = PyTorchBackend


def model_summary(model_id: str) -> tuple[int, float | None]:
    """Parameters and inference FLOPs per sample of ``model_id`` at its published size.

    Built on the ``meta`` device, where operators compute shapes and nothing else, so
    the whole zoo is summarised in seconds; the FLOPs are the architecture's count
    (``dlbench.models.flops``), None where it cannot be made.
    """
    info = MODELS[model_id]
    workload = make_workload(info)
    if not workload.runs_model:
        return 0, None
    with torch.device("meta"):
        params = sum(t.numel() for t in workload.build().parameters())
    try:
        return params, architecture_flops(info, training=False)
    except FlopsNotCounted:
        return params, None


def available_devices() -> list[str]:
    """The devices PyTorch sees here: ``cpu``, then ``cuda:N NAME`` for each CUDA GPU."""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return ["cpu", *(f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(count))]
