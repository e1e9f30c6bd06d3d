"""Expanding a SweepSpec into raw experiments: variables' Cartesian product, then extensions.

Each experiment starts from the registry defaults, then the spec's parameters, then
one combination of the variables (a variable beats a parameter of the same name).
Variables vary like nested loops in declaration order, the last one fastest.
Extensions then apply in order to every experiment; a later extension sees what an
earlier one set. Values stay raw here (references are resolved afterwards), each
with its source.

An extension's condition matches as DLBS's relaxed matching does (``DictUtils.match``):
a key the experiment does not have is ignored; a list means "equal to one of these";
``""`` matches only ``""``; any other string is a regular expression (RE2's syntax,
run in linear time: :mod:`dlbench.config.user_regex`) matched at the start of the
value; anything else must be equal. ``${__condition.KEY_0}`` is then the
whole value, ``KEY_1``... (and ``KEY_name``) the regular expression's groups.

The size of a sweep is known before anything is built: the product of the variables'
lengths, then, extension by extension, the count of experiments a condition matches
times its cases. A sweep over ``max_experiments`` is refused with its size, and
``max_experiments`` itself may not pass :data:`MAX_EXPERIMENTS_LIMIT`.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from typing import Any

from dlbench.config.registry import REGISTRY
from dlbench.config.resolve import Resolver
from dlbench.config.spec import Extension, Sourced, SweepSpec
from dlbench.config.user_regex import UserMatch, compile_user_regex
from dlbench.errors import ConfigError, DlbenchError, SpecError

#: One experiment before resolution: name -> (raw value, source).
RawExperiment = dict[str, Sourced]

#: Most experiments a sweep may have unless the caller raises it (--max-experiments).
MAX_EXPERIMENTS = 100_000

#: The most --max-experiments may raise it to. A planned experiment (expanded,
#: resolved and checked, its raw values kept beside it) takes about 6.5 KiB (measured
#: over sweeps of 5,000 and 20,000), so the largest plan holds about 3.2 GiB.
MAX_EXPERIMENTS_LIMIT = 500_000

#: ``${__condition.<param>_<group>}``: a capture group of an extension's condition.
_CAPTURE = re.compile(r"\$\{__condition\.([^${}]+)\}")


def expand(spec: SweepSpec, max_experiments: int = MAX_EXPERIMENTS) -> list[RawExperiment]:
    """All experiments of ``spec`` in expansion order, unresolved.

    Raises ConfigError, before building them, when there would be more than
    ``max_experiments``.
    """
    check_sweep_size(spec, max_experiments)
    experiments = expand_variables(spec)
    for extension in spec.extensions:
        experiments = apply_extension(experiments, extension, max_experiments)
    return experiments


def check_sweep_size(spec: SweepSpec, max_experiments: int) -> None:
    """Refuse a sweep whose variables alone give more than ``max_experiments``, and a
    ``max_experiments`` outside 1 to :data:`MAX_EXPERIMENTS_LIMIT`."""
    if max_experiments < 1:
        raise ConfigError(f"--max-experiments {max_experiments}: give a limit of at least 1")
    if max_experiments > MAX_EXPERIMENTS_LIMIT:
        raise ConfigError(f"--max-experiments {max_experiments}: give a limit of at most "
                          f"{MAX_EXPERIMENTS_LIMIT:,} (a planned experiment takes about 6.5 KiB)")
    lengths = {name: len(item.value) for name, item in spec.variables.items()}
    count = math.prod(lengths.values())
    if count > max_experiments:
        biggest = sorted(lengths.items(), key=lambda item: -item[1])[:4]
        shown = " x ".join(f"{name} ({length})" for name, length in biggest)
        more = " x ..." if len(lengths) > len(biggest) else ""
        raise ConfigError(
            f"the sweep has {count:,} experiments ({shown}{more}), more than the limit of "
            f"{max_experiments:,}; narrow the variables or raise the limit with "
            f"--max-experiments")


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


def apply_extension(experiments: list[RawExperiment], extension: Extension,
                    max_experiments: int = MAX_EXPERIMENTS) -> list[RawExperiment]:
    """Apply one extension to each experiment: where its condition matches, set its
    parameters and, with cases, replace the experiment by one per case.

    An empty list of cases is no cases, as in DLBS: the matched experiment stays, with
    the extension's parameters.
    """
    matches = [match_condition(experiment, extension) for experiment in experiments]
    cases = extension.cases or []
    count = sum(1 if captures is None else max(len(cases), 1) for captures in matches)
    if count > max_experiments:
        raise ConfigError(
            f"{extension.source}: its {len(cases)} cases make the sweep {count:,} experiments, "
            f"more than the limit of {max_experiments:,}; raise it with --max-experiments")
    extended: list[RawExperiment] = []
    for experiment, captures in zip(experiments, matches, strict=True):
        if captures is None:
            extended.append(experiment)
            continue
        updated = dict(experiment)
        for name, value in extension.parameters.items():
            updated[name] = Sourced(_substitute(value, captures, extension), extension.source)
        if not cases:
            extended.append(updated)
            continue
        for index, case in enumerate(cases, start=1):
            one = dict(updated)
            source = f"case {index} of {extension.source}"
            for name, value in case.items():
                one[name] = Sourced(_substitute(value, captures, extension), source)
            extended.append(one)
    return extended


def match_condition(experiment: RawExperiment, extension: Extension) -> dict[str, Any] | None:
    """None if the condition does not match, else what it captured: ``<param>_0`` the
    whole value, ``<param>_<k>`` (1-based) and ``<param>_<name>`` the groups of a
    regular expression.

    Each key is tested against the experiment's resolved value where it resolves,
    else the raw value; a key the experiment lacks is ignored (DLBS's relaxed match).
    """
    captures: dict[str, Any] = {}
    if not extension.condition:
        return captures
    resolver = Resolver(experiment)
    for name, condition in extension.condition.items():
        if name not in experiment:
            continue
        try:
            value = resolver.get(name)
        except DlbenchError:
            value = experiment[name].value
        match = _match(condition, value, extension)
        if not match:
            return None
        captures[f"{name}_0"] = value
        if isinstance(match, UserMatch):
            for index, group in enumerate(match.groups(), start=1):
                captures[f"{name}_{index}"] = group or ""
            for group_name, group in match.groupdict().items():
                captures[f"{name}_{group_name}"] = group or ""
    return captures


def _match(condition: Any, value: Any, extension: Extension) -> UserMatch | bool | None:
    """A list: equal to one of its items; ``""``: equal to ``""``; another string: a
    regular expression matched at the start of the value (a value that is not a string
    as its JSON text); anything else: equal."""
    if isinstance(condition, list):
        return any(_equal(item, value) for item in condition)
    if isinstance(condition, str) and condition:
        regex = compile_user_regex(
            condition, f"{extension.source}: condition {condition!r} is not a valid "
                       "regular expression", error=SpecError)
        return regex.match(value if isinstance(value, str) else json.dumps(value))
    return _equal(condition, value)


def _equal(condition: Any, value: Any) -> bool:
    if isinstance(condition, bool) != isinstance(value, bool):
        return False  # True == 1 in Python, not in a sweep spec
    return bool(condition == value)


def _substitute(value: Any, captures: dict[str, Any], extension: Extension) -> Any:
    """``value`` with each ``${__condition.X}`` replaced by what was captured: the
    captured value itself where it is the whole string, else its text."""
    if isinstance(value, list):
        return [_substitute(item, captures, extension) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, captures, extension) for key, item in value.items()}
    if not isinstance(value, str):
        return value

    def captured(key: str) -> Any:
        if key not in captures:
            known = ", ".join(f"__condition.{k}" for k in captures) or "none"
            raise SpecError(
                f"{extension.source}: ${{__condition.{key}}} is not captured by the "
                f"extension's condition; captured: {known}"
            )
        return captures[key]

    whole = _CAPTURE.fullmatch(value)
    if whole:
        return captured(whole.group(1))
    return _CAPTURE.sub(lambda m: _text(captured(m.group(1))), value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
