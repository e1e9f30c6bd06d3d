"""Device peaks: the roofline an experiment's FLOP/s are compared with (MFU).

``dlbench peak`` measures, per device, dense matmul throughput per dtype and memory
bandwidth (with PyTorch: :mod:`dlbench.measure.peak_pytorch`), and stores them in a
per-user JSON file keyed by device name (:func:`peaks_path`). Each measured figure
comes twice: sustained (the median batch, ``tflops``) and burst (the best batch,
``tflops_best``). Workers then report ``results.mfu`` = ``results.tflops`` / the peak
of the experiment's dtype (:func:`lookup_peak`): the vendor's dense datasheet figure
(:data:`DATASHEET`) where known, as MFU is usually defined, else the sustained peak
measured on this machine, else no MFU; ``results.mfu_peak_source`` says which. Both
measured figures go into the record beside it (:func:`measured_peaks`).

This module imports no framework. Example::

    entry = measure_device("cpu", ["float32"], seconds=2)
    save_peak(entry)
    lookup_peak("cpu", "float32", cpu_model=entry["device"])  # Peak(tflops=..., source=...)
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    """The peak TFLOP/s of ``dtype`` on ``device_name`` that MFU divides by: the
    datasheet's dense figure where known, else the sustained (median) peak measured
    here, else None. A CPU (device name ``cpu`` or none) is looked up by its model
    name, which is what ``dlbench peak`` stores it under."""
    name = cpu_model if device_name in (None, "", "cpu") else device_name
    if not name:
        return None
    sheet = datasheet(name)
    if sheet is not None and dtype in sheet.tflops:
        return Peak(sheet.tflops[dtype], f"datasheet: {sheet.label} {dtype} dense")
    sustained = measured_peaks(name, dtype, path=path).get("sustained")
    if sustained is not None:
        date = str(load_peaks(path)[name].get("measured", ""))[:10]
        return Peak(sustained, f"measured {date} on {name}: sustained (median)")
    return None


def measured_peaks(
    device_name: str | None, dtype: str, cpu_model: str | None = None,
    path: Path | None = None,
) -> dict[str, float]:
    """The peaks of ``dtype`` that ``dlbench peak`` measured on ``device_name`` (looked
    up as :func:`lookup_peak` does): ``{"sustained": median, "burst": best}``, each
    present only when stored and positive."""
    name = cpu_model if device_name in (None, "", "cpu") else device_name
    entry = load_peaks(path).get(name) if name else None
    if not isinstance(entry, dict):
        return {}
    found: dict[str, float] = {}
    for kind, field in (("sustained", "tflops"), ("burst", "tflops_best")):
        table = entry.get(field)
        value = table.get(dtype) if isinstance(table, dict) else None
        if isinstance(value, (int, float)) and value > 0:
            found[kind] = float(value)
    return found
