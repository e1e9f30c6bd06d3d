"""Resolving one experiment: ``${refs}``, ``$(computed)$`` values, casting and exp.id.

An experiment arrives from expansion as raw values (strings may still hold
references and expressions) with their sources. The Resolver works lazily: asking
for a parameter resolves what it refers to first, remembers every result, and
stops on a reference cycle. Registry parameters are cast to their declared type as
soon as they are resolved, so a reference always sees a typed value.

- ``${name}`` is the value of another parameter. A string that is exactly one
  reference keeps the referenced type; inside a longer string a value is
  interpolated (str as is, anything else as JSON). References nest:
  ``${${exp.framework}.image}`` resolves the inner one first.
- ``$(expr)$`` is computed by the safe evaluator after each ``${...}`` inside it is
  replaced by a Python literal of its value. A string that is exactly one
  expression keeps the result's type; otherwise the result's str() is interpolated.
- ``exp.id`` is never given: it is the first 16 hex digits of the sha256 of the
  canonical JSON of the resolved identity parameters of the experiment's framework,
  and of the ``user.*`` values as written.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from dlbench.config.catalog import FRAMEWORKS
from dlbench.config.registry import REGISTRY, is_user_param
from dlbench.config.safe_eval import safe_eval
from dlbench.config.spec import Sourced, describe
from dlbench.errors import ConfigError, UnsafeExpressionError

#: The computed identity of an experiment.
EXP_ID = "exp.id"

_EXPRESSION = re.compile(r"\$\((.*?)\)\$", re.DOTALL)
_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*")
_BOOL_TEXT = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
_TYPE_NAMES = {
    "int": "an int", "float": "a float", "bool": "a bool (true/false/yes/no/1/0)",
    "str": "a string", "list": "a list", "dict": "a mapping",
}


@dataclass(frozen=True)
class _Ref:
    """A parsed ``${...}``; its name may itself hold references."""

    parts: list[_Part]


_Part: TypeAlias = "str | _Ref"


def cast_value(value: Any, type_name: str) -> Any:
    """``value`` as the registry type ``type_name``; ValueError("is not an int") if it
    cannot be.

    >>> cast_value("16", "int"), cast_value(2, "float"), cast_value("Yes", "bool")
    (16, 2.0, True)
    """
    if type_name == "any":
        return value
    if type_name == "int" and not isinstance(value, bool):
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INT_TEXT.fullmatch(value):
            return int(value)
    elif type_name == "float" and not isinstance(value, bool):
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value)
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                pass
            else:
                if math.isfinite(number):
                    return number
    elif type_name == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _BOOL_TEXT:
            return _BOOL_TEXT[value.strip().lower()]
    elif type_name == "str":
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    elif (type_name, type(value)) in (("list", list), ("dict", dict)):
        return value
    raise ValueError(f"is not {_TYPE_NAMES.get(type_name, type_name)}")


def compute_exp_id(identity_values: Mapping[str, Any]) -> str:
    """First 16 hex digits of sha256 over the canonical JSON of ``identity_values``."""
    canonical = json.dumps(dict(identity_values), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def belongs_to(name: str, framework: str) -> bool:
    """Whether parameter ``name`` concerns an experiment of ``framework``: every
    parameter does except those in another framework's namespace."""
    namespace = name.split(".", 1)[0]
    return namespace not in FRAMEWORKS or namespace == framework


