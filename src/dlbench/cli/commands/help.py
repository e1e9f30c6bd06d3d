"""``dlbench help``: print from the parameter registry and the catalog."""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import IO, Any

from dlbench.cli.usage import flag_lines, wrapped_rows
from dlbench.config.catalog import FRAMEWORKS, MODELS, FrameworkInfo
from dlbench.config.external import shipped_rows
from dlbench.config.model_sizes import MODEL_SIZES
from dlbench.config.registry import REGISTRY, Param
from dlbench.config.user_regex import compile_user_regex
from dlbench.errors import ConfigError
from dlbench.results.keys.lookup import RESULT_KEYS, describe_keys
from dlbench.results.text_table import format_table
from dlbench.suites import suite_description, suite_names


def _param_lines(params: list[Param]) -> list[str]:
    lines: list[str] = []
    for p in params:
        lines.append(f"{p.name}  ({p.type}, default {p.default!r})")
        lines.append(f"    {p.help}")
        if p.choices is not None:
            lines.append(f"    accepted: {', '.join(map(str, p.choices))}")
        elif p.maximum is not None:  # a bounded count, duration or percentile
            words = "".join(f", or {word}" for word in p.special)
            lines.append(f"    accepted: {p.accepted_range}{words}")
        if not p.settable:
            lines.append("    computed by dlbench; cannot be set")
    return lines


def _regex(text: str, flag: str) -> str:
    """``text``, checked to be a pattern dlbench can run (RE2's syntax)."""
    compile_user_regex(text, f"{flag} {text!r} is not a regular expression", ignore_case=True)
    return text


#: Seconds a framework may take to import and list its devices (TensorFlow alone
#: takes several); past it the devices cell says so instead of waiting.
DEVICE_QUERY_TIMEOUT = 60.0

# Run in a child process per framework: import the backend module, call its
# available_devices(), print the answer as JSON on a line of its own, marked, since
# the framework may write to the same file before and after it.
_ANSWER = "dlbench-devices: "
_DEVICE_QUERY = """
import importlib, json, sys
ANSWER = sys.argv[2]
try:
    module, _, function = sys.argv[1].partition(":")
    query = getattr(importlib.import_module(module), function or "available_devices", None)
    answer = ({"devices": [str(d) for d in query()]} if query is not None
              else {"error": "its backend has no available_devices()"})
except BaseException as error:
    lines = str(error).strip().splitlines()
    answer = {"error": type(error).__name__ + (": " + lines[0] if lines else "")}
print()
print(ANSWER + json.dumps(answer), flush=True)
"""


def _devices_cell(
    process: subprocess.Popen[bytes], output: IO[bytes], deadline: float, timeout: float
) -> str:
    """What one device query answered (its stdout and stderr in ``output``): its
    devices, or briefly why there are none."""
    try:
        process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return f"unknown: no answer within {timeout:g} s"
    output.seek(0)
    lines = output.read().decode(errors="replace").strip().splitlines()
    marked = [line[len(_ANSWER):] for line in lines if line.startswith(_ANSWER)]
    try:
        answer = json.loads(marked[-1]) if marked else {}
    except ValueError:  # a framework's own line that happens to start like ours
        answer = {}
    if "devices" in answer:
        return ", ".join(answer["devices"]) or "none"
    if "error" in answer:
        return f"unknown: {str(answer['error'])[:120]}"
    last = (lines or ["no output"])[-1]
    return f"unknown: exit status {process.returncode} ({last[:100]})"


def framework_devices(
    modules: dict[str, str], timeout: float = DEVICE_QUERY_TIMEOUT
) -> dict[str, str]:
    """The devices each framework sees, as one line of text per framework, from the
    query its declaration names (``{framework id: "module:function"}``; a bare module
    path means its ``available_devices()``).

    Each query runs in a child process of its own, all at once: importing the
    frameworks takes seconds each (TensorFlow about seven), so in parallel the whole
    listing takes about as long as the slowest one; a framework that crashes, hangs
    or fails to import cannot take the command (or another framework's import)
    down with it; and a failure shows as a short reason, never a traceback.
    """
    with contextlib.ExitStack() as stack:
        started = {}
        for framework, module in modules.items():
            # A file, not a pipe: a child that writes more than a pipe holds while
            # another child is being waited for would otherwise block.
            output = stack.enter_context(tempfile.TemporaryFile())
            started[framework] = (subprocess.Popen(
                [sys.executable, "-c", _DEVICE_QUERY, module, _ANSWER], stdin=subprocess.DEVNULL,
                stdout=output, stderr=subprocess.STDOUT), output)
        deadline = time.monotonic() + timeout
        return {framework: _devices_cell(process, output, deadline, timeout)
                for framework, (process, output) in started.items()}


