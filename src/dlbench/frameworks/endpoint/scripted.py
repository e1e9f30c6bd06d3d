"""A scripted OpenAI-compatible server: answers whose every chunk comes at a time the
script fixes, with the quirks real servers have, so that the client, the load
generator and every serving figure can be checked against known answers, without a
model or a GPU. Tests use it in-process; the benchmark and users' self-checks run it
as a program::

    python -m dlbench.frameworks.endpoint.scripted --host 127.0.0.1 --port 0 --script S.json

which prints ``listening on http://127.0.0.1:PORT/v1`` as its first line and serves
until it is stopped (SIGTERM or Ctrl-C). It serves ``/v1/models``,
``/v1/chat/completions``, ``/v1/completions`` (streamed as server-sent events, or
whole), ``/metrics`` (vLLM's gauge names, from its own requests in flight) and
``/health``.

The script is JSON: ``{"models": {NAME: {...}, ...}, "api_key": KEY, "server": TEXT}``;
``api_key`` (optional) is the key every ``/v1`` request must bring as
``Authorization: Bearer KEY``; ``server`` the ``Server`` header. Each model's entry
holds any of the fields of :class:`ModelScript` (the defaults where it does not).

The times are exact: a request that starts (arrives, or gets a slot under
``max_running``) at *s* has its text chunk *k* (from 0) written at
*s* + ``ttft_ms`` + *k* × ``gap_ms``, slept to as an absolute deadline, so that late
wake-ups do not add up and known answers hold under load. An answer is made of tokens
``"tok "`` (a word and a space), so a client tokenizer that counts words agrees with
the ``usage`` the server reports (``completion_tokens`` = tokens written).

Example::

    async with ScriptedServer({"models": {"m": {"ttft_ms": 50, "gap_ms": 10}}}) as url:
        ...  # url: "http://127.0.0.1:PORT/v1"
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import dataclasses
import json
import math
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge
from prometheus_client.exposition import generate_latest
from yarl import URL

from dlbench.errors import ConfigError
from dlbench.textsafe import safe_text

__all__ = ["ModelScript", "Script", "ScriptedServer", "load_script", "main", "start_in_thread"]

#: One token of every answer.
TOKEN = "tok "
#: The fraction of the KV cache a request takes where ``max_running`` is 0: one of
#: vLLM's default 256 sequences.
_DEFAULT_SEQUENCES = 256


@dataclass(frozen=True)
class ModelScript:
    """How the server answers for one model name."""

    #: From the request's start to its first text chunk, and between text chunks, ms.
    ttft_ms: float = 20.0
    gap_ms: float = 5.0
    tokens_per_chunk: int = 1
    #: The answer's length where the request does not ask to ignore the end of
    #: sequence (``ignore_eos``, or ``min_tokens`` ≥ ``max_tokens``); None: max_tokens.
    tokens: int | None = None
    #: Requests answered at once; those beyond wait for a slot (``num_requests_waiting``)
    #: and their times start when they get one. 0: no limit.
    max_running: int = 0
    #: A role-only first chunk (``{"role": "assistant", "content": ""}``) at the start.
    role_first: bool = False
    #: No ``usage``, even when ``stream_options.include_usage`` asks for it.
    no_usage: bool = False
    #: HTTP 400 for a request that holds ``stream_options`` (or ``ignore_eos``/``min_tokens``).
    reject_stream_options: bool = False
    reject_ignore_eos: bool = False
    #: The stream ends without ``data: [DONE]`` (as transformers serve's does).
    no_done: bool = False
    #: No chunk carries a finish_reason (with no_done: an answer that may be cut).
    no_finish_reason: bool = False
    #: An SSE comment line (``: ping``) before every event, and one at the start.
    comments: bool = False
    #: After this many text chunks, an error object in the stream (a 500 for a whole
    #: answer) instead of the rest; None: never.
    error_after_chunks: int | None = None
    #: After this many text chunks, the connection is closed when the next is due.
    cut_after_chunks: int | None = None
    #: Answer every request with this HTTP status and an error object; 0: never.
    error_status: int = 0
    #: One JSON answer even when the request asks to stream.
    no_stream: bool = False
    #: The response's headers held back until its first event is due.
    slow_first_byte: bool = False
    #: The first this many text chunks carry ``delta.reasoning_content`` (a whole
    #: answer's ``message.reasoning_content``) instead of ``content``.
    reasoning: int = 0


#: Each field's check: what it must be, said as the error says it.
_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "float": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
              and math.isfinite(v) and v >= 0, "a number ≥ 0"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
            "an integer ≥ 0"),
    "int | None": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)
                                           and v >= 0), "an integer ≥ 0 or null"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
}


@dataclass(frozen=True)
class Script:
    """The whole script: the models served, the key asked for, the server's name."""

    models: Mapping[str, ModelScript]
    api_key: str | None = field(default=None, repr=False)
    server: str = "dlbench-scripted"

    @classmethod
    def from_mapping(cls, data: Any, source: str = "script") -> Script:
        """The script ``data`` (parsed JSON) holds; :class:`~dlbench.errors.ConfigError`
        naming ``source`` and the field when it is not one."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: a scripted server's script is a JSON object "
                              '{"models": {...}}, not ' + type(data).__name__)
        unknown = sorted(set(data) - {"models", "api_key", "server"})
        if unknown:
            raise ConfigError(f"{source}: unknown field {safe_text(unknown[0])!r}; accepted: "
                              "models, api_key, server")
        models = data.get("models")
        if not isinstance(models, dict) or not models:
            raise ConfigError(f"{source}: models must be an object of model names, each with "
                              "its behaviour ({} for the defaults)")
        api_key, server = data.get("api_key"), data.get("server", "dlbench-scripted")
        if api_key is not None and not (isinstance(api_key, str) and api_key):
            raise ConfigError(f"{source}: api_key must be a non-empty string or left out")
        if not isinstance(server, str):
            raise ConfigError(f"{source}: server must be a string")
        return cls({str(name): _model_script(entry, f"{source}: models.{safe_text(str(name))}")
                    for name, entry in models.items()}, api_key, server)


def _model_script(entry: Any, where: str) -> ModelScript:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object of ModelScript fields")
    fields = {f.name: str(f.type) for f in dataclasses.fields(ModelScript)}
    for name, value in entry.items():
        if name not in fields:
            raise ConfigError(f"{where}: unknown field {safe_text(str(name))!r}; accepted: "
                              f"{', '.join(fields)}")
        check, wanted = _CHECKS[fields[name]]
        if not check(value):
            raise ConfigError(f"{where}.{name} must be {wanted}, not {safe_text(repr(value))}")
    script = ModelScript(**entry)
    if script.tokens_per_chunk < 1:
        raise ConfigError(f"{where}.tokens_per_chunk must be at least 1")
    if script.error_status and not 400 <= script.error_status <= 599:
        raise ConfigError(f"{where}.error_status must be an HTTP error status, 400 to 599, "
                          "or 0 for none")
    return script


def load_script(path: Path) -> Script:
    """The script in the JSON file ``path``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"--script {safe_text(str(path))}: cannot be read "
                          f"({error.strerror or error})") from None
    except ValueError as error:
        raise ConfigError(f"--script {safe_text(str(path))}: not JSON ({error})") from None
    return Script.from_mapping(data, f"--script {safe_text(str(path))}")


