"""The result keys only an endpoint run writes (``exp.framework=endpoint``): what the
probe learnt of the server, what its Prometheus metrics said during the run, the
energy of its devices where they are local, and what a search of its highest load
meeting the SLOs found. The
serving figures themselves (TTFT, TPOT, goodput...) are shared with the in-process
``generate`` phase: :mod:`dlbench.results.keys.table.scenarios`."""

from __future__ import annotations

from dlbench.results.keys.types import ResultKey

_REQUESTS = "requests"

ENDPOINT_KEYS: tuple[ResultKey, ...] = (
    ResultKey("results.request_data", "dict", "",
              "endpoint, generate: every request's raw timestamps (ns from the run's start) "
              "and counts, as a table of fields and rows (measure/serving/records.py)"),
    ResultKey("results.endpoint.usage_in_stream", "bool", "",
              "endpoint: the server accepted stream_options.include_usage (token counts "
              "from its usage)", aggregate="first"),
    ResultKey("results.endpoint.ignore_eos", "bool", "",
              "endpoint: the server accepted ignore_eos/min_tokens (answers of max_tokens)",
              aggregate="first"),
    ResultKey("results.endpoint.server", "str", "",
              "endpoint: the server's Server header, as it sent it", aggregate="first"),
    ResultKey("results.endpoint.models", "list[str]", "",
              "endpoint: the models GET /v1/models listed", aggregate="first"),
    *(ResultKey(f"results.server.{series}_{stat}", "float", unit,
                f"endpoint: the server's {what} during the run, by its Prometheus metrics "
                f"({stat})", ".3g")
      for series, what, unit in (("running", "requests running", _REQUESTS),
                                 ("waiting", "requests waiting", _REQUESTS),
                                 ("kv_cache_use", "KV-cache use (fraction)", ""))
      for stat in ("mean", "max")),
    ResultKey("results.server.series", "dict", "",
              "endpoint: the scraped series, each a list of [seconds from the run's start, "
              "value]"),
    ResultKey("results.server.note", "str", "",
              "endpoint: why the server's metrics could not be scraped"),
    # frameworks/endpoint/energy.py: with endpoint.energy_gpus or endpoint.energy_cpu.
    ResultKey("results.energy.gpu_j", "float", "J",
              "endpoint: the energy of the GPUs endpoint.energy_gpus names over the "
              "steady-state window, by NVML's total energy counter (whole GPUs)", ".4g"),
    ResultKey("results.energy.cpu_j", "float", "J",
              "endpoint: the CPU packages' energy over the steady-state window, by RAPL "
              "(endpoint.energy_cpu; the client's own use included)", ".4g"),
    ResultKey("results.energy.joules_per_output_token", "float", "J/token",
              "endpoint: results.energy.gpu_j + cpu_j (those measured) over the output "
              "tokens of the window (results.output_tokens_per_s x results.window_seconds)",
              ".4g", better="lower"),
    ResultKey("results.energy.joules_per_request", "float", "J/request",
              "endpoint: the same energy over the requests that ended in the window "
              "(results.requests_per_s x results.window_seconds)", ".4g", better="lower"),
    ResultKey("results.energy.scope", "str", "",
              "endpoint: which counters of which devices the energy is from; every process "
              "on them is in it"),
    ResultKey("results.energy.note", "str", "",
              "endpoint: why an energy counter asked for was not read (no NVML, a GPU index "
              "NVML does not know, no counter, RAPL not readable)"),
    # frameworks/endpoint/search.py: exp.target_qps=auto, exp.replica_batch=auto.
    ResultKey("results.peak_load", "float", "",
              "endpoint, exp.target_qps=auto or exp.replica_batch=auto: the highest load "
              "meeting the SLOs (requests/s or requests in flight: "
              "results.peak_load_unit), the mean of the searches' peaks; the record's "
              "other figures are those of the highest passing probe of the last search "
              "(results.search_load)", ".4g", better="higher"),
    ResultKey("results.peak_load_ci95", "float", "",
              "endpoint search: half-width of the 95% confidence interval of "
              "results.peak_load, t(n-1) sd / sqrt(n) over the searches' peaks (null "
              "for one search)", ".3g"),
    ResultKey("results.peak_load_repeats", "list[float]", "",
              "endpoint search: each search's peak, its highest passing load, in order "
              "(endpoint.search_repeats searches)"),
    ResultKey("results.peak_load_unit", "str", "",
              "endpoint search: the unit of its loads: requests/s (exp.target_qps=auto) or "
              "requests (in flight, exp.replica_batch=auto)"),
    ResultKey("results.search_load", "float", "",
              "endpoint search: the load of the probe whose figures the record holds (the "
              "lowest probed when none passed)", ".4g"),
)
