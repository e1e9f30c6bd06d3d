"""The evaluator of ``$(...)$`` computed values: a whitelist over Python's syntax tree.

DLBS ran these through Python's ``eval``; a sweep spec can come from anyone, so here
the expression is parsed with ``ast.parse(mode="eval")`` and walked node by node.
Only plain values, arithmetic, comparisons, conditionals, subscripts, a few builtins,
a few ``str`` methods and the handful of library functions DLBS configurations call
(:mod:`dlbench.config.safe_eval.functions`) are allowed; everything else (names,
attributes, lambdas, comprehensions, f-strings, ...) is refused with
UnsafeExpressionError. Nothing is ever passed to ``eval``, ``exec`` or ``compile``.

Every cost is bounded before it is paid: the expression's length and nesting, the
length of each string or list, the size of each value counted as if written out
(a list repeated inside a list counts each time), and the total size of all the
values one evaluation builds. ``[[1]*100000]*100000`` or ``str()`` of a shared
nested list is refused before anything big is built.
"""

from __future__ import annotations

import ast
import math
import operator
import warnings
from collections.abc import Callable
from typing import Any

from dlbench.config.safe_eval import functions as safe_functions
from dlbench.config.safe_eval.functions import value_size
from dlbench.errors import ConfigError, UnsafeExpressionError

#: Longest string, list or dict an expression may build.
MAX_LENGTH = 100_000
#: Largest value an expression may build, counted by :func:`value_size`.
MAX_SIZE = 1_000_000
#: Total size of all the values one evaluation may build.
MAX_WORK = 10_000_000
#: Longest expression text.
MAX_EXPRESSION_LENGTH = 100_000
#: Deepest nesting of an expression's syntax tree.
MAX_DEPTH = 100
#: Largest exponent of ``**``, in absolute value.
MAX_EXPONENT = 64
#: Largest base of ``**``, in absolute value.
MAX_POW_BASE = 2**64
#: Largest integer, in bits, an expression may build.
MAX_INT_BITS = 10_000
#: Largest number of digits ``round`` may be asked for, in absolute value.
MAX_ROUND_DIGITS = 400

#: Builtins an expression may call.
ALLOWED_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len, "min": min, "max": max, "int": int, "float": float, "str": str,
    "round": round, "abs": abs, "bool": bool,
}

#: Methods an expression may call, on ``str`` values only.
ALLOWED_STR_METHODS = frozenset({
    "lower", "upper", "strip", "lstrip", "rstrip", "split", "rsplit", "join", "replace",
    "startswith", "endswith", "title", "capitalize", "zfill", "count", "find", "isdigit",
    "format",
})

#: Library functions an expression may call, by dotted name.
ALLOWED_DOTTED = frozenset({"re.sub", *safe_functions.PATH_FUNCTIONS})

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}

#: What a refused node is called in an error message.
_REFUSED_NAMES: dict[type[ast.AST], str] = {
    ast.Lambda: "lambda", ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression", ast.JoinedStr: "an f-string",
    ast.FormattedValue: "an f-string", ast.NamedExpr: "an assignment expression (:=)",
    ast.Starred: "a starred expression", ast.Set: "a set", ast.Await: "await",
    ast.Yield: "yield", ast.YieldFrom: "yield",
}

_SEQUENCES = (str, list, tuple)