@dataclass
class _Load:
    """One model's requests in flight."""

    #: Its script's ``max_running`` (0: no limit) and the semaphore that keeps to it.
    capacity: int = 0
    slots: asyncio.Semaphore | None = None
    running: int = 0
    waiting: int = 0


class ScriptedServer:
    """The server, started in the running event loop: ``async with`` gives its URL
    (ending in ``/v1``). ``received`` holds the body of every completion request, in
    the order they came; ``peers`` the client addresses they came from (one per
    connection: how many the client opened)."""

    def __init__(self, script: Script | Mapping[str, Any], host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.script = script if isinstance(script, Script) else Script.from_mapping(script)
        self.host, self.port = host, port
        self.received: list[dict[str, Any]] = []
        self.peers: set[tuple[str, int]] = set()
        self._loads = {name: _Load(entry.max_running, asyncio.Semaphore(entry.max_running)
                                   if entry.max_running else None)
                       for name, entry in self.script.models.items()}
        self._runner: web.AppRunner | None = None
        self._url = ""
        self._metrics = _Metrics()

    @property
    def url(self) -> str:
        """``http://HOST:PORT/v1`` once started."""
        return self._url

    async def start(self) -> str:
        """Listen; the URL (with the port bound where 0 was asked)."""
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/metrics", self._scrape)
        app.router.add_get("/health", self._health)  # what GuideLLM checks before a run
        app.on_response_prepare.append(self._name_server)
        # Stopping cuts the answers still in flight rather than waiting for them.
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                     shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self._url = str(URL.build(scheme="http", host=host, port=port, path="/v1"))
        return self._url

    async def stop(self) -> None:
        """Close the listening socket and every connection."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> str:
        return await self.start()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.stop()

    async def _name_server(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers["Server"] = self.script.server

    def _refused(self, request: web.Request) -> web.Response | None:
        key = self.script.api_key
        if key is None:
            return None
        given = request.headers.get("Authorization", "")
        if given == f"Bearer {key}":
            return None
        # As OpenAI's API does, the wrong key is quoted back: a client must not repeat it.
        return _error(401, f"Incorrect API key provided: {given.removeprefix('Bearer ')}",
                      "AuthenticationError")

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _models(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        return web.json_response({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "dlbench"}
            for name in self.script.models]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(request, chat=True)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(request, chat=False)

    async def _answer(self, request: web.Request, chat: bool) -> web.StreamResponse:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the request's body is not JSON", "BadRequestError")
        if not isinstance(body, dict):
            return _error(400, "the request's body is not a JSON object", "BadRequestError")
        self.received.append(body)
        if request.transport is not None:
            self.peers.add(tuple(request.transport.get_extra_info("peername"))[:2])
        name = body.get("model")
        script = self.script.models.get(name) if isinstance(name, str) else None
        if script is None or not isinstance(name, str):
            return _error(404, f"The model `{name}` does not exist.", "NotFoundError")
        if script.error_status:
            return _error(script.error_status, f"scripted HTTP {script.error_status}",
                          "ScriptedError")
        for option, refuse in (("stream_options", script.reject_stream_options),
                               ("ignore_eos", script.reject_ignore_eos),
                               ("min_tokens", script.reject_ignore_eos)):
            if refuse and option in body:
                return _error(400, f"Unrecognized request argument supplied: {option}",
                              "BadRequestError")
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens", 16))
        min_tokens = body.get("min_tokens", 0)
        if not (isinstance(max_tokens, int) and max_tokens >= 1 and isinstance(min_tokens, int)):
            return _error(400, "max_tokens must be an integer ≥ 1", "BadRequestError")
        to_max = body.get("ignore_eos") is True or min_tokens >= max_tokens
        tokens = max_tokens if to_max or script.tokens is None else min(script.tokens, max_tokens)
        reply = _Reply(script, name, chat, tokens, max_tokens, _prompt_words(body, chat),
                       include_usage=_asks_usage(body) and not script.no_usage)
        async with self._slot(name):
            start = asyncio.get_running_loop().time()
            if body.get("stream") is True and not script.no_stream:
                return await self._stream(request, reply, start)
            return await self._whole(request, reply, start)

    @contextlib.asynccontextmanager
    async def _slot(self, name: str) -> AsyncIterator[None]:
        load = self._loads[name]
        load.waiting += 1
        try:
            if load.slots is not None:
                await load.slots.acquire()
        finally:
            load.waiting -= 1
        load.running += 1
        try:
            yield
        finally:
            load.running -= 1
            if load.slots is not None:
                load.slots.release()

    async def _stream(self, request: web.Request, reply: _Reply,
                      start: float) -> web.StreamResponse:
        script = reply.script
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                                "Cache-Control": "no-cache"})
        ping = b": ping\n" if script.comments else b""

        async def emit(payload: bytes, due: float | None = None) -> None:
            if due is not None:
                await _sleep_until(due)
            if not response.prepared:
                await response.prepare(request)
            await response.write(payload)

        with contextlib.suppress(ConnectionError):
            if not script.slow_first_byte:
                await response.prepare(request)
                if ping:
                    await response.write(ping + b"\n")
            if script.role_first:
                await emit(ping + reply.event(reply.role_chunk()), start)
            written = 0
            for k, text in enumerate(reply.chunks()):
                due = start + (script.ttft_ms + k * script.gap_ms) / 1000
                if k == script.cut_after_chunks:
                    await _sleep_until(due)
                    self._metrics.count(reply, written)
                    if request.transport is not None:
                        request.transport.abort()
                    return response
                if k == script.error_after_chunks:
                    error = {"error": {"message": f"scripted failure after {k} chunks",
                                       "type": "InternalServerError", "code": 500}}
                    await emit(ping + reply.event(error), due)
                    break
                await emit(ping + reply.text_event(k, text), due)
                written += len(text) // len(TOKEN)
            else:
                if reply.include_usage:
                    await emit(ping + reply.event(reply.usage_chunk(written)))
            self._metrics.count(reply, written)
            if not script.no_done:
                await emit(ping + b"data: [DONE]\n\n")
            if not response.prepared:
                await response.prepare(request)
            await response.write_eof()
        return response

    async def _whole(self, request: web.Request, reply: _Reply, start: float) -> web.StreamResponse:
        script = reply.script
        chunks = reply.chunks()
        # The answer comes when its last chunk would have been streamed; a failure when
        # the chunk it replaces would have been.
        stop, last = len(chunks), max(len(chunks) - 1, 0)
        for limit in (script.error_after_chunks, script.cut_after_chunks):
            if limit is not None and limit < stop:
                stop = last = limit
        await _sleep_until(start + (script.ttft_ms + last * script.gap_ms) / 1000)
        if stop == script.cut_after_chunks:
            if request.transport is not None:
                request.transport.abort()
            return web.Response()
        if stop == script.error_after_chunks:
            return _error(500, f"scripted failure after {stop} chunks", "InternalServerError")
        self._metrics.count(reply, reply.tokens)
        return web.json_response(reply.whole(chunks))

    async def _scrape(self, request: web.Request) -> web.Response:
        return web.Response(body=self._metrics.exposition(self._loads),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})


class _Reply:
    """The chunks of one answer, as JSON objects in the API's shapes."""

    def __init__(self, script: ModelScript, model: str, chat: bool, tokens: int,
                 max_tokens: int, prompt_tokens: int, include_usage: bool) -> None:
        self.script, self.model, self.chat = script, model, chat
        self.tokens, self.max_tokens, self.prompt_tokens = tokens, max_tokens, prompt_tokens
        self.include_usage = include_usage
        self.id = f"{'chatcmpl' if chat else 'cmpl'}-{time.monotonic_ns():x}"
        self.object = "chat.completion.chunk" if chat else "text_completion"
        self.created = int(time.time())
        self.last = math.ceil(tokens / script.tokens_per_chunk) - 1
        #: Encoded events by what makes them differ: the middle ones are all alike, and
        #: encoding each anew would make this server slower than the clients it tests.
        self._encoded: dict[tuple[bool, bool, bool, str], bytes] = {}

    def chunks(self) -> list[str]:
        per = self.script.tokens_per_chunk
        return [TOKEN * min(per, self.tokens - first) for first in range(0, self.tokens, per)]

    @staticmethod
    def event(data: Mapping[str, Any]) -> bytes:
        return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"

    def _chunk(self, choice: dict[str, Any]) -> dict[str, Any]:
        return {"id": self.id, "object": self.object, "created": self.created,
                "model": self.model, "choices": [{"index": 0, **choice}]}

    def role_chunk(self) -> dict[str, Any]:
        return self._chunk({"delta": {"role": "assistant", "content": ""},
                            "logprobs": None, "finish_reason": None})

    def text_event(self, k: int, text: str) -> bytes:
        key = (k == 0, k < self.script.reasoning, k == self.last, text)
        event = self._encoded.get(key)
        if event is None:
            event = self._encoded[key] = self.event(self.text_chunk(k, text))
        return event

    def text_chunk(self, k: int, text: str) -> dict[str, Any]:
        finish = self.finish_reason() if k == self.last and not self.script.no_finish_reason \
            else None
        if not self.chat:
            return self._chunk({"text": text, "logprobs": None, "finish_reason": finish})
        delta: dict[str, str] = {}
        if k == 0 and not self.script.role_first:
            delta["role"] = "assistant"
        delta["reasoning_content" if k < self.script.reasoning else "content"] = text
        return self._chunk({"delta": delta, "logprobs": None, "finish_reason": finish})

    def usage(self, tokens: int) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": tokens,
                "total_tokens": self.prompt_tokens + tokens}

    def usage_chunk(self, tokens: int) -> dict[str, Any]:
        return {"id": self.id, "object": self.object, "created": self.created,
                "model": self.model, "choices": [], "usage": self.usage(tokens)}

    def finish_reason(self) -> str:
        return "length" if self.tokens == self.max_tokens else "stop"

    def whole(self, chunks: Sequence[str]) -> dict[str, Any]:
        split = self.script.reasoning
        content, reasoning = "".join(chunks[split:]), "".join(chunks[:split])
        choice: dict[str, Any] = {"index": 0, "logprobs": None,
                                  "finish_reason": self.finish_reason()}
        if self.chat:
            message = {"role": "assistant", "content": content}
            if reasoning:
                message["reasoning_content"] = reasoning
            choice["message"] = message
        else:
            choice["text"] = reasoning + content
        answer: dict[str, Any] = {
            "id": self.id, "object": "chat.completion" if self.chat else "text_completion",
            "created": self.created, "model": self.model, "choices": [choice]}
        if not self.script.no_usage:
            answer["usage"] = self.usage(self.tokens)
        return answer


