"""The ONNX Runtime backend: inference of the model exported from its PyTorch definition.

The model is the one ``exp.framework=pytorch`` runs: built by the same builder with the
same seed (so the same weights), switched to inference mode, and exported with
``torch.onnx.export`` for the experiment's exact input shape and dtype (static shapes,
which let ONNX Runtime plan and fuse the most). An export takes seconds to minutes, so
it is cached on disk per model, input shape, dtype, seed and tool versions, written
atomically so that concurrent workers never read half a file.

Set-up creates the session (execution providers, threads, graph optimization level)
and runs it once; that time is ``results.compile_time``. A step is one ``run`` of the
session. On a GPU the input is copied to the device once and the outputs are bound on
the device (IO binding), so a step is ``run_with_iobinding`` and ``synchronize``
waits for its outputs; on the CPU ``run`` returns when the work is done.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import onnxscript
import torch
from torch import nn

import dlbench
from dlbench.backends.base import Backend
from dlbench.config.catalog import MODELS
from dlbench.config.frameworks.onnxruntime import ONNXRUNTIME_PROVIDERS
from dlbench.config.home import dlbench_home
from dlbench.errors import WorkerError
from dlbench.measure.sysinfo import gpu_info
from dlbench.models.pytorch.flops import count_step_flops
from dlbench.models.pytorch.workload_base import Workload
from dlbench.models.pytorch.workloads import make_workload

#: Version of the export cache's key; bump it when what goes into an export changes.
EXPORT_FORMAT = 1

_DTYPES = {"float32": torch.float32, "float16": torch.float16}

_OPTIMIZATION = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}

_EXECUTION_MODE = {
    "sequential": ort.ExecutionMode.ORT_SEQUENTIAL,
    "parallel": ort.ExecutionMode.ORT_PARALLEL,
}

_CPU = ONNXRUNTIME_PROVIDERS[0]
#: Providers that run on an NVIDIA GPU and take a ``device_id`` option.
_GPU_PROVIDERS = frozenset(ONNXRUNTIME_PROVIDERS) - {_CPU}


def export_cache_dir() -> Path:
    """Where exports are cached: ``onnx/`` in dlbench's home
    (:func:`dlbench.config.home.dlbench_home`)."""
    return dlbench_home() / "onnx"


def requested_providers(value: str, gpus: str) -> list[str]:
    """The providers of ``onnxruntime.providers=value``, in priority order: ``auto``
    is the CPU provider, or the CUDA provider (the CPU one behind it, for the
    operators CUDA lacks) when ``exp.gpus`` names a GPU."""
    if value.strip() == "auto":
        return ["CUDAExecutionProvider", _CPU] if gpus else [_CPU]
    return [name.strip() for name in value.split(",") if name.strip()]


class _Inference(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """The workload's inference phase as a module, which is what the exporter traces
    (a VAE's inference is its decoder's probabilities, not the raw forward)."""

    def __init__(self, workload: Workload, module: nn.Module) -> None:
        super().__init__()
        self.workload = workload
        self.model = module

    def forward(self, inputs: torch.Tensor) -> Any:
        return self.workload.infer(self.model, inputs)


def export_key(
    model_id: str, input_shape: tuple[int, ...], input_dtype: str, dtype: str, seed: int,
    architecture: str,
) -> dict[str, Any]:
    """What an export depends on: the cache holds one file per distinct key.
    ``architecture`` is the module's description (layers and sizes); together with
    dlbench's version it makes a changed model definition miss the cache."""
    return {
        "format": EXPORT_FORMAT,
        "model": model_id,
        "input_shape": list(input_shape),
        "input_dtype": input_dtype,
        "dtype": dtype,
        "seed": seed,
        "architecture": hashlib.sha256(architecture.encode()).hexdigest(),
        "dlbench": dlbench.__version__,
        "torch": torch.__version__,
        "onnx": onnx.__version__,
        "onnxscript": onnxscript.__version__,
    }


def export_path(key: dict[str, Any], directory: Path | None = None) -> Path:
    """The cache file of ``key``: readable names, a digest of the whole key."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    shape = "x".join(map(str, key["input_shape"]))
    name = f"{key['model']}-{shape}-{key['dtype']}-seed{key['seed']}-{digest}.onnx"
    return (directory or export_cache_dir()) / name


def export_onnx(module: nn.Module, inputs: torch.Tensor, path: Path) -> None:
    """Export ``module`` for ``inputs`` to ``path`` atomically: to a temporary file
    in the same folder, then renamed, so that a reader sees the whole file or none
    (two workers exporting the same key both succeed; the last rename wins)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name of its own per writer; created by the exporter, so with the user's umask
    # (a cache shared by a group stays readable by the group).
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        # One file: weights inside the protobuf (models up to 2 GiB), so that one
        # rename publishes the whole export. Not verbose: its progress lines say
        # nothing that results.export_time does not.
        torch.onnx.export(module, (inputs,), tmp, input_names=["input"], dynamo=True,
                          external_data=False, verbose=False)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def describe_model(workload: Workload, batch: int) -> tuple[str, int, float | None]:
    """The module's description (its layers and sizes), parameters and forward FLOPs
    per sample at the experiment's sizes.

    ONNX Runtime runs the computation of the PyTorch model's forward pass, so its own
    FLOPs are PyTorch's count (``dlbench.models.pytorch.flops``), made here at this
    batch and shape on the ``meta`` device, where nothing is computed or allocated.
    """
    with torch.device("meta"):
        module = workload.build().eval()
        architecture = repr(module)
        params = sum(t.numel() for t in module.parameters())
        try:
            inputs, targets = workload.synthetic_batch(batch, torch.device("meta"))
            total = count_step_flops(workload, module, inputs, targets, training=False)
        except (RuntimeError, NotImplementedError, TypeError, ValueError):
            return architecture, params, None  # an operator without a meta implementation
    return architecture, params, total / batch if total else None


