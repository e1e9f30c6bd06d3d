"""The safe evaluator of $(...)$ computed values: what it computes and what it refuses."""

from __future__ import annotations

import builtins
import time
from pathlib import Path
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.config.safe_eval import safe_eval
from dlbench.errors import ConfigError, UnsafeExpressionError


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("2 ** 10", 1024),
        ("2 ** -1", 0.5),
        ("-3 + +1", -2),
        ("not ''", True),
        ("1 < 2 < 3", True),
        ("3 >= 4", False),
        ("'a' in 'abc'", True),
        ("'x' not in ['a']", True),
        ("None is None", True),
        ("1 and 0", 0),
        ("0 or 'y'", "y"),
        ("'gpu' if '0' else 'cpu'", "gpu"),
        ("'gpu' if '' else 'cpu'", "cpu"),
        ("len('0,1'.split(',')) if '0,1' else 1", 2),
        ("[1, 2, 3][1:]", [2, 3]),
        ("'abcdef'[::2]", "ace"),
        ("'abc'[-1]", "c"),
        ("(1, 'a')", [1, "a"]),
        ("{'a': [1, 2]}['a']", [1, 2]),
        ("{'a': (1,)}", {"a": [1]}),
        ("max(1, 5, 3)", 5),
        ("min([4, 2])", 2),
        ("int('12') + 1", 13),
        ("int(7.9)", 7),
        ("float('1.5')", 1.5),
        ("str(16) + 'x'", "16x"),
        ("round(2.567, 2)", 2.57),
        ("abs(-4)", 4),
        ("bool(0)", False),
        ("len([1, 2, 3])", 3),
        ("'ResNet'.lower()", "resnet"),
        ("'a'.upper()", "A"),
        ("' x '.strip() + '-x-'.lstrip('-') + 'x-'.rstrip('-')", "xx-x"),
        ("'a,b,c'.rsplit(',', 1)", ["a,b", "c"]),
        ("'-'.join(['a', 'b'])", "a-b"),
        ("'a,b'.replace(',', ';')", "a;b"),
        ("'abc'.startswith('ab') and 'abc'.endswith('c')", True),
        ("'a b'.title() + 'x'.capitalize()", "A BX"),
        ("'7'.zfill(3)", "007"),
        ("'banana'.count('a') + 'banana'.find('n')", 5),
        ("'12'.isdigit()", True),
        ("'x' * 3", "xxx"),
        ("3 * [0]", [0, 0, 0]),
        ("[1] + [2]", [1, 2]),
        ("2 ** 64", 18446744073709551616),
        ("'ab' * 50000", "ab" * 50000),
        ("'{}-{}'.format('a', 2)", "a-2"),
        ("'{1}{0}{0}'.format('x', 'y')", "yxx"),
        ("'{:>5}|{:.2f}|{!r}'.format('ab', 1 / 3, 'q')", "   ab|0.33|'q'"),
        ("'{{}}{}'.format(1)", "{}1"),
        ("'--v=%s:/w' % 'data'", "--v=data:/w"),
        ("'%s-%03d %%' % ('a', 7)", "a-007 %"),
        ("'%s' % [1, 2]", "[1, 2]"),
        ("re.sub('[:,]', ' ', '0:1,2')", "0 1 2"),
        ("re.sub('a|b', '-', 'abc', 1)", "-bc"),
        ("os.path.basename('/a/b.txt')", "b.txt"),
        ("os.path.dirname('/a/b.txt')", "/a"),
        ("os.path.splitext('m/x.onnx')[0]", "m/x"),
        ("os.path.join('a', 'b')", "a/b"),
        ("'m.onnx'.endswith(('.onnx', '.pb'))", True),
        ("True is False", False),
        ("'a:\\$PATH'.strip(' :')", "a:\\$PATH"),
    ],
)
def test_allowed_expressions(expression: str, expected: Any) -> None:
    assert safe_eval(expression) == expected


