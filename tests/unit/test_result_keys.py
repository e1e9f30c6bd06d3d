"""The declared result keys: the table, the check at the log writer, ``dlbench help
--results``, the docs' tables, and every key literal in the source."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dlbench.cli.main import main
from dlbench.measure.combine import combine_repeats
from dlbench.measure.monitor import ResourceMonitor
from dlbench.measure.sysinfo import gpu_info, host_info
from dlbench.results.keys import lookup as keys
from dlbench.results.keys.lookup import (
    STRICT_ENV,
    UndeclaredKeyError,
    check_key,
    conforms,
    describe_keys,
    format_value,
    is_declared,
    lookup,
    render_markdown,
    type_is_known,
)
from dlbench.results.keys.table import AGGREGATES, PLACEHOLDERS, RESULT_KEYS
from dlbench.results.log.file import LogWriter
from dlbench.results.log.parser import parse_log
from dlbench.results.stats import rank_results, summarize_times
from dlbench.results.values import is_number
from tests.unit.test_measure_monitor import FakeNvml as MonitorNvml
from tests.unit.test_measure_sysinfo import FakeNvml as SysinfoNvml

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "dlbench"

#: String literals that start like a key but are not one: the store's file names.
NOT_KEYS = {"results.sqlite", "results.sqlite-journal", "results.sqlite-shm",
            "results.sqlite-wal"}

#: A concrete value for each placeholder, to turn a family into example names.
EXAMPLES = {"i": ["0", "1"], "series": ["cpu_percent", "rss_mb", "gpu0_util_percent",
                                        "gpu1_other_processes"]}


def _examples(name: str) -> list[str]:
    """Concrete names of a declared name: itself, or its family with each placeholder
    replaced by each of its examples."""
    match = re.search(r"<([a-z]+)>", name)
    if match is None:
        return [name]
    return [n for value in EXAMPLES[match.group(1)]
            for n in _examples(name[:match.start()] + value + name[match.end():])]


def _all_examples() -> list[str]:
    return [n for key in RESULT_KEYS for n in _examples(key.name)]


# -- the table ----------------------------------------------------------------------


def test_every_declaration_is_well_formed() -> None:
    names = [k.name for k in RESULT_KEYS]
    assert len(names) == len(set(names))
    for key in RESULT_KEYS:
        assert key.name.startswith(keys.KEY_PREFIXES), key.name
        assert type_is_known(key.type), (key.name, key.type)
        assert key.aggregate in AGGREGATES, (key.name, key.aggregate)
        assert key.description and "\n" not in key.description, key.name
        assert set(re.findall(r"<([a-z]+)>", key.name)) <= set(PLACEHOLDERS), key.name
        if key.fmt:  # a format that numbers of its type accept
            assert format_value(_examples(key.name)[0], 1234.5678) != "1234.5678", key.name


def test_each_concrete_name_has_exactly_one_declaration() -> None:
    # A family that also matched an exactly declared name (or another family) would
    # make the declaration a key gets depend on the table's order.
    for name in _all_examples():
        owners = [k.name for k in RESULT_KEYS
                  if k.name == name or ("<" in k.name and keys._pattern(k.name).fullmatch(name))]
        assert len(owners) == 1, (name, owners)


def _family(name: str) -> str:
    key = lookup(name)
    assert key is not None, name
    return key.name


def test_lookup_of_names_and_families() -> None:
    assert _family("results.time") == "results.time"
    assert _family("results.use.gpu3_energy_j") == "results.use.gpu<i>_energy_j"
    assert _family("results.use.rss_mb_max") == "results.use.<series>_max"
    assert _family("results.use.gpu12_sm_clock_mhz_mean") == "results.use.<series>_mean"
    assert _family("results.use.gpu0_throttle") == "results.use.gpu<i>_throttle"
    # The pattern is anchored, and a placeholder takes only what it stands for.
    for name in ("results.tim", "results.time_p42", "results.use.gpux_energy_j",
                 "results.use.rss_mb_median", "results.use.disk_mb_mean",
                 "results.time.extra", "sys.hostnamex", "hw.gpus0"):
        assert lookup(name) is None, name
        assert not is_declared(name)
    # Names outside results.*, sys.*, hw.* are parameters: not this table's business.
    assert is_declared("exp.model") and is_declared("user.anything")
    assert lookup("xresults.time") is None and is_declared("xresults.time")


def test_format_value_by_declaration() -> None:
    assert format_value("results.time", 12.3456) == "12.35"
    assert format_value("results.mfu", 0.4567) == "45.7%"
    assert format_value("results.num_batches", 20) == "20"
    assert format_value("results.time_std", 0.0123456) == "0.0123"
    assert format_value("results.time", None) == "-"
    assert format_value("results.time", True) == "True"  # a bool is not a number
    assert format_value("results.throughput_unit", "tokens") == "tokens"
    assert format_value("user.undeclared", 1.23456) == "1.23456"


def test_conforms_checks_the_declared_type() -> None:
    assert conforms("results.time", 12.5) and conforms("results.time", 12)
    assert conforms("results.time", None)
    assert not conforms("results.time", "12.5")
    assert not conforms("results.time", True)
    assert conforms("results.num_batches", 3) and not conforms("results.num_batches", 3.0)
    assert conforms("results.rank_time_data", [[1.0, 2.0], [3.0]])
    assert not conforms("results.rank_time_data", [1.0, 2.0])
    assert conforms("results.unstable_reasons", []) and not conforms(
        "results.unstable_reasons", "cv")
    assert conforms("results.use.gpu0_used", False)
    assert conforms("user.anything", object())


def test_is_number() -> None:
    for value in (1, 1.5, -0.0, float("nan"), np.float32(2.5), np.int64(3)):
        assert is_number(value), value
    for value in (True, False, np.bool_(True), "1", None, [1], 1j):
        assert not is_number(value), value


# -- the check at the write site --------------------------------------------------------


def test_strict_check_raises_for_an_undeclared_key() -> None:
    with pytest.raises(UndeclaredKeyError, match=r"'results\.tiem'.*dlbench help --results"):
        check_key("results.tiem", {STRICT_ENV: "1"})
    check_key("results.time", {STRICT_ENV: "1"})  # declared: no error
    check_key("exp.tiem", {STRICT_ENV: "1"})  # a parameter: not checked here


def test_lenient_check_warns_once(capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "_warned", set())
    for _ in range(3):
        check_key("results.new_figure", {})
    check_key("sys.new_fact", {STRICT_ENV: "0"})
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "dlbench: warning: result key 'results.new_figure' is not declared in "
        "dlbench.results.keys.table (see `dlbench help --results`); written anyway",
        "dlbench: warning: result key 'sys.new_fact' is not declared in "
        "dlbench.results.keys.table (see `dlbench help --results`); written anyway",
    ]


def test_the_test_suite_runs_strict() -> None:
    import os

    assert os.environ.get(STRICT_ENV) == "1"


def test_log_writer_refuses_an_undeclared_key_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "exp.log"
    with LogWriter(path) as log:
        log.write("results.time", 10.0)
        with pytest.raises(UndeclaredKeyError, match=r"results\.throughtput"):
            log.write("results.throughtput", 1.0)
        with pytest.raises(UndeclaredKeyError, match=r"hw\.gpu_name"):
            log.write_many({"results.num_batches": 5, "hw.gpu_name": "x"})
    # Nothing half-written: the mapping with a bad key left no line at all.
    assert path.read_text() == "__results.time__=10.0\n"


def test_log_writer_writes_an_undeclared_key_outside_tests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(STRICT_ENV)
    monkeypatch.setattr(keys, "_warned", set())
    path = tmp_path / "exp.log"
    with LogWriter(path) as log:
        log.write_many({"results.brand_new": 1, "results.time": 2.0})
        log.write("results.brand_new", 3)
    record, _ = parse_log(path)
    assert record["results.brand_new"] == 3 and record["results.time"] == 2.0
    assert capsys.readouterr().err.count("'results.brand_new' is not declared") == 1


# -- what the measuring code produces is declared, with the declared types -----------------


def _assert_declared_and_typed(values: dict[str, Any]) -> None:
    for name, value in values.items():
        assert is_declared(name), name
        assert conforms(name, value), (name, value)


def test_timing_and_repeat_results_are_declared() -> None:
    times = [10.0, 11.0, 12.0, 10.5, 11.5]
    one = {**summarize_times(times), "results.time_data": times, "results.num_batches": 5,
           "results.num_warmup_batches": 1, "results.stop_reason": "fixed",
           "results.throughput": 100.0, "results.use.samples": 3,
           "results.use.cpu_percent_mean": 95.0, "results.use.energy_j": 2.0,
           "results.use.samples_per_joule": 10.0, "results.use.gpu0_used": True}
    _assert_declared_and_typed(one)
    _assert_declared_and_typed(rank_results([[10.0, 11.0], [12.0, 9.0]], 8))
    combined = combine_repeats([one, {**one, "results.time": 12.0}])
    assert "results.repeat_time_cv" in combined
    _assert_declared_and_typed(combined)


def test_monitor_and_host_keys_are_declared(tmp_path: Path) -> None:
    monitor = ResourceMonitor(0.02, nvml=MonitorNvml(), rapl_root=tmp_path)
    monitor.start()
    monitor.mark("timed_start")
    monitor.mark("timed_end")
    monitor.stop()
    # As the worker writes them: the series first, the summaries after (last wins).
    record = {**monitor.series(), **monitor.summary()}
    assert "results.use.gpu1_energy_j" in record and "results.use.gpu0_throttle" in record
    _assert_declared_and_typed(record)
    _assert_declared_and_typed(host_info(gpus=False))
    info = gpu_info(SysinfoNvml())
    assert "hw.gpus" in info
    _assert_declared_and_typed(info)


# -- every key literal in the source is declared ---------------------------------------------


def _literals(root: Path) -> list[tuple[str, str, int]]:
    """Every string literal and f-string (``{...}`` as ``{}``) in the modules under
    ``root`` that starts with ``results.``, ``sys.`` or ``hw.``: (text, file, line)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # An f-string's fixed parts are constants too: seen through the f-string only.
        parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if id(node) in parts:
                continue
            if isinstance(node, ast.JoinedStr):
                text = "".join(str(v.value) if isinstance(v, ast.Constant) else "{}"
                               for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            # A key has no whitespace: text that has some is prose (a description).
            if text.startswith(keys.KEY_PREFIXES) and not re.search(r"\s", text):
                found.append((text, str(path.relative_to(root)), node.lineno))
    return found


def _undeclared(literals: list[tuple[str, str, int]]) -> list[str]:
    """``file:line: text`` of each literal that is neither a declared key, nor an
    f-string whose fixed parts fit one, nor a prefix of one, nor in :data:`NOT_KEYS`."""
    examples = _all_examples()
    declared = {key.name for key in RESULT_KEYS}  # the table's own family names
    undeclared = []
    for text, where, line in literals:
        if text in NOT_KEYS or text in declared or lookup(text) is not None:
            continue
        if "{}" in text:
            # An f-string: its fixed parts must fit some declared name.
            fits = re.compile(".+".join(map(re.escape, text.split("{}"))))
            if any(fits.fullmatch(name) for name in examples):
                continue
        elif text.endswith((".", "_")) and any(n.startswith(text) for n in examples):
            continue  # a prefix that selects keys (startswith), not a key
        undeclared.append(f"{where}:{line}: {text}")
    return undeclared


def test_every_key_literal_in_the_source_is_declared() -> None:
    literals = _literals(SRC)
    assert len(literals) > 100  # the scan sees the source
    assert _undeclared(literals) == []


def test_the_source_scan_catches_typos(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        'X = {"results.througput": 1, "sys.hostname": 2, "results.sqlite": 3}\n'
        'Y = [f"results.use.{n}_maen", f"results.use.gpu{i}_energy_j", "results.use."]\n'
        'Z = "hw.cpu_" + "results.nope_"\n')
    assert _undeclared(_literals(tmp_path)) == [
        "mod.py:1: results.througput", "mod.py:2: results.use.{}_maen",
        "mod.py:3: results.nope_"]


# -- dlbench help --results and the docs --------------------------------------------------


def test_help_results_prints_the_matching_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "--results", r"time_p9"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["name", "type", "unit", "better", "meaning"]
    assert [line.split()[0] for line in out[2:]] == ["results.time_p90", "results.time_p95",
                                                     "results.time_p99"]
    assert out[2].split()[1:5] == ["float", "ms", "lower", "90th"]


def test_help_results_without_a_pattern_prints_every_key_and_placeholder(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "--results"]) == 0
    out = capsys.readouterr().out
    for key in RESULT_KEYS:
        assert f"\n{key.name} " in out, key.name
    assert "<series>: a monitor series" in out and "<i>: a GPU's index" in out


def test_help_results_no_match_and_bad_regex(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "--results", "no_such_key"]) == 0
    assert capsys.readouterr().out == "no result key matches\n"
    assert describe_keys("no_such_key") == []
    assert main(["help", "--results", "time("]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "dlbench: error: --results 'time(' is not a regular expression")


def test_docs_key_tables_are_generated_from_the_table() -> None:
    text = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- result-keys ([^>]*?) -->\n(.*?)<!-- /result-keys -->", text,
                        flags=re.S)
    assert [prefixes for prefixes, _ in blocks] == ["results.", "sys. hw."]
    for prefixes, table in blocks:
        assert table == render_markdown(tuple(prefixes.split())), prefixes
    documented = "".join(table for _, table in blocks)
    for key in RESULT_KEYS:
        assert documented.count(f"| `{key.name}` |") == 1, key.name


def test_render_markdown_escapes_cells() -> None:
    table = render_markdown(("results.use.",))
    assert "| `results.use.<series>_max` | float |  |  | that series' maximum" in table
    assert "| `results.use.energy_j` | float | J | lower | CPU and GPU energy" in table
    assert "gpu\\<i>_util_percent" in table  # a bare <i> would be an HTML tag
    assert "results.time " not in table
