"""Baseline files of the scorecard: reading, checking, writing, and making one from results.

A baseline file (``.json``, ``.yaml``/``.yml`` or ``.csv``) lists benchmarks, each a
query selecting records and a target for one metric::

    {"metric": "results.throughput", "higher_is_better": true,
     "tolerance": 0.05, "stability_threshold": 0.05, "missing_penalty": 0.5,
     "min_runs": 4,
     "benchmarks": [{"name": "resnet50-training-b32",
                     "query": {"exp.model": "resnet50$", "exp.replica_batch": 32},
                     "target": 123.4, "weight": 1.0}]}

Only ``benchmarks`` and each benchmark's ``name``, ``query`` and ``target`` are
required. ``higher_is_better`` defaults to the metric's declared direction
(``dlbench help --results``, column better), and a metric that declares none must
say it; a benchmark may set its own ``metric``, ``higher_is_better`` and
``tolerance``. A csv baseline has a header ``name,target,weight,metric,query`` (the
query as JSON text; ``weight``, ``metric``, ``higher_is_better`` and
``tolerance`` optional) and takes the file-level defaults above.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlbench.config.spec import MAX_SPEC_BYTES
from dlbench.errors import QueryError, ResultsError
from dlbench.report.aggregate import (
    as_number,
    identity_candidates,
    key_of,
    row_keys,
    summarize,
    trim_extremes,
    usable_records,
)
from dlbench.report.scorecard.gpu_reports import copy_values
from dlbench.results.jsontext import MAX_DEPTH, loads_json, nests_deeper
from dlbench.results.keys.lookup import higher_is_better as declared_higher_is_better
from dlbench.results.query import parse_query
from dlbench.results.text_table import csv_line

BASELINE_FORMATS = (".json", ".yaml", ".yml", ".csv")
#: Runs each benchmark needs by default: Mila's report drops the best and the worst
#: run, and wants at least two left to speak of a spread.
MIN_RUNS = 4
_TOP_KEYS = ("metric", "higher_is_better", "tolerance", "stability_threshold",
             "missing_penalty", "min_runs", "benchmarks")
_BENCH_KEYS = ("name", "query", "target", "weight", "metric", "higher_is_better", "tolerance")
# What makes two baseline configurations different; hw.device_name is left out on
# purpose, since a baseline is meant to be checked on other machines.
_CONFIG_KEYS = ("exp.framework", "exp.model", "exp.phase", "exp.dtype", "exp.device_type",
                "exp.replica_batch", "exp.num_replicas")


@dataclass(frozen=True)
class Benchmark:
    """One expected measurement: the records ``query`` selects, and their target."""

    name: str
    query: dict[str, Any]
    target: float
    weight: float = 1.0
    metric: str | None = None
    higher_is_better: bool | None = None
    tolerance: float | None = None


@dataclass(frozen=True)
class Baseline:
    """Targets and thresholds of a scorecard (see the module docstring)."""

    benchmarks: list[Benchmark]
    metric: str = "results.throughput"
    higher_is_better: bool | None = None
    tolerance: float = 0.05
    stability_threshold: float = 0.05
    missing_penalty: float = 0.5
    min_runs: int = MIN_RUNS

    def metric_of(self, bench: Benchmark) -> str:
        """The metric ``bench`` is measured by."""
        return bench.metric or self.metric

    def higher_is_better_of(self, bench: Benchmark, where: str = "metric") -> bool:
        """Whether a larger value of ``bench``'s metric is better: the benchmark's own
        ``higher_is_better``, else the file's (for the file's metric), else the metric's
        declared direction; ``MetricError`` (naming ``where``) when there is none."""
        given = bench.higher_is_better
        if given is None and bench.metric is None:
            given = self.higher_is_better
        return declared_higher_is_better(self.metric_of(bench), given, where=where)

    def tolerance_of(self, bench: Benchmark) -> float:
        """The tolerance ``bench`` passes with."""
        return self.tolerance if bench.tolerance is None else bench.tolerance


# ---------------------------------------------------------------- reading


def _number(value: Any, where: str, key: str, low: float, high: float) -> float:
    number = as_number(value)
    if number is None or not low <= number <= high:
        raise ResultsError(f"{where}: {key} must be a number in [{low:g}, {high:g}], "
                           f"got {json.dumps(value)}")
    return number


def _bool(value: Any, where: str, key: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ResultsError(f"{where}: {key} must be true or false, got {json.dumps(value)}")


def _benchmark(entry: Any, where: str) -> Benchmark:
    if not isinstance(entry, dict):
        raise ResultsError(f"{where}: a benchmark must be a mapping with name, query, target")
    unknown = sorted(set(entry) - set(_BENCH_KEYS))
    if unknown:
        raise ResultsError(
            f"{where}: unknown key {unknown[0]!r}; accepted: {', '.join(_BENCH_KEYS)}")
    for key in ("name", "query", "target"):
        if entry.get(key) is None:
            raise ResultsError(f"{where}: benchmark has no {key}")
    name, query, metric = entry["name"], entry["query"], entry.get("metric")
    if not isinstance(name, str) or not name:
        raise ResultsError(f"{where}: name must be a non-empty string")
    if metric is not None and not isinstance(metric, str):
        raise ResultsError(f"{where}: metric must be a string such as results.throughput")
    try:
        checked = parse_query(json.dumps(query), f"{where}: query")
    except QueryError as exc:
        raise ResultsError(str(exc)) from exc
    return Benchmark(
        name=name, query=checked, metric=metric,
        target=_number(entry["target"], where, "target", 1e-300, math.inf),
        weight=_number(entry.get("weight", 1.0), where, "weight", 0.0, math.inf),
        higher_is_better=_bool(entry.get("higher_is_better"), where, "higher_is_better"),
        tolerance=None if entry.get("tolerance") is None
        else _number(entry["tolerance"], where, "tolerance", 0.0, 1.0),
    )


def baseline_from_mapping(data: Any, path: str, lines: dict[int, int] | None = None) -> Baseline:
    """Check a parsed JSON or YAML baseline; ``lines`` maps ``id(mapping)`` to the
    line it starts on, for messages of the form ``file:line``."""
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: a baseline is a mapping with a 'benchmarks' list")
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise ResultsError(f"{path}: unknown key {unknown[0]!r}; accepted: {', '.join(_TOP_KEYS)}")
    entries = data.get("benchmarks")
    if not isinstance(entries, list) or not entries:
        raise ResultsError(f"{path}: 'benchmarks' must be a non-empty list")
    benchmarks = []
    for index, entry in enumerate(entries):
        line = (lines or {}).get(id(entry))
        where = f"{path}:{line}" if line else f"{path}: benchmarks[{index}]"
        benchmarks.append(_benchmark(entry, where))
    return _checked(benchmarks, data, path)


def _checked(benchmarks: list[Benchmark], data: dict[str, Any], path: str) -> Baseline:
    names = [b.name for b in benchmarks]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ResultsError(f"{path}: benchmark name {duplicates[0]!r} is used twice")
    metric = data.get("metric", "results.throughput")
    if not isinstance(metric, str) or not metric:
        raise ResultsError(f"{path}: metric must be a string such as results.throughput")
    baseline = Baseline(
        benchmarks=benchmarks, metric=metric,
        higher_is_better=_bool(data.get("higher_is_better"), path, "higher_is_better"),
        tolerance=_number(data.get("tolerance", 0.05), path, "tolerance", 0.0, 1.0),
        stability_threshold=_number(data.get("stability_threshold", 0.05), path,
                                    "stability_threshold", 0.0, math.inf),
        missing_penalty=_number(data.get("missing_penalty", 0.5), path, "missing_penalty",
                                1e-9, 1.0),
        min_runs=_count(data.get("min_runs", MIN_RUNS), path, "min_runs"),
    )
    for bench in benchmarks:  # which way each metric improves, known before any scoring
        baseline.higher_is_better_of(bench, where=f"{path}: benchmark {bench.name!r}: metric")
    return baseline


def _count(value: Any, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ResultsError(f"{where}: {key} must be a whole number >= 1, got {json.dumps(value)}")
    return value


def _yaml_with_lines(text: str, path: str) -> tuple[Any, dict[int, int]]:
    import yaml  # only yaml baselines need it

    lines: dict[int, int] = {}

    class LineLoader(yaml.SafeLoader):
        """SafeLoader that remembers where each mapping starts."""

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
        value = dict(loader.construct_mapping(node, deep=True))
        lines[id(value)] = node.start_mark.line + 1
        return value

    LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        # LineLoader is a SafeLoader: no arbitrary Python objects.
        data = yaml.load(text, Loader=LineLoader)
    except RecursionError:
        raise ResultsError(f"{path}: values nest more than {MAX_DEPTH} deep") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else path
        problem = getattr(exc, "problem", None) or str(exc)
        raise ResultsError(f"{where}: not valid YAML ({problem})") from exc
    if nests_deeper(data, MAX_DEPTH):
        raise ResultsError(f"{path}: values nest more than {MAX_DEPTH} deep")
    return data, lines


def _csv_baseline(text: str, path: str) -> Baseline:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in ("name", "target", "query") if c not in (reader.fieldnames or [])]
    if missing:
        raise ResultsError(f"{path}:1: csv header lacks {', '.join(missing)}; expected "
                           "name,target,weight,metric,query")
    benchmarks = []
    for row in reader:
        where = f"{path}:{reader.line_num}"
        entry: dict[str, Any] = {k: v for k, v in row.items() if k and v not in (None, "")}
        try:
            entry["query"] = loads_json(entry.get("query", "null"), where)
            for key in ("target", "weight", "tolerance", "higher_is_better"):
                if key in entry:
                    entry[key] = loads_json(entry[key], where)
        except ValueError as exc:
            raise ResultsError(f"{where}: not valid JSON in a cell ({exc})") from exc
        benchmarks.append(_benchmark(entry, where))
    if not benchmarks:
        raise ResultsError(f"{path}: no benchmarks")
    return _checked(benchmarks, {}, path)


def parse_baseline(text: str, path: str) -> Baseline:
    """A baseline from the text of a file called ``path`` (its extension says the
    format). ``ResultsError`` with ``file:line`` where possible when malformed."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        try:
            data = loads_json(text, path)
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
        return baseline_from_mapping(data, path)
    if suffix in (".yaml", ".yml"):
        data, lines = _yaml_with_lines(text, path)
        return baseline_from_mapping(data, path, lines)
    if suffix == ".csv":
        return _csv_baseline(text, path)
    raise _unknown_extension(path)


