"""``exp.framework=endpoint``'s declaration: its parameters and checks, light enough for
the parent to import (no HTTP library); its backend is :mod:`.backend`, run in the
worker.

An endpoint has no model of dlbench's catalog: ``exp.model`` is ``served:<endpoint.model>``
(set from ``endpoint.model``, so that labels, the store and ``compare`` name the
server's model), and the experiment's phase is ``generate``: requests of
``exp.prompt_tokens`` tokens asking for ``exp.output_tokens``. How requests are sent
follows ``exp.scenario`` (docs/serving.md):

- ``batch``: a closed loop with ``exp.replica_batch`` requests in flight;
- ``single_stream``: a closed loop with one;
- ``server``: an open loop at ``exp.target_qps`` (``endpoint.arrival``);
- ``offline``: every request due at once;

capped by ``endpoint.max_concurrency`` in the open ones. ``exp.target_qps=auto``
(``server``) and ``exp.replica_batch=auto`` (``batch``) search the highest rate or
concurrency that meets the SLOs (:mod:`.search`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlbench.config.frameworks.base import FrameworkInfo, Shown
from dlbench.config.params import MAX_SECONDS, SEED, Param
from dlbench.errors import ConfigError
from dlbench.frameworks.endpoint.energy import parse_gpus

#: A URL dlbench accepts for endpoint.url: http or https, a host, an optional port and
#: path, and nothing that a shell, a log line or an HTTP request line would read apart.
_URL = re.compile(r"https?://[A-Za-z0-9._~\[\]:-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%/+-]*)?")
#: An environment variable's name.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: The scenarios an endpoint runs, and how each sends its requests.
SCENARIOS = {
    "batch": "a closed loop with exp.replica_batch requests in flight",
    "single_stream": "a closed loop with one request in flight",
    "server": "an open loop: requests arrive at exp.target_qps by endpoint.arrival",
    "offline": "every request due at once, endpoint.max_concurrency in flight",
}
AUTO = "auto"
#: ``endpoint.search_repeats=auto``: the fewest searches (two degrees of freedom: from
#: one, the interval of almost any two peaks is wide) and the most (each is minutes
#: against a real server).
AUTO_MIN_REPEATS = 3
AUTO_MAX_REPEATS = 5


def check_endpoint(values: Mapping[str, Any], shown: Shown) -> None:
    """What an endpoint experiment needs: a URL, a model name, a scenario it runs,
    sane lengths and SLOs; ConfigError naming the parameter otherwise."""
    url = str(values["endpoint.url"])
    if not _URL.fullmatch(url):
        raise ConfigError(f"{shown('endpoint.url')} is not an http:// or https:// URL of an "
                          f"OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1")
    if values["exp.scenario"] not in SCENARIOS:
        accepted = ", ".join(SCENARIOS)
        raise ConfigError(f"{shown('exp.scenario')} is not run against an endpoint; "
                          f"accepted: {accepted}")
    key_env = str(values["endpoint.api_key_env"])
    if key_env and not _ENV_NAME.fullmatch(key_env):
        raise ConfigError(f"{shown('endpoint.api_key_env')} must be the NAME of an "
                          f"environment variable holding the key (letters, digits, _), "
                          f"never the key itself")
    if values["endpoint.trace"] and values["endpoint.dataset"]:
        raise ConfigError(f"{shown('endpoint.trace')} gives its own prompt lengths: leave "
                          f"endpoint.dataset empty ({shown('endpoint.dataset')})")
    if values["endpoint.trace"] and values["endpoint.turns"] != 1:
        raise ConfigError(f"{shown('endpoint.turns')}: a replayed trace is single-turn; "
                          f"use endpoint.turns=1")
    metrics = str(values["endpoint.metrics_url"])
    if metrics not in ("", AUTO) and not _URL.fullmatch(metrics):
        raise ConfigError(f"{shown('endpoint.metrics_url')} is not an http:// or https:// "
                          f"URL; use `auto`, a URL, or empty for none")
    for name in ("endpoint.trace", "endpoint.dataset", "endpoint.tokenizer"):
        path = str(values[name])
        if path and not Path(path).exists():
            raise ConfigError(f"{shown(name)}: no such file or folder")
    try:
        parse_gpus(str(values["endpoint.energy_gpus"]))
    except ValueError as error:
        raise ConfigError(f"{shown('endpoint.energy_gpus')}: {error}; give the indices of "
                          f"this machine's GPUs the server runs on, as nvidia-smi numbers "
                          f"them (0 or 0,1), or empty for none") from None
    _check_search(values, shown)


#: The SLOs of a request, each 0 when not given.
SLO_PARAMS = ("endpoint.slo_ttft_ms", "endpoint.slo_tpot_ms", "endpoint.slo_latency_ms")


def _check_search(values: Mapping[str, Any], shown: Shown) -> None:
    """``exp.target_qps=auto`` and ``exp.replica_batch=auto`` search the highest load
    meeting the SLOs: of the loop whose load each is, with an SLO to meet, and with
    arrivals of the search's own (not a trace's)."""
    if values["exp.replica_batch"] == AUTO and values["exp.scenario"] != "batch":
        raise ConfigError(f"{shown('exp.replica_batch')} searches the highest concurrency "
                          f"of a closed loop meeting the SLOs: set exp.scenario=batch "
                          f"({shown('exp.scenario')}), or give a number")
    searched = next((name for name in ("exp.target_qps", "exp.replica_batch")
                     if values[name] == AUTO), None)
    if searched is None:
        return
    if not any(values[name] > 0 for name in SLO_PARAMS):
        raise ConfigError(f"{shown(searched)} searches the highest load meeting the SLOs, "
                          f"and none is given: set endpoint.slo_ttft_ms, "
                          f"endpoint.slo_tpot_ms or endpoint.slo_latency_ms (ms, > 0)")
    if values["endpoint.trace"]:
        raise ConfigError(f"{shown(searched)}: a replayed trace brings its own arrivals "
                          f"and is not searched ({shown('endpoint.trace')}); give a "
                          f"load, or leave endpoint.trace empty")


def served_model(values: Mapping[str, Any]) -> str:
    """``exp.model`` of an endpoint experiment: the server's model, by name."""
    return f"served:{values['endpoint.model']}"


