"""Hostile and random input to computed values and references: a value or one line.

For any text, the safe evaluator and the reference resolver either give a value or
raise a DlbenchError with a one-line message, without building anything big and
within a bound on CPU time relative to planning an ordinary spec (``tests/cpu_cost.py``:
a ratio, which a loaded machine does not move). A fixed corpus of malformed and hostile
inputs (every example of the bounded-work issue among them) pins that down case by
case; Hypothesis explores around it.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlbench.config import load_spec, plan_experiments
from dlbench.config.resolve import Resolver
from dlbench.config.safe_eval import safe_eval
from dlbench.config.spec import Sourced
from dlbench.errors import DlbenchError
from tests.cpu_cost import CostBound

BASE = ["exp.framework=fake", "exp.model=toy"]
#: CPU time one hostile input may cost at most, in plannings of an ordinary spec (the
#: worst input of the corpus costs about 150), and bytes.
WORK_BOUND = CostBound(lambda: plan_experiments(load_spec(params=BASE)), factor=1000)
MEMORY_BOUND = 64 * 2**20

_DOUBLING = [f"user.a{k}=${{user.a{k - 1}}}${{user.a{k - 1}}}" for k in range(1, 41)]
_LIST_DOUBLING = [f"user.l{k}=['${{user.l{k - 1}}}', '${{user.l{k - 1}}}']" for k in range(1, 41)]
_CHAIN = [f"user.c{k}=${{user.c{k + 1}}}" for k in range(200)] + ["user.c200=1"]

#: (what, -P flags, -V flags): each must be refused with one line.
CORPUS: list[tuple[str, list[str], list[str]]] = [
    # The examples of the bounded-work issue.
    ("list of lists", ["user.x=$([[1]*100000]*100000)$"], []),
    ("str of a shared nested list", ["user.x=$(len(str([[[[1]*100]*100]*100]*100)))$"], []),
    ("str of a list of lists", ["user.x=$(str([[1]*1000]*1000))$"], []),
    ("references doubling", ["user.a0=xy", *_DOUBLING], []),
    ("lists doubling", ["user.l0=[1]", *_LIST_DOUBLING], []),
    ("repeated $( closed once", ["user.x=" + "$(" * 40000 + ")$"], []),
    ("sweep too big", [], ["user.a=[" + ",".join(map(str, range(1000))) + "]",
                          "user.b=[" + ",".join(map(str, range(1000))) + "]"]),
    ("references nested 5000 deep", ["user.x=" + "${" * 5000 + "a" + "}" * 5000], []),
    ("parentheses nested 5000 deep", ["user.x=$(" + "(" * 5000 + "1" + ")" * 5000 + ")$"], []),
    ("lists nested 5000 deep", ["user.x=$(" + "[" * 5000 + "]" * 5000 + ")$"], []),
    ("unary minus 5000 deep", ["user.x=$(" + "-" * 5000 + "1)$"], []),
    ("not 5000 deep", ["user.x=$(" + "not " * 5000 + "1)$"], []),
    ("sum of 5000 terms", ["user.x=$(" + "+".join(["1"] * 5000) + ")$"], []),
    ("a chain of 200 references", _CHAIN, []),
    # Growth through operators and functions.
    ("string repetition", ["user.x=$('a' * 10**9)$"], []),
    ("list repetition", ["user.x=$([0] * 10**9)$"], []),
    ("concatenation", ["user.x=$('a' * 99999 + 'a' * 99999)$"], []),
    ("huge power", ["user.x=$(9 ** 9 ** 9)$"], []),
    ("power of a big base", ["user.x=$((2**64 + 1) ** 64)$"], []),
    ("big integers multiplied", ["user.x=$((2**64)**64 * (2**64)**64 * (2**64)**64)$"], []),
    ("int of a long string", ["user.x=$(int('9' * 99999))$"], []),
    ("round to huge digits", ["user.x=$(round(5, -10**8))$"], []),
    ("zfill", ["user.x=$('1'.zfill(10**8))$"], []),
    ("replace", ["user.x=$(('a' * 99999).replace('a', 'aaaa'))$"], []),
    ("join", ["user.x=$(('x' * 1000).join('y' * 1000))$"], []),
    ("format width", ["user.x=$('{:999}'.format('a') * 1000)$"], []),
    ("format field repeated", ["user.x=$(('{0}' * 50000).format('a' * 1000))$"], []),
    ("percent repeated", ["user.x=$(('%s' * 50000) % tuple(['a' * 1000] * 50000))$"], []),
    ("much work in all", ["user.x=$(" + "+".join(["len(str([1]*30000))"] * 400) + ")$"], []),
    ("backtracking regex", ["user.x=$(re.sub('(a+)+$', '', 'a' * 40 + 'b'))$"], []),
    # Escapes from the whitelist.
    ("import", ["user.x=$(__import__('os').system('true'))$"], []),
    ("dunder attribute", ["user.x=$(''.__class__.__mro__)$"], []),
    ("format attribute", ["user.x=$('{0.__class__}'.format(1))$"], []),
    ("format index", ["user.x=$('{0[0]}'.format([1]))$"], []),
    ("percent mapping", ["user.x=$('%(a)s' % {'a':1})$"], []),
    ("lambda", ["user.x=$((lambda:1)())$"], []),
    ("comprehension", ["user.x=$([x for x in 'ab'])$"], []),
    ("walrus", ["user.x=$((y := 1))$"], []),
    ("f-string", ["user.x=$(f'{1}')$"], []),
    ("sys attribute", ["user.x=$(sys.executable)$"], []),
    ("os function", ["user.x=$(os.system('true'))$"], []),
    ("keyword argument", ["user.x=$(int('1', base=2))$"], []),
    # Malformed text.
    ("unterminated reference", ["user.x=${user.a"], []),
    ("empty reference", ["user.x=x${}"], []),
    ("unknown reference", ["user.x=${no_such_name_anywhere}"], []),
    ("syntax error", ["user.x=$(1 +)$"], []),
    ("null byte", ["user.x=$('a\x00')$"], []),
    ("reference cycle", ["user.x=${user.y}", "user.y=$(${user.x} + 1)$"], []),
    ("quote in a quoted reference", ["user.q=it's", "user.x=$('${user.q}')$"], []),
    ("division by zero", ["user.x=$(1 / 0)$"], []),
    ("non-finite result", ["user.x=$(float('inf'))$"], []),
]


@pytest.mark.parametrize(("what", "params", "variables"), CORPUS,
                         ids=[case[0] for case in CORPUS])
def test_hostile_input_is_one_line_fast_and_small(what: str, params: list[str],
                                                  variables: list[str]) -> None:
    def plan() -> None:
        plan_experiments(load_spec(params=[*BASE, *params], variables=variables))

    with pytest.raises(DlbenchError) as err:
        WORK_BOUND.check(plan, what)
    tracemalloc.start()  # a second time: tracing memory slows each call
    try:
        with pytest.raises(DlbenchError):
            plan()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(err.value)
    assert "\n" not in message and message
    assert peak < MEMORY_BOUND, f"{what}: {peak / 2**20:.0f} MiB"


def test_repeated_open_without_close_is_text_quickly() -> None:
    # 40,000 '$(' and no ')$': no computed value at all, found in linear time.
    found: list[dict[str, Any]] = []
    WORK_BOUND.check(lambda: found.extend(
        plan_experiments(load_spec(params=[*BASE, "user.x=" + "$(" * 40000]))))
    [exp] = found
    assert exp["user.x"] == "$(" * 40000


def _bounded(call: Any) -> None:
    """``call()`` gives a value or one line of DlbenchError, within the work bound."""
    try:
        WORK_BOUND.check(call)
    except DlbenchError as exc:
        assert "\n" not in str(exc)


_ATOMS = st.sampled_from([
    "1", "0", "-3", "2**64", "10**9", "0.5", "1e308", "''", "'a'", "'0,1'", "'{}'", "'%s'",
    "[]", "[1]", "(1,)", "{'k': 1}", "None", "True", "x", "len", "'ab' * 50000",
])
_UNARY = ["-({})", "not ({})", "[{}]", "({},)", "str({})", "len({})", "int({})", "max({}, 1)",
          "({}) * 1000", "({}) * 100000", "'{{}}'.format({})", "'%s' % ({},)",
          "({}).split(',')", "','.join({})", "({})[0]", "({})[1:]", "abs({})", "round({}, 2)"]
_BINARY = ["({}) + ({})", "({}) * ({})", "({}) ** ({})", "({}) / ({})", "({}) % ({})",
           "({}) if ({}) else 0", "({}) == ({})", "({}) in ({})", "[{}, {}]", "{{{}: {}}}"]


def _expressions() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        unary = st.tuples(st.sampled_from(_UNARY), inner).map(lambda t: t[0].format(t[1]))
        binary = st.tuples(st.sampled_from(_BINARY), inner, inner).map(
            lambda t: t[0].format(t[1], t[2]))
        return unary | binary

    return st.recursive(_ATOMS, extend, max_leaves=12)


_FUZZ = settings(max_examples=120, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(_expressions())
def test_random_expressions(expression: str) -> None:
    _bounded(lambda: safe_eval(expression))


@_FUZZ
@given(st.text(alphabet="()[]{}'\"$,.:+-*/%<>=!01a_ \\", max_size=60))
def test_random_text_as_an_expression(text: str) -> None:
    _bounded(lambda: safe_eval(text))


@_FUZZ
@given(st.lists(st.sampled_from(["${", "}", "$(", ")$", "user.a", "user.b", "HOME", "x", "'",
                                 "${user.a}", "${user.b}", " * 2", "[1]", "1"]),
                max_size=25).map("".join),
       st.sampled_from(["1", "ab", "${user.a}${user.a}", "$(len('${user.a}'))$", "[1, 2]"]))
def test_random_references(value: str, other: str) -> None:
    raw = {"user.a": Sourced(value, "-P flag"), "user.b": Sourced(other, "-P flag")}
    _bounded(lambda: Resolver(raw).get("user.a"))