def safe_eval(expression: str) -> Any:
    """Evaluate ``expression`` with the whitelist; the result is a JSON value
    (tuples become lists).

    Raises UnsafeExpressionError (with just the refused construct as the message) for
    anything outside the whitelist or over a limit, ConfigError when the expression is
    malformed or fails (division by zero, wrong types).

    >>> safe_eval("len('0,1'.split(',')) if '0,1' else 1")
    2
    """
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise UnsafeExpressionError(
            f"an expression longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        with warnings.catch_warnings():
            # DLBS configs write '\$PATH' in literals: an invalid escape Python keeps as is
            warnings.simplefilter("ignore")
            tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConfigError(f"invalid syntax: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise UnsafeExpressionError(f"an expression nested more than {MAX_DEPTH} deep") from None
    except ValueError as exc:
        raise ConfigError(f"invalid expression: {exc}") from None
    _check_depth(tree.body)
    try:
        result = _Evaluator().visit(tree.body)
    except (ArithmeticError, ValueError, TypeError, LookupError) as exc:
        raise ConfigError(f"{type(exc).__name__}: {exc}") from None
    except RecursionError:  # a safety net: _check_depth bounds the nesting first
        raise UnsafeExpressionError(f"an expression nested more than {MAX_DEPTH} deep") from None
    return _to_json(result)


def _check_depth(tree: ast.AST) -> None:
    """Refuse a syntax tree nested more than MAX_DEPTH deep, without recursing."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UnsafeExpressionError(f"an expression nested more than {MAX_DEPTH} deep")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _to_json(value: Any) -> Any:
    """Tuples to lists; refuse complex and non-finite numbers."""
    if isinstance(value, (list, tuple)):
        return [_to_json(item) for item in value]
    if isinstance(value, dict):
        return {_json_key(key): _to_json(item) for key, item in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"result {value!r} is not a finite number")
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise ConfigError(f"result {value!r} is not a JSON value")


def _json_key(key: Any) -> str:
    if not isinstance(key, str):
        raise ConfigError(f"dict key {key!r} is not a string")
    return key


def _refuse_long(length: int) -> None:
    """Refuse, before building it, a result of ``length`` elements."""
    if length > MAX_LENGTH:
        raise UnsafeExpressionError(f"a result longer than {MAX_LENGTH} elements")


def _refuse_big(size: int) -> None:
    """Refuse, before building it, a value of ``size`` (see value_size)."""
    if size > MAX_SIZE:
        raise UnsafeExpressionError(f"a value larger than {MAX_SIZE} elements in all")


class _Evaluator:
    """Walks an expression tree; each ``visit_X`` handles one allowed node type, and
    every value a node builds is measured and charged to the evaluation's work."""

    def __init__(self) -> None:
        self._work = 0

    def visit(self, node: ast.AST) -> Any:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            what = _REFUSED_NAMES.get(type(node), type(node).__name__)
            raise UnsafeExpressionError(f"{what} is not allowed")
        return self._built(method(node))

    def _built(self, value: Any) -> Any:
        """Refuse a value over the limits; charge its size to the work done."""
        if isinstance(value, complex):
            raise ConfigError("complex numbers are not supported")
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise UnsafeExpressionError(f"an integer larger than {MAX_INT_BITS} bits")
        if isinstance(value, (str, list, tuple, dict)):
            _refuse_long(len(value))
        size = value_size(value, MAX_SIZE)
        _refuse_big(size)
        self._work += size
        if self._work > MAX_WORK:
            raise UnsafeExpressionError(f"more than {MAX_WORK} elements built in all")
        return value

    def _size(self, value: Any) -> int:
        """value_size, charged as work: measuring costs as much as the value is big."""
        size = value_size(value, MAX_SIZE)
        self._work += min(size, MAX_SIZE)
        return size

    def visit_Constant(self, node: ast.Constant) -> Any:
        if node.value is None or isinstance(node.value, (str, int, float)):
            return node.value
        raise UnsafeExpressionError(f"the constant {node.value!r} is not allowed")

    def visit_Name(self, node: ast.Name) -> Any:
        raise UnsafeExpressionError(f"name {node.id!r} is not allowed")

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        raise UnsafeExpressionError(f"attribute {node.attr!r} is not allowed")

    def visit_List(self, node: ast.List) -> Any:
        _refuse_long(len(node.elts))
        return [self.visit(item) for item in node.elts]

    def visit_Tuple(self, node: ast.Tuple) -> Any:
        _refuse_long(len(node.elts))
        return tuple(self.visit(item) for item in node.elts)

    def visit_Dict(self, node: ast.Dict) -> Any:
        if any(key is None for key in node.keys):
            raise UnsafeExpressionError("** unpacking is not allowed")
        _refuse_long(len(node.keys))
        return {
            self.visit(key): self.visit(value)
            for key, value in zip(node.keys, node.values, strict=True)
            if key is not None
        }

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise UnsafeExpressionError(f"operator {type(node.op).__name__} is not allowed")
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Mult):
            self._check_repeat(left, right)
        elif isinstance(node.op, ast.Add) and isinstance(left, _SEQUENCES):
            if isinstance(right, _SEQUENCES):
                _refuse_long(len(left) + len(right))
                _refuse_big(self._size(left) + self._size(right))
        elif isinstance(node.op, ast.Mod) and isinstance(left, str):
            return safe_functions.percent_format(left, right, MAX_LENGTH, self._size)
        elif isinstance(node.op, ast.Pow):
            _check_pow(left, right)
        return op(left, right)

    def _check_repeat(self, left: Any, right: Any) -> None:
        """Refuse ``sequence * n`` whose result would be too long or too big."""
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, _SEQUENCES) and isinstance(count, int) and count > 0:
                _refuse_long(len(seq) * count)
                _refuse_big(self._size(seq) * count)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        raise UnsafeExpressionError(f"operator {type(node.op).__name__} is not allowed")

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        value: Any = None
        for item in node.values:
            value = self.visit(item)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        for op_node, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.visit(right_node)
            if not _COMPARE[type(op_node)](left, right):
                return False
            left = right
        return True

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        value = self.visit(node.value)
        if not isinstance(value, (str, list, tuple, dict)):
            raise ConfigError(f"{type(value).__name__} values cannot be subscripted")
        return value[self.visit(node.slice)]

    def visit_Slice(self, node: ast.Slice) -> Any:
        def bound(part: ast.expr | None) -> Any:
            return None if part is None else self.visit(part)

        return slice(bound(node.lower), bound(node.upper), bound(node.step))

    def visit_Call(self, node: ast.Call) -> Any:
        if node.keywords:
            raise UnsafeExpressionError("keyword arguments are not allowed")
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise UnsafeExpressionError("starred arguments are not allowed")
        func = node.func
        if isinstance(func, ast.Name):
            if func.id not in ALLOWED_FUNCTIONS:
                raise UnsafeExpressionError(f"name {func.id!r} is not allowed")
            args = [self.visit(arg) for arg in node.args]
            self._check_builtin(func.id, args)
            return ALLOWED_FUNCTIONS[func.id](*args)
        dotted = _dotted_name(func)
        if dotted in ALLOWED_DOTTED:
            args = [self.visit(arg) for arg in node.args]
            if dotted == "re.sub":
                return safe_functions.regex_sub(args, MAX_LENGTH)
            return safe_functions.path_function(dotted, args, MAX_LENGTH)
        if isinstance(func, ast.Attribute):
            if func.attr.startswith("_"):
                raise UnsafeExpressionError(f"attribute {func.attr!r} is not allowed")
            receiver = self.visit(func.value)  # refuses what is inside first
            if func.attr not in ALLOWED_STR_METHODS:
                raise UnsafeExpressionError(f"method {func.attr!r} is not allowed")
            if not isinstance(receiver, str):
                raise UnsafeExpressionError(
                    f"method {func.attr!r} is allowed on strings only, not on "
                    f"{type(receiver).__name__}"
                )
            args = [self.visit(arg) for arg in node.args]
            if func.attr == "format":
                return safe_functions.str_format(receiver, args, MAX_LENGTH, self._size)
            _check_str_method(receiver, func.attr, args)
            return getattr(receiver, func.attr)(*args)
        self.visit(func)  # refuses lambdas and the like with their own name
        raise UnsafeExpressionError("only calls of allowed functions and str methods are allowed")

    def _check_builtin(self, name: str, args: list[Any]) -> None:
        """Refuse, before calling it, a builtin whose result would cost too much."""
        if name == "str" and args and self._size(args[0]) > MAX_LENGTH:
            raise UnsafeExpressionError(f"a result longer than {MAX_LENGTH} elements")
        if (name == "round" and len(args) > 1 and isinstance(args[1], int)
                and abs(args[1]) > MAX_ROUND_DIGITS):
            raise UnsafeExpressionError(f"rounding to more than {MAX_ROUND_DIGITS} digits")


