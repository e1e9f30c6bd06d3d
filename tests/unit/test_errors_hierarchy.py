"""The one error hierarchy: every user-facing error class lives in dlbench.errors, and
the tree in its docstring names each of them."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import dlbench
from dlbench import errors
from dlbench.backends.base import NonFiniteLoss as BaseNonFiniteLoss
from dlbench.report.charts.series import ChartError as SeriesChartError
from dlbench.report.compare.compare import CompareError as CompareModuleError


def _error_classes() -> list[type[errors.DlbenchError]]:
    return [value for value in vars(errors).values()
            if inspect.isclass(value) and issubclass(value, errors.DlbenchError)]


def test_the_docstring_draws_every_class() -> None:
    drawn = errors.__doc__ or ""
    missing = [cls.__name__ for cls in _error_classes() if f" {cls.__name__}" not in drawn]
    assert missing == []
    assert errors.NonFiniteLoss(3).batch == 3
    assert str(errors.NonFiniteLoss(3)) == "loss is NaN at batch 3"
    assert issubclass(errors.NonFiniteLoss, errors.WorkerError)


def test_the_old_names_are_the_same_classes() -> None:
    assert BaseNonFiniteLoss is errors.NonFiniteLoss
    assert SeriesChartError is errors.ChartError
    assert CompareModuleError is errors.CompareError


def test_no_user_facing_error_is_defined_elsewhere() -> None:
    # The model builders keep their two WorkerError subclasses (see the docstring).
    src = Path(dlbench.__file__).parent
    outside = []
    for path in sorted(src.rglob("*.py")):
        if path.name == "errors.py" or "models" in path.relative_to(src).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(base, ast.Name) and base.id.endswith("Error")
                    and hasattr(errors, base.id) for base in node.bases):
                outside.append(f"{path.relative_to(src)}:{node.name}")
    assert outside == []