class _Metrics:
    """vLLM's Prometheus metrics, from the server's own requests: running, waiting,
    KV-cache use (running ÷ ``max_running``, or ÷ 256 without one), tokens."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ["model_name"]
        self.running = Gauge("vllm:num_requests_running", "Requests being answered.",
                             labels, registry=self.registry)
        self.waiting = Gauge("vllm:num_requests_waiting", "Requests waiting for a slot.",
                             labels, registry=self.registry)
        # vLLM's newer name and its older one, both fractions 0 to 1.
        self.kv_cache = Gauge("vllm:kv_cache_usage_perc", "KV-cache use, 1 = full.",
                              labels, registry=self.registry)
        self.gpu_cache = Gauge("vllm:gpu_cache_usage_perc", "KV-cache use, 1 = full.",
                               labels, registry=self.registry)
        self.prompt = Counter("vllm:prompt_tokens", "Prompt tokens read.", labels,
                              registry=self.registry)
        self.generation = Counter("vllm:generation_tokens", "Tokens generated.", labels,
                                  registry=self.registry)

    def count(self, reply: _Reply, tokens: int) -> None:
        self.prompt.labels(reply.model).inc(reply.prompt_tokens)
        self.generation.labels(reply.model).inc(tokens)

    def exposition(self, loads: Mapping[str, _Load]) -> bytes:
        for name, load in loads.items():
            use = min(1.0, load.running / (load.capacity or _DEFAULT_SEQUENCES))
            self.running.labels(name).set(load.running)
            self.waiting.labels(name).set(load.waiting)
            self.kv_cache.labels(name).set(use)
            self.gpu_cache.labels(name).set(use)
        return generate_latest(self.registry)


def _error(status: int, message: str, kind: str) -> web.Response:
    """An error answer in OpenAI's shape (vLLM's: the status also as ``code``)."""
    return web.json_response({"error": {"message": message, "type": kind, "param": None,
                                        "code": status}}, status=status)


def _asks_usage(body: Mapping[str, Any]) -> bool:
    options = body.get("stream_options")
    return not body.get("stream") or (isinstance(options, dict)
                                      and options.get("include_usage") is True)


def _prompt_words(body: Mapping[str, Any], chat: bool) -> int:
    """The prompt's tokens as this server counts them: its words."""
    if not chat:
        prompt = body.get("prompt", "")
        return len(prompt.split()) if isinstance(prompt, str) else 0
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    return sum(len(text.split()) for message in messages if isinstance(message, dict)
               for text in _texts(message.get("content")))


