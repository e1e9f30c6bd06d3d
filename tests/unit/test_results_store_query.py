"""Queries run in SQL by the store select exactly what ``query.match`` selects.

Every query is run twice, on the same records: pushed down (``Store.records(where=)``)
and in Python (``filter_records`` over every record). The records hold every kind of
value a record can hold, including the awkward ones (NaN, -0.0, integers beyond 64
bits, booleans next to numbers, numbers written as strings, lists where others have
scalars, missing keys).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlbench.errors import QueryError, ResultsError
from dlbench.results.export import write_records
from dlbench.results.io import load_selected
from dlbench.results.query import filter_records, parse_query, select_records
from dlbench.results.store import Store

RECORDS: list[dict[str, Any]] = [
    {"exp.id": "r0", "exp.model": "resnet50", "exp.replica_batch": 16, "results.time": 41.5,
     "exp.gpus": "0", "results.stable": True, "v": 1},
    {"exp.id": "r1", "exp.model": "resnet18", "exp.replica_batch": 16.0, "results.time": 12.0,
     "exp.gpus": "0,1", "results.stable": False, "v": 1.0, "results.time_data": [1, 2]},
    {"exp.id": "r2", "exp.model": "alexnet", "exp.replica_batch": 32, "results.time": None,
     "exp.gpus": "", "v": True, "results.time_data": None},
    {"exp.id": "r3", "exp.model": "vgg(16)", "exp.replica_batch": "16", "results.time": math.nan,
     "v": "1", "results.time_data": 3.5, "exp.note": "é\x00b"},
    {"exp.id": "r4", "exp.model": "Resnet50", "exp.replica_batch": 2**70, "results.time": -0.0,
     "v": None, "sys.env": {"A": "1"}, "results.time_data": {"x": 1}},
    {"exp.id": "r5", "exp.model": "resnet50", "exp.replica_batch": 8, "results.time": math.inf,
     "v": [1], "exp.note": "ésprit"},
    {"exp.id": "r6", "exp.replica_batch": -3, "results.time": 0, "v": "true",
     "exp.model": "", "results.stable": None},
]

QUERIES = [
    {}, {"exp.model": "resnet"}, {"exp.model": "resnet50"}, {"exp.model": "resnet50$"},
    {"exp.model": ""}, {"exp.model": "vgg\\("}, {"exp.model": "[rR]es"}, {"exp.model": "res.*0"},
    {"exp.model": ["resnet50", "alexnet", 16]}, {"exp.model": []},
    {"exp.replica_batch": 16}, {"exp.replica_batch": 16.0}, {"exp.replica_batch": "16"},
    {"exp.replica_batch": [16, "16", 2**70]}, {"exp.replica_batch": 2**70},
    {"exp.replica_batch": {"$gt": 10}}, {"exp.replica_batch": {"$gte": 16, "$lt": 32}},
    {"exp.replica_batch": {"$lt": "2"}}, {"exp.replica_batch": {"$gt": 2**65}},
    {"exp.replica_batch": {"$ne": 16}}, {"exp.replica_batch": {"$ne": "1"}},
    {"results.time": None}, {"results.time": {"$exists": False}}, {"results.time": "NaN"},
    {"results.time": "-0.0"}, {"results.time": 0}, {"results.time": {"$lte": 0}},
    {"results.time": "Infinity"}, {"results.time": {"$gt": 1e300}}, {"results.time": [0.0]},
    {"results.stable": True}, {"results.stable": False}, {"results.stable": [True, None]},
    {"results.stable": {"$ne": True}}, {"results.stable": {"$exists": True}},
    {"results.stable": "true"}, {"v": 1}, {"v": True}, {"v": "1"}, {"v": "tr"}, {"v": [1, True]},
    {"v": {"$ne": 1}}, {"v": {"$exists": True, "$ne": None}}, {"v": None},
    {"results.time_data": {"$exists": True}}, {"results.time_data": {"$ne": 2}},
    {"results.time_data": {"$gt": 1}}, {"results.time_data": 3.5}, {"results.time_data": None},
    {"sys.env": {"$exists": False}}, {"sys.env": {"$ne": "x"}}, {"exp.note": "é"},
    {"exp.note": "é\x00"}, {"exp.note": {"$gt": "é"}}, {"nothing": {"$exists": False}},
    {"nothing": 1}, {"nothing": {"$ne": 1}}, {"exp.model": "\U0010ffff"},
    {"exp.model": "res\ud7ff"}, {"v": ["1", 1, "true"]}, {"exp.model": "z"},
    {"exp.model": "resnet", "exp.replica_batch": {"$lte": 16}, "v": {"$exists": True}},
]


def _store(tmp_path: Path, records: list[dict[str, Any]]) -> Store:
    store = Store(tmp_path / "q.sqlite")
    store.put_many(records)
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """One store of RECORDS for every query (each store costs a few fsyncs)."""
    with _store(tmp_path_factory.mktemp("store"), RECORDS) as opened:
        yield opened


def _ids(records: list[dict[str, Any]]) -> list[str]:
    return [record["exp.id"] for record in records]


@pytest.mark.parametrize("query", QUERIES, ids=[json.dumps(q) for q in QUERIES])
def test_pushed_down_query_selects_what_match_selects(store: Store, query: dict[str, Any]) -> None:
    query = parse_query(json.dumps(query), "--where")  # as the command line gives it
    assert _ids(store.records(where=query)) == _ids(filter_records(RECORDS, query))
    assert store.count(query) == len(filter_records(RECORDS, query))


def test_selected_records_come_back_whole_or_as_asked(store: Store) -> None:
    query = {"exp.model": "resnet"}
    assert store.records(where=query) == filter_records(RECORDS, query)
    scalars = store.records(where=query, series=False)
    assert scalars == [{k: v for k, v in r.items() if not isinstance(v, (list, dict))}
                       for r in filter_records(RECORDS, query)]
    assert store.records(where=query, keys=["results.time", "exp.id", "v"]) == [
        {"exp.id": "r0", "results.time": 41.5, "v": 1},
        {"exp.id": "r1", "results.time": 12.0, "v": 1.0},
        {"exp.id": "r5", "results.time": math.inf, "v": [1]}]
    assert store.records(keys=["results.time_data"], series=["results.time_data"]) == [
        {}, {"results.time_data": [1, 2]}, {"results.time_data": None},
        {"results.time_data": 3.5}, {"results.time_data": {"x": 1}}, {}, {}]


def test_an_invalid_query_is_an_error_not_an_empty_selection(store: Store) -> None:
    with pytest.raises(QueryError, match="unknown operator"):
        store.records(where={"absent.key": {"$near": 1}})


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, -0.0, 1.5, math.nan]),
    st.sampled_from(["", "a", "ab", "b", "1", "true", "A.b"]))
_VALUES = st.one_of(_SCALARS, st.lists(st.integers(0, 2), max_size=2))
_CONDITIONS = st.one_of(
    _SCALARS, st.lists(_SCALARS, max_size=3),
    st.sampled_from(["a.*", "a|b", "^b", "[0-9]"]),
    st.dictionaries(st.sampled_from(["$ne", "$gt", "$lte", "$exists"]),
                    st.one_of(st.integers(-2, 2), st.sampled_from(["a", "b"]), st.booleans()),
                    min_size=1, max_size=2),
)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.dictionaries(st.sampled_from(["k", "m"]), _VALUES), max_size=6),
       conditions=st.dictionaries(st.sampled_from(["k", "m"]), _CONDITIONS, min_size=1))
def test_any_query_on_any_records_selects_the_same(
    tmp_path_factory: pytest.TempPathFactory, values: list[dict[str, Any]],
    conditions: dict[str, Any],
) -> None:
    try:
        query = parse_query(json.dumps(conditions), "--where")
    except QueryError:
        return  # e.g. {"$exists": 1}: refused before any store is asked
    records = [{"exp.id": f"e{i}", **v} for i, v in enumerate(values)]
    with _store(tmp_path_factory.mktemp("h"), records) as store:
        assert _ids(store.records(where=query)) == _ids(filter_records(records, query))


def test_load_selected_is_select_records_for_stores_and_files(tmp_path: Path) -> None:
    store_path = tmp_path / "results.sqlite"
    with _store(tmp_path, RECORDS):
        pass
    (tmp_path / "q.sqlite").rename(store_path)
    write_records(RECORDS, tmp_path / "r.jsonl")
    for source in (store_path, tmp_path / "r.jsonl"):
        query = {"exp.model": "resnet"}
        assert load_selected([source], query, "--where", "src") == select_records(
            RECORDS, query, "--where", "src")
        scalars = load_selected([source], query, "--where", "src", series=["exp.*"],
                                keys=["exp.id", "results.time_data", "v"])
        assert scalars == [{"exp.id": "r0", "v": 1}, {"exp.id": "r1", "v": 1.0},
                           {"exp.id": "r5"}]
        none = {"exp.model": "nothing", "sys.env": {"$exists": True}}
        with pytest.raises(ResultsError) as raised:
            select_records(RECORDS, none, "--where", "src")
        with pytest.raises(ResultsError, match="matches none of the 7 record") as pushed:
            load_selected([source], none, "--where", "src")
        assert str(pushed.value) == str(raised.value)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ResultsError, match="src holds no records"):
        load_selected([empty], {}, "--where", "src")
