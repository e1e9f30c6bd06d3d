"""Device peaks: the roofline an experiment's FLOP/s are compared with (MFU).

``dlbench peak`` measures, per device, dense matmul throughput per dtype (square
``n × n`` matmuls, ``2n³`` FLOPs each, timed with synchronisation by the one timing
loop, median over batches) and memory bandwidth (a large device-to-same-device copy:
bytes read + written over time), and stores them in a per-user JSON file keyed by
device name (:func:`peaks_path`). Workers then report ``results.mfu`` =
``results.tflops`` / the peak of the experiment's dtype (:func:`lookup_peak`): a
peak measured on this machine first, else the vendor's datasheet figure
(:data:`DATASHEET`), else no MFU.

Example::

    entry = measure_device("cpu", ["float32"], seconds=2)
    save_peak(entry)
    lookup_peak("cpu", "float32", cpu_model=entry["device"])  # Peak(tflops=..., source=...)
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dlbench.measure.stats import percentile
from dlbench.measure.timing import AutoStop, run_batches

#: Version of the peaks file format. 1: {"version", "devices": {name: entry}}.
PEAKS_FORMAT = 1

#: Matmul dtypes ``dlbench peak`` can measure; ``tf32`` is float32 storage with
#: TensorFloat-32 matmuls allowed (CUDA only).
PEAK_DTYPES = ("float32", "tf32", "float16", "bfloat16")

#: Default matmul size: large enough that launch overhead is < 1% and the device is
#: saturated (an 8192³ matmul is 1.1 TFLOP), small enough for a CPU to finish.
DEFAULT_SIZE = {"cpu": 2048, "cuda": 8192}
#: Default copy size: well beyond any last-level cache (H100 L2 is 50 MiB).
DEFAULT_COPY_MIB = {"cpu": 256, "cuda": 1024}


@dataclass(frozen=True)
class Datasheet:
    """A vendor's dense (no sparsity) peak figures for one accelerator."""

    label: str
    pattern: str  # regular expression matched against the device name
    tflops: dict[str, float]
    memory_gbps: float


