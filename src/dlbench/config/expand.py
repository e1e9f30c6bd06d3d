"""Expanding a SweepSpec into raw experiments: variables' Cartesian product, then extensions.

Each experiment starts from the registry defaults, then the spec's parameters, then
one combination of the variables (a variable beats a parameter of the same name).
Variables vary like nested loops in declaration order, the last one fastest.
Extensions then apply in order to every experiment; a later extension sees what an
earlier one set. Values stay raw here (references are resolved afterwards), each
with its source.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from dlbench.config.registry import REGISTRY
from dlbench.config.resolve import Resolver
from dlbench.config.spec import Extension, Sourced, SweepSpec
from dlbench.errors import DlbenchError, SpecError

#: One experiment before resolution: name -> (raw value, source).
RawExperiment = dict[str, Sourced]

#: ``${__condition.<param>_<group>}``: a capture group of an extension's condition.
_CAPTURE = re.compile(r"\$\{__condition\.([^${}]+)\}")


def expand(spec: SweepSpec) -> list[RawExperiment]:
    """All experiments of ``spec`` in expansion order, unresolved."""
    experiments = expand_variables(spec)
    for extension in spec.extensions:
        experiments = apply_extension(experiments, extension)
    return experiments


def expand_variables(spec: SweepSpec) -> list[RawExperiment]:
    """Defaults, then parameters, then each combination of the variables.

    >>> from dlbench.config.spec import load_spec
    >>> spec = load_spec(variables=["user.a=[1,2]", "user.b=[x,y]"])
    >>> [(e["user.a"].value, e["user.b"].value) for e in expand_variables(spec)]
    [(1, 'x'), (1, 'y'), (2, 'x'), (2, 'y')]
    """
    base: RawExperiment = {
        name: Sourced(default, "default") for name, default in REGISTRY.defaults().items()
    }
    base.update(spec.parameters)
    names = list(spec.variables)
    experiments = []
    for combination in itertools.product(*(spec.variables[name].value for name in names)):
        experiment = dict(base)
        for name, value in zip(names, combination, strict=True):
            experiment[name] = Sourced(value, spec.variables[name].source)
        experiments.append(experiment)
    return experiments


def apply_extension(experiments: list[RawExperiment], extension: Extension) -> list[RawExperiment]:
    """Apply one extension to each experiment: where its condition matches, set its
    parameters and, with cases, replace the experiment by one per case."""
    extended: list[RawExperiment] = []
    for experiment in experiments:
        captures = match_condition(experiment, extension)
        if captures is None:
            extended.append(experiment)
            continue
        updated = dict(experiment)
        for name, value in extension.parameters.items():
            updated[name] = Sourced(_substitute(value, captures, extension), extension.source)
        if extension.cases is None:
            extended.append(updated)
            continue
        for index, case in enumerate(extension.cases, start=1):
            one = dict(updated)
            source = f"case {index} of {extension.source}"
            for name, value in case.items():
                one[name] = Sourced(_substitute(value, captures, extension), source)
            extended.append(one)
    return extended


def match_condition(experiment: RawExperiment, extension: Extension) -> dict[str, str] | None:
    """None if the condition does not match, else its capture groups by
    ``<param>_<k>`` (1-based) and ``<param>_<name>``.

    Each key is tested against the experiment's resolved value where it resolves,
    else the raw value; a key the experiment lacks never matches.
    """
    captures: dict[str, str] = {}
    if not extension.condition:
        return captures
    resolver = Resolver(experiment)
    for name, condition in extension.condition.items():
        if name not in experiment:
            return None
        try:
            value = resolver.get(name)
        except DlbenchError:
            value = experiment[name].value
        match = _match(condition, value)
        if not match:
            return None
        if isinstance(match, re.Match):
            for index, group in enumerate(match.groups(), start=1):
                captures[f"{name}_{index}"] = group or ""
            for group_name, group in match.groupdict().items():
                captures[f"{name}_{group_name}"] = group or ""
    return captures


def _match(condition: Any, value: Any) -> re.Match[str] | bool | None:
    """A string is a regex anchored at the start, a list matches if any element
    does, anything else is compared for equality."""
    if isinstance(condition, list):
        for item in condition:
            match = _match(item, value)
            if match:
                return match
        return False
    if isinstance(condition, str):
        return re.match(condition, value if isinstance(value, str) else json.dumps(value))
    if isinstance(condition, bool) != isinstance(value, bool):
        return False  # True == 1 in Python, not in a sweep spec
    return bool(condition == value)


def _substitute(value: Any, captures: dict[str, str], extension: Extension) -> Any:
    """``value`` with each ``${__condition.X}`` replaced by the captured text."""
    if isinstance(value, list):
        return [_substitute(item, captures, extension) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, captures, extension) for key, item in value.items()}
    if not isinstance(value, str):
        return value

    def captured(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in captures:
            known = ", ".join(f"__condition.{k}" for k in captures) or "none"
            raise SpecError(
                f"{extension.source}: ${{__condition.{key}}} is not captured by the "
                f"extension's condition; captured: {known}"
            )
        return captures[key]

    return _CAPTURE.sub(captured, value)
