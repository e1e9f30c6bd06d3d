"""The streaming client against the scripted server: every quirk a real server has,
with known answers (the server writes text chunk k at its start + ttft + k × gap).

Times are checked from below exactly (an answer cannot come before the server wrote
it) and from above generously: the machine is shared, and a late wake-up only makes a
time longer."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp import web

from dlbench.errors import ConfigError, EndpointError
from dlbench.frameworks.endpoint.client import EndpointClient, request_body
from dlbench.frameworks.endpoint.requests import ClientSettings, Prompt
from dlbench.frameworks.endpoint.scripted import Script, ScriptedServer, start_in_thread
from dlbench.measure.serving.records import RequestRecord, to_rows

MS = 1_000_000
#: How much later than scripted a time may be on a busy machine.
LATE_MS = 250
KEY = "sk-test-4f9a1c2e"
T = TypeVar("T")


def words(text: str) -> int:
    return len(text.split())


def run(main: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(main())  # type: ignore[arg-type]


async def send_one(url: str, prompt: Prompt | None = None, delay_ms: float = 0,
                   count_tokens: Callable[[str], int] | None = words,
                   **settings: Any) -> tuple[RequestRecord, str]:
    """One request to model "m", scheduled ``delay_ms`` before it is sent."""
    t0 = time.perf_counter_ns()
    options: dict[str, Any] = {"url": url, "model": "m", **settings}
    async with EndpointClient(ClientSettings(**options), t0, count_tokens) as client:
        scheduled = time.perf_counter_ns() - t0 - int(delay_ms * MS)
        return await client.send(prompt or Prompt("say something", max_tokens=4), 0, scheduled)


def exchange(model: Mapping[str, Any], prompt: Prompt | None = None, **kwargs: Any
             ) -> tuple[RequestRecord, str, list[dict[str, Any]]]:
    """Serve ``model`` as "m", send one request: its record, answer, bodies received."""
    async def main() -> tuple[RequestRecord, str, list[dict[str, Any]]]:
        server = ScriptedServer({"models": {"m": model}})
        async with server as url:
            record, answer = await send_one(url, prompt, **kwargs)
        return record, answer, server.received
    return run(main)


async def serve_and(model: Mapping[str, Any], body: Callable[[ScriptedServer, str], Awaitable[T]],
                    **script: Any) -> T:
    server = ScriptedServer({"models": {"m": model}, **script})
    async with server as url:
        return await body(server, url)


def ms(ns: int) -> float:
    return ns / MS


# -- timing ------------------------------------------------------------------------------


def test_ttft_runs_from_the_scheduled_time_and_a_role_chunk_does_not_end_it() -> None:
    record, answer, _ = exchange({"ttft_ms": 60, "gap_ms": 10, "role_first": True},
                                 delay_ms=20)
    assert record.error == "" and record.status == 200
    assert ms(record.sent_ns - record.scheduled_ns) >= 20  # the client's own lag, apart
    ttft = ms(record.chunk_ns[0] - record.scheduled_ns)
    assert 20 + 60 - 1 <= ttft <= 20 + 60 + LATE_MS
    # The role-only chunk came at the start: the first event, but no text.
    assert record.first_event_ns is not None and record.first_event_ns < record.chunk_ns[0]
    assert ms(record.first_event_ns - record.sent_ns) < 60
    assert answer == "tok tok tok tok "
    assert record.chunk_chars == [4, 4, 4, 4]


def test_chunk_times_follow_the_script() -> None:
    record, _, _ = exchange({"ttft_ms": 10, "gap_ms": 15}, Prompt("x", max_tokens=5))
    # Chunk k is written at the request's start + 10 + 15 k ms (absolute deadlines: a
    # late chunk does not delay the next), and cannot be read before.
    since_sent = [ms(ns - record.sent_ns) for ns in record.chunk_ns]
    due = [10 + 15 * k for k in range(5)]
    assert all(at >= when - 1 for at, when in zip(since_sent, due, strict=True))
    assert all(at <= when + LATE_MS for at, when in zip(since_sent, due, strict=True))
    assert record.done_ns is not None and record.done_ns >= record.chunk_ns[-1]


def test_tokens_per_chunk_usage_and_client_count() -> None:
    record, answer, _ = exchange({"ttft_ms": 5, "gap_ms": 5, "tokens_per_chunk": 3},
                                 Prompt("a b c", max_tokens=7, prompt_tokens=3))
    assert record.chunk_chars == [12, 12, 4]
    assert record.usage_output_tokens == 7 and record.usage_prompt_tokens == 3
    assert record.client_output_tokens == 7 == words(answer)
    assert record.output_tokens() == (7, "usage")
    assert record.prompt_tokens == 3 and record.max_tokens == 7


def test_completions_api_and_non_streaming_answers() -> None:
    record, answer, _ = exchange({"ttft_ms": 5, "gap_ms": 5}, api="completions")
    assert record.error == "" and answer == "tok " * 4 and len(record.chunk_ns) == 4
    whole, answer, _ = exchange({"ttft_ms": 20, "gap_ms": 5}, stream=False)
    # One text event when the body came: after the last token was due (20 + 3 × 5 ms).
    assert whole.error == "" and answer == "tok " * 4
    assert whole.chunk_ns == [whole.first_event_ns] == [whole.done_ns]
    assert ms(whole.chunk_ns[0] - whole.sent_ns) >= 35 - 1
    assert whole.usage_output_tokens == 4


def test_reasoning_text_is_timed_and_counted_but_not_the_answer() -> None:
    record, answer, _ = exchange({"ttft_ms": 5, "gap_ms": 5, "reasoning": 2},
                                 Prompt("x", max_tokens=5))
    assert len(record.chunk_ns) == 5 and answer == "tok " * 3
    assert record.client_output_tokens == 5 == record.usage_output_tokens


def test_comments_and_headers_held_until_the_first_event() -> None:
    record, answer, _ = exchange({"ttft_ms": 40, "gap_ms": 5, "comments": True,
                                  "slow_first_byte": True})
    assert record.error == "" and answer == "tok " * 4
    assert ms(record.chunk_ns[0] - record.scheduled_ns) >= 40 - 1


def test_max_running_makes_later_requests_wait_and_metrics_show_it() -> None:
    async def body(server: ScriptedServer, url: str) -> tuple[list[RequestRecord], str]:
        t0 = time.perf_counter_ns()
        settings = ClientSettings(url=url, model="m")
        async with EndpointClient(settings, t0) as client, aiohttp.ClientSession() as http:
            now = time.perf_counter_ns() - t0
            sends = asyncio.gather(*(client.send(Prompt("x", max_tokens=2), i, now)
                                     for i in range(3)))
            metrics = ""
            # Scrape until two run and one waits (or all are done, and the test fails).
            while not sends.done() and 'waiting{model_name="m"} 1.0' not in metrics:
                async with http.get(url.removesuffix("/v1") + "/metrics") as response:
                    metrics = await response.text()
                await asyncio.sleep(0.005)
            records = [record for record, _ in await sends]
        return records, metrics

    records, metrics = run(lambda: serve_and({"ttft_ms": 200, "gap_ms": 20, "max_running": 2},
                                             body))
    ttfts = sorted(ms(r.chunk_ns[0] - r.scheduled_ns) for r in records)
    # The third starts when one of the first two ends (200 + 20 ms), then waits its TTFT.
    assert ttfts[0] >= 199 and ttfts[2] >= 220 + 200 - 2
    assert 'vllm:num_requests_running{model_name="m"} 2.0' in metrics
    assert 'vllm:num_requests_waiting{model_name="m"} 1.0' in metrics
    assert 'vllm:kv_cache_usage_perc{model_name="m"} 1.0' in metrics


def test_connections_are_kept_alive_and_reused() -> None:
    async def body(server: ScriptedServer, url: str) -> int:
        async with EndpointClient(ClientSettings(url=url, model="m"), 0) as client:
            for i in range(4):
                record, _ = await client.send(Prompt("x", max_tokens=2), i, 0)
                assert record.error == ""
        return len(server.peers)

    assert run(lambda: serve_and({"ttft_ms": 1, "gap_ms": 1}, body)) == 1


# -- the request's body --------------------------------------------------------------------


def test_body_asks_for_usage_and_ignore_eos_and_adds_extra_fields() -> None:
    async def body(server: ScriptedServer, url: str) -> list[dict[str, Any]]:
        await send_one(url, extra_body={"temperature": 0.0})
        await send_one(url, include_usage=False, ignore_eos=False, stream=False)
        return server.received

    first, second = run(lambda: serve_and({"ttft_ms": 1, "gap_ms": 1}, body))
    assert first == {"model": "m", "messages": [{"role": "user", "content": "say something"}],
                     "max_tokens": 4, "stream": True, "stream_options": {"include_usage": True},
                     "ignore_eos": True, "min_tokens": 4, "temperature": 0.0}
    assert second == {"model": "m", "messages": [{"role": "user", "content": "say something"}],
                      "max_tokens": 4, "stream": False}


def test_body_of_a_conversation_and_of_completions() -> None:
    turn = Prompt("ignored", 8, messages=({"role": "user", "content": "hi"},
                                          {"role": "assistant", "content": "tok"},
                                          {"role": "user", "content": "more"}))
    chat = request_body(ClientSettings(url="u", model="m", ignore_eos=False), turn)
    assert chat["messages"][1] == {"role": "assistant", "content": "tok"}
    completion = request_body(ClientSettings(url="u", model="m", api="completions"),
                              Prompt("once upon", 8))
    assert completion["prompt"] == "once upon" and "messages" not in completion


def test_ignore_eos_makes_the_answer_max_tokens_long() -> None:
    # The script's answers end after 2 tokens unless the request ignores EOS.
    _, short, _ = exchange({"ttft_ms": 1, "gap_ms": 1, "tokens": 2}, ignore_eos=False)
    _, full, _ = exchange({"ttft_ms": 1, "gap_ms": 1, "tokens": 2})
    assert (words(short), words(full)) == (2, 4)


# -- failures, each as its kind ------------------------------------------------------------


def test_no_done_keeps_what_came_and_is_flagged() -> None:
    # Without [DONE] or a finish_reason, the answer may be cut: an error, what came kept.
    record, answer, _ = exchange({"ttft_ms": 5, "gap_ms": 5, "no_done": True,
                                  "no_finish_reason": True})
    assert record.error == "no_done" and answer == "tok " * 4
    assert len(record.chunk_ns) == 4 and record.usage_output_tokens == 4
    assert record.done_ns is not None


def test_no_done_after_a_finish_reason_is_a_whole_answer_noted() -> None:
    # transformers serve ends its streams so: the answer counts, the record says why.
    record, answer, _ = exchange({"ttft_ms": 5, "gap_ms": 5, "no_done": True})
    assert record.ok and answer == "tok " * 4
    assert "without [DONE]" in record.error_detail


def test_an_error_object_mid_stream_is_a_server_error() -> None:
    record, answer, _ = exchange({"ttft_ms": 5, "gap_ms": 5, "error_after_chunks": 2})
    assert record.error == "server_error" and record.status == 200
    assert "scripted failure after 2 chunks" in record.error_detail
    assert len(record.chunk_ns) == 2 and answer == "tok tok "


def test_a_connection_cut_mid_stream_is_a_stream_cut() -> None:
    record, answer, _ = exchange({"ttft_ms": 5, "gap_ms": 5, "cut_after_chunks": 2})
    assert record.error == "stream_cut" and answer == "tok tok "
    assert len(record.chunk_ns) == 2 and "\n" not in record.error_detail


def test_http_error_status_keeps_the_status_and_one_line_of_the_message() -> None:
    record, answer, _ = exchange({"error_status": 503})
    assert (record.error, record.status, answer) == ("http", 503, "")
    assert record.error_detail == "HTTP 503: scripted HTTP 503"
    whole, _, _ = exchange({"ttft_ms": 1, "gap_ms": 1, "error_after_chunks": 1}, stream=False)
    assert (whole.error, whole.status) == ("http", 500)


def test_an_answer_without_text_is_empty() -> None:
    record, answer, _ = exchange({"ttft_ms": 1, "tokens": 0, "role_first": True},
                                 ignore_eos=False)
    assert (record.error, answer, record.chunk_ns) == ("empty", "", [])
    assert record.first_event_ns is not None  # the role chunk came
    assert record.usage_output_tokens == 0


def test_read_timeout_and_refused_connection() -> None:
    record, _, _ = exchange({"ttft_ms": 2000}, read_timeout_s=0.05)
    assert record.error == "timeout" and "endpoint.read_timeout_s=0.05" in record.error_detail
    record, _ = run(lambda: send_one(closed_port_url()))
    assert record.error == "connect" and record.status == 0
    assert record.done_ns is not None


def test_the_server_answering_json_to_a_stream_request_still_times_it() -> None:
    record, answer, _ = exchange({"ttft_ms": 5, "gap_ms": 5, "no_stream": True})
    assert record.error == "" and answer == "tok " * 4 and len(record.chunk_ns) == 1


async def odd_server(lines: list[bytes], body: Callable[[str], Awaitable[T]]) -> T:
    """A server whose stream is ``lines``, for answers the scripted one never gives."""
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for line in lines:
            await response.write(line)
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        return await body(f"http://{host}:{port}/v1")
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(("lines", "kind", "chunks"), [
    ([b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n', b"data: {not json\n\n"],
     "malformed", 1),
    ([b'data: {"id": 1}\n\n'], "malformed", 0),
    ([b'data: {"choices":[{"delta":{"content":7}}]}\n\n'], "malformed", 0),
    ([b'data: {"object":"error","message":"old vLLM error","code":500}\n\n'],
     "server_error", 0),
    ([b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n', b"event: error\ndata: {}\n\n"],
     "server_error", 1),
    ([b'data: {"choices":[{"delta":{"content":"a"}}]}\n', b"data: [DONE]"], "no_done", 1),
])
def test_malformed_streams_and_error_objects(lines: list[bytes], kind: str, chunks: int) -> None:
    record, _ = run(lambda: odd_server(lines, lambda url: send_one(url)))
    assert record.error == kind and len(record.chunk_ns) == chunks
    assert "\n" not in record.error_detail


def test_a_response_that_is_not_http_is_malformed() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 two hundred OK\r\n\r\n")
        await writer.drain()
        writer.close()

    async def main() -> RequestRecord:
        server = await asyncio.start_server(garbage, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            record, _ = await send_one(f"http://127.0.0.1:{port}/v1")
        return record

    record = run(main)
    assert record.error == "malformed" and record.status == 0


def test_usage_in_every_chunk_keeps_the_last_and_reasoning_field() -> None:
    lines = [b'data: {"choices":[{"delta":{"reasoning":"think "}}],"usage":'
             b'{"prompt_tokens":3,"completion_tokens":1}}\n\n',
             b'data: {"choices":[{"delta":{"content":"a b"}}],"usage":'
             b'{"prompt_tokens":3,"completion_tokens":2}}\n\n', b"data: [DONE]\n\n"]
    record, answer = run(lambda: odd_server(lines, lambda url: send_one(url)))
    assert record.error == "" and answer == "a b"
    assert record.chunk_chars == [6, 3] and record.usage_output_tokens == 2
    assert record.client_output_tokens == 3


# -- the probe -----------------------------------------------------------------------------


def probe(behaviour: Mapping[str, Any], script: Mapping[str, Any] | None = None,
          no_v1: bool = False, **settings: Any
          ) -> tuple[dict[str, Any], ClientSettings, list[Any]]:
    """Serve ``behaviour`` as "m", probe, then send once: facts, settings, bodies received
    (``no_v1``: at the server's URL less its ``/v1``)."""
    async def body(server: ScriptedServer, url: str
                   ) -> tuple[dict[str, Any], ClientSettings, list[Any]]:
        options: dict[str, Any] = {"url": url.removesuffix("/v1") if no_v1 else url,
                                   "model": "m", **settings}
        async with EndpointClient(ClientSettings(**options), 0) as client:
            facts = await client.probe()
            record, _ = await client.send(Prompt("x", max_tokens=2), 0, 0)
            assert record.error == ""
            return facts, client.settings, server.received
    return run(lambda: serve_and(behaviour, body, **(script or {})))


def probe_error(behaviour: Mapping[str, Any], script: Mapping[str, Any] | None = None,
                no_v1: bool = False, url: str = "", **settings: Any) -> str:
    """The one-line message of the probe's error: ``behaviour`` served as "m"."""
    with pytest.raises(EndpointError) as caught:
        if url:
            run(lambda: probe_url(url, **settings))
        else:
            probe(behaviour, script, no_v1, **settings)
    message = str(caught.value)
    assert "\n" not in message and KEY not in message and "wrong-key" not in message
    return message


async def probe_url(url: str, **settings: Any) -> dict[str, Any]:
    async with EndpointClient(ClientSettings(url=url, model="m", **settings), 0) as client:
        return await client.probe()


def closed_port_url() -> str:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_probe_facts_of_a_well_behaved_server() -> None:
    facts, settings, _ = probe({"ttft_ms": 1, "gap_ms": 1}, {"server": "vllm-like"})
    assert facts == {"usage_in_stream": True, "ignore_eos": True, "server": "vllm-like",
                     "models": ["m"]}
    assert settings.include_usage and settings.ignore_eos


def test_probe_drops_refused_stream_options_and_ignore_eos() -> None:
    facts, settings, bodies = probe({"ttft_ms": 1, "gap_ms": 1,
                                     "reject_stream_options": True,
                                     "reject_ignore_eos": True})
    assert not settings.include_usage and not settings.ignore_eos
    assert facts["usage_in_stream"] is False and facts["ignore_eos"] is False
    # Asked as set, then less stream_options, then less ignore_eos; the load follows.
    assert ["stream_options" in b for b in bodies] == [True, False, False, False]
    assert ["ignore_eos" in b for b in bodies] == [True, True, False, False]


def test_probe_of_a_server_without_usage() -> None:
    facts, settings, _ = probe({"ttft_ms": 1, "gap_ms": 1, "no_usage": True})
    assert facts["usage_in_stream"] is False and settings.include_usage


def test_probe_errors_are_one_line_naming_the_parameter() -> None:
    assert "endpoint.url=" in probe_error({}, url=closed_port_url())
    assert "unreachable" in probe_error({}, url=closed_port_url())
    asks = probe_error({"ttft_ms": 1}, {"api_key": KEY})
    assert "asks for an API key" in asks and "endpoint.api_key_env" in asks
    refused = probe_error({"ttft_ms": 1}, {"api_key": KEY}, api_key="wrong-key")
    assert "refused the API key" in refused and "endpoint.api_key_env" in refused
    path = probe_error({"ttft_ms": 1}, no_v1=True, api="completions")
    assert path.startswith("endpoint.api=completions: POST http://127.0.0.1:")
    assert "/completions answered HTTP 404" in path and "(/v1 on most servers)" in path
    model = probe_error({"ttft_ms": 1}, model="other")
    assert model.startswith("endpoint.model='other' is not served at http://127.0.0.1:")
    assert model.endswith("/v1; served: m")
    streams = probe_error({"ttft_ms": 1, "no_stream": True})
    assert streams.endswith("does not stream; set endpoint.stream=false")
    failed = probe_error({"error_status": 500})
    assert "endpoint.url=" in failed and "HTTP 500" in failed


def test_probe_without_a_models_listing_still_names_an_unserved_model() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "The model `x` does not exist."}},
                                 status=404)

    async def main() -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        try:
            with pytest.raises(EndpointError) as caught:
                async with EndpointClient(ClientSettings(f"http://{host}:{port}/v1", "x"),
                                          0) as client:
                    await client.probe()
        finally:
            await runner.cleanup()
        return str(caught.value)

    assert run(main).startswith("endpoint.model='x' is not served at http://127.0.0.1:")