# Dense figures from the vendors' datasheets; NVIDIA quotes tensor-core numbers "with
# sparsity", which are twice the dense ones halved here. First match wins, so the
# specific variants come before the general ones.
DATASHEET: tuple[Datasheet, ...] = (
    # NVIDIA H100 Tensor Core GPU datasheet (2023): PCIe FP32 51, TF32 756*, FP16/BF16
    # 1,513*, FP8 3,026*; NVL FP32 60, TF32 835*, BF16 1,671*, FP8 3,341*; SXM FP32 67,
    # TF32 989*, FP16/BF16 1,979*, FP8 3,958* (* with sparsity); 2.0 / 3.9 / 3.35 TB/s.
    Datasheet("NVIDIA H100 PCIe", r"H100.*PCIe",
              {"float32": 51.0, "tf32": 378.0, "float16": 756.5, "bfloat16": 756.5,
               "float8": 1513.0}, 2000.0),
    Datasheet("NVIDIA H100 NVL", r"H100.*NVL",
              {"float32": 60.0, "tf32": 417.5, "float16": 835.5, "bfloat16": 835.5,
               "float8": 1670.5}, 3900.0),
    Datasheet("NVIDIA H100 SXM", r"H100",
              {"float32": 67.0, "tf32": 494.5, "float16": 989.5, "bfloat16": 989.5,
               "float8": 1979.0}, 3350.0),
    # NVIDIA H200 datasheet (2024): NVL FP32 60, TF32 835*, BF16 1,671*; SXM FP32 67,
    # TF32 989*, FP16/BF16 1,979*, FP8 3,958*; 4.8 TB/s both.
    Datasheet("NVIDIA H200 NVL", r"H200.*NVL",
              {"float32": 60.0, "tf32": 417.5, "float16": 835.5, "bfloat16": 835.5,
               "float8": 1670.5}, 4800.0),
    Datasheet("NVIDIA H200 SXM", r"H200",
              {"float32": 67.0, "tf32": 494.5, "float16": 989.5, "bfloat16": 989.5,
               "float8": 1979.0}, 4800.0),
    # NVIDIA A100 Tensor Core GPU datasheet (2021): FP32 19.5, TF32 156, FP16/BF16 312
    # (dense); 40GB 1,555 GB/s, 80GB PCIe 1,935 GB/s, 80GB SXM 2,039 GB/s.
    Datasheet("NVIDIA A100 80GB PCIe", r"A100.*80GB.*PCIe|A100-PCIE-80GB",
              {"float32": 19.5, "tf32": 156.0, "float16": 312.0, "bfloat16": 312.0}, 1935.0),
    Datasheet("NVIDIA A100 80GB SXM", r"A100.*80GB",
              {"float32": 19.5, "tf32": 156.0, "float16": 312.0, "bfloat16": 312.0}, 2039.0),
    Datasheet("NVIDIA A100 40GB", r"A100",
              {"float32": 19.5, "tf32": 156.0, "float16": 312.0, "bfloat16": 312.0}, 1555.0),
    # NVIDIA V100 datasheet (2020): SXM2 FP32 15.7, tensor 125; PCIe FP32 14, tensor
    # 112; V100S PCIe FP32 16.4, tensor 130; 900 GB/s (V100S 1,134 GB/s). No bfloat16.
    Datasheet("NVIDIA V100S PCIe", r"V100S",
              {"float32": 16.4, "float16": 130.0}, 1134.0),
    Datasheet("NVIDIA V100 PCIe", r"V100.*PCIE",
              {"float32": 14.0, "float16": 112.0}, 900.0),
    Datasheet("NVIDIA V100 SXM2", r"V100",
              {"float32": 15.7, "float16": 125.0}, 900.0),
    # NVIDIA L40S datasheet (2023): FP32 91.6, TF32 366*, FP16/BF16 733*, FP8 1,466*;
    # 864 GB/s.
    Datasheet("NVIDIA L40S", r"L40S",
              {"float32": 91.6, "tf32": 183.0, "float16": 366.5, "bfloat16": 366.5,
               "float8": 733.0}, 864.0),
    # NVIDIA L4 datasheet (2023): FP32 30.3, TF32 120*, FP16/BF16 242*, FP8 485*;
    # 300 GB/s.
    Datasheet("NVIDIA L4", r"\bL4\b",
              {"float32": 30.3, "tf32": 60.0, "float16": 121.0, "bfloat16": 121.0,
               "float8": 242.5}, 300.0),
    # AMD Instinct MI300X data sheet (2023): FP32 163.4, TF32 653.7, FP16/BF16 1,307.4,
    # FP8 2,614.9 (dense); 5.3 TB/s.
    Datasheet("AMD Instinct MI300X", r"MI300X",
              {"float32": 163.4, "tf32": 653.7, "float16": 1307.4, "bfloat16": 1307.4,
               "float8": 2614.9}, 5300.0),
)


@dataclass(frozen=True)
class Peak:
    """A peak TFLOP/s and where it comes from (``results.mfu_peak_source``)."""

    tflops: float
    source: str


def peaks_path() -> Path:
    """``$DLBENCH_HOME/peaks.json``, else ``~/.cache/dlbench/peaks.json``."""
    home = os.environ.get("DLBENCH_HOME")
    base = Path(home) if home else Path.home() / ".cache" / "dlbench"
    return base / "peaks.json"


