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
  replaced by its value as text, as DLBS did: ``$(32 if '${exp.device_type}' ==
  'gpu' else 16)$`` quotes a string itself, ``$(${exp.num_replicas} * 2)$`` uses a
  number as written (see :func:`~dlbench.config.refs.as_expression_text`). A string
  that is exactly one expression keeps the result's type; otherwise the result's
  str() is interpolated.
- ``${NAME}`` where NAME is no parameter of the experiment is the environment
  variable NAME, as in DLBS (``${BENCH_ROOT}``); every value taken from the
  environment is listed in the experiment's ``exp.env_refs``, so a plan records what
  it depended on.
- Every resolved value is bounded (MAX_VALUE_SIZE), and so are chains of references
  (MAX_REFERENCE_CHAIN) and their nesting: a spec whose references double at each
  step is refused with one line, not a MemoryError.
- ``exp.id`` is never given: it is the first 16 hex digits of the sha256 of the
  canonical JSON of the resolved identity parameters of the experiment's framework,
  and of the ``user.*`` values as written (:mod:`dlbench.config.identity`).
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from dlbench.config.identity import belongs_to, configuration_hash, identity_parameters
from dlbench.config.refs import (
    Part,
    Ref,
    as_expression_text,
    as_text,
    parse_refs,
    split_expressions,
)
from dlbench.config.registry import REGISTRY, is_user_param
from dlbench.config.safe_eval import safe_eval
from dlbench.config.safe_eval.functions import value_size
from dlbench.config.spec import Sourced, describe
from dlbench.errors import ConfigError, UnsafeExpressionError

#: The computed identity of an experiment.
EXP_ID = "exp.id"
#: The environment variables an experiment's values took, by name (only when some did).
ENV_REFS = "exp.env_refs"
#: Largest resolved value: characters of a string, or value_size of a list or dict.
MAX_VALUE_SIZE = 1_000_000
#: Longest chain of references resolved one through another (a -> b -> c ...).
MAX_REFERENCE_CHAIN = 50

_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*")
_BOOL_TEXT = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
_TYPE_NAMES = {
    "int": "an int", "float": "a float", "bool": "a bool (true/false/yes/no/1/0)",
    "str": "a string", "list": "a list", "dict": "a mapping",
}


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