def _texts(content: Any) -> list[str]:
    """A message's text: its content as a string, or the text parts of a list of parts
    (``[{"type": "text", "text": ...}]``, as GuideLLM and multimodal clients send)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [part["text"] for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)]
    return []


async def _sleep_until(due: float) -> None:
    """Sleep to the event loop's clock reading ``due`` (no sleep once it has passed)."""
    delay = due - asyncio.get_running_loop().time()
    if delay > 0:
        await asyncio.sleep(delay)


def start_in_thread(script: Script | Mapping[str, Any], host: str = "127.0.0.1",
                    port: int = 0) -> tuple[str, Callable[[], None]]:
    """Start the server in a thread of its own, with its own event loop, for code
    that is not async: its URL and the function that stops it."""
    loop = asyncio.new_event_loop()
    started: concurrent.futures.Future[str] = concurrent.futures.Future()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        server = ScriptedServer(script, host, port)
        try:
            started.set_result(loop.run_until_complete(server.start()))
        except BaseException as error:  # handed to the caller, raised there
            started.set_exception(error)
            loop.close()
            return
        loop.run_forever()
        loop.run_until_complete(server.stop())
        loop.close()

    thread = threading.Thread(target=serve, name="scripted-server", daemon=True)
    thread.start()
    url = started.result()

    def stop() -> None:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()

    return url, stop


async def _serve(script: Script, host: str, port: int) -> None:
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopped.set)
    async with ScriptedServer(script, host, port) as url:
        print(f"listening on {url}", flush=True)
        await stopped.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """The program: serve the script until stopped; 2 and one line for a bad one."""
    parser = argparse.ArgumentParser(
        prog="python -m dlbench.frameworks.endpoint.scripted",
        description="A scripted OpenAI-compatible server with exact chunk times.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--script", type=Path, required=True, help="the script, JSON")
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
        asyncio.run(_serve(script, args.host, args.port))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"error: --host {safe_text(args.host)} --port {args.port}: cannot listen "
              f"({error.strerror or error})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