def load_peaks(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The measured peaks by device name; empty when the file is missing or unreadable
    (a damaged cache must never fail an experiment)."""
    try:
        document = json.loads((path or peaks_path()).read_text())
    except (OSError, ValueError):
        return {}
    devices = document.get("devices") if isinstance(document, dict) else None
    return devices if isinstance(devices, dict) else {}


def save_peak(entry: dict[str, Any], path: Path | None = None) -> Path:
    """Store ``entry`` (from :func:`measure_device`) under its device name."""
    path = path or peaks_path()
    devices = load_peaks(path)
    devices[str(entry["device"])] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"version": PEAKS_FORMAT, "devices": devices}, indent=1))
    os.replace(tmp, path)
    return path


def datasheet(device_name: str) -> Datasheet | None:
    """The datasheet entry whose pattern matches ``device_name``, or None."""
    for entry in DATASHEET:
        if re.search(entry.pattern, device_name, re.IGNORECASE):
            return entry
    return None


def lookup_peak(
    device_name: str | None, dtype: str, cpu_model: str | None = None,
    path: Path | None = None,
) -> Peak | None:
    """The peak TFLOP/s of ``dtype`` on ``device_name``: measured here if stored,
    else from the datasheet, else None. A CPU (device name ``cpu`` or none) is looked
    up by its model name, which is what ``dlbench peak`` stores it under."""
    name = cpu_model if device_name in (None, "", "cpu") else device_name
    if not name:
        return None
    entry = load_peaks(path).get(name)
    if entry is not None:
        value = (entry.get("tflops") or {}).get(dtype)
        if isinstance(value, (int, float)) and value > 0:
            date = str(entry.get("measured", ""))[:10]
            return Peak(float(value), f"measured {date} on {name}")
    sheet = datasheet(name)
    if sheet is not None and dtype in sheet.tflops:
        return Peak(sheet.tflops[dtype], f"datasheet: {sheet.label} {dtype} dense")
    return None


def _clock_batches(step: Any, sync: Any, seconds: float) -> list[float]:
    """Time ``step`` through the timing loop for ``seconds`` (at least 3 batches
    unless one batch alone takes longer) after one untimed batch."""
    stop = AutoStop(min_batches=3, min_seconds=seconds, max_seconds=seconds,
                    target_ci=0.0, max_batches=100_000)
    return run_batches(step, sync, 1, stop).times_ms


def _torch_device(device: str) -> tuple[Any, Any]:
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return dev, lambda: torch.cuda.synchronize(dev)
    return dev, lambda: None


def measure_matmul(device: str, dtype: str, size: int, seconds: float) -> dict[str, float]:
    """Dense ``size × size`` matmul throughput: ``{"tflops": median, "best": ...,
    "batches": n}``, TFLOP/s = 2·size³ / time."""
    import torch

    dev, sync = _torch_device(device)
    torch_dtype = {"tf32": torch.float32, "float32": torch.float32,
                   "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    a = torch.randn(size, size, device=dev, dtype=torch_dtype)
    b = torch.randn(size, size, device=dev, dtype=torch_dtype)
    out = torch.empty(size, size, device=dev, dtype=torch_dtype)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        times = _clock_batches(lambda _i: torch.matmul(a, b, out=out), sync, seconds)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    flop = 2.0 * size**3
    return {"tflops": flop / (percentile(times, 50) / 1e3) / 1e12,
            "best": flop / (min(times) / 1e3) / 1e12, "batches": float(len(times))}


def measure_copy(device: str, mebibytes: int, seconds: float) -> dict[str, float]:
    """Memory bandwidth of a ``mebibytes`` copy: ``{"gbps": median, "best": ...}``,
    GB/s = 2 · bytes (read and written) / time / 1e9."""
    import torch

    dev, sync = _torch_device(device)
    source = torch.ones(mebibytes * 2**20, dtype=torch.uint8, device=dev)  # pages touched
    target = torch.zeros_like(source)
    times = _clock_batches(lambda _i: target.copy_(source), sync, seconds)
    moved = 2.0 * source.numel()
    return {"gbps": moved / (percentile(times, 50) / 1e3) / 1e9,
            "best": moved / (min(times) / 1e3) / 1e9, "batches": float(len(times))}


def device_name(device: str) -> str:
    """What experiments call ``device``: the CUDA device name, or the CPU model."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return str(torch.cuda.get_device_name(dev))
    from dlbench.measure.sysinfo import host_info

    return str(host_info(gpus=False)["hw.cpu_model"])


def measure_device(
    device: str, dtypes: list[str], seconds: float, size: int | None = None,
    copy_mib: int | None = None,
) -> dict[str, Any]:
    """Measure one device's matmul peaks (``seconds`` per dtype) and copy bandwidth;
    returns the entry :func:`save_peak` stores."""
    import torch

    kind = torch.device(device).type
    size = size or DEFAULT_SIZE.get(kind, 2048)
    copy_mib = copy_mib or DEFAULT_COPY_MIB.get(kind, 256)
    name = device_name(device)
    tflops, best = {}, {}
    for dtype in dtypes:
        result = measure_matmul(device, dtype, size, seconds)
        tflops[dtype], best[dtype] = result["tflops"], result["best"]
    copy = measure_copy(device, copy_mib, seconds)
    entry: dict[str, Any] = {
        "device": name,
        "device_type": kind,
        "measured": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "torch": str(torch.__version__),
        "matmul_size": size,
        "tflops": tflops,
        "tflops_best": best,
        "copy_mib": copy_mib,
        "memory_gbps": copy["gbps"],
        "memory_gbps_best": copy["best"],
    }
    sheet = datasheet(name)
    if sheet is not None:
        entry["datasheet"] = {"label": sheet.label, "tflops": sheet.tflops,
                              "memory_gbps": sheet.memory_gbps}
    return entry
