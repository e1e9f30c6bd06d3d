"""Reading a sweep spec: YAML/JSON files and -P/-V/-E flags, merged into a SweepSpec.

A spec has three parts, as in DLBS: ``parameters`` (one value each), ``variables``
(a list of values each; the sweep is their Cartesian product) and ``extensions``
(conditional rules applied to every experiment of the product). Every value keeps
the label of where it came from (its ``Source``) so that an error about it can say
which file or flag to fix.

Loading only checks that the spec is well formed; whether names are known and
values valid is decided when the experiments are planned. Well formed also means
bounded: YAML aliases (``*name``) are refused before anything is expanded (a few
hundred bytes of nested aliases expand to billions of values), values nest at most
:data:`MAX_DEPTH` deep, a key given twice in one mapping is an error, and an empty
spec file is an error rather than the default sweep.

A parameter may be written in DLBS's declared form ``{"val": ..., "type": ...,
"desc": ...}`` (in ``parameters`` and in an extension's ``parameters``); its value is
``val``. DLBS's older names (``exp.device_batch``) are renamed to dlbench's
(:mod:`dlbench.config.dlbs_names`) as the spec is read.

A variable listing a value twice is an error; a ``-P`` flag naming a variable (which
wins) is a warning in the spec's ``warnings``, for the command line to print.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from dlbench.config.dlbs_names import canonical_name
from dlbench.config.user_regex import compile_user_regex
from dlbench.errors import SpecError

#: Where a value came from, as a user reads it: ``file sweep.yaml``, ``-P flag``,
#: ``-E flag 1``, ``extension 2 of sweep.yaml``, ``default``, ``--out flag``.
Source = str

#: The top-level keys a spec file may have.
SPEC_KEYS = ("parameters", "variables", "extensions")

#: The keys an extension object may have.
EXTENSION_KEYS = ("condition", "parameters", "cases")

#: Deepest nesting of lists and mappings a spec value may have (a real spec needs a
#: handful; the limit keeps every later recursive walk far from Python's stack limit).
MAX_DEPTH = 100

#: The most bytes a spec file may hold: the largest real sweep spec is a few KiB, a
#: generated one listing every value of many variables a few MiB.
MAX_SPEC_BYTES = 16 * 2**20

#: Most digits an integer in a spec may have: Python's own limit on converting an int
#: to and from its text (``sys.get_int_max_str_digits``), past which the value could
#: be neither shown, saved nor compared by its text.
MAX_INT_DIGITS = 4300

#: What a longer integer is told.
TOO_MANY_DIGITS = (f"an integer of more than {MAX_INT_DIGITS:,} digits; accepted: integers "
                   f"of at most {MAX_INT_DIGITS:,} digits (a float such as 1e300 for a "
                   f"larger magnitude)")

#: The keys of DLBS's declared form of a parameter, and the types it may declare.
DECLARED_KEYS = frozenset({"val", "type", "desc"})
DECLARED_TYPES = ("str", "int", "float", "bool")


class Sourced(NamedTuple):
    """A value together with where it came from."""

    value: Any
    source: Source


@dataclass(frozen=True)
class Extension:
    """A conditional rule: where ``condition`` matches an experiment, set
    ``parameters`` and, with ``cases``, replace the experiment by one per case."""

    condition: dict[str, Any]
    parameters: dict[str, Any]
    cases: list[dict[str, Any]] | None
    source: Source


@dataclass
class SweepSpec:
    """A sweep as given by the user, merged from files and flags but not yet expanded.

    ``variables`` map a name to a Sourced list of values, in declaration order.
    ``warnings``: one line each about flags that have no effect, for the caller to show.
    """

    parameters: dict[str, Sourced] = field(default_factory=dict)
    variables: dict[str, Sourced] = field(default_factory=dict)
    extensions: list[Extension] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def describe(name: str, value: Any, source: Source) -> str:
    """``name=value (from source)``, the way every error message names a value."""
    return f"{name}={value!r} (from {source})"


class _Loader(yaml.SafeLoader):
    """SafeLoader without timestamps (``2024-01-01`` stays a string, as JSON would keep
    it), without aliases, at most MAX_DEPTH deep, and without duplicate keys."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        # Refused here, before the composer would share (and the constructor expand)
        # the aliased node: "billion laughs" costs nothing.
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not accepted in a spec; write the value out",
                mark)
        if self._depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, f"values nest more than {MAX_DEPTH} deep", mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value if isinstance(node, yaml.MappingNode) else ():
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # an unhashable key is refused by the constructor itself
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (lines {seen[key]} and {line})",
                    key_node.start_mark)
            seen[key] = line
        return super().construct_mapping(node, deep)


    def construct_int(self, node: Any) -> Any:
        """An integer, at most MAX_INT_DIGITS digits long, whatever its base."""
        try:
            value = self.construct_yaml_int(node)  # type: ignore[no-untyped-call]
        except ValueError:  # Python's own digit limit, hit while converting
            value = None
        if value is None or abs(value) >= 10**MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(None, None, TOO_MANY_DIGITS,
                                                    node.start_mark)
        return value


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_int)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_spec(
    config_files: Sequence[str | Path] = (),
    params: Sequence[str] = (),
    variables: Sequence[str] = (),
    extensions: Sequence[str] = (),
    overrides: Mapping[str, tuple[Any, str]] | None = None,
) -> SweepSpec:
    """Merge spec files (in order), then -P, -V and -E flags, then ``overrides``.

    Later parameters and variables replace earlier ones of the same name; extensions
    append. ``overrides`` maps a name to ``(value, source label)`` and is applied
    like a -P flag, last.

    >>> spec = load_spec(params=["exp.num_batches=3"], variables=["exp.replica_batch=[8,16]"])
    >>> spec.parameters["exp.num_batches"]
    Sourced(value=3, source='-P flag')
    >>> spec.variables["exp.replica_batch"].value
    [8, 16]
    """
    spec = SweepSpec()
    for path in config_files:
        _merge_file(spec, Path(path))
    for text in params:
        name, value = _parse_flag("-P", text)
        spec.parameters[canonical_name(name)] = Sourced(value, "-P flag")
    for text in variables:
        name, value = _parse_flag("-V", text)
        spec.variables[canonical_name(name)] = Sourced(
            _as_values(value, name, "-V flag"), "-V flag")
    for index, text in enumerate(extensions, start=1):
        source = f"-E flag {index}"
        obj = _load_json(text, source, text)
        _check_json(obj, source)
        spec.extensions.append(_parse_extension(obj, source))
    for name, (value, label) in (overrides or {}).items():
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        spec.parameters[name] = Sourced(value, label)
    spec.warnings.extend(_shadowed_flags(spec))
    return spec


