"""The PyTorch backend: eager mode (optionally torch.compile), on CPU or CUDA.

Synthetic data is made on the device once, at set-up, so the input pipeline is not
part of the measurement. Mixed precision goes through autocast; float16 training on
CUDA uses a gradient scaler as real float16 training does.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from dlbench.backends.base import Backend, NonFiniteLoss
from dlbench.config.catalog import MODELS, model_input_shape
from dlbench.errors import WorkerError
from dlbench.models import build_pytorch_model

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class PyTorchBackend(Backend):
    """``exp.framework=pytorch``: see the ``pytorch.*`` parameters."""

    def setup(self) -> None:
        p = self.params
        threads = int(p["pytorch.num_threads"])
        if threads > 0:
            torch.set_num_threads(threads)
        self.device = self._device(str(p["exp.gpus"]))
        if self.device.type == "cuda":
            torch.backends.cudnn.benchmark = bool(p["pytorch.cudnn_benchmark"])

        info = MODELS[str(p["exp.model"])]
        shape = model_input_shape(info, int(p["exp.image_size"]))
        batch = int(p["exp.replica_batch"])
        self.training = p["exp.phase"] == "training"
        dtype = _DTYPES[str(p["exp.dtype"])]

        model = build_pytorch_model(info.id, shape, info.num_classes).to(self.device)
        self.inputs = torch.randn(batch, *shape, device=self.device)
        self.labels = torch.randint(0, info.num_classes, (batch,), device=self.device)
        if bool(p["pytorch.channels_last"]) and self.inputs.dim() == 4:
            model = model.to(memory_format=torch.channels_last)
            self.inputs = self.inputs.contiguous(memory_format=torch.channels_last)
        model.train(self.training)
        self.module = model
        self.model: Any = model
        if bool(p["pytorch.compile"]):
            self.model = torch.compile(model, mode=str(p["pytorch.compile_mode"]))

        self.autocast: Any = (
            (lambda: torch.autocast(device_type=self.device.type, dtype=dtype))
            if dtype != torch.float32
            else contextlib.nullcontext
        )
        total_steps = int(p["exp.num_warmup_batches"]) + int(p["exp.num_batches"])
        # Losses stay on the device and are checked once at the end: reading each one
        # back would synchronise the device inside the timed loop.
        self.losses = torch.zeros(max(total_steps, 1), device=self.device)
        if self.training:
            self.loss_fn = torch.nn.CrossEntropyLoss()
            params = model.parameters()
            self.optimizer: torch.optim.Optimizer = (
                torch.optim.Adam(params, lr=1e-3)
                if p["pytorch.optimizer"] == "adam"
                else torch.optim.SGD(params, lr=0.01, momentum=0.9)
            )
            use_scaler = dtype == torch.float16 and self.device.type == "cuda"
            self.scaler = torch.amp.GradScaler("cuda", enabled=use_scaler)

    @staticmethod
    def _device(gpus: str) -> torch.device:
        if not gpus:
            return torch.device("cpu")
        if not torch.cuda.is_available():
            raise WorkerError(f"exp.gpus='{gpus}' asks for a GPU but CUDA is not available here")
        index = int(gpus.split(",")[0])
        if index >= torch.cuda.device_count():
            raise WorkerError(
                f"exp.gpus='{gpus}': GPU {index} does not exist "
                f"({torch.cuda.device_count()} visible)"
            )
        torch.cuda.set_device(index)
        return torch.device("cuda", index)

    def step(self, index: int) -> None:
        if self.training:
            self.optimizer.zero_grad(set_to_none=True)
            with self.autocast():
                logits = self.model(self.inputs)
                loss = self.loss_fn(logits.float(), self.labels)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.losses[index] = loss.detach()
        else:
            with torch.inference_mode(), self.autocast():
                self.model(self.inputs)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def finish(self, num_steps: int) -> dict[str, Any]:
        if not self.training:
            return {}
        losses = self.losses[:num_steps].float().cpu()
        bad = (~torch.isfinite(losses)).nonzero()
        if len(bad):
            raise NonFiniteLoss(int(bad[0].item()))
        return {"results.loss_last": float(losses[-1].item()) if num_steps else None}

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
        if getattr(self, "device", None) is not None and self.device.type == "cuda":
            torch.cuda.empty_cache()


BACKEND = PyTorchBackend