def _root_cause(error: BaseException) -> str:
    """``Type: first line`` of the innermost cause: the exporter wraps what went wrong
    (an operator that mixes dtypes) in a generic, coloured "failed to decompose"."""
    while error.__cause__ is not None:
        error = error.__cause__
    lines = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}"


class OnnxRuntimeBackend(Backend):
    """``exp.framework=onnxruntime``: see the ``onnxruntime.*`` parameters."""

    # The forward pass it runs is the exported PyTorch module's, counted by PyTorch.
    flops_counter = "onnxruntime-pytorch"

    def setup(self) -> None:
        p = self.params
        if p["exp.phase"] != "inference":
            raise WorkerError(f"exp.phase={p['exp.phase']}: ONNX Runtime is inference only")
        info = MODELS[str(p["exp.model"])]
        dtype_name = str(p["exp.dtype"])
        if dtype_name not in _DTYPES:
            raise WorkerError(f"exp.dtype={dtype_name}: onnxruntime runs float32 or float16")
        dtype = _DTYPES[dtype_name]
        seed = int(p["onnxruntime.seed"])
        batch = int(p["exp.replica_batch"])
        self.workload = make_workload(info, int(p["exp.image_size"]), int(p["exp.seq_len"]))
        if not self.workload.runs_model:
            raise WorkerError(f"model {info.id} times an input pipeline: nothing to export")

        self.gpus = str(p["exp.gpus"])
        self.device_id = int(self.gpus.split(",")[0]) if self.gpus else 0
        self.providers = requested_providers(str(p["onnxruntime.providers"]), self.gpus)
        self.on_gpu = self.providers[0] in _GPU_PROVIDERS
        self.io_device = "cuda"  # where IO binding places the input and outputs on a GPU
        self._check_available()

        # Inputs from their own seeding, so that they are the same whether the weights
        # were built (a fresh export) or read from the cache.
        torch.manual_seed(seed)
        inputs, _targets = self.workload.synthetic_batch(batch, torch.device("cpu"))
        if inputs.is_floating_point():
            inputs = inputs.to(dtype)
        self.inputs = inputs

        architecture, self.model_params, self.flops = describe_model(self.workload, batch)
        key = export_key(info.id, tuple(inputs.shape), str(inputs.dtype).removeprefix("torch."),
                         dtype_name, seed, architecture)
        self.export_file = export_path(key)
        self.export_cached = bool(p["onnxruntime.export_cache"]) and self.export_file.is_file()
        self.export_time: float | None = None
        if not self.export_cached:
            self._export(seed, dtype)

        start = time.perf_counter()
        try:
            self.session = self._session()
        except ort.capi.onnxruntime_pybind11_state.InvalidProtobuf:
            if not self.export_cached:
                raise
            # A cache file that does not parse (damaged since, or put there by hand) is
            # exported again: a damaged cache must never fail an experiment.
            self.export_cached = False
            self._export(seed, dtype)
            start = time.perf_counter()
            self.session = self._session()
        self._bind()
        self.step(0)
        self.synchronize()
        self.compile_time = time.perf_counter() - start

    def _check_available(self) -> None:
        available = ort.get_available_providers()
        for name in self.providers:
            if name not in available:
                raise WorkerError(
                    f"onnxruntime.providers={','.join(self.providers)}: {name} is not available "
                    f"in this ONNX Runtime build (onnxruntime {ort.__version__}); available: "
                    f"{', '.join(available)}"
                )

    def _build(self, seed: int, dtype: torch.dtype) -> nn.Module:
        """The PyTorch model with the weights ``pytorch.seed=seed`` gives it, in
        inference mode and in ``dtype``, as the exporter traces it."""
        torch.manual_seed(seed)
        return _Inference(self.workload, self.workload.build().to(dtype)).eval()

    def _export(self, seed: int, dtype: torch.dtype) -> None:
        start = time.perf_counter()
        module = self._build(seed, dtype)
        try:
            export_onnx(module, self.inputs, self.export_file)
        except Exception as error:
            raise WorkerError(
                f"torch.onnx.export of {self.workload.info.id} ({self.params['exp.dtype']}) "
                f"failed: {_root_cause(error)}"
            ) from error
        self.export_time = time.perf_counter() - start

    def _session(self) -> ort.InferenceSession:
        p = self.params
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(p["onnxruntime.intra_op_threads"])
        options.inter_op_num_threads = int(p["onnxruntime.inter_op_threads"])
        options.execution_mode = _EXECUTION_MODE[str(p["onnxruntime.execution_mode"])]
        options.graph_optimization_level = _OPTIMIZATION[str(p["onnxruntime.graph_optimization"])]
        providers: list[Any] = [
            (name, {"device_id": self.device_id}) if name in _GPU_PROVIDERS else name
            for name in self.providers
        ]
        try:
            session = ort.InferenceSession(str(self.export_file), options, providers=providers)
        except ort.capi.onnxruntime_pybind11_state.InvalidProtobuf:
            raise  # a damaged file: setup() exports it again
        except Exception as error:  # an operator without a kernel for this dtype, ...
            raise WorkerError(
                f"ONNX Runtime cannot run {self.workload.info.id} ({self.params['exp.dtype']}) "
                f"with {', '.join(self.providers)}: {str(error).splitlines()[0][:300]}"
            ) from error
        # ONNX Runtime falls back to the CPU, with only a warning, when a GPU provider
        # cannot start (a missing CUDA or cuDNN library): that would be mislabelled.
        if session.get_providers()[0] != self.providers[0]:
            raise WorkerError(
                f"onnxruntime.providers={','.join(self.providers)}: {self.providers[0]} did not "
                f"start (the session uses {', '.join(session.get_providers())}); see the log"
            )
        return session

    def _bind(self) -> None:
        """Feed or bind the input; bind the outputs on the device on a GPU."""
        input_name = self.session.get_inputs()[0].name
        self.output_names = [o.name for o in self.session.get_outputs()]
        array = self.inputs.numpy()
        self.feed = {input_name: array}
        self.binding: Any = None
        self.last: list[Any] = []
        if self.on_gpu:
            self.binding = self.session.io_binding()
            value = ort.OrtValue.ortvalue_from_numpy(array, self.io_device, self.device_id)
            self.binding.bind_ortvalue_input(input_name, value)
            for name in self.output_names:
                self.binding.bind_output(name, self.io_device, self.device_id)

    def step(self, index: int) -> None:
        if self.binding is None:
            self.last = self.session.run(self.output_names, self.feed)
            return
        self.session.run_with_iobinding(self.binding)
        if index == 0 and not self.last:
            # The first run allocated the outputs on the device; binding those buffers
            # lets every later run write into them instead of allocating its own.
            self.last = self.binding.get_outputs()
            self.binding.clear_binding_outputs()
            for name, value in zip(self.output_names, self.last, strict=True):
                self.binding.bind_ortvalue_output(name, value)

    def synchronize(self) -> None:
        if self.binding is not None:
            self.binding.synchronize_outputs()

    def outputs(self) -> list[np.ndarray]:
        """The outputs of the last step, copied to host memory (for checks, untimed)."""
        if self.binding is not None:
            return list(self.binding.copy_outputs_to_cpu())
        return [np.asarray(value) for value in self.last]

    def finish(self, num_steps: int) -> dict[str, Any]:
        results: dict[str, Any] = {
            "results.compile_time": self.compile_time,
            "results.export_cached": self.export_cached,
        }
        if self.export_time is not None:
            results["results.export_time"] = self.export_time
        return results

    def throughput_unit(self) -> tuple[str, float]:
        return self.workload.throughput_unit(False)

    def flops_per_sample(self) -> float | None:
        return self.flops

    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {
            "sys.framework_version": ort.__version__,
            "sys.framework_build": {
                "providers": self.session.get_providers(),
                "available_providers": ort.get_available_providers(),
                "device": ort.get_device(),
                "torch": torch.__version__,
                "onnx": onnx.__version__,
                "onnxscript": onnxscript.__version__,
                "export_file": str(self.export_file),
            },
            "sys.model_params": self.model_params,
            "hw.device_name": "cpu",
        }
        if self.on_gpu:
            gpus = gpu_info().get("hw.gpus") or []
            names = {gpu["index"]: gpu["name"] for gpu in gpus}
            env["hw.device_name"] = names.get(self.device_id, f"cuda:{self.device_id}")
        return env

    def teardown(self) -> None:
        # The session holds the model's weights (and device memory on a GPU).
        self.binding = None
        self.last = []
        self.session = None


BACKEND = OnnxRuntimeBackend


def available_devices() -> list[str]:
    """``cpu``, then each NVIDIA GPU with the GPU providers of this ONNX Runtime build
    (none with the CPU-only ``onnxruntime`` package)."""
    devices = ["cpu"]
    gpu_providers = [name.removesuffix("ExecutionProvider")
                     for name in ort.get_available_providers() if name in _GPU_PROVIDERS]
    if gpu_providers:
        gpus = gpu_info().get("hw.gpus") or []
        via = ", ".join(gpu_providers)
        devices += [f"cuda:{gpu['index']} {gpu['name']} ({via})" for gpu in gpus] or [
            f"cuda ({via}; GPU names need nvidia-ml-py)"]
    return devices
