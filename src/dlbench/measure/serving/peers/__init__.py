"""The same served requests in other tools' definitions: vLLM's, SGLang's, aiperf's,
GuideLLM's, MLPerf LoadGen's and inference-perf's, each computed from the records of
:mod:`dlbench.measure.serving.records` the way that tool computes it from its own
timestamps (``dlbench definitions`` prints them; docs/serving-definitions.md tabulates
the differences and names the upstream files read).

The tools share names and not meanings, so a number quoted from one cannot be set
beside another's without knowing which it is:

- *TPOT* excludes the first token in vLLM, SGLang, aiperf and MLPerf
  ((end - first token) / (tokens - 1)); GuideLLM's ``time_per_output_token_ms`` and
  inference-perf's NTPOT divide the whole latency, TTFT included, by all the tokens;
- *ITL* is vLLM's and SGLang's pooled list of gaps between chunks, but aiperf's and
  GuideLLM's per-request TPOT (aiperf's pooled gaps are its ICL);
- the clock starts when the client *sent* the request in vLLM, SGLang, aiperf,
  GuideLLM and inference-perf (a client that falls behind its schedule hides the
  queue it made), at the *scheduled* moment in LoadGen and dlbench;
- vLLM's chat client stops TTFT at the first chunk with ``choices``, a role-only chunk
  carrying no text included (vllm-project/vllm#15106), and counts the gap after it as
  its first inter-token latency;
- tokens come from the server's ``usage`` (vLLM, GuideLLM), else a client tokenizer
  (vLLM), else the length asked for (SGLang), else one per chunk (GuideLLM); aiperf
  and inference-perf count with the client tokenizer; LoadGen takes what the system
  under test reports;
- percentiles interpolate linearly (numpy's default: vLLM, SGLang, aiperf,
  inference-perf), take the weighted inverse distribution (GuideLLM, TPOT weighted by
  tokens), or pick the sorted sample at ``floor(n q)`` (LoadGen, dlbench);
- the benchmark's duration runs from the schedule's start (vLLM, SGLang, GuideLLM,
  LoadGen) or from the first send (aiperf, inference-perf) to the last response, or
  to the last *issued* query's end (LoadGen's Server);
- goodput counts requests that met every SLO (vLLM, aiperf, inference-perf), while
  MLPerf gates the whole run on the 99th percentiles.

What the records do not keep bounds how close a figure can come: chunks that carry no
text after the first (a ``finish_reason``-only or ``usage``-only one), which vLLM's
chat client also times, are not recorded, so its latency ends here at the last text
event; SGLang's chat client times ``content`` only, while a record's text events
include reasoning; a peer's tokenizer is the record's client count where the run had
one (``endpoint.tokenizer``), else the fallback each figure's definition names.

Every peer's figures cover the requests sent after dlbench's warm-up (each tool has
its own warm-up, left out of its figures), except GuideLLM's, which keep every request
that overlaps its measurement window, warm-up ones included, as GuideLLM does.

The types the figures come in and the helpers the tools share are in :mod:`.common`;
each tool has its module (:mod:`.vllm`, :mod:`.sglang`, :mod:`.aiperf`,
:mod:`.guidellm`, :mod:`.mlperf`, :mod:`.inference_perf`), whose ``PEER`` names it.
"""

from __future__ import annotations

from collections.abc import Sequence

from dlbench.measure.serving.peers import aiperf, guidellm, inference_perf, mlperf, sglang, vllm
from dlbench.measure.serving.peers.common import Context, Figure, Peer
from dlbench.measure.serving.records import RequestRecord

__all__ = ["PEERS", "Context", "Figure", "Peer", "peer_figures"]

#: The peers, by the name ``dlbench definitions --as`` takes.
PEERS: dict[str, Peer] = {p.name: p for p in (
    vllm.PEER, sglang.PEER, aiperf.PEER, guidellm.PEER, mlperf.PEER, inference_perf.PEER)}


def peer_figures(peer: str, records: Sequence[RequestRecord],
                 context: Context | None = None) -> list[Figure]:
    """The figures ``peer`` (a key of :data:`PEERS`) would report for ``records`` (a
    run's requests, warm-up included) in ``context`` (default: a chat API, the batch
    scenario, no SLO); empty when no request was sent after the warm-up. ``KeyError``
    for an unknown peer."""
    compute = PEERS[peer].compute
    if not any(not r.warmup for r in records):
        return []
    return compute(records, context or Context())