def _unknown_extension(path: str | Path) -> ResultsError:
    return ResultsError(
        f"baseline {path}: unknown extension; accepted: {' '.join(BASELINE_FORMATS)}")


def load_baseline(path: str | Path) -> Baseline:
    """Read and check a baseline file."""
    try:
        with open(path, "rb") as stream:
            # One read past the limit tells a file that is too long (or never ends,
            # /dev/zero) without holding more of it; a baseline is a spec's size.
            data = stream.read(MAX_SPEC_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read baseline {path}: {exc}") from exc
    if len(data) > MAX_SPEC_BYTES:
        raise ResultsError(f"baseline {path} is larger than {MAX_SPEC_BYTES:,} bytes; accepted: "
                           f"baseline files of at most {MAX_SPEC_BYTES // 2**20} MiB")
    return parse_baseline(text, str(path))


# ---------------------------------------------------------------- writing


def baseline_to_mapping(baseline: Baseline) -> dict[str, Any]:
    """The baseline as the mapping its JSON and YAML files hold."""
    data: dict[str, Any] = {"metric": baseline.metric}
    if baseline.higher_is_better is not None:
        data["higher_is_better"] = baseline.higher_is_better
    data.update(tolerance=baseline.tolerance, stability_threshold=baseline.stability_threshold,
                missing_penalty=baseline.missing_penalty, min_runs=baseline.min_runs)
    data["benchmarks"] = [
        {k: v for k, v in vars(b).items() if v is not None} for b in baseline.benchmarks
    ]
    return data


def dump_baseline(baseline: Baseline, path: str | Path) -> str:
    """The text of a baseline file in the format ``path``'s extension names.

    csv keeps only the benchmarks (name, target, weight, metric, query); reading it
    back gives the default tolerance, stability threshold, penalty and minimum runs.
    """
    suffix = Path(path).suffix.lower()
    data = baseline_to_mapping(baseline)
    if suffix == ".json":
        return json.dumps(data, indent=2) + "\n"
    if suffix in (".yaml", ".yml"):
        import yaml

        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    if suffix == ".csv":
        rows = [["name", "target", "weight", "metric", "query"], *(
            [b.name, repr(b.target), repr(b.weight), baseline.metric_of(b), json.dumps(b.query)]
            for b in baseline.benchmarks)]
        return "".join(csv_line(row) + "\n" for row in rows)
    raise _unknown_extension(path)


def _exact(value: Any) -> Any:
    # Query strings are regular expressions matched at the start: "vgg16" would also
    # select "vgg16_bn". Escaped and ended with "$", a string selects only itself.
    return re.escape(value) + "$" if isinstance(value, str) else value


def trimmed_mean(values: Sequence[float]) -> float:
    """The mean without the best and the worst value when there are four or more
    (Mila's result of a benchmark)."""
    return float(summarize(trim_extremes(values)))


def make_baseline(
    records: Sequence[dict[str, Any]], metric: str = "results.throughput",
    higher_is_better: bool | None = None,
) -> tuple[Baseline, list[str]]:
    """A baseline with one benchmark per configuration of ``records`` and warnings.

    A configuration is a combination of framework, model, phase, dtype, device type,
    replica batch and replica count, plus any other parameter that defines the
    measurement and differs between records (``user.*`` labels do not: their runs
    are repeats). Its query selects exactly those values; its target is the result
    the scorecard would compute for the records (one GPU's: each copy of a run of
    ``exp.parallel_jobs`` copies counts as a report of its own); its weight is 1. Which
    way the metric improves is its declared direction unless ``higher_is_better`` says
    otherwise, and is written into the file.
    """
    higher = declared_higher_is_better(metric, higher_is_better)
    usable, warnings = usable_records(records, metric)
    others = identity_candidates(
        usable, [*_CONFIG_KEYS, "hw.device_name", "exp.gpus", "exp.num_local_replicas"])
    # As in the tables: another parameter joins the configuration only where runs
    # would otherwise be averaged over it, not where it follows the batch size.
    keys = row_keys(usable, _CONFIG_KEYS, [], others)
    varying = {k for k in keys if len({json.dumps(r.get(k), sort_keys=True) for r in usable}) > 1}
    configs: dict[Any, list[dict[str, Any]]] = {}
    for record in usable:
        configs.setdefault(key_of(record, keys), []).append(record)
    benchmarks: list[Benchmark] = []
    names: set[str] = set()
    for members in configs.values():
        first = members[0]
        parts = [str(first.get("exp.model")), str(first.get("exp.phase")),
                 f"b{first.get('exp.replica_batch')}"]
        if "exp.num_replicas" in varying or first.get("exp.num_replicas", 1) != 1:
            parts.append(f"x{first.get('exp.num_replicas')}")
        parts += [f"{k.removeprefix('exp.')}={first.get(k)}" for k in keys if k in varying
                  and k not in ("exp.model", "exp.phase", "exp.replica_batch", "exp.num_replicas")]
        name, suffix = "-".join(parts), 2
        while name in names:
            name, suffix = f"{'-'.join(parts)}-{suffix}", suffix + 1
        names.add(name)
        # The scorecard's result: one value per GPU report (each copy of a run).
        target = trimmed_mean([v for r in members for v in copy_values(r, metric)])
        # A list or an object in a query means "any of" or operators, not a value.
        query = {k: _exact(first[k]) for k in keys
                 if first.get(k) is not None and not isinstance(first[k], (list, dict))}
        benchmarks.append(Benchmark(name=name, query=query, target=target))
    return Baseline(benchmarks=benchmarks, metric=metric,
                    higher_is_better=higher), warnings


