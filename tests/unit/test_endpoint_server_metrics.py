"""The server's Prometheus metrics during an endpoint run
(frameworks/endpoint/server_metrics.py): expositions as vLLM, SGLang and TGI write
them, and the scrape loop against a small aiohttp server in the test."""

from __future__ import annotations

import asyncio
import doctest
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from dlbench.frameworks.endpoint import server_metrics
from dlbench.frameworks.endpoint.server_metrics import MetricsScraper, metrics_url, read_gauges

#: A vLLM exposition, cut short: two engines, the V1 KV-cache gauge, and the histogram
#: lines that the scrape skips.
VLLM = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 5.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:num_requests_waiting{engine="1",model_name="m"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="m"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 9.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 9.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.5
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 1234.0
"""

#: An older vLLM (V0): the KV-cache gauge by its former name.
VLLM_V0 = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 2.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.5
"""

SGLANG = """\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 12.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 4.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.42
"""

TGI = """\
# TYPE tgi_queue_size gauge
tgi_queue_size 6
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 9
# TYPE tgi_request_count counter
tgi_request_count 77
"""


def test_each_servers_gauges_are_read() -> None:
    assert read_gauges(VLLM) == {"running": 8.0, "waiting": 1.0, "kv_cache_use": 0.5}
    assert read_gauges(VLLM_V0) == {"running": 2.0, "kv_cache_use": 0.5}
    assert read_gauges(SGLANG) == {"running": 12.0, "waiting": 4.0, "kv_cache_use": 0.42}
    assert read_gauges(TGI) == {"running": 9.0, "waiting": 6.0}
    assert read_gauges("# TYPE other gauge\nother 1\n") == {}


def test_a_broken_gauge_line_is_refused() -> None:
    with pytest.raises(ValueError):
        read_gauges("vllm:num_requests_running{engine=0} three\n")


def test_the_auto_url_is_the_apis_root() -> None:
    assert metrics_url("auto", "http://10.0.0.2:8000/v1") == "http://10.0.0.2:8000/metrics"
    assert metrics_url("auto", "https://host/api/v1/") == "https://host/metrics"
    assert metrics_url("http://h:9090/m", "http://x/v1") == "http://h:9090/m"
    assert metrics_url("", "http://x/v1") is None


Handler = Callable[[web.Request], Awaitable[web.Response]]


async def served(handler: Handler, check: Callable[[str], Awaitable[None]]) -> None:
    """Run ``check`` with the URL of a server answering /metrics with ``handler``."""
    app = web.Application()
    app.router.add_get("/metrics", handler)
    server = TestServer(app)
    await server.start_server()
    try:
        await check(str(server.make_url("/metrics")))
    finally:
        await server.close()


async def until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition``, giving up after a generous 20 s."""
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, "the scraper never got there"
        await asyncio.sleep(0.005)


def test_the_scraper_keeps_a_series_and_its_summary() -> None:
    scrapes = 0

    async def metrics(request: web.Request) -> web.Response:
        nonlocal scrapes
        scrapes += 1  # running: 1, 2, 3...; the cache fills by tenths
        body = (f"# TYPE vllm:num_requests_running gauge\n"
                f"vllm:num_requests_running {scrapes}\n"
                f"vllm:kv_cache_usage_perc {scrapes / 10}\n")
        return web.Response(text=body, content_type="text/plain")

    async def check(url: str) -> None:
        t0 = time.perf_counter_ns()
        scraper = MetricsScraper(url, 0.01, t0, explicit=True)
        await scraper.start()
        await until(lambda: len(scraper.samples) >= 4)
        results = await scraper.stop()
        count = len(scraper.samples)
        series = results["results.server.series"]
        assert [v for _, v in series["running"]] == [float(k) for k in range(1, count + 1)]
        assert [v for _, v in series["kv_cache_use"]] == \
            pytest.approx([k / 10 for k in range(1, count + 1)])
        times = [t for t, _ in series["running"]]
        assert times == sorted(times) and times[0] >= 0
        assert results["results.server.running_max"] == count
        assert results["results.server.running_mean"] == pytest.approx((count + 1) / 2)
        assert "results.server.waiting_mean" not in results
        assert "results.server.note" not in results
        # Over a window holding only the 2nd and 3rd samples:
        at = [t for t, _ in scraper.samples]
        window = scraper.results((at[1], at[2]))
        assert window["results.server.running_mean"] == 2.5
        assert window["results.server.kv_cache_use_max"] == pytest.approx(0.3)
        assert scraper.results((at[-1] + 1, at[-1] + 2))["results.server.running_max"] == count

    asyncio.run(served(metrics, check))


@pytest.mark.parametrize(("status", "body"), [(404, "not found"),
                                              (200, "<html><body>metrics</body></html>"),
                                              (200, "")])
def test_auto_is_silently_off_without_prometheus_text(status: int, body: str) -> None:
    async def metrics(request: web.Request) -> web.Response:
        return web.Response(status=status, text=body)

    async def check(url: str) -> None:
        scraper = MetricsScraper(url, 0.01, time.perf_counter_ns())
        await scraper.start()
        await asyncio.sleep(0.05)
        assert await scraper.stop() == {}
        assert scraper.tried == 1

    asyncio.run(served(metrics, check))


def test_an_explicit_url_that_fails_is_noted_not_fatal() -> None:
    async def metrics(request: web.Request) -> web.Response:
        return web.Response(status=503, text="busy")

    async def check(url: str) -> None:
        scraper = MetricsScraper(url, 0.01, time.perf_counter_ns(), explicit=True)
        await scraper.start()
        await until(lambda: scraper.tried >= 3)
        results: dict[str, Any] = await scraper.stop()
        note = results["results.server.note"]
        assert note.startswith(f"{scraper.tried} of {scraper.tried} scrapes of "
                               f"endpoint.metrics_url={url} failed, the first: ")
        assert "HTTP status 503" in note and "\n" not in note

    asyncio.run(served(metrics, check))


def test_an_explicit_url_nobody_answers_is_noted() -> None:
    async def check() -> None:
        scraper = MetricsScraper("http://127.0.0.1:9/metrics", 60.0, time.perf_counter_ns(),
                                 explicit=True, timeout_s=5.0)
        await scraper.start()
        results = await scraper.stop()
        assert results["results.server.note"].startswith("1 of 1 scrapes")

    asyncio.run(check())


def test_metrics_without_known_gauges_are_noted() -> None:
    async def metrics(request: web.Request) -> web.Response:
        return web.Response(text="# TYPE python_gc gauge\npython_gc 3\n")

    async def check(url: str) -> None:
        scraper = MetricsScraper(url, 60.0, time.perf_counter_ns())
        await scraper.start()
        results = await scraper.stop()
        assert "hold none of the gauges" in results["results.server.note"]
        assert "results.server.series" not in results

    asyncio.run(served(metrics, check))


def test_no_url_scrapes_nothing() -> None:
    async def check() -> None:
        scraper = MetricsScraper(None, 1.0, 0)
        await scraper.start()
        assert await scraper.stop() == {}

    asyncio.run(check())


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(server_metrics).failed == 0
