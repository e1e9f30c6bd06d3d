"""DLBS-style JSON queries: anchored regexes, membership lists, equality, operators.

DLBS's own matching tests, restated, are in ``test_dlbs_query.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from dlbench.errors import QueryError
from dlbench.results.query import distinct_values, filter_records, match, parse_query

RECORDS: list[dict[str, Any]] = [
    {"exp.model": "resnet18", "exp.replica_batch": 16, "exp.gpus": "0", "results.time": 10.0},
    {"exp.model": "resnet50", "exp.replica_batch": 32, "exp.gpus": "0,1", "results.time": 20.5},
    {"exp.model": "alexnet", "exp.replica_batch": 16.0, "exp.gpus": "", "exp.use_amp": True},
    {"exp.model": "vgg16", "exp.replica_batch": 1, "exp.use_amp": False, "exp.tags": ["a"]},
]


def models(query: dict[str, Any]) -> list[str]:
    return [r["exp.model"] for r in filter_records(RECORDS, query)]


def test_string_is_a_regex_anchored_at_the_start() -> None:
    assert models({"exp.model": "resnet"}) == ["resnet18", "resnet50"]
    assert models({"exp.model": "net"}) == []
    assert models({"exp.model": ".*net"}) == ["resnet18", "resnet50", "alexnet"]
    assert models({"exp.model": "resnet50$"}) == ["resnet50"]


def test_string_matches_numbers_and_bools_by_exact_json_text() -> None:
    assert models({"exp.replica_batch": "16"}) == ["resnet18"]  # not 16.0
    assert models({"exp.replica_batch": "1"}) == ["vgg16"]  # exact, not a regex prefix
    assert models({"exp.use_amp": "true"}) == ["alexnet"]
    assert models({"exp.tags": "a"}) == []


def test_list_is_membership_not_patterns() -> None:
    assert models({"exp.model": ["alexnet", "vgg"]}) == ["alexnet"]  # "vgg" is not vgg16
    assert models({"exp.model": ["alexnet", "vgg16"]}) == ["alexnet", "vgg16"]
    assert models({"exp.replica_batch": [32, 1]}) == ["resnet50", "vgg16"]
    assert models({"exp.replica_batch": [16]}) == ["resnet18", "alexnet"]  # 16 is 16.0
    assert models({"exp.replica_batch": ["16"]}) == []  # a string is not a number
    assert models({"exp.gpus": ["0"]}) == ["resnet18"]  # not "0,1"
    assert models({"exp.gpus": ["0,", "$"]}) == []
    assert models({"exp.gpus": ["", "0,1"]}) == ["resnet50", "alexnet"]
    assert models({"exp.use_amp": [True, None]}) == ["alexnet"]
    assert models({"exp.replica_batch": [True]}) == []  # True is not 1
    assert models({"exp.model": []}) == []


def test_empty_string_matches_only_the_empty_string() -> None:
    assert models({"exp.gpus": ""}) == ["alexnet"]
    assert models({"exp.model": ""}) == []


def test_equality_for_numbers_bools_and_null() -> None:
    assert models({"exp.replica_batch": 16}) == ["resnet18", "alexnet"]  # 16 == 16.0
    assert models({"exp.use_amp": True}) == ["alexnet"]
    assert models({"exp.replica_batch": True}) == []  # True never equals 1
    assert not match({"x": 1}, {"x": True})
    assert not match({"x": True}, {"x": 1})
    assert match({"x": None}, {"x": None})
    assert not match({}, {"x": None})


def test_all_keys_must_match_and_missing_keys_do_not() -> None:
    assert models({"exp.model": "resnet", "exp.gpus": "0,1"}) == ["resnet50"]
    assert models({"results.time": 10.0}) == ["resnet18"]
    assert models({}) == ["resnet18", "resnet50", "alexnet", "vgg16"]


def test_operators() -> None:
    assert models({"exp.replica_batch": {"$gt": 16}}) == ["resnet50"]
    assert models({"exp.replica_batch": {"$gte": 16}}) == ["resnet18", "resnet50", "alexnet"]
    assert models({"exp.replica_batch": {"$gte": 2, "$lt": 32}}) == ["resnet18", "alexnet"]
    assert models({"exp.replica_batch": {"$lte": 1}}) == ["vgg16"]
    assert models({"exp.model": {"$lt": "b"}}) == ["alexnet"]  # strings compare as strings
    assert models({"exp.gpus": {"$gt": 0}}) == []  # a string is not compared with a number
    assert models({"exp.use_amp": {"$lt": 2}}) == []  # nor is a bool
    assert models({"exp.model": {"$ne": "resnet"}}) == ["alexnet", "vgg16"]
    assert models({"exp.model": {"$ne": ["resnet18", "vgg16"]}}) == ["resnet50", "alexnet"]
    assert models({"exp.gpus": {"$ne": ""}}) == ["resnet18", "resnet50"]
    assert models({"exp.use_amp": {"$ne": True}}) == ["vgg16"]  # missing keys never match
    assert models({"exp.use_amp": {"$exists": True}}) == ["alexnet", "vgg16"]
    assert models({"exp.use_amp": {"$exists": False}}) == ["resnet18", "resnet50"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"exp.model": "resnet"', "line 1 column 23"),
        ("[1, 2]", "expected a JSON object"),
        ("", "line 1 column 1"),
        ('{"exp.model": "res(net"}', "invalid regular expression 'res(net'"),
        ('{"exp.model": ["ok", {"$gt": 1}]}', 'a list holds the values to match'),
        ('{"exp.model": [["a"]]}', 'got ["a"]'),
        ('{"exp.x": {"$regex": "a"}}', "unknown operator '$regex'"),
        ('{"exp.x": {}}', "empty operator object"),
        ('{"exp.x": {"$gt": [1]}}', "$gt needs a number or a string"),
        ('{"exp.x": {"$exists": 1}}', "$exists needs true or false"),
    ],
)
def test_malformed_queries_name_their_source(text: str, fragment: str) -> None:
    with pytest.raises(QueryError) as error:
        parse_query(text, "--where")
    assert str(error.value).startswith("--where: ")
    assert fragment in str(error.value)


def test_parse_query_returns_the_object() -> None:
    query = parse_query('{"exp.model": ["resnet18", "vgg"], "exp.replica_batch": {"$gt": 8}}', "-q")
    assert query == {"exp.model": ["resnet18", "vgg"], "exp.replica_batch": {"$gt": 8}}
    assert models(query) == ["resnet18"]


def test_match_refuses_unknown_operators_even_without_parse_query() -> None:
    with pytest.raises(QueryError, match=r"\$in"):
        match(RECORDS[0], {"exp.model": {"$in": ["a"]}})
    with pytest.raises(QueryError, match="a list holds the values"):
        match(RECORDS[0], {"exp.model": [{"$ne": "a"}]})


def test_distinct_values() -> None:
    values = distinct_values(RECORDS, ["exp.model", "exp.replica_batch", "exp.tags", "nope"])
    assert values == {
        "exp.model": ["alexnet", "resnet18", "resnet50", "vgg16"],
        "exp.replica_batch": [1, 16, 16.0, 32],  # 16.0 is not "16" to a query
        "exp.tags": [["a"]],
        "nope": [],
    }
    mixed = distinct_values([{"k": "x"}, {"k": 2}, {"k": "x"}], ["k"])
    assert mixed == {"k": ["x", 2]}  # not comparable: first-seen order
