"""The evaluator of ``$(...)$`` computed values: a whitelist over Python's syntax tree.

DLBS ran these through Python's ``eval``; a sweep spec can come from anyone, so here
the expression is parsed with ``ast.parse(mode="eval")`` and walked node by node.
Only plain values, arithmetic, comparisons, conditionals, subscripts, a few builtins
and a few ``str`` methods are allowed; everything else (names, attributes, lambdas,
comprehensions, f-strings, ...) is refused with UnsafeExpressionError. Nothing is
ever passed to ``eval``, ``exec`` or ``compile``.

Sizes are checked before an operation that could build something huge
(``'a' * 10**9``, ``2 ** 10**10``), so a refused expression costs nothing.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from dlbench.errors import ConfigError, UnsafeExpressionError

#: Longest string, list or dict an expression may build.
MAX_LENGTH = 100_000
#: Largest exponent of ``**``, in absolute value.
MAX_EXPONENT = 64
#: Largest base of ``**``, in absolute value.
MAX_POW_BASE = 2**64
#: Largest integer, in bits, an expression may build.
MAX_INT_BITS = 10_000

#: Builtins an expression may call.
ALLOWED_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len, "min": min, "max": max, "int": int, "float": float, "str": str,
    "round": round, "abs": abs, "bool": bool,
}

#: Methods an expression may call, on ``str`` values only.
ALLOWED_STR_METHODS = frozenset({
    "lower", "upper", "strip", "lstrip", "rstrip", "split", "rsplit", "join", "replace",
    "startswith", "endswith", "title", "capitalize", "zfill", "count", "find", "isdigit",
})

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
    anything outside the whitelist, ConfigError when the expression is malformed or
    fails (division by zero, wrong types).

    >>> safe_eval("len('0,1'.split(',')) if '0,1' else 1")
    2
    """
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConfigError(f"invalid syntax: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ConfigError("expression is too deeply nested") from None
    try:
        result = _Evaluator().visit(tree.body)
    except (ArithmeticError, ValueError, TypeError, LookupError) as exc:
        raise ConfigError(f"{type(exc).__name__}: {exc}") from None
    except RecursionError:
        raise ConfigError("expression is too deeply nested") from None
    return _to_json(result)


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


def _check_size(value: Any) -> Any:
    """Refuse strings, lists and dicts longer than MAX_LENGTH and integers over MAX_INT_BITS."""
    if isinstance(value, (str, list, tuple, dict)) and len(value) > MAX_LENGTH:
        raise UnsafeExpressionError(f"a result longer than {MAX_LENGTH} elements")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise UnsafeExpressionError(f"an integer larger than {MAX_INT_BITS} bits")
    if isinstance(value, complex):
        raise ConfigError("complex numbers are not supported")
    return value


def _refuse_long(length: int) -> None:
    """Refuse, before building it, a result of ``length`` elements."""
    if length > MAX_LENGTH:
        raise UnsafeExpressionError(f"a result longer than {MAX_LENGTH} elements")


class _Evaluator:
    """Walks an expression tree; each ``visit_X`` handles one allowed node type."""

    def visit(self, node: ast.AST) -> Any:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            what = _REFUSED_NAMES.get(type(node), type(node).__name__)
            raise UnsafeExpressionError(f"{what} is not allowed")
        return method(node)

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
            _check_repeat(left, right)
        elif isinstance(node.op, ast.Add) and isinstance(left, _SEQUENCES):
            if isinstance(right, _SEQUENCES):
                _refuse_long(len(left) + len(right))
        elif isinstance(node.op, ast.Mod) and isinstance(left, str):
            raise UnsafeExpressionError("string formatting with % is not allowed")
        elif isinstance(node.op, ast.Pow):
            _check_pow(left, right)
        return _check_size(op(left, right))

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
            return _check_size(ALLOWED_FUNCTIONS[func.id](*args))
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
            _check_str_method(receiver, func.attr, args)
            return _check_size(getattr(receiver, func.attr)(*args))
        self.visit(func)  # refuses lambdas and the like with their own name
        raise UnsafeExpressionError("only calls of allowed functions and str methods are allowed")


def _check_repeat(left: Any, right: Any) -> None:
    """Refuse ``sequence * n`` whose result would be too long, before building it."""
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, _SEQUENCES) and isinstance(count, int):
            _refuse_long(len(seq) * max(count, 0))


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