def own_parameters(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without other frameworks' parameters, as DLBS wrote experiments:
    ``fake.step_ms`` says nothing about a PyTorch experiment, and is not part of its
    identity; nor does ``hf.hidden_size`` about a model that is not Hugging Face's."""
    framework, model = str(values["exp.framework"]), values.get("exp.model")
    return {name: value for name, value in values.items()
            if belongs_to(name, framework, model)}


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
        #: Environment variables read so far, by name.
        self.env_refs: dict[str, str] = {}
        #: value_size of the resolved lists and dicts, by id, so that a value built of
        #: others is measured without measuring them again; _measured keeps them alive.
        self._sizes: dict[int, int] = {}
        self._measured: list[Any] = []

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
        if len(self._stack) >= MAX_REFERENCE_CHAIN:
            first = self._stack[0]
            raise ConfigError(
                f"{self._describe(first)}: references chained more than "
                f"{MAX_REFERENCE_CHAIN} deep ({first} -> {self._stack[1]} -> ... -> {name})"
            )
        self._stack.append(name)
        try:
            value = self._compute_id() if name == EXP_ID else self._resolve_param(name)
        except RecursionError:  # a safety net: the limits above bound the nesting first
            raise ConfigError(f"{self._describe(self._stack[0])} is nested too deeply") from None
        finally:
            self._stack.pop()
        self._cache[name] = value
        return value

    def resolve_all(self) -> dict[str, Any]:
        """Every value of the experiment resolved and cast, exp.id filled in, and
        ``exp.env_refs`` where some value came from the environment.

        Other frameworks' parameters are resolved and cast too, so that a mistake in
        them is reported; :func:`own_parameters` then leaves them out.
        """
        values = {name: self.get(name) for name in self._raw}
        values[EXP_ID] = self.get(EXP_ID)
        if self.env_refs:
            values[ENV_REFS] = dict(sorted(self.env_refs.items()))
        return values

    def _compute_id(self) -> str:
        framework = self.get("exp.framework")
        names = identity_parameters(
            self._raw, framework=framework, model=self.get("exp.model"), derived=True,
            user=True, carried=True)
        # A user's own values count too (`-V 'user.run=[1,2,3]'` asks for three
        # experiments), as written: resolving them could need exp.id itself, and what
        # they refer to is either in the identity already or does not belong there.
        identity = {name: self._raw[name].value if is_user_param(name) else self.get(name)
                    for name in names}
        return configuration_hash(identity)

    def _resolve_param(self, name: str) -> Any:
        item = self._raw[name]
        param = REGISTRY.get(name)
        if param is not None and param.derive is not None and item.source == "default":
            return param.derive(self.get)
        value = self._resolve(item.value, name)
        if isinstance(value, (list, dict)):
            size = value_size(value, MAX_VALUE_SIZE, self._sizes)
            if size > MAX_VALUE_SIZE:
                raise ConfigError(
                    f"{self._describe(name)} resolves to a value larger than {MAX_VALUE_SIZE} "
                    f"elements")
            self._sizes[id(value)] = size
            self._measured.append(value)
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
        pieces = split_expressions(text)
        if len(pieces) == 1 and pieces[0][0]:
            return self._compute(pieces[0][1], owner)
        out: list[str] = []
        for is_expression, piece in pieces:
            if is_expression:
                out.append(str(self._compute(piece, owner)))
            else:
                parts = self._parse(piece, owner)
                if len(pieces) == 1 and len(parts) == 1 and isinstance(parts[0], Ref):
                    return self._ref_value(parts[0], owner)
                out.append(self._render(parts, owner, as_text))
            self._check_length(sum(map(len, out)), owner)
        return "".join(out)

    def _compute(self, expression: str, owner: str) -> Any:
        code = self._render(self._parse(expression, owner), owner, as_expression_text)
        try:
            return safe_eval(code)
        except UnsafeExpressionError as exc:
            raise UnsafeExpressionError(
                f"{self._describe(owner)} is not a safe computed value: {exc}"
            ) from None
        except ConfigError as exc:
            shown = code if len(code) <= 200 else f"{code[:200]}..."
            raise ConfigError(
                f"{self._describe(owner)} cannot be computed: {exc} (evaluating {shown!r})"
            ) from None

    def _render(self, parts: list[Part], owner: str, render: Callable[[Any], str]) -> str:
        """``parts`` as one string, refused before it grows past MAX_VALUE_SIZE."""
        out: list[str] = []
        total = 0
        for part in parts:
            text = part if isinstance(part, str) else render(self._ref_value(part, owner))
            total += len(text)
            self._check_length(total, owner)
            out.append(text)
        return "".join(out)

    def _check_length(self, length: int, owner: str) -> None:
        if length > MAX_VALUE_SIZE:
            raise ConfigError(
                f"{self._describe(owner)} resolves to a string longer than {MAX_VALUE_SIZE} "
                f"characters")

    def _ref_value(self, ref: Ref, owner: str) -> Any:
        name = self._render(ref.parts, owner, as_text)
        if name == EXP_ID or name in self._raw:
            return self.get(name)
        if name in os.environ:
            # As DLBS: a name that is no parameter is looked up in the environment.
            self.env_refs[name] = os.environ[name]
            return os.environ[name]
        close = difflib.get_close_matches(name, [*self._raw, EXP_ID], n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ConfigError(
            f"{self._describe(owner)} refers to unknown parameter {name}{hint}"
        )

    def _parse(self, text: str, owner: str) -> list[Part]:
        try:
            return parse_refs(text)
        except ValueError as exc:
            raise ConfigError(f"{self._describe(owner)}: {exc}") from None

    def _describe(self, name: str) -> str:
        value = self._raw[name].value
        if isinstance(value, str) and len(value) > 200:
            value = f"{value[:200]}..."  # a message stays one readable line
        return describe(name, value, self._raw[name].source)