FRAMEWORK = FrameworkInfo(
    id="endpoint",
    title="OpenAI-compatible endpoint",
    module="dlbench.frameworks.endpoint.backend",
    requires=("aiohttp",),
    install_hint="pip install 'dlbench[endpoint]'",
    phases=("generate",),
    models=(),
    served_model="endpoint.model",
    dtypes=("float32", "float16", "bfloat16"),
    dtype_note="the server decides its precision; exp.dtype is a label here",
    description=(
        "A model served behind an OpenAI-compatible HTTP API (vLLM, SGLang, TGI, llama.cpp, "
        "Ollama, transformers serve...), measured from a client that keeps every request's "
        "timestamps: TTFT, TPOT, inter-chunk gaps, goodput, and whether the client kept up."
    ),
    check=check_endpoint,
    params=(
        Param("endpoint.url", "str", "",
              "Base URL of the OpenAI-compatible API, ending in /v1 "
              "(http://127.0.0.1:8000/v1)."),
        Param("endpoint.model", "str", "",
              "The model's name at the server (what GET /v1/models lists); exp.model "
              "becomes served:<this>."),
        Param("endpoint.api", "str", "chat",
              "`chat` (/v1/chat/completions) or `completions` (/v1/completions).",
              choices=("chat", "completions")),
        Param("endpoint.stream", "bool", True,
              "Stream the answers (server-sent events): TTFT and token gaps need it; false: "
              "one answer per request, its arrival the only event."),
        Param("endpoint.api_key_env", "str", "",
              "NAME of the environment variable holding the API key (sent as a Bearer "
              "token; never printed, logged or stored); empty: no key."),
        Param("endpoint.connect_timeout_s", "float", 10.0,
              "Seconds a connection may take to open.", minimum=0.001, maximum=MAX_SECONDS),
        Param("endpoint.read_timeout_s", "float", 300.0,
              "Seconds the client waits for the next byte of an answer before the request "
              "counts as a timeout.", minimum=0.001, maximum=MAX_SECONDS),
        Param("endpoint.max_concurrency", "int", 0,
              "Open loops (server, offline): the most requests in flight; a request that "
              "waits for a slot still counts its latency from its scheduled arrival. 0: no "
              "cap (offline: 256).", minimum=0, maximum=100_000),
        Param("endpoint.arrival", "str", "poisson",
              "Server scenario's arrivals: `poisson`, `gamma` (shape endpoint.burstiness) or "
              "`constant`.", choices=("poisson", "gamma", "constant")),
        Param("endpoint.burstiness", "float", 1.0,
              "Gamma arrivals' shape: 1 is Poisson, below 1 burstier, above 1 more regular "
              "(vLLM's --burstiness).", minimum=0.001, maximum=1000),
        Param("endpoint.warmup_requests", "int", AUTO,
              "Requests sent first and left out of every figure (kept in the record). "
              "`auto`: the concurrency of a closed loop; one second of arrivals (at least "
              "1) of an open loop.", special=(AUTO,), minimum=0, maximum=1_000_000),
        Param("endpoint.trace", "str", "",
              "A JSONL trace to replay (mooncake-style lines: timestamp in ms, "
              "input_length, output_length, optional hash_ids of shared prompt blocks)."),
        Param("endpoint.dataset", "str", "",
              "Prompts from a local file: ShareGPT JSON, or JSONL lines with `prompt` (and "
              "`output_tokens`) or `messages`; empty: synthetic prompts of "
              "exp.prompt_tokens tokens."),
        Param("endpoint.turns", "int", 1,
              "Turns per conversation: each later turn resends the conversation so far "
              "(its shared prefix) with a new user message.", minimum=1, maximum=1000),
        Param("endpoint.tokenizer", "str", "",
              "A local tokenizer (a folder transformers can load, or a tokenizer.json) that "
              "sizes prompts exactly and counts the answers' tokens; empty: prompts of "
              "words, the server's usage counts."),
        Param("endpoint.prompt_tokens_sd", "float", 0.0,
              "Standard deviation of the prompts' lengths around exp.prompt_tokens "
              "(normal, rounded, at least 1); 0: every prompt exactly that long.",
              minimum=0, maximum=1_000_000),
        Param("endpoint.output_tokens_sd", "float", 0.0,
              "Standard deviation of max_tokens around exp.output_tokens; 0: fixed.",
              minimum=0, maximum=1_000_000),
        Param("endpoint.ignore_eos", "bool", True,
              "Ask the server to generate max_tokens whatever the model says (ignore_eos, "
              "min_tokens), where it accepts them."),
        SEED.param("endpoint.seed", "Seed of the prompts and their lengths."),
        Param("endpoint.slo_ttft_ms", "float", 0.0,
              "SLO on a request's time to first token, ms (goodput; MLPerf's gate on its "
              "99th percentile); 0: none.", minimum=0, maximum=MAX_SECONDS * 1000),
        Param("endpoint.slo_tpot_ms", "float", 0.0,
              "SLO on a request's time per output token after the first, ms; 0: none.",
              minimum=0, maximum=MAX_SECONDS * 1000),
        Param("endpoint.slo_latency_ms", "float", 0.0,
              "SLO on a request's end-to-end latency, ms; 0: none.",
              minimum=0, maximum=MAX_SECONDS * 1000),
        Param("endpoint.search_attainment", "float", 0.99,
              "With exp.target_qps=auto or exp.replica_batch=auto: a probe passes when its "
              "run is valid and at least this fraction of its requests met every SLO "
              "(results.slo_attainment).", minimum=0.01, maximum=1),
        Param("endpoint.search_repeats", "int", AUTO,
              "With exp.target_qps=auto or exp.replica_batch=auto: how many times the "
              f"whole search runs (results.peak_load is their mean). `auto`: "
              f"{AUTO_MIN_REPEATS} to {AUTO_MAX_REPEATS} times, until the 95% confidence "
              f"interval of the mean is within exp.qps_search_tolerance of it (of one "
              f"request in flight for a concurrency).",
              special=(AUTO,), minimum=1, maximum=100),
        Param("endpoint.metrics_url", "str", AUTO,
              "The server's Prometheus metrics, scraped during the run: `auto` (the URL's "
              "root + /metrics, when it answers), a URL, or empty (none)."),
        Param("endpoint.metrics_interval_s", "float", 1.0,
              "Seconds between scrapes of endpoint.metrics_url.", minimum=0.05,
              maximum=MAX_SECONDS),
        Param("endpoint.max_client_lag_ms", "float", 10.0,
              "The client kept up when the 99th percentile of its lag (sent - scheduled) "
              "stays under this, ms; otherwise the run is invalid.", minimum=0,
              maximum=MAX_SECONDS * 1000),
        Param("endpoint.energy_gpus", "str", "",
              "The GPUs of this machine the server runs on, as nvidia-smi numbers them "
              "(0,1): their energy over the steady-state window by NVML's counter, per "
              "output token and per request (results.energy.*); empty: none."),
        Param("endpoint.energy_cpu", "bool", False,
              "Also the CPU packages' energy by RAPL, for a server on this machine's CPU; "
              "every process on them counts, this client included."),
    ),
)