def test_the_key_reaches_the_server_and_nothing_else() -> None:
    async def body(server: ScriptedServer, url: str) -> tuple[str, str]:
        async with EndpointClient(ClientSettings(url=url, model="m", api_key=KEY), 0
                                  ) as client:
            await client.probe()
            good, _ = await client.send(Prompt("x", max_tokens=2), 0, 0)
            assert good.error == ""
            assert KEY not in repr(client.settings)
        # The server quotes a wrong key back in its 401; the record must not.
        bad, _ = await send_one(url, api_key="wrong-key")
        assert bad.error == "http" and bad.status == 401
        return json.dumps(to_rows([good, bad])), bad.error_detail

    rows, detail = run(lambda: serve_and({"ttft_ms": 1, "gap_ms": 1}, body, api_key=KEY))
    assert KEY not in rows and "wrong-key" not in rows
    assert detail == "HTTP 401: Incorrect API key provided: ***"


def test_a_password_in_the_url_is_not_shown() -> None:
    message = probe_error({}, url=closed_port_url().replace("//", "//user:hunter2@"))
    assert "hunter2" not in message and "user:***@" in message


# -- the scripted server itself ------------------------------------------------------------


def test_script_errors_name_the_field() -> None:
    for bad, says in [({"models": {"m": {"gap_ms": -1}}}, "models.m.gap_ms must be a number"),
                      ({"models": {"m": {"jitter": 1}}}, "unknown field 'jitter'"),
                      ({"models": {}}, "models must be an object"),
                      ({"models": {"m": {"error_status": 200}}}, "error_status must be"),
                      ({"model": {}}, "unknown field 'model'")]:
        with pytest.raises(ConfigError, match=says):
            Script.from_mapping(bad)


