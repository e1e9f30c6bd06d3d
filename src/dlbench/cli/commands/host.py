"""``dlbench sysinfo`` (the environment recorded with every run) and ``dlbench peak``
(this machine's matmul and memory-bandwidth peaks, the denominators of MFU)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

import psutil

from dlbench.cli.usage import warn
from dlbench.errors import ConfigError, DlbenchError, MeasurementRefused
from dlbench.measure.nvml import load_nvml
from dlbench.measure.peak.peaks import (
    PEAK_DTYPES,
    emulation_warning,
    load_peaks,
    memory_problem,
    peak_problems,
    peaks_path,
    save_peak,
    size_problem,
)
from dlbench.measure.peak.pytorch import measure_device
from dlbench.measure.sysinfo import host_info, pytorch_info
from dlbench.results.magnitude import bandwidth_text, flops_text


def _text_lines(info: Mapping[str, Any]) -> list[str]:
    width = max(map(len, info))
    return [
        f"{key:<{width}}  {value if isinstance(value, str) else json.dumps(value)}"
        for key, value in sorted(info.items())
    ]


def sysinfo(args: argparse.Namespace) -> int:
    """Print this machine's ``sys.*``/``hw.*`` values, PyTorch's build included."""
    info = {**host_info(), **pytorch_info()}
    if args.format == "json":
        print(json.dumps(info, indent=1, sort_keys=True))
        return 0
    for line in _text_lines(info):
        print(line)
    if "hw.gpu_count" not in info:
        nvml, why = load_nvml()
        if nvml is not None:  # NVML came up after all: report what it says
            nvml.nvmlShutdown()
            why = "NVML answered but listed no GPU information"
        print(f"(no NVIDIA GPU information: {why})")
    return 0


def _devices(gpus: str | None) -> list[str]:
    """Torch device strings for ``--gpus``: DLBS syntax, empty for the CPU, default
    every visible GPU (the CPU where there is none)."""
    import torch

    available = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus is None:
        return [f"cuda:{i}" for i in range(available)] or ["cpu"]
    if not gpus.strip():
        return ["cpu"]
    try:
        indices = [int(part) for part in gpus.split(",")]
    except ValueError:
        raise ConfigError(f"--gpus {gpus!r}: expected GPU indices like 0 or 0,1, or '' "
                          "for the CPU") from None
    missing = [i for i in indices if not 0 <= i < available]
    if missing:
        raise ConfigError(f"--gpus {gpus!r}: GPU {missing[0]} does not exist "
                          f"({available} visible)")
    return [f"cuda:{i}" for i in indices]


def _dtype_names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    dtypes = [d.strip() for d in text.split(",") if d.strip()]
    unknown = [d for d in dtypes if d not in PEAK_DTYPES]
    if unknown or not dtypes:
        raise ConfigError(f"--dtypes {text!r}: accepted: {', '.join(PEAK_DTYPES)}")
    return dtypes


def _dtypes(names: list[str] | None, device: str) -> list[str]:
    if names is None:
        return ["float32"] if device == "cpu" else ["float32", "float16", "bfloat16"]
    if device == "cpu" and "tf32" in names:
        raise ConfigError("--dtypes tf32 needs a CUDA GPU")
    return names


def _check_memory(size: int, dtypes: list[str], device: str) -> None:
    """Refuse a ``--size`` whose matmul buffers do not fit in ``device``'s free memory:
    the host's available memory for the CPU, the GPU's free memory for a GPU."""
    if device == "cpu":
        available, where = int(psutil.virtual_memory().available), "the host"
    else:
        import torch  # only for a GPU: the command line starts without it

        available, where = int(torch.cuda.mem_get_info(torch.device(device))[0]), device
    problem = memory_problem(size, dtypes, available, where)
    if problem:
        raise ConfigError(f"--size {size}: {problem}")


def _peak_lines(entry: Mapping[str, Any]) -> list[str]:
    """The entry's figures, each in the unit its magnitude calls for (GFLOP/s on a
    slow CPU dtype, TFLOP/s on a GPU): the stored figures stay TFLOP/s and GB/s."""
    sheet = entry.get("datasheet") or {}
    lines = [f"{entry['device']} ({entry['device_type']}), measured {entry['measured']}"]
    for dtype, value in entry["tflops"].items():
        note = ""
        if dtype in sheet.get("tflops", {}):
            figure = sheet["tflops"][dtype]
            note = f"  (datasheet {flops_text(figure * 1e12)}: {value / figure:.0%})"
        best = flops_text(entry["tflops_best"][dtype] * 1e12)
        lines.append(f"  matmul {dtype:<9} {flops_text(value * 1e12):>14}  "
                     f"(n={entry['matmul_size']}, median; best {best}){note}")
    note = f"  (datasheet {bandwidth_text(sheet['memory_gbps'] * 1e9)})" if sheet else ""
    lines.append(f"  memory copy      {bandwidth_text(entry['memory_gbps'] * 1e9):>14}  "
                 f"({entry['copy_mib']} MiB, read + written){note}")
    return lines


#: Most seconds of timed batches ``peak --seconds`` accepts per measurement: an
#: hour, far past what a steady matmul rate needs.
MAX_PEAK_SECONDS = 3600


def peak(args: argparse.Namespace) -> int:
    """Measure and store the matmul and memory peaks of the CPU or the chosen GPUs."""
    names = _dtype_names(args.dtypes)  # before importing torch: a typo fails fast
    if not 0 < args.seconds <= MAX_PEAK_SECONDS:  # NaN too: it would time forever
        raise ConfigError(f"--seconds {args.seconds:g}: must be a number of seconds > 0 "
                          f"and <= {MAX_PEAK_SECONDS}")
    try:
        import torch  # noqa: F401 - only to say clearly that it is needed
    except ImportError:
        raise DlbenchError("dlbench peak needs PyTorch (pip install torch)") from None
    devices = _devices(args.gpus)
    kinds = {"cpu" if device == "cpu" else "cuda" for device in devices}
    for kind in sorted(kinds) if args.size is not None else ():
        # Before measuring: a size that cannot measure the device wastes the run.
        problem = size_problem(args.size, kind)
        if problem and (args.size < 1 or not (args.force or args.no_save)):
            raise ConfigError(f"--size {args.size}: {problem}"
                              f"{'' if args.size < 1 else '; --force saves it anyway'}")
    if args.size is not None:
        for device in devices:
            # Before any is measured: buffers that cannot fit would fail in the
            # allocator (or, on the CPU, swap the machine to a halt).
            _check_memory(args.size, _dtypes(names, "cpu" if device == "cpu" else "cuda"),
                          device)
    if "cpu" in devices:
        # Said before measuring: an emulated dtype takes minutes to measure.
        emulated = emulation_warning(_dtypes(names, "cpu"))
        if emulated:
            warn(emulated)
    entries = [measure_device(device, _dtypes(names, "cpu" if device == "cpu" else "cuda"),
                              args.seconds, size=args.size) for device in devices]
    if not args.no_save:
        saved = load_peaks()
        problems = [f"{entry['device']}: {problem}" for entry in entries
                    for problem in peak_problems(entry, saved.get(str(entry["device"])))]
        if problems and not args.force:
            # A saved peak is every later MFU's denominator: nothing is saved.
            raise MeasurementRefused(f"peak not saved: {'; '.join(problems)}; measure again "
                                     f"on a quiet machine, or --force saves it anyway")
        for entry in entries:
            save_peak(entry)
    if args.format == "json":
        print(json.dumps(entries, indent=1))
        return 0
    for entry in entries:
        for line in _peak_lines(entry):
            print(line)
    if not args.no_save:
        print(f"saved to {peaks_path()}")
    return 0
