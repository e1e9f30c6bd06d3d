"""What a history keeps of a record: its configuration, environment, scalar results, time.

A history holds years of runs, so a record enters it lean (:func:`history_row`):

- **configuration**: the parameters that make two records measurements of the same
  thing, so that their results form one time series. They are the registry's
  ``identity`` parameters (those behind ``exp.id``) that are not derived, and the
  ``user.*`` values (:func:`dlbench.config.identity.identity_parameters`), except that

  - the core axes (:data:`CORE_PARAMS`: framework, model, phase, batch, GPUs,
    replicas, nodes, dtype, device type) are always kept, and any other parameter is
    kept only when it differs from its default, so that a parameter a later dlbench
    adds (at its default) does not cut a configuration's history in two;
  - :data:`RUN_SPECIFIC` parameters (a data directory, a container image tagged per
    nightly build) move to the environment, where a change of them is reported
    instead of starting a new series;
  - the device's name (:data:`SPLIT_KEYS`, ``hw.device_name``) is added: the same
    sweep on an A100 and on a CPU is two series;
  - ``extra`` names are added and ``ignore`` names removed, as the importer asks;

  DLBS's older names are read as dlbench's (``exp.device_batch`` is
  ``exp.replica_batch``). ``exp.id`` is not part of it: DLBS wrote a random one.
- **environment**: every ``sys.*`` and ``hw.*`` value (small: versions, devices,
  host), the run-specific parameters, and DLBS's own environment names
  (``exp.framework_ver``, ``exp.cuda``...). Values over :data:`MAX_VALUE_CHARS` of
  JSON are dropped.
- **results**: the scalar ``results.*`` values (numbers, text, booleans); series
  such as ``results.time_data`` and ``results.use.*`` samples are left out.
- **time**: the record's ``results.start_time`` (ISO 8601, or DLBS's
  ``2018-02-12:10:31:07:412``), read as UTC when it names no offset.

Example::

    row = history_row(record, run_id="r1", run_time="2024-05-01T02:00:00+00:00")
    row.config_key  # the same for every run of this configuration
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from dlbench.config.dlbs_names import ALIASES
from dlbench.config.identity import configuration_hash, identity_parameters
from dlbench.config.registry import REGISTRY
from dlbench.errors import ResultsError

#: Kept in every configuration a record has them in, whatever their value.
CORE_PARAMS = (
    "exp.framework", "exp.model", "exp.phase", "exp.replica_batch", "exp.gpus",
    "exp.num_replicas", "exp.num_nodes", "exp.dtype", "exp.device_type",
)

#: Identity parameters that say where or from what build a run ran, not what it
#: measured: kept with the environment.
RUN_SPECIFIC = ("exp.data_dir", "exp.docker_image")

#: Environment keys that split a configuration's series (one per kind of device).
SPLIT_KEYS = ("hw.device_name",)

#: DLBS's names for the environment it recorded among its parameters.
DLBS_ENVIRONMENT = (
    "exp.framework_ver", "exp.framework_commit", "exp.cuda", "exp.cudnn",
    "exp.device_title", "exp.node_id",
)

#: Environment values longer than this (as JSON) are not kept.
MAX_VALUE_CHARS = 4096

#: Result texts longer than this are not kept (a history holds numbers).
MAX_TEXT_CHARS = 256

_DLBS_TIME_FORMAT = "%Y-%m-%d:%H:%M:%S:%f"


@dataclass(frozen=True)
class HistoryRow:
    """One record as a history keeps it (see the module's description).

    ``run_time`` and ``record_time`` are ISO 8601 in UTC with microseconds, so that
    they sort as text; ``revision`` is the commit (or any label) of the code under
    test that the importer gave, or None.
    """

    run_id: str
    exp_id: str
    run_time: str
    record_time: str
    config_key: str
    status: str | None
    config: dict[str, Any]
    environment: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    revision: str | None = None


def iso_utc(moment: datetime) -> str:
    """``moment`` as sortable ISO 8601 text in UTC (a naive time is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def parse_time(value: Any) -> datetime | None:
    """A record's time (ISO 8601, with ``Z`` or an offset or neither; or DLBS's
    ``YYYY-MM-DD:HH:MM:SS:mmm``), or None when ``value`` is none of these."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    try:
        return datetime.strptime(text, _DLBS_TIME_FORMAT)
    except ValueError:
        return None


def config_key(config: Mapping[str, Any]) -> str:
    """First 16 hex digits of sha256 over the configuration's canonical JSON."""
    return configuration_hash(config)


def _not_default(name: str, value: Any) -> bool:
    """Whether ``value`` differs from the declared default of ``name`` (a ``user.*``
    label has none, so it always counts)."""
    param = REGISTRY.get(name)
    return param is None or bool(value != param.default)


def _canonical(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with DLBS's older names under dlbench's (unless both are there)."""
    out = dict(record)
    for old, new in ALIASES.items():
        if old in out and new not in out:
            out[new] = out.pop(old)
    return out


def _small(value: Any) -> bool:
    try:
        return len(json.dumps(value, allow_nan=False)) <= MAX_VALUE_CHARS
    except (TypeError, ValueError):  # not JSON, or NaN/inf
        return False


def configuration(
    record: Mapping[str, Any], *, extra: Collection[str] = (), ignore: Collection[str] = ()
) -> dict[str, Any]:
    """The parameters (and split keys) that name ``record``'s configuration, sorted."""
    values = _canonical(record)
    # The parameters a user sets and the user.* labels (config.identity); a parameter
    # outside the core axes counts only away from its default.
    # A record without exp.framework keeps no framework's parameters ("" is none).
    identity = set(identity_parameters(values, framework=values.get("exp.framework", ""),
                                       user=True))
    chosen = {
        name: value
        for name, value in values.items()
        if name not in ignore and name not in RUN_SPECIFIC and name != "exp.id"
        and (name in extra or name in SPLIT_KEYS or name in CORE_PARAMS
             or (name in identity and _not_default(name, value)))
        and _small(value)
    }
    return dict(sorted(chosen.items()))


def environment(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record's ``sys.*``/``hw.*`` values, run-specific parameters and DLBS's
    environment names, each at most :data:`MAX_VALUE_CHARS` of JSON, sorted."""
    values = _canonical(record)
    chosen = {
        name: value
        for name, value in values.items()
        if (name.startswith(("sys.", "hw.")) or name in RUN_SPECIFIC
            or name in DLBS_ENVIRONMENT)
        and _small(value)
    }
    return dict(sorted(chosen.items()))


def _scalar_result(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    return isinstance(value, str) and len(value) <= MAX_TEXT_CHARS


#: Lists a history keeps: why the worker did not trust a result, which ``history
#: check`` reads to tell a run's bias from its spread (:mod:`dlbench.results.noise`).
KEPT_LISTS = ("results.unstable_reasons",)


def _kept_list(name: str, value: Any) -> bool:
    return (name in KEPT_LISTS and isinstance(value, list)
            and all(isinstance(v, str) and len(v) <= MAX_TEXT_CHARS for v in value))


def scalar_results(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record's ``results.*`` values that are one number, boolean or short text,
    and the lists of :data:`KEPT_LISTS`."""
    return {
        name: value
        for name, value in sorted(record.items())
        if name.startswith("results.") and (_scalar_result(value) or _kept_list(name, value))
    }


def record_time(record: Mapping[str, Any]) -> datetime | None:
    """When the record's experiment started (``results.start_time``), or None."""
    return parse_time(record.get("results.start_time"))


def run_identity(
    records: Sequence[Mapping[str, Any]], fallback: str
) -> tuple[str, datetime | None]:
    """A run's id and start: the id hashes the earliest ``results.start_time`` with
    the host of that record, so the same run imported from another path or twice is
    the same run; without any start time, it hashes ``fallback`` (the source's path).
    """
    timed = [(t, r) for r in records if (t := record_time(r)) is not None]
    if not timed:
        digest = hashlib.sha256(f"source:{fallback}".encode()).hexdigest()[:16]
        return digest, None
    first, record = min(timed, key=lambda pair: iso_utc(pair[0]))
    basis = json.dumps([iso_utc(first), record.get("sys.hostname")])
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:16], first


def history_row(
    record: Mapping[str, Any],
    *,
    run_id: str,
    run_time: str,
    exp_id: str | None = None,
    source: str = "",
    revision: str | None = None,
    time_override: bool = False,
    extra: Collection[str] = (),
    ignore: Collection[str] = (),
) -> HistoryRow:
    """``record`` as a history row of run ``run_id`` (started ``run_time``, ISO UTC).

    The record's own start time is its time unless ``time_override`` (the importer
    gave the run's time: a back-filled run's records take it). ``exp_id`` replaces
    the record's ``exp.id`` (for records without one). ResultsError when the record
    has no ``exp.framework`` or ``exp.model``: it names no configuration.
    """
    for name in ("exp.framework", "exp.model"):
        if name not in record:
            raise ResultsError(
                f"record {record.get('exp.id', '?')} of {source or 'the input'} has no "
                f"{name}: a history needs exp.framework and exp.model")
    config = configuration(record, extra=extra, ignore=ignore)
    started = None if time_override else record_time(record)
    status = record.get("exp.status")
    return HistoryRow(
        run_id=run_id,
        exp_id=str(exp_id if exp_id is not None else record.get("exp.id")),
        run_time=run_time,
        record_time=iso_utc(started) if started is not None else run_time,
        config_key=config_key(config),
        status=None if status is None else str(status),
        config=config,
        environment=environment(record),
        results=scalar_results(record),
        source=source,
        revision=revision,
    )
