"""The GPU self-check: dlbench against independent references, side by side, on one GPU.

One command, within about 5 minutes on one GPU (``--gpu``, default 0), prints one
table (and, with ``--json FILE``, writes its rows):

- **throughput**: ResNet-50 training in bfloat16 at batch 64 and 256 through
  ``dlbench run`` against a plain PyTorch loop written here (the same model
  definition, channels last, autocast, SGD with momentum, cuDNN's autotuning),
  pipelined: timed with two CUDA events around all its steps, synchronised only at
  the end. Target: dlbench at least 0.99 of the loop;
- **peak**: ``dlbench peak`` in bfloat16, sustained (median) and burst (best), against
  20 products of 8192³ timed with CUDA events;
- **frameworks**: FLOPs, TFLOP/s, MFU, layout and timing method of ResNet-50 (training,
  bfloat16, batch 128) in every installed framework (PyTorch, JAX, TensorFlow), by
  their defaults; PyTorch and JAX must run NHWC;
- **cost**: wall time per experiment of a sweep of 6 one-batch toy experiments on the
  GPU against a bare ``import torch; torch.cuda.init()``. Target: at most 1.3 times;
- **serving**: a server scenario (ResNet-50 inference) and generation (GPT-2 small) on
  the GPU, run to completion with their figures shown.

Each measurement runs in a process of its own, so none holds the GPU while another
runs. On a machine without CUDA it prints one line and exits 2. Exit status 1 when a
target is missed, 0 otherwise.

    python benchmarks/gpu_check.py [--gpu 0] [--json rows.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

Row = dict[str, Any]

#: Seconds any one measurement may take before it is reported as timed out.
STEP_TIMEOUT = 240
#: Frameworks compared, and the module that says each is installed.
FRAMEWORKS = {"pytorch": "torch", "jax": "jax", "tensorflow": "tensorflow"}
#: Timed steps of the plain loop and of dlbench's runs (after WARMUP untimed ones).
STEPS, WARMUP = 50, 10
#: One-batch experiments of the cost sweep.
COST_EXPERIMENTS = 6


def cuda_missing() -> str:
    """Why this machine cannot run the check (one line), or ``""``."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible (torch.cuda.is_available() is False)"
    return ""


# ----------------------------------------------------------------- references


def plain_resnet50(batch: int, gpu: int) -> float:
    """Images/s of a hand-written ResNet-50 training loop in bfloat16, pipelined."""
    import torch

    from dlbench.config.catalog import MODELS, model_input_shape
    from dlbench.models import build_pytorch_model

    device = torch.device("cuda", gpu)
    torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = True
    info = MODELS["resnet50"]
    shape = tuple(model_input_shape(info, 0))
    model = build_pytorch_model("resnet50", shape, info.num_classes).to(device)
    model = model.to(memory_format=torch.channels_last).train()
    x = torch.randn(batch, *shape, device=device).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, info.num_classes, (batch,), device=device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(STEPS):
        step()
    end.record()
    torch.cuda.synchronize(device)
    return STEPS * batch * 1000.0 / float(start.elapsed_time(end))


def plain_matmul(gpu: int, size: int = 8192, count: int = 20) -> float:
    """TFLOP/s of ``count`` bfloat16 ``size``³ products timed with CUDA events."""
    import torch

    device = torch.device("cuda", gpu)
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    out = torch.empty_like(a)
    for _ in range(3):
        torch.matmul(a, b, out=out)
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(count):
        torch.matmul(a, b, out=out)
    end.record()
    torch.cuda.synchronize(device)
    return count * 2.0 * size**3 / (float(start.elapsed_time(end)) / 1e3) / 1e12


# ------------------------------------------------------------ running things


def run_json(argv: Sequence[str], timeout: float = STEP_TIMEOUT) -> Any:
    """Run this script's own ``argv`` part in a fresh process; its JSON answer."""
    done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True,
                          timeout=timeout, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_command(argv: Sequence[str], timeout: float = STEP_TIMEOUT) -> str:
    """Run ``argv`` (failing on a non-zero status); its standard output."""
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                          check=True).stdout


def dlbench_command(out: Path, params: Sequence[str], variables: Sequence[str] = ()) -> list[str]:
    """The ``dlbench run`` of ``-P params`` and ``-V variables`` into ``out``."""
    argv = [sys.executable, "-m", "dlbench", "run", "--out", str(out)]
    for param in params:
        argv += ["-P", param]
    for variable in variables:
        argv += ["-V", variable]
    return argv


def dlbench_records(out: Path, params: Sequence[str], variables: Sequence[str] = (),
                    timeout: float = STEP_TIMEOUT) -> list[dict[str, Any]]:
    """Run a sweep and return its records (one per experiment log, in log order)."""
    from dlbench.results.log.parser import parse_log

    subprocess.run(dlbench_command(out, params, variables), capture_output=True, text=True,
                   timeout=timeout, check=False)  # a failed experiment is a row, not a crash
    return [parse_log(path)[0] for path in sorted((out / "logs").glob("*.log"))]