@pytest.mark.parametrize(
    ("expression", "refused"),
    [
        ("__import__('os')", "name '__import__' is not allowed"),
        ("().__class__", "attribute '__class__' is not allowed"),
        ("''.__class__.__mro__", "attribute"),
        ("open('x')", "name 'open' is not allowed"),
        ("(lambda: 1)()", "lambda"),
        ("[x for x in 'ab']", "comprehension"),
        ("{x: 1 for x in 'ab'}", "comprehension"),
        ("list(x for x in 'ab')", "list"),
        ("'a' * 10**9", "longer than"),
        ("10**9 * [1]", "longer than"),
        ("2**10**10", "exponent"),
        ("(2**64 + 1) ** 2", "base"),
        ("(2**64)**64 * (2**64)**64 * (2**64)**64", "integer"),
        ("'{0.__class__}'.format(1)", "format field {0.__class__}"),
        ("'{0[0]}'.format('ab')", "format field"),
        ("'{:{}}'.format('a', 5)", "format spec"),
        ("'{:9999}'.format('a')", "wider than 999"),
        ("f'{1}'", "f-string"),
        ("(y := 1)", "assignment"),
        ("x", "name 'x' is not allowed"),
        ("len", "name 'len' is not allowed"),
        ("getattr('', 'x')", "name 'getattr' is not allowed"),
        ("[1].count(1)", "strings only"),
        ("'%(a)s' % {'a': 1}", "mapping"),
        ("'%9999s' % 'a'", "wider than 999"),
        ("re.sub('(a+)+$', '', 'aaaa')", "pattern"),
        ("re.sub('a', '\\\\1', 'a')", "backslash"),
        ("os.system('x')", "name 'os' is not allowed"),
        ("sys.executable", "attribute 'executable' is not allowed"),
        ("'a'.zfill(10**6)", "longer than"),
        ("('a' * 100000).replace('a', 'aa')", "longer than"),
        ("'ab'.join('x' * 100000)", "longer than"),
        ("max(*[1, 2])", "starred"),
        ("int('1', base=2)", "keyword"),
        ("{**{}}", "unpacking"),
        ("1 << 2", "LShift"),
        ("~1", "Invert"),
        ("{1, 2}", "set"),
        ("b'x'", "constant"),
        ("...", "constant"),
    ],
)
def test_refused_expressions(expression: str, refused: str) -> None:
    start = time.perf_counter()
    with pytest.raises(UnsafeExpressionError, match=refused.replace("(", r"\(")):
        safe_eval(expression)
    assert time.perf_counter() - start < 1.0  # refused before building anything big


@pytest.mark.parametrize(
    "expression",
    ["1 / 0", "'a' + 1", "1 +", "[][0]", "{'a': 1}['b']", "1e308 * 10", "(-8) ** 0.5",
     "int('x')", "min([])", "5[0]"],
)
def test_failing_expressions_are_config_errors(expression: str) -> None:
    with pytest.raises(ConfigError) as err:
        safe_eval(expression)
    assert not isinstance(err.value, UnsafeExpressionError)


def test_never_calls_eval_or_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("eval/exec called")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    assert safe_eval("len('a,b'.split(',')) * 2") == 4


def test_unsafe_value_from_a_flag_is_refused_and_nothing_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = load_spec(params=['user.x=$(__import__("os").system("touch f"))$'])
    with pytest.raises(UnsafeExpressionError) as err:
        plan_experiments(spec)
    assert str(err.value) == (
        "user.x='$(__import__(\"os\").system(\"touch f\"))$' (from -P flag) is not a safe "
        "computed value: name '__import__' is not allowed"
    )
    assert not (tmp_path / "f").exists()
    assert list(tmp_path.iterdir()) == []


def test_unsafe_value_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("parameters:\n  user.y: \"$(open('x').read())$\"\n", encoding="utf-8")
    expected = r"user.y=.*\(from file .*sweep\.yaml\).*'open'"
    with pytest.raises(UnsafeExpressionError, match=expected):
        plan_experiments(load_spec([path]))
