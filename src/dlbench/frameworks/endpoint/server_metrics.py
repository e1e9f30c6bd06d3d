"""The server's own view of an endpoint run: its Prometheus metrics, scraped every
``endpoint.metrics_interval_s`` during the load.

Three gauges say what the client cannot see: requests the server is running,
requests waiting in its queue, and how full its KV cache is. Each server names them
its own way (:data:`GAUGES`); the first name found is used. Where a server reports a
gauge under several label sets (engines, data-parallel ranks), the requests are
summed and the KV-cache use averaged. The KV-cache use is a fraction, 0 to 1, as
the servers give it (vLLM's ``..._perc`` included).

Results (:meth:`MetricsScraper.results`): ``results.server.<figure>_mean`` and
``_max`` over the samples in the steady-state window (all samples when none falls in
it), and the raw samples in ``results.server.series``: for each figure, a list of
``[seconds from the run's t0 when the scrape was sent, value]``.

``endpoint.metrics_url=auto`` scrapes the API URL's root + ``/metrics``
(``http://host:8000/v1`` → ``http://host:8000/metrics``) when it answers 200 with
Prometheus text before the run, and is silently off otherwise; an explicit URL that
does not answer is tried throughout and said in ``results.server.note``, never a
failed run. A scrape's body is cut to the lines of the gauges wanted before it is
parsed (``prometheus_client``'s parser), because a vLLM exposition holds hundreds
of histogram lines whose parsing, on the client's event loop, would delay requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from dlbench.results.stats import mean
from dlbench.textsafe import safe_text

__all__ = ["GAUGES", "MetricsScraper", "metrics_url", "read_gauges"]

#: Each figure and its names at vLLM, SGLang, TGI and llama.cpp, in order of preference
#: (vLLM renamed gpu_cache_usage_perc to kv_cache_usage_perc in its V1 engine).
GAUGES: dict[str, tuple[str, ...]] = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs",
                "tgi_batch_current_size", "llamacpp:requests_processing"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "tgi_queue_size",
                "llamacpp:requests_deferred"),
    "kv_cache_use": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
                     "sglang:token_usage", "llamacpp:kv_cache_usage_ratio"),
}
#: Figures that are fractions: averaged over label sets, not summed.
_FRACTIONS = frozenset({"kv_cache_use"})
_WANTED = frozenset(name for names in GAUGES.values() for name in names)
_NS = 1_000_000_000


def metrics_url(setting: str, api_url: str) -> str | None:
    """The URL to scrape for ``endpoint.metrics_url=setting``: ``auto`` is the API URL's
    root + ``/metrics``; empty is none.

    >>> metrics_url("auto", "http://127.0.0.1:8000/v1")
    'http://127.0.0.1:8000/metrics'
    """
    if not setting:
        return None
    if setting != "auto":
        return setting
    parts = urlsplit(api_url)
    return urlunsplit((parts.scheme, parts.netloc, "/metrics", "", ""))


def _wanted(line: str) -> bool:
    """A line of the exposition about a gauge wanted: a sample, or its HELP/TYPE."""
    if line.startswith("#"):
        words = line.split(maxsplit=3)
        return len(words) >= 3 and words[1] in ("HELP", "TYPE") and words[2] in _WANTED
    return line.split("{", 1)[0].split(" ", 1)[0] in _WANTED


def read_gauges(text: str) -> dict[str, float]:
    """The figures of :data:`GAUGES` in a Prometheus text exposition; ValueError when
    the text is not one.

    >>> read_gauges('vllm:num_requests_running{engine="0"} 3\\n'
    ...             'vllm:num_requests_running{engine="1"} 4\\n')
    {'running': 7.0}
    """
    kept = "".join(line + "\n" for line in text.splitlines() if _wanted(line))
    values: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(kept):
        for sample in family.samples:
            if sample.name in _WANTED:
                values.setdefault(sample.name, []).append(float(sample.value))
    figures = {}
    for figure, names in GAUGES.items():
        found = next((values[name] for name in names if name in values), None)
        if found:
            figures[figure] = mean(found) if figure in _FRACTIONS else sum(found)
    return figures


class MetricsScraper:
    """Scrapes one metrics URL every ``interval_s`` seconds in a task of the running
    event loop, between :meth:`start` and :meth:`stop`; ``url`` None: scrapes nothing.

    ``explicit``: the user named the URL (its failures are noted) rather than ``auto``
    (a URL that does not answer is silently not scraped). ``session``: the client's
    (its connections are reused); None: one of its own.

    Example::

        scraper = MetricsScraper(metrics_url(setting, api_url), 1.0, t0_ns,
                                 explicit=setting != "auto")
        await scraper.start()
        ...  # the load
        await scraper.stop()
        results.update(scraper.results((window_start_ns, window_end_ns)))
    """

    def __init__(self, url: str | None, interval_s: float, t0_ns: int, *,
                 explicit: bool = False, session: aiohttp.ClientSession | None = None,
                 timeout_s: float = 5.0) -> None:
        self.url, self.t0_ns, self.interval_s = url, t0_ns, interval_s
        self.explicit = explicit
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session, self._own_session = session, session is None
        self._task: asyncio.Task[None] | None = None
        #: Each sample: when its scrape was sent (ns from t0), and its figures.
        self.samples: list[tuple[int, dict[str, float]]] = []
        self.tried = 0
        self.failed = 0
        self.first_error = ""
        self.note = ""

    async def start(self) -> None:
        """Scrape once, reading the whole answer to be sure it is Prometheus text;
        then, unless ``auto`` found none, every interval."""
        if self.url is None:
            return
        if self._session is None:
            self._session = aiohttp.ClientSession()
        if not await self._scrape(whole=True) and not self.explicit:
            return
        self._task = asyncio.ensure_future(self._every_interval())

    async def stop(self) -> dict[str, Any]:
        """Stop scraping (closing the session this object opened), write the note (an
        explicit URL's failed scrapes, or metrics without any gauge dlbench reads),
        and return :meth:`results` over every sample."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._own_session and self._session is not None:
            await self._session.close()
            self._session = None
        if self.explicit and self.failed:
            self.note = (f"{self.failed} of {self.tried} scrapes of endpoint.metrics_url="
                         f"{safe_text(str(self.url))} failed, the first: {self.first_error}")
        elif self.samples and not any(figures for _, figures in self.samples):
            self.note = (f"the server's metrics at {safe_text(str(self.url))} hold none of the "
                         f"gauges dlbench reads (vLLM's, SGLang's, TGI's, llama.cpp's)")
        return self.results()

    async def _every_interval(self) -> None:
        """Scrape at absolute deadlines, skipping those a slow scrape overran."""
        interval_ns = round(self.interval_s * _NS)
        due = time.perf_counter_ns()
        while True:
            due += interval_ns
            now = time.perf_counter_ns()
            if due < now:
                due += (now - due) // interval_ns * interval_ns + interval_ns
            await asyncio.sleep((due - now) / _NS)
            await self._scrape()

    async def _scrape(self, whole: bool = False) -> bool:
        """One scrape, kept as a sample when it answered 200 with Prometheus text
        (``whole``: all of the text parsed, not only the gauges' lines)."""
        assert self._session is not None and self.url is not None
        sent = time.perf_counter_ns() - self.t0_ns
        try:
            async with self._session.get(self.url, timeout=self.timeout) as response:
                text = await response.text()
                if response.status != 200:
                    raise ValueError(f"HTTP status {response.status}")
            if whole and not list(text_string_to_metric_families(text)):
                raise ValueError("an empty answer")
            figures = read_gauges(text)
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError,
                UnicodeDecodeError) as error:
            self.tried += 1  # counted once done: one cut short by stop() is no failure
            self.failed += 1
            if not self.first_error:
                lines = str(error).strip().splitlines()
                self.first_error = safe_text(
                    f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__)
            return False
        self.tried += 1
        self.samples.append((sent, figures))
        return True

    def results(self, window: tuple[int, int] | None = None) -> dict[str, Any]:
        """``results.server.*``: each figure's mean and maximum over the samples within
        ``window`` (ns from t0; all samples when none is within it or no window is
        given), the samples themselves, and the note, if any."""
        out: dict[str, Any] = {"results.server.note": self.note} if self.note else {}
        if not self.samples:
            return out
        chosen = [s for s in self.samples if window and window[0] <= s[0] <= window[1]]
        chosen = chosen or self.samples
        names = [f for f in GAUGES if any(f in figures for _, figures in self.samples)]
        for name in names:
            values = [figures[name] for _, figures in chosen if name in figures]
            if values:
                out[f"results.server.{name}_mean"] = mean(values)
                out[f"results.server.{name}_max"] = max(values)
        if names:
            out["results.server.series"] = {
                name: [[round(t / _NS, 6), figures[name]] for t, figures in self.samples
                       if name in figures] for name in names}
        return out