def _versions(info: FrameworkInfo, distributions: Mapping[str, list[str]]) -> str:
    """``name version`` of each required package that is installed. ``distributions``
    maps import names to the distributions that provide them: onnxruntime may come
    from onnxruntime-gpu."""
    parts = []
    for name in info.requires:
        for dist in distributions.get(name, [name]):
            try:
                version = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
            parts.append(f"{name} {version}" + (f" ({dist})" if dist != name else ""))
            break
    return ", ".join(parts) if info.requires else "(built in)"


def _framework_rows() -> list[dict[str, Any]]:
    missing = {info.id: info.missing_requirements() for info in FRAMEWORKS.values()}
    distributions = importlib.metadata.packages_distributions()
    devices = framework_devices(
        {info.id: info.devices for info in FRAMEWORKS.values()
         if info.devices and not missing[info.id]})
    rows = []
    for info in FRAMEWORKS.values():
        installed = (f"no: {info.install_hint} ({', '.join(missing[info.id])} missing)"
                     if missing[info.id] else "yes")
        rows.append({"id": info.id, "title": info.title, "phases": ", ".join(info.phases),
                     "installed": installed, "versions": _versions(info, distributions) or "-",
                     "devices": devices.get(info.id, "-")})
    return rows


def _model_rows() -> list[dict[str, Any]]:
    rows = []
    for m in MODELS.values():
        params, flops = MODEL_SIZES.get(m.id, (0, None))
        rows.append({
            "id": m.id, "title": m.title, "domain": m.domain,
            "input": "x".join(map(str, m.input_shape)), "batch": m.default_batch,
            "unit": m.unit, "params": f"{params:,}" if params else "-",
            "GFLOPs/sample": flops / 1e9 if flops else None,
        })
    return rows


def show_help(args: argparse.Namespace) -> int:
    """Print parameters, frameworks, models, suites or result keys, as asked."""
    lines: list[str] = []
    if args.params is not None or args.text is not None:
        found = REGISTRY.search(
            _regex(args.params, "--params") if args.params else None,
            _regex(args.text, "--text") if args.text else None)
        lines += _param_lines(found) or ["no parameter matches"]
    if args.frameworks is not None:
        if args.frameworks:
            if args.frameworks not in FRAMEWORKS:
                raise ConfigError(f"--frameworks {args.frameworks!r} is not a known framework; "
                                  f"known: {', '.join(FRAMEWORKS)}")
            info = FRAMEWORKS[args.frameworks]
            lines += [f"{info.id}: {info.title}. {info.description}", ""]
            lines += _param_lines(REGISTRY.namespace(info.id)) or ["(no parameters of its own)"]
        else:
            lines += format_table(_framework_rows(), ["id", "title", "phases", "installed",
                                                      "versions", "devices"])
    if args.models:
        lines += format_table(
            _model_rows(),
            ["id", "title", "domain", "input", "batch", "unit", "params", "GFLOPs/sample"],
            floatfmt="{:.4g}")
        lines.append("GFLOPs/sample: inference at the published size; each run records its "
                     "phase's at its sizes (results.flops_per_sample).")
        lines += ["", "Hugging Face Transformers configurations shipped (random weights; "
                      "sizes from hf.*; hf:PATH reads a config.json or model folder):", ""]
        lines += format_table(shipped_rows(), ["exp.model", "title", "type", "layers", "width",
                                               "heads", "kv heads", "vocab", "params", "from"])
        lines += ["", "timm:NAME, torchvision:NAME: those libraries' image classifiers by "
                      "name, random weights, where the library is installed."]
    if args.suites:
        # Descriptions are paragraphs: wrapped to the terminal (80 columns in a file).
        rows = [("suite", "description"), ("-----", "-----------"),
                *((name, suite_description(name)) for name in suite_names())]
        lines += wrapped_rows(rows)
    if args.flags:
        # The parser that parsed this command (cli.main sets it), every command's.
        lines += flag_lines(args.root_parser)
    if args.results is not None:
        keys = describe_keys(args.results or None)
        lines += keys or ["no result key matches"]
    if not lines:
        lines = [
            "dlbench help --params REGEX     parameters whose name matches REGEX",
            "dlbench help --text REGEX       parameters whose description matches REGEX",
            "dlbench help --frameworks       the frameworks: installed, versions, devices",
            "dlbench help --frameworks NAME  one framework's parameters",
            "dlbench help --models           the model zoo",
            "dlbench help --suites           the named suites (dlbench run --suite NAME)",
            "dlbench help --results [REGEX]  the result keys (results.*, sys.*, hw.*)",
            "dlbench help --flags            every command's options",
            f"{len(REGISTRY)} parameters are declared; names outside them go under user.",
            f"{len(RESULT_KEYS)} result keys and families of keys are declared.",
        ]
    for line in lines:
        print(line)
    return 0