def own_parameters(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without other frameworks' parameters, as DLBS wrote experiments:
    ``fake.step_ms`` says nothing about a PyTorch experiment, and is not part of its
    identity."""
    framework = str(values["exp.framework"])
    return {name: value for name, value in values.items() if belongs_to(name, framework)}


class Resolver:
    """Resolves the values of one raw experiment, lazily and memoised.

    >>> from dlbench.config.registry import REGISTRY
    >>> raw = {n: Sourced(v, "default") for n, v in REGISTRY.defaults().items()}
    >>> Resolver(raw).get("exp.effective_batch")
    16
    """

    def __init__(self, raw: Mapping[str, Sourced]) -> None:
        self._raw = raw
        self._cache: dict[str, Any] = {}
        self._stack: list[str] = []

    def source(self, name: str) -> str:
        """Where ``name``'s value came from."""
        if name == EXP_ID:
            return "computed"
        return self._raw[name].source

    def get(self, name: str) -> Any:
        """The resolved (and, for registry parameters, cast) value of ``name``."""
        if name in self._cache:
            return self._cache[name]
        if name in self._stack:
            cycle = [*self._stack[self._stack.index(name):], name]
            raise ConfigError(
                f"reference cycle: {' -> '.join(cycle)} ({name} from {self.source(name)})"
            )
        if name != EXP_ID and name not in self._raw:
            raise KeyError(name)
        self._stack.append(name)
        try:
            value = self._compute_id() if name == EXP_ID else self._resolve_param(name)
        finally:
            self._stack.pop()
        self._cache[name] = value
        return value

    def resolve_all(self) -> dict[str, Any]:
        """Every value of the experiment resolved and cast, exp.id filled in.

        Other frameworks' parameters are resolved and cast too, so that a mistake in
        them is reported; :func:`own_parameters` then leaves them out.
        """
        values = {name: self.get(name) for name in self._raw}
        values[EXP_ID] = self.get(EXP_ID)
        return values

    def _compute_id(self) -> str:
        framework = self.get("exp.framework")
        names = [
            p.name for p in REGISTRY
            if p.identity and p.name in self._raw and belongs_to(p.name, framework)
        ]
        identity = {name: self.get(name) for name in names}
        # A user's own values count too (`-V 'user.run=[1,2,3]'` asks for three
        # experiments), as written: resolving them could need exp.id itself, and what
        # they refer to is either in the identity already or does not belong there.
        identity.update(
            {name: item.value for name, item in self._raw.items() if is_user_param(name)})
        return compute_exp_id(identity)

    def _resolve_param(self, name: str) -> Any:
        item = self._raw[name]
        value = self._resolve(item.value, name)
        param = REGISTRY.get(name)
        if param is None:
            return value
        try:
            if isinstance(value, str) and value in param.special:
                return value
            return cast_value(value, param.type)
        except ValueError as exc:
            shown = f": {item.value!r}" if value != item.value else ""
            words = "".join(f" or '{word}'" for word in param.special)
            raise ConfigError(
                f"{name}={value!r} (from {item.source}{shown}) {exc}{words}") from None

    def _resolve(self, value: Any, owner: str) -> Any:
        if isinstance(value, str):
            return self._resolve_string(value, owner)
        if isinstance(value, list):
            return [self._resolve(item, owner) for item in value]
        if isinstance(value, dict):
            return {key: self._resolve(item, owner) for key, item in value.items()}
        return value

    def _resolve_string(self, text: str, owner: str) -> Any:
        if "$" not in text:
            return text
        pieces = _split_expressions(text)
        if len(pieces) == 1 and pieces[0][0]:
            return self._compute(pieces[0][1], owner)
        out = []
        for is_expression, piece in pieces:
            if is_expression:
                out.append(str(self._compute(piece, owner)))
                continue
            parts = self._parse(piece, owner)
            if len(pieces) == 1 and len(parts) == 1 and isinstance(parts[0], _Ref):
                return self._ref_value(parts[0], owner)
            out.append(self._render(parts, owner, _as_text))
        return "".join(out)

    def _compute(self, expression: str, owner: str) -> Any:
        code = self._render(self._parse(expression, owner), owner, repr)
        try:
            return safe_eval(code)
        except UnsafeExpressionError as exc:
            raise UnsafeExpressionError(
                f"{self._describe(owner)} is not a safe computed value: {exc}"
            ) from None
        except ConfigError as exc:
            raise ConfigError(
                f"{self._describe(owner)} cannot be computed: {exc} (evaluating {code!r})"
            ) from None

    def _render(self, parts: list[_Part], owner: str, render: Callable[[Any], str]) -> str:
        return "".join(
            part if isinstance(part, str) else render(self._ref_value(part, owner))
            for part in parts
        )

    def _ref_value(self, ref: _Ref, owner: str) -> Any:
        name = self._render(ref.parts, owner, _as_text)
        if name == EXP_ID or name in self._raw:
            return self.get(name)
        close = difflib.get_close_matches(name, [*self._raw, EXP_ID], n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ConfigError(
            f"{self._describe(owner)} refers to unknown parameter {name}{hint}"
        )

    def _parse(self, text: str, owner: str) -> list[_Part]:
        try:
            parts, _ = _parse_refs(text, 0, nested=False)
        except ValueError as exc:
            raise ConfigError(f"{self._describe(owner)}: {exc}") from None
        return parts

    def _describe(self, name: str) -> str:
        return describe(name, self._raw[name].value, self._raw[name].source)


def _split_expressions(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (is_expression, piece): ``$(...)$`` bodies and the text between."""
    pieces: list[tuple[bool, str]] = []
    pos = 0
    for match in _EXPRESSION.finditer(text):
        if match.start() > pos:
            pieces.append((False, text[pos:match.start()]))
        pieces.append((True, match.group(1)))
        pos = match.end()
    if pos < len(text) or not pieces:
        pieces.append((False, text[pos:]))
    return pieces


def _parse_refs(text: str, start: int, nested: bool) -> tuple[list[_Part], int]:
    """Parse text and ``${...}`` from ``start``; inside a reference stop at its ``}``."""
    parts: list[_Part] = []
    buf: list[str] = []
    i = start
    while i < len(text):
        if text.startswith("${", i):
            if buf:
                parts.append("".join(buf))
                buf = []
            inner, i = _parse_refs(text, i + 2, nested=True)
            if not inner:
                raise ValueError("empty reference ${}")
            parts.append(_Ref(inner))
            continue
        if nested and text[i] == "}":
            if buf:
                parts.append("".join(buf))
            return parts, i + 1
        buf.append(text[i])
        i += 1
    if nested:
        raise ValueError("unterminated reference: '${' without '}'")
    if buf:
        parts.append("".join(buf))
    return parts, i


def _as_text(value: Any) -> str:
    """How a value reads inside a longer string: str as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)
