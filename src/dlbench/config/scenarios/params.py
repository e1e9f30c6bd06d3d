"""The parameters of inference scenarios (how queries are issued, MLPerf LoadGen's
way) and their checks; gathered with the others in
:data:`dlbench.config.registry.REGISTRY`. The scenarios' names and what the checks
need of each come from :mod:`dlbench.config.scenarios.registry`; the scenarios
themselves run in the worker (``measure/loadgen/scenarios/``); ``docs/inference.md``
describes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlbench.config.catalog import FRAMEWORKS, MODELS, model_info
from dlbench.config.params import MAX_SECONDS, Param, Shown
from dlbench.config.run_params import check_one_process
from dlbench.config.scenarios.registry import (
    BATCH,
    ScenarioEntry,
    scenario,
    scenario_names,
    scenarios,
)
from dlbench.errors import ConfigError

AUTO = "auto"

#: Server scenario's rates, queries/s: below the least, the queries a run must
#: complete would take days to arrive; above the most, no one-replica server keeps up
#: and the arrival schedule's gaps fall below the clock's resolution.
MIN_QPS = 0.01
MAX_QPS = 1_000_000
#: Most tokens of a prompt or a generated sequence.
MAX_TOKENS = 1_048_576



def _scenario_help() -> str:
    """exp.scenario's description, made of the registered scenarios' lines of help."""
    def named(entry: ScenarioEntry) -> str:
        return f"`{entry.name}` ({entry.help})"
    loop = scenario(BATCH)
    generators = ", ".join(named(e) for e in scenarios() if e.issues_queries)
    return (f"How inference work is issued: {named(loop)}, or a LoadGen scenario: "
            f"{generators}. Not `{loop.name}` needs exp.phase=inference.")


SCENARIO_PARAMS = [
    Param("exp.scenario", "str", BATCH, _scenario_help(), choices=scenario_names()),
    Param("exp.target_qps", "float", 0.0,
          "Server scenario: mean arrival rate, queries per second. `auto`: search the "
          "highest rate whose exp.latency_percentile stays under exp.latency_bound_ms "
          "(exp.framework=endpoint: that meets its SLOs, endpoint.slo_*), each probe a "
          "full run, all recorded in results.scenario_probes.",
          special=(AUTO,), minimum=0, maximum=MAX_QPS),
    Param("exp.latency_bound_ms", "float", 0.0,
          "Server scenario: the latency exp.latency_percentile of the queries must stay "
          "under for a valid run, ms (MLPerf: 15 for ResNet-50); 0: no bound. Needed by "
          "exp.target_qps=auto.", minimum=0, maximum=MAX_SECONDS * 1000),
    Param("exp.latency_percentile", "float", AUTO,
          "The latency percentile of the validity rules, in percent (the queries early "
          "stopping needs grow as it nears 100). "
          "`auto`: LoadGen's, 90 for single_stream, 99 for multi_stream and server.",
          special=(AUTO,), minimum=50, maximum=99.99),
    Param("exp.max_queue_delay_ms", "float", 0.0,
          "Server scenario: how long the dynamic batcher may hold the oldest queued query "
          "while it waits for more, ms (Triton's max_queue_delay); 0: serve what is "
          "queued at once.", minimum=0, maximum=60_000),
    Param("exp.scenario_min_queries", "int", AUTO,
          "Queries a scenario run must complete (offline: samples). `auto`: LoadGen's "
          "100, or more where early stopping needs more: 662 for multi_stream at the "
          "99th percentile, 459 for server.", special=(AUTO,), minimum=1,
          maximum=100_000_000),
    Param("exp.scenario_min_duration", "float", 10.0,
          "Seconds a scenario run must last (LoadGen's default; MLPerf submissions use "
          "600).", minimum=0, maximum=MAX_SECONDS),
    Param("exp.scenario_seed", "int", 0,
          "Seed of the server scenario's arrival schedule (LoadGen's schedule_rng_seed).",
          minimum=0, maximum=2**32 - 1),
    Param("exp.qps_search_tolerance", "float", 0.02,
          "With exp.target_qps=auto, the search stops when the highest valid and lowest "
          "invalid rates are within this fraction of each other."),
    Param("exp.prompt_tokens", "int", 128,
          "exp.phase=generate: tokens in each request's prompt (random token ids), run "
          "through the model at once by the prefill.", minimum=1, maximum=MAX_TOKENS),
    Param("exp.output_tokens", "int", 128,
          "exp.phase=generate: tokens each request generates, greedily and always this "
          "many (no end-of-sequence stop); the prefill gives the first.", minimum=1,
          maximum=MAX_TOKENS),
]


def check_scenario(values: Mapping[str, Any], shown: Shown) -> None:
    """The scenario parameters of one resolved experiment fit together; ``shown``
    names a parameter with its value and where it came from. ConfigError otherwise."""
    chosen, qps = values["exp.scenario"], values["exp.target_qps"]
    entry = scenario(chosen)
    if values["exp.phase"] == "generate":
        _check_generate(values, shown)
    if not 0 < values["exp.qps_search_tolerance"] < 1:
        raise ConfigError(f"{shown('exp.qps_search_tolerance')} must be between 0 and 1 "
                          f"(exclusive), e.g. 0.02")
    if qps == AUTO and not entry.arrival_rate:
        rated = " or ".join(e.name for e in scenarios() if e.arrival_rate)
        raise ConfigError(f"{shown('exp.target_qps')} searches the highest load of the "
                          f"{rated} scenario: set exp.scenario={rated} ({shown('exp.scenario')})")
    if not entry.issues_queries:
        return
    if values["exp.phase"] not in ("inference", "generate"):
        raise ConfigError(f"{shown('exp.scenario')} issues inference queries: it needs "
                          f"exp.phase=inference ({shown('exp.phase')})")
    if values["exp.num_replicas"] > 1:
        raise ConfigError(f"{shown('exp.scenario')} issues queries to one replica: use "
                          f"exp.scenario={BATCH} for data-parallel runs "
                          f"({shown('exp.num_replicas')})")
    check_one_process(values, shown, "scenario runs", "exp.scenario")
    if values["exp.profile"] != "none":
        # The profiling window follows the timed batches, which a scenario run has not.
        raise ConfigError(f"{shown('exp.profile')} is not supported with "
                          f"exp.scenario={chosen} yet; use exp.profile=none")
    if entry.one_sample and values["exp.replica_batch"] != 1:
        raise ConfigError(f"{shown('exp.replica_batch')}: exp.scenario={chosen} issues "
                          f"one sample per query: set exp.replica_batch=1")
    if not entry.arrival_rate:
        return
    if qps != AUTO and not qps >= MIN_QPS:
        raise ConfigError(f"{shown('exp.target_qps')}: exp.scenario={chosen} needs a rate "
                          f"between {MIN_QPS} and {MAX_QPS} queries/s, or 'auto' to search "
                          f"the highest under exp.latency_bound_ms")
    if qps == AUTO and not _served(values) and not values["exp.latency_bound_ms"] > 0:
        # A server's search meets its framework's SLOs instead (endpoint.slo_*).
        raise ConfigError(f"{shown('exp.latency_bound_ms')}: exp.target_qps=auto searches the "
                          f"highest load under a latency bound: give one > 0 ms")


def _served(values: Mapping[str, Any]) -> bool:
    """Whether the experiment's framework measures a model served elsewhere
    (``exp.framework=endpoint``): its load and its searches are its own."""
    framework = FRAMEWORKS.get(values["exp.framework"])
    return framework is not None and bool(framework.served_model)


def _check_generate(values: Mapping[str, Any], shown: Shown) -> None:
    """exp.phase=generate: a decoder model, one process of one replica, a number of
    requests, and what the generation loop does not do refused by name. A server
    (:func:`_served`) searches its own highest load: ``exp.target_qps=auto`` and
    ``exp.replica_batch=auto``, which its framework checks."""
    model = model_info(values, shown)
    if model.task != "causal_lm":
        decoders = ", ".join(m.id for m in MODELS.values() if m.task == "causal_lm")
        raise ConfigError(f"{shown('exp.phase')} needs a decoder (causal language) model, "
                          f"and {shown('exp.model')} is {model.task}; decoders: {decoders}, "
                          f"and hf: causal language models")
    served = _served(values)
    if values["exp.replica_batch"] == AUTO and not served:
        raise ConfigError(f"{shown('exp.replica_batch')}: exp.phase=generate needs the "
                          f"number of requests generated together, e.g. 1")
    if values["exp.num_replicas"] > 1:
        raise ConfigError(f"{shown('exp.phase')} runs one replica: set exp.gpus to one GPU "
                          f"or none ({shown('exp.num_replicas')})")
    check_one_process(values, shown, "generation runs", "exp.phase")
    refused = {"exp.target_qps": (values["exp.target_qps"] == AUTO and not served,
                                  "give a rate"),
               "exp.profile": (values["exp.profile"] != "none", "use exp.profile=none"),
               "exp.data_dir": (bool(values["exp.data_dir"]), "prompts are random tokens: "
                                                             "leave it empty")}
    for name, (bad, fix) in refused.items():
        if bad:
            raise ConfigError(f"{shown(name)} is not supported with exp.phase=generate "
                              f"yet; {fix}")