def _dotted_name(node: ast.expr) -> str | None:
    """``os.path.dirname`` for that chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not parts:
        return None
    return ".".join([node.id, *reversed(parts)])


def _check_pow(base: Any, exponent: Any) -> None:
    """Refuse ``**`` with an exponent over MAX_EXPONENT or a base over MAX_POW_BASE."""
    if isinstance(exponent, (int, float)) and abs(exponent) > MAX_EXPONENT:
        raise UnsafeExpressionError(f"an exponent larger than {MAX_EXPONENT}")
    if isinstance(base, (int, float)) and abs(base) > MAX_POW_BASE:
        raise UnsafeExpressionError(f"a power of a base larger than {MAX_POW_BASE}")


def _check_str_method(receiver: str, name: str, args: list[Any]) -> None:
    """Refuse, before calling it, a str method whose result would be too long."""
    if name == "zfill" and args and isinstance(args[0], int):
        _refuse_long(args[0])
    elif name == "join" and args and isinstance(args[0], (str, list, tuple, dict)):
        parts = list(args[0])
        if all(isinstance(part, str) for part in parts):
            _refuse_long(sum(map(len, parts)) + len(receiver) * max(len(parts) - 1, 0))
    elif name == "replace" and len(args) >= 2 and all(isinstance(a, str) for a in args[:2]):
        old, new = args[0], args[1]
        count = receiver.count(old)
        if len(args) > 2 and isinstance(args[2], int) and args[2] >= 0:
            count = min(count, args[2])
        _refuse_long(len(receiver) + count * max(len(new) - len(old), 0))