def _shadowed_flags(spec: SweepSpec) -> list[str]:
    """A warning for each -P flag naming a variable (it wins, as in DLBS): no effect."""

    def flow(value: Any, limit: int = 200) -> str:  # as typed after `-P name=`
        text = value if isinstance(value, str) else json.dumps(value)
        return text if len(text) <= limit else text[:limit - 4] + " ..."

    return [f"-P {name}={flow(given.value)} has no effect: {name} is a variable (from "
            f"{spec.variables[name].source}: {flow(spec.variables[name].value, 60)}), which "
            f"beats a parameter; to replace its values give -V '{name}=[{flow(given.value)}]'"
            for name, given in spec.parameters.items()
            if given.source == "-P flag" and name in spec.variables]


def _shorten(text: str, limit: int = 60) -> str:
    """``text`` quoted for a one-line message, cut to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _load_json(text: str, where: str, flag_text: str | None = None) -> Any:
    """Parsed JSON, refusing duplicate keys and nesting Python cannot parse, in one line.
    ``where`` is the file or the flag; ``flag_text`` the flag's text, if a flag."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                found = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(
                    re.escape(json.dumps(key)) + r"\s*:", text)]
                lines = f" (lines {found[0]} and {found[1]})" if len(found) >= 2 else ""
                raise SpecError(f"{where}: duplicate key {key!r}{lines}")
            out[key] = value
        return out

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise SpecError(f"{where}: {TOO_MANY_DIGITS}")
        return int(digits)

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=integer)
    except json.JSONDecodeError as exc:
        if flag_text is not None:
            raise SpecError(f"{where}: {_shorten(flag_text)} is not valid JSON: {exc.msg}"
                            ) from None
        raise SpecError(f"{where}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise SpecError(f"{where}: values nest more than {MAX_DEPTH} deep") from None


def _merge_file(spec: SweepSpec, path: Path) -> None:
    """Read one spec file and merge it into ``spec``."""
    data = _read_file(path)
    source = f"file {path}"
    if data is None:
        raise SpecError(f"spec file {path} is empty: give it parameters, variables or "
                        f"extensions (or leave it out to plan the default sweep)")
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a spec must be a mapping with keys {', '.join(SPEC_KEYS)}")
    for key in data:
        if key not in SPEC_KEYS:
            raise SpecError(
                f"{path}: unknown top-level key {key!r}; accepted: {', '.join(SPEC_KEYS)}"
            )
    where = f"{path}: parameters"
    for name, value in _mapping(data.get("parameters"), where).items():
        spec.parameters[canonical_name(name)] = Sourced(_declared(name, value, where), source)
    for name, value in _mapping(data.get("variables"), f"{path}: variables").items():
        spec.variables[canonical_name(name)] = Sourced(_as_values(value, name, source), source)
    exts = data.get("extensions")
    if exts is None:
        return
    if not isinstance(exts, list):
        raise SpecError(f"{path}: extensions must be a list of objects")
    for index, obj in enumerate(exts, start=1):
        spec.extensions.append(_parse_extension(obj, f"extension {index} of {path}"))


def _read_file(path: Path) -> Any:
    """The parsed content of a YAML or JSON file, with ``file:line`` on a syntax error."""
    try:
        with path.open("rb") as stream:
            # One read past the limit tells a file that is too long (or never ends,
            # /dev/zero) without holding more of it.
            data = stream.read(MAX_SPEC_BYTES + 1)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise SpecError(f"spec file {path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"spec file {path} cannot be read: {exc}") from None
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(f"spec file {path} is larger than {MAX_SPEC_BYTES:,} bytes; accepted: "
                        f"spec files of at most {MAX_SPEC_BYTES // 2**20} MiB")
    if path.suffix.lower() == ".json":
        if not text.strip():
            return None
        data = _load_json(text, str(path))
    else:
        try:
            data = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f":{mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise SpecError(f"{path}{line}: invalid YAML: {problem}") from None
        except RecursionError:  # not expected past the composer's depth limit
            raise SpecError(f"{path}: values nest more than {MAX_DEPTH} deep") from None
    _check_json(data, str(path))
    return data


def _parse_flag(flag: str, text: str) -> tuple[str, Any]:
    """Split ``name=value`` and parse the value as YAML (an empty value is ``""``)."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name or re.search(r"\s", name):
        raise SpecError(f"{flag} {_shorten(text)}: expected name=value")
    if raw.strip() == "":
        return name, ""
    value = parse_flag_value(flag, raw, text)
    return name, "" if value is None else value


def parse_flag_value(flag: str, raw: str, text: str | None = None) -> Any:
    """``raw``, the value of ``flag``, parsed as YAML to a JSON value (``"1"`` is the
    int 1, ``"1.5"`` a float, ``"0,1"`` a string, ``""`` None), with the bounds of a
    spec (no aliases, MAX_DEPTH, MAX_INT_DIGITS); SpecError otherwise, naming ``flag``
    and ``text``, the flag's whole text (``raw`` if not given).

    >>> parse_flag_value("--baseline-x", "[1, x]")
    [1, 'x']
    """
    shown = f"{flag} {_shorten(raw if text is None else text)}"
    try:
        value = yaml.load(raw, Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{shown}: cannot parse the value: {problem}") from None
    except RecursionError:  # not expected past the composer's depth limit; kept as a net
        raise SpecError(f"{shown}: values nest more than {MAX_DEPTH} deep") from None
    _check_json(value, shown)
    return value


def _as_values(value: Any, name: str, source: Source) -> list[Any]:
    """A variable's values: a list as is, any other value as a one-element list."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise SpecError(f"variable {name} (from {source}) has no values")
    seen: set[str] = set()
    for key in (json.dumps(item, sort_keys=True) for item in values):
        if key in seen:
            raise SpecError(f"variable {name} (from {source}) lists {key[:60]} twice: the "
                            f"two experiments would be one; give each value once (to "
                            f"measure again: exp.repeat, or a variable user.run=[1,2,3])")
        seen.add(key)
    return values


def _mapping(value: Any, where: str) -> dict[str, Any]:
    """``value`` as a mapping with string keys (None is empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a mapping of names to values")
    for key in value:
        if not isinstance(key, str):
            raise SpecError(f"{where}: key {key!r} is not a parameter name")
    return value


def _parse_extension(obj: Any, source: Source) -> Extension:
    """Check an extension object's shape and compile-check its regexes."""
    if not isinstance(obj, dict):
        raise SpecError(f"{source}: an extension must be an object with keys "
                        f"{', '.join(EXTENSION_KEYS)}")
    for key in obj:
        if key not in EXTENSION_KEYS:
            raise SpecError(f"{source}: unknown key {key!r} in extension; accepted: "
                            f"{', '.join(EXTENSION_KEYS)}")
    condition = _mapping(obj.get("condition"), f"{source}: condition")
    for name, cond in condition.items():
        for pattern in cond if isinstance(cond, list) else [cond]:
            if isinstance(pattern, str) and pattern:
                compile_user_regex(pattern, f"{source}: condition on {name}: {pattern!r} is "
                                            "not a valid regular expression", error=SpecError)
    where = f"{source}: parameters"
    parameters = {canonical_name(name): _declared(name, value, where)
                  for name, value in _mapping(obj.get("parameters"), where).items()}
    cases = obj.get("cases")
    if cases is not None:
        if not isinstance(cases, list):
            raise SpecError(f"{source}: cases must be a list of mappings")
        cases = [
            {canonical_name(name): value
             for name, value in _mapping(case, f"{source}: case {i}").items()}
            for i, case in enumerate(cases, start=1)
        ]
    # `"cases": []` is no cases at all, as in DLBS: the extension sets its parameters
    # on every experiment it matches and replaces none.
    condition = {canonical_name(name): cond for name, cond in condition.items()}
    return Extension(condition, parameters, cases or None, source)


def _declared(name: str, value: Any, where: str) -> Any:
    """The value of a parameter, unwrapping DLBS's ``{"val": ..., "type": ..., "desc":
    ...}`` form (a mapping with ``val`` and nothing but those three keys)."""
    if not isinstance(value, dict) or "val" not in value or not set(value) <= DECLARED_KEYS:
        return value
    declared = value.get("type")
    if declared is not None and declared not in DECLARED_TYPES:
        raise SpecError(f"{where}: {name} declares type {declared!r}; accepted: "
                        f"{', '.join(DECLARED_TYPES)}")
    return value["val"]


def _check_json(value: Any, where: str, depth: int = 0) -> None:
    """Refuse values JSON cannot hold (YAML sets, binary, explicit timestamps, NaN) and
    values nested more than MAX_DEPTH deep."""
    if depth > MAX_DEPTH:
        raise SpecError(f"{where}: values nest more than {MAX_DEPTH} deep")
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SpecError(f"{where}: {value!r} is not a finite number")
        return
    if isinstance(value, list):
        for item in value:
            _check_json(item, where, depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise SpecError(f"{where}: key {key!r} is not a string")
            _check_json(item, where, depth + 1)
        return
    raise SpecError(f"{where}: {_shorten(repr(value))} is not a JSON value")