def bare_cuda_start(count: int = 3) -> float:
    """Median wall seconds of ``import torch; torch.cuda.init()`` in a fresh process."""
    times = []
    for _ in range(count):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch; torch.cuda.init()"], check=True,
                       capture_output=True, timeout=STEP_TIMEOUT)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


# --------------------------------------------------------------- the table


def row(check: str, dlbench: float | str | None, reference: float | str | None = None,
        target: str = "", note: str = "") -> Row:
    """One line of the table; ``ratio`` is dlbench / reference where both are numbers,
    and ``ok`` whether ``target`` (``>= x`` or ``<= x`` on the ratio) holds."""
    ratio = (dlbench / reference if isinstance(dlbench, (int, float))
             and isinstance(reference, (int, float)) and reference else None)
    ok: bool | None = None
    if target and ratio is not None:
        bound = float(target.split()[-1])
        ok = ratio >= bound if target.startswith(">=") else ratio <= bound
    elif target and isinstance(dlbench, str) and not target.startswith(("<", ">")):
        ok = dlbench == target
    return {"check": check, "dlbench": dlbench, "reference": reference, "ratio": ratio,
            "target": target, "ok": ok, "note": note}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "ok" if value else "MISSED"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:,.1f}"
    return str(value)


def format_table(rows: Sequence[Row]) -> list[str]:
    """The rows as aligned text columns, one line each, with a head."""
    heads = ["check", "dlbench", "reference", "ratio", "target", "ok", "note"]
    cells = [heads, *([_cell(r[h]) for h in heads] for r in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(heads))]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
            for line in [cells[0], ["-" * w for w in widths], *cells[1:]]]


def peak_figures(entries: Any) -> tuple[float, float]:
    """Sustained (median) and burst (best) bfloat16 TFLOP/s of ``dlbench peak
    --format json``'s first device."""
    entry = entries[0]
    return float(entry["tflops"]["bfloat16"]), float(entry["tflops_best"]["bfloat16"])


def _failed(check: str, error: BaseException) -> Row:
    text = str(error).strip().splitlines()[-1:] or [type(error).__name__]
    return row(check, "failed", note=text[0][:100])


# ----------------------------------------------------------------- the check


def _throughput(work: Path, gpu: int) -> list[Row]:
    rows = []
    for batch in (64, 256):
        check = f"ResNet-50 training bf16 b{batch}, images/s"
        try:
            plain = float(run_json(["--plain-loop", str(batch), "--gpu", str(gpu)]))
            [record] = dlbench_records(work / f"r50_{batch}", [
                "exp.framework=pytorch", "exp.model=resnet50", "exp.phase=training",
                "exp.dtype=bfloat16", f"exp.gpus={gpu}", f"exp.replica_batch={batch}",
                f"exp.num_warmup_batches={WARMUP}", f"exp.num_batches={STEPS}"])
            rows.append(row(check, record.get("results.throughput"), plain, ">= 0.99",
                            f"{record.get('results.timing_method')}, "
                            f"{record.get('sys.layout')}, {record.get('exp.status')}"))
        except (subprocess.SubprocessError, ValueError, OSError) as error:
            rows.append(_failed(check, error))
    return rows


def _peak(gpu: int) -> list[Row]:
    try:
        reference = float(run_json(["--plain-matmul", "--gpu", str(gpu)]))
        sustained, burst = peak_figures(json.loads(run_command(
            [sys.executable, "-m", "dlbench", "peak", "--gpus", str(gpu), "--dtypes",
             "bfloat16", "--seconds", "2", "--no-save", "--format", "json"])))
    except (subprocess.SubprocessError, ValueError, OSError, KeyError, IndexError) as error:
        return [_failed("peak bf16, TFLOP/s", error)]
    return [row("peak bf16 sustained (median), TFLOP/s", sustained, reference,
                note="reference: 20 x 8192^3, CUDA events"),
            row("peak bf16 burst (best), TFLOP/s", burst, reference)]


def _frameworks(work: Path, gpu: int) -> list[Row]:
    installed = [f for f, module in FRAMEWORKS.items() if importlib.util.find_spec(module)]
    records = dlbench_records(work / "frameworks", [
        "exp.model=resnet50", "exp.phase=training", "exp.dtype=bfloat16", f"exp.gpus={gpu}",
        "exp.replica_batch=128", "exp.num_warmup_batches=5", "exp.num_batches=20"],
        [f"exp.framework=[{','.join(installed)}]"], timeout=2 * STEP_TIMEOUT)
    by_framework = {r.get("exp.framework"): r for r in records}
    torch_speed = (by_framework.get("pytorch") or {}).get("results.throughput")
    rows = []
    for framework in installed:
        record = by_framework.get(framework, {})
        mfu = record.get("results.mfu")
        rows.append(row(
            f"ResNet-50 bf16 b128 {framework}, images/s", record.get("results.throughput"),
            torch_speed, note=(
                f"{record.get('exp.status', 'no record')}; MFU "
                f"{'-' if mfu is None else f'{mfu:.1%}'} of "
                f"{record.get('results.mfu_peak_source', '-')}; FLOPs/sample "
                f"{record.get('results.flops_per_sample') or 0:.3g} (framework "
                f"{record.get('results.flops_per_sample_framework') or 0:.3g}); "
                f"{record.get('results.timing_method')}")))
        if framework in ("pytorch", "jax"):
            rows.append(row(f"ResNet-50 {framework} default layout",
                            record.get("sys.layout", "-"), target="NHWC"))
    return rows


