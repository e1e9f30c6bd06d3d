"""Device peaks: the roofline an experiment's FLOP/s are compared with (MFU).

``dlbench peak`` measures, per device, dense matmul throughput per dtype and memory
bandwidth (with PyTorch: :mod:`dlbench.measure.peak.pytorch`), and stores them in a
per-user JSON file keyed by device name (:func:`peaks_path`). Each measured figure
comes twice: sustained (the median batch, ``tflops``) and burst (the best batch,
``tflops_best``). Workers then report ``results.mfu`` = ``results.tflops`` / the peak
of the experiment's dtype (:func:`lookup_peak`): the vendor's dense datasheet figure
(:data:`DATASHEET`) where known, as MFU is usually defined, else the sustained peak
measured on this machine, else no MFU; ``results.mfu_peak_source`` says which. Both
measured figures go into the record beside it (:func:`measured_peaks`).

A saved peak is the denominator of every later MFU, so a figure that cannot be the
device's is not saved (:func:`peak_problems`): one measured while the process did not
get the CPU time its threads could use (:func:`contention_problem`, on the CPU), one far
below the peak already saved for that device and dtype (:func:`drop_problem`), one far
below the device's datasheet figure (:func:`datasheet_problem`), one of a matmul too
small to measure the device (:func:`size_problem`). An MFU above 1 is not
recorded either (:func:`model_flops_utilization`): it says the peak is wrong.

This module imports no framework. Example::

    entry = measure_device("cpu", ["float32"], seconds=2)
    if not peak_problems(entry, load_peaks().get(entry["device"])):
        save_peak(entry)
    lookup_peak("cpu", "float32", cpu_model=entry["device"])  # Peak(tflops=..., source=...)
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlbench.config.home import dlbench_home
from dlbench.results.magnitude import bandwidth_text, flops_text

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
#: Smallest matmul side whose time is the device's arithmetic rather than the call's
#: overhead (a 256³ matmul is 34 MFLOP: tens of microseconds on a GPU, where a launch
#: is several; 1024³ is 2.1 GFLOP).
MIN_SIZE = {"cpu": 256, "cuda": 1024}
#: A CPU matmul whose process ran less than this share of the time its threads could
#: have (CPU time over wall time x threads) shared the CPUs with something else. An
#: idle machine keeps every BLAS thread busy for the whole of a large matmul.
MIN_CPU_SHARE = 0.75
#: A new peak below this share of the one saved for the device and dtype is refused:
#: a device does not lose half its arithmetic; a loaded machine or a wrong setting does.
MIN_SHARE_OF_SAVED = 0.5
#: A new peak below this share of the device's datasheet figure (:data:`DATASHEET`) is
#: refused: a large matmul or copy on a card reaches a good part of its datasheet
#: figure (half or more, power-capped or not); a tenth means the measurement did not
#: reach the device's arithmetic (another precision's path, a shared or throttled
#: device), and every MFU divided by it would be ten times too high.
MIN_SHARE_OF_DATASHEET = 0.1


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
    """``peaks.json`` in dlbench's home (:func:`dlbench.config.home.dlbench_home`)."""
    return dlbench_home() / "peaks.json"


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


def size_problem(size: int, kind: str) -> str | None:
    """Why a ``size``-sided matmul cannot measure a ``kind`` (``cpu``, ``cuda``)
    device's peak, or None: a size of 0 or less is no matmul, one below
    :data:`MIN_SIZE` times the call more than the arithmetic."""
    if size < 1:
        return f"a {size}x{size} matmul does no arithmetic"
    least = MIN_SIZE.get(kind, MIN_SIZE["cpu"])
    if size < least:
        return (f"a {size}x{size} matmul is too small to measure the device: its time is "
                f"mostly the call's (at least {least} on {kind}; default "
                f"{DEFAULT_SIZE.get(kind, DEFAULT_SIZE['cpu'])})")
    return None


