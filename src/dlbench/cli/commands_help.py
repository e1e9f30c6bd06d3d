"""``dlbench help``: print from the parameter registry and the catalog."""

from __future__ import annotations

import argparse
import importlib.metadata
import re
from typing import Any

from dlbench.config.catalog import FRAMEWORKS, MODELS
from dlbench.config.model_sizes import MODEL_SIZES
from dlbench.config.registry import REGISTRY, Param
from dlbench.errors import ConfigError
from dlbench.results.table import format_table
from dlbench.suites import suite_description, suite_names


def _param_lines(params: list[Param]) -> list[str]:
    lines: list[str] = []
    for p in params:
        lines.append(f"{p.name}  ({p.type}, default {p.default!r})")
        lines.append(f"    {p.help}")
        if p.choices is not None:
            lines.append(f"    accepted: {', '.join(map(str, p.choices))}")
        if not p.settable:
            lines.append("    computed by dlbench; cannot be set")
    return lines


def _regex(text: str, flag: str) -> str:
    try:
        re.compile(text)
    except re.error as error:
        raise ConfigError(f"{flag} {text!r} is not a regular expression: {error}") from None
    return text


def _framework_rows() -> list[dict[str, Any]]:
    rows = []
    for info in FRAMEWORKS.values():
        missing = info.missing_requirements()
        if missing:
            installed = f"no: {info.install_hint}"
        elif info.requires:
            installed = "yes " + ", ".join(
                f"{name} {importlib.metadata.version(name)}" for name in info.requires)
        else:
            installed = "yes (built in)"
        rows.append({"id": info.id, "title": info.title, "phases": ", ".join(info.phases),
                     "installed": installed})
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
    """Print parameters, frameworks or models, as asked."""
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
            lines += format_table(_framework_rows(), ["id", "title", "phases", "installed"])
    if args.models:
        lines += format_table(
            _model_rows(),
            ["id", "title", "domain", "input", "batch", "unit", "params", "GFLOPs/sample"],
            floatfmt="{:.4g}")
        lines.append("GFLOPs/sample: inference at the published size; training runs record "
                     "their own count (results.flops_per_sample).")
    if args.suites:
        lines += format_table(
            [{"suite": name, "description": suite_description(name)} for name in suite_names()],
            ["suite", "description"])
    if not lines:
        lines = [
            "dlbench help --params REGEX     parameters whose name matches REGEX",
            "dlbench help --text REGEX       parameters whose description matches REGEX",
            "dlbench help --frameworks       the frameworks and whether they are installed",
            "dlbench help --frameworks NAME  one framework's parameters",
            "dlbench help --models           the model zoo",
            "dlbench help --suites           the named suites (dlbench run --suite NAME)",
            f"{len(REGISTRY)} parameters are declared; names outside them go under user.",
        ]
    for line in lines:
        print(line)
    return 0