def _cost(work: Path, gpu: int) -> list[Row]:
    check = f"cost per experiment ({COST_EXPERIMENTS} one-batch toys), s"
    try:
        bare = bare_cuda_start()
        seeds = ",".join(str(seed) for seed in range(1, COST_EXPERIMENTS + 1))
        began = time.perf_counter()
        records = dlbench_records(work / "cost", [
            "exp.framework=pytorch", "exp.model=toy", "exp.phase=training", f"exp.gpus={gpu}",
            "exp.num_warmup_batches=1", "exp.num_batches=1"], [f"pytorch.seed=[{seeds}]"])
        each = (time.perf_counter() - began) / COST_EXPERIMENTS
    except (subprocess.SubprocessError, OSError) as error:
        return [_failed(check, error)]
    starts = sorted({str(r.get("sys.worker_start")) for r in records})
    return [row(check, each, bare, "<= 1.3", f"reference: import torch + CUDA init; "
                f"workers {'/'.join(starts)}")]


def _serving(work: Path, gpu: int) -> list[Row]:
    server = dlbench_records(work / "server", [
        "exp.framework=pytorch", "exp.model=resnet50", "exp.phase=inference",
        "exp.dtype=bfloat16", f"exp.gpus={gpu}", "exp.scenario=server", "exp.replica_batch=8",
        "exp.target_qps=200", "exp.latency_bound_ms=50", "exp.scenario_min_duration=5",
        "exp.num_warmup_batches=10"])
    generate = dlbench_records(work / "generate", [
        "exp.framework=pytorch", "exp.model=gpt2_small", "exp.phase=generate",
        f"exp.gpus={gpu}", "exp.replica_batch=1", "exp.prompt_tokens=128",
        "exp.output_tokens=128", "exp.num_warmup_batches=1", "exp.num_batches=3"])
    s = server[0] if server else {}
    g = generate[0] if generate else {}
    return [
        row("server ResNet-50 b8 at 200 q/s, q/s achieved", s.get("results.qps_achieved"),
            note=f"{s.get('exp.status', 'no record')}; valid {s.get('results.valid')}; "
                 f"latency at percentile {s.get('results.latency_at_percentile')} ms"),
        row("generate GPT-2 small 128+128, tokens/s", g.get("results.output_tokens_per_s"),
            note=f"{g.get('exp.status', 'no record')}; TTFT p50 {g.get('results.ttft_p50')} ms; "
                 f"TPOT p50 {g.get('results.tpot_p50')} ms"),
    ]


def check(gpu: int) -> tuple[list[str], list[Row]]:
    """Run everything; the header lines and the rows."""
    with tempfile.TemporaryDirectory(prefix="dlbench-gpu-check-") as tmp:
        work = Path(tmp)
        rows = _throughput(work, gpu) + _peak(gpu) + _frameworks(work, gpu)
        rows += _cost(work, gpu) + _serving(work, gpu)
        card = driver = "?"
        for log in sorted(work.glob("*/logs/*.log")):
            from dlbench.results.log.parser import parse_log

            record = parse_log(log)[0]
            card = str(record.get("hw.device_name", card))
            driver = str(record.get("hw.gpu_driver", driver))
            break
    import torch

    head = [f"GPU self-check: {card}, driver {driver}, PyTorch {torch.__version__} "
            f"(CUDA {torch.version.cuda}), {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"]
    return head, rows


def main(argv: list[str]) -> int:
    """Entry point; see the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", type=int, default=0, help="the GPU's index (default 0)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--plain-loop", type=int, metavar="BATCH", help=argparse.SUPPRESS)
    parser.add_argument("--plain-matmul", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    why = cuda_missing()
    if why:
        print(f"gpu_check: {why}: nothing to check on this machine")
        return 2
    if args.plain_loop:  # one reference, in a process of its own
        print(json.dumps(plain_resnet50(args.plain_loop, args.gpu)))
        return 0
    if args.plain_matmul:
        print(json.dumps(plain_matmul(args.gpu)))
        return 0
    began = time.perf_counter()
    head, rows = check(args.gpu)
    for line in [*head, "", *format_table(rows),
                 "", f"({time.perf_counter() - began:.0f} s)"]:
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps({"head": head, "rows": rows}, indent=1))
    return 1 if any(r["ok"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