def test_start_in_thread_serves_code_that_is_not_async() -> None:
    url, stop = start_in_thread({"models": {"m": {"ttft_ms": 1, "gap_ms": 1}}})
    try:
        record, answer = run(lambda: send_one(url))
    finally:
        stop()
    assert record.error == "" and answer == "tok " * 4


def test_the_program_prints_its_port_and_serves(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"models": {"m": {"ttft_ms": 1, "gap_ms": 1}}}))
    server = subprocess.Popen(
        [sys.executable, "-m", "dlbench.frameworks.endpoint.scripted", "--port", "0",
         "--script", str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        first = server.stdout.readline().split()
        assert first[:2] == ["listening", "on"] and first[2].endswith("/v1")
        record, answer = run(lambda: send_one(first[2]))
        assert record.error == "" and answer == "tok " * 4
    finally:
        server.terminate()
        assert server.wait(timeout=60) == 0
    script.write_text('{"models": {"m": {"ttft_ms": "fast"}}}')
    bad = subprocess.run([sys.executable, "-m", "dlbench.frameworks.endpoint.scripted",
                          "--script", str(script)], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "models.m.ttft_ms must be a number ≥ 0, not 'fast'" in bad.stderr


def test_the_scripted_server_counts_text_parts_and_answers_health() -> None:
    # GuideLLM sends a message's content as a list of parts and checks /health first.
    import asyncio

    import aiohttp

    from dlbench.frameworks.endpoint.scripted import ScriptedServer

    async def run() -> tuple[int, int]:
        script = {"models": {"m": {"ttft_ms": 1, "gap_ms": 1}}}
        async with ScriptedServer(script) as url, aiohttp.ClientSession() as session:
            async with session.get(url.removesuffix("/v1") + "/health") as health:
                status = health.status
            body = {"model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": [
                {"type": "text", "text": "one two three"}]}]}
            async with session.post(url + "/chat/completions", json=body) as answer:
                usage = (await answer.json())["usage"]
        return status, int(usage["prompt_tokens"])

    assert asyncio.run(run()) == (200, 3)