#: Bytes per element of each matmul dtype (tf32 is float32 storage).
DTYPE_BYTES = {"float32": 4, "tf32": 4, "float16": 2, "bfloat16": 2}


def matmul_bytes(size: int, dtypes: Sequence[str]) -> int:
    """The most memory a ``size``-sided matmul of any of ``dtypes`` holds at once: its
    two operands and its result (one dtype is measured at a time)."""
    return 3 * size * size * max(DTYPE_BYTES[dtype] for dtype in dtypes)


def memory_problem(size: int, dtypes: Sequence[str], available: int, where: str) -> str | None:
    """Why a ``size``-sided matmul cannot run in the ``available`` bytes of ``where``
    (``"the host"``, ``"cuda:0"``), or None; the message gives the largest
    size that fits."""
    needed = matmul_bytes(size, dtypes)
    if needed <= available:
        return None
    largest = math.isqrt(available // matmul_bytes(1, dtypes))
    return (f"a {size}x{size} matmul needs {_bytes_text(needed)} for its operands and "
            f"result, more than the {_bytes_text(available)} free on {where}; accepted: "
            f"a size of at most {largest}")


def _bytes_text(count: int) -> str:
    for unit, scale in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:,} bytes"


def _tflops(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An entry's TFLOP/s by dtype; empty when it has none (a damaged file)."""
    value = entry.get("tflops")
    return value if isinstance(value, dict) else {}


#: The CPU flags (``/proc/cpuinfo``, x86 and Arm) that mean native arithmetic in a
#: dtype; without one, PyTorch converts to float32 and back around every operation.
NATIVE_CPU_FLAGS = {
    "bfloat16": ("avx512_bf16", "amx_bf16", "bf16"),
    "float16": ("avx512_fp16", "amx_fp16", "fphp", "asimdhp"),
}
#: Where Linux lists the CPU's flags.
CPUINFO = Path("/proc/cpuinfo")


def cpu_flags(path: Path = CPUINFO) -> set[str] | None:
    """The flags (x86 ``flags``, Arm ``Features``) ``path`` lists, or None when it
    cannot be read (not Linux)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return {word for line in text.splitlines()
            if line.split(":", 1)[0].strip() in ("flags", "Features") and ":" in line
            for word in line.split(":", 1)[1].split()}


def emulation_warning(dtypes: Sequence[str], path: Path = CPUINFO) -> str | None:
    """One line saying which of ``dtypes`` a CPU emulates (none of their
    :data:`NATIVE_CPU_FLAGS` in ``path``), or may emulate (``path`` unreadable); None
    when it runs them all natively or none of them is a half-precision dtype."""
    halves = [d for d in dtypes if d in NATIVE_CPU_FLAGS]
    if not halves:
        return None
    flags = cpu_flags(path)
    if flags is None:
        return (f"{' and '.join(halves)} may be emulated on this CPU ({path} cannot be "
                "read to tell): expect a figure far below float32's and a long measurement")
    emulated = [d for d in halves if not flags & set(NATIVE_CPU_FLAGS[d])]
    if not emulated:
        return None
    named = ", ".join(sorted({f for d in emulated for f in NATIVE_CPU_FLAGS[d]}))
    return (f"this CPU emulates {' and '.join(emulated)} ({path} lists none of {named}): "
            "expect a figure far below float32's and a long measurement")


def contention_problem(entry: dict[str, Any]) -> str | None:
    """Why a CPU measurement was contended, or None: a dtype's matmuls got less than
    :data:`MIN_CPU_SHARE` of the CPU time their threads could have used
    (``entry["cpu_share"]``, CPU time over wall time x ``entry["threads"]``). A GPU's
    entry has no share: its host thread waits on the device."""
    shares = entry.get("cpu_share")
    if entry.get("device_type") != "cpu" or not isinstance(shares, dict):
        return None
    low = {dtype: share for dtype, share in shares.items()
           if isinstance(share, (int, float)) and share < MIN_CPU_SHARE}
    if not low:
        return None
    threads = entry.get("threads", "?")
    tflops = _tflops(entry)
    got = ", ".join(
        f"{dtype} ({flops_text(tflops[dtype] * 1e12)}) {share:.2f}"
        if isinstance(tflops.get(dtype), (int, float)) else f"{dtype} {share:.2f}"
        for dtype, share in low.items())
    return (f"cpu contention: the matmuls ran {got} of the time their {threads} thread(s) "
            f"could have (< {MIN_CPU_SHARE:g}): something else was using the CPUs")


def drop_problem(entry: dict[str, Any], saved: dict[str, Any] | None) -> str | None:
    """Why ``entry`` cannot replace ``saved`` (the entry stored for the same device),
    or None: a dtype's TFLOP/s below :data:`MIN_SHARE_OF_SAVED` of the saved one's."""
    if not isinstance(saved, dict):
        return None
    old = _tflops(saved)
    drops = []
    for dtype, value in _tflops(entry).items():
        before = old.get(dtype)
        if (isinstance(before, (int, float)) and before > 0 and isinstance(value, (int, float))
                and value < MIN_SHARE_OF_SAVED * before):
            drops.append(f"{dtype} {flops_text(value * 1e12)} is {value / before:.0%} of "
                         f"the {flops_text(before * 1e12)} saved "
                         f"{str(saved.get('measured', ''))[:19]}")
    if not drops:
        return None
    return f"{'; '.join(drops)} (a loaded machine?)"


def datasheet_problem(entry: dict[str, Any]) -> str | None:
    """Why ``entry`` cannot be its device's peak by the device's datasheet, or None: a
    dtype's TFLOP/s, or the memory copy's GB/s, below :data:`MIN_SHARE_OF_DATASHEET` of
    the datasheet's figure. None for a device without a datasheet entry (every CPU)."""
    sheet = datasheet(str(entry.get("device", "")))
    if sheet is None:
        return None
    measured = [(f"{dtype} {flops_text(value * 1e12)}", value, sheet.tflops[dtype])
                for dtype, value in _tflops(entry).items()
                if _is_number(value) and dtype in sheet.tflops]
    memory = entry.get("memory_gbps")
    if isinstance(memory, (int, float)) and not isinstance(memory, bool):
        measured.append((f"memory copy {bandwidth_text(memory * 1e9)}", memory,
                         sheet.memory_gbps))
    # `not >=`: a NaN is no peak either.
    lows = [f"{what} is {value / figure:.1%} of the datasheet's {figure:g}"
            for what, value, figure in measured
            if figure > 0 and not value >= MIN_SHARE_OF_DATASHEET * figure]
    if not lows:
        return None
    return (f"{'; '.join(lows)} ({sheet.label}: below {MIN_SHARE_OF_DATASHEET:.0%}, "
            f"not the device's)")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def peak_problems(entry: dict[str, Any], saved: dict[str, Any] | None) -> list[str]:
    """Every reason ``entry`` (from ``measure_device``) cannot be its device's peak,
    given ``saved``, the entry stored for that device (None when there is none): a
    matmul too small, a contended CPU, a drop from the saved peak, a figure far below
    the device's datasheet. Empty: save it."""
    size = entry.get("matmul_size")
    problems = [
        size_problem(int(size), str(entry.get("device_type"))) if isinstance(size, int)
        else None,
        contention_problem(entry),
        drop_problem(entry, saved),
        datasheet_problem(entry),
    ]
    return [p for p in problems if p]


def datasheet(device_name: str) -> Datasheet | None:
    """The datasheet entry whose pattern matches ``device_name``, or None."""
    for entry in DATASHEET:
        if re.search(entry.pattern, device_name, re.IGNORECASE):
            return entry
    return None


def _stored_name(device_name: str | None, cpu_model: str | None) -> str | None:
    """The name a device's peaks are stored and looked up under: a CPU's (device name
    ``cpu`` or none) is its model name, which is what ``dlbench peak`` stores."""
    return cpu_model if device_name in (None, "", "cpu") else device_name


def lookup_peak(
    device_name: str | None, dtype: str, cpu_model: str | None = None,
    path: Path | None = None,
) -> Peak | None:
    """The peak TFLOP/s of ``dtype`` on ``device_name`` that MFU divides by: the
    datasheet's dense figure where known, else the sustained (median) peak measured
    here, else None. A CPU (device name ``cpu`` or none) is looked up by its model
    name, which is what ``dlbench peak`` stores it under."""
    name = _stored_name(device_name, cpu_model)
    if not name:
        return None
    sheet = datasheet(name)
    if sheet is not None and dtype in sheet.tflops:
        return Peak(sheet.tflops[dtype], f"datasheet: {sheet.label} {dtype} dense")
    sustained = measured_peaks(name, dtype, path=path).get("sustained")
    if sustained is not None:
        entry = load_peaks(path)[name]
        size = entry.get("matmul_size")
        how = f", n={size}" if size else ""
        return Peak(sustained, f"dlbench peak: {name} {dtype}, measured "
                               f"{entry.get('measured', '?')}{how}: sustained (median)")
    return None


def model_flops_utilization(tflops: float, peak: Peak) -> dict[str, Any]:
    """``results.mfu`` of ``tflops`` against ``peak``, with the peak it used
    (``results.mfu_peak_tflops``, ``results.mfu_peak_source``). An MFU above 1 is no
    utilisation, it says the peak is too low (measured under load, or another device's):
    ``results.mfu`` is then null and ``results.mfu_note`` says why, so that no table,
    comparison or history takes it for a measurement (:func:`checked_mfu`).

    >>> model_flops_utilization(1.0, Peak(4.0, "datasheet"))["results.mfu"]
    0.25
    """
    results: dict[str, Any] = {"results.mfu": tflops / peak.tflops,
                               "results.mfu_peak_tflops": peak.tflops,
                               "results.mfu_peak_source": peak.source,
                               "results.tflops": tflops}
    results.update(checked_mfu(results))
    del results["results.tflops"]
    return results


def checked_mfu(record: Mapping[str, Any]) -> dict[str, Any]:
    """What to change in ``record`` so that it holds no MFU above 1: nothing when its
    ``results.mfu`` is at most 1 or absent; else a null ``results.mfu`` and a
    ``results.mfu_note`` naming the figures and the peak. Applied where an MFU is made
    (the worker) and where one is combined (repeats, parallel copies)."""
    mfu = record.get("results.mfu")
    if not isinstance(mfu, (int, float)) or isinstance(mfu, bool) or mfu <= 1:
        return {}
    tflops = record.get("results.tflops")
    peak = record.get("results.mfu_peak_tflops")
    source = record.get("results.mfu_peak_source") or "unknown source"
    figures = (f"{tflops:.4g} TFLOP/s is above the peak {peak:.4g} TFLOP/s ({source}), "
               if isinstance(tflops, (int, float)) and isinstance(peak, (int, float))
               else f"the peak ({source}) is below the measured TFLOP/s, ")
    return {"results.mfu": None,
            "results.mfu_note": f"{figures}MFU {mfu:.2f}: the peak is too low (measured "
                                f"under load, or another device's); run dlbench peak again"}


def measured_peaks(
    device_name: str | None, dtype: str, cpu_model: str | None = None,
    path: Path | None = None,
) -> dict[str, float]:
    """The peaks of ``dtype`` that ``dlbench peak`` measured on ``device_name`` (looked
    up as :func:`lookup_peak` does): ``{"sustained": median, "burst": best}``, each
    present only when stored and positive."""
    name = _stored_name(device_name, cpu_model)
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
