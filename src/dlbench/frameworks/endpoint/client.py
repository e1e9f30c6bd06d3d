"""The HTTP client that sends each request to an OpenAI-compatible server and times
its answer: one :class:`~dlbench.measure.serving.records.RequestRecord` per request.

What is timed, on ``time.perf_counter_ns()`` counted from the run's ``t0``:

- ``sent_ns``: just before the request is handed to the connection pool (connecting,
  where a connection is new, counts in the answer's time, as in every serving
  benchmark: the user waits for it too);
- ``first_event_ns``: the first server-sent event of any kind, a role-only or
  usage-only one included (what peers that stop TTFT at the first event measure);
- ``chunk_ns``/``chunk_chars``: each event that carried text, content or reasoning
  (``delta.content``, ``delta.reasoning_content``/``delta.reasoning`` for chat,
  ``text`` for completions), stamped when the read that completed it returned;
- ``done_ns``: the ``[DONE]`` event, else the end of the stream or the failure.

A non-streamed answer is one text event at the moment its body had arrived.

A request's failure is its record's ``error`` (a kind of
:data:`~dlbench.measure.serving.records.ERROR_KINDS`) and a one-line detail, never an
exception: the load goes on and the figures count it. A failure of the whole set-up
(unreachable, wrong key, model or API, no streaming) is found before any load by
:meth:`EndpointClient.probe` and raised as :class:`~dlbench.errors.EndpointError`,
whose message names the ``endpoint.*`` parameter to change.

The API key travels only in the ``Authorization`` header; it is never logged, and any
text a server sends back is scrubbed of it before it reaches a record or a message.

Example::

    async with EndpointClient(settings, t0_ns) as client:
        facts = await client.probe()
        record, answer = await client.send(Prompt("Hello", max_tokens=16), 0, scheduled_ns)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import aiohttp
from yarl import URL

from dlbench import __version__
from dlbench.errors import EndpointError
from dlbench.frameworks.endpoint.requests import ClientSettings, Prompt
from dlbench.frameworks.endpoint.sse import SSEParser
from dlbench.measure.serving.records import RequestRecord
from dlbench.textsafe import safe_text

__all__ = ["EndpointClient", "EndpointError", "request_body"]

#: The longest detail a record or message quotes from a server or an exception.
_DETAIL_CHARS = 200
#: The probe's request: as small as an answer that streams can be.
_PROBE_PROMPT = "Hello"
_PROBE_TOKENS = 2
#: After ``[DONE]``, how long the rest of the response (the end of its chunked body)
#: may take to arrive; read so that the connection goes back to the pool for reuse.
_DRAIN_S = 1.0
#: The largest error body read from a server.
_ERROR_BODY_BYTES = 65536
#: Models named in the message of a model that is not served.
_MODELS_SHOWN = 20

_PATHS = {"chat": "/chat/completions", "completions": "/completions"}

_STREAM_CUT = (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, OSError)


def request_body(settings: ClientSettings, prompt: Prompt) -> dict[str, Any]:
    """The JSON body of ``prompt``'s request under ``settings``.

    >>> settings = ClientSettings(url="http://h/v1", model="m", ignore_eos=False)
    >>> request_body(settings, Prompt("Hi", max_tokens=4))  # doctest: +NORMALIZE_WHITESPACE
    {'model': 'm', 'messages': [{'role': 'user', 'content': 'Hi'}], 'max_tokens': 4,
     'stream': True, 'stream_options': {'include_usage': True}}
    """
    body: dict[str, Any] = {"model": settings.model}
    if settings.api == "chat":
        messages = prompt.messages
        if messages is None:
            messages = ({"role": "user", "content": prompt.text},)
        body["messages"] = [dict(message) for message in messages]
    else:
        body["prompt"] = prompt.text
    body["max_tokens"] = prompt.max_tokens
    body["stream"] = settings.stream
    if settings.stream and settings.include_usage:
        body["stream_options"] = {"include_usage": True}
    if settings.ignore_eos:
        # vLLM and SGLang read ignore_eos; vLLM's min_tokens also holds where a model
        # has several end tokens. Both are dropped when the probe finds them refused.
        body["ignore_eos"] = True
        body["min_tokens"] = prompt.max_tokens
    body.update(settings.extra_body)
    return body


class EndpointClient:
    """Sends requests to one endpoint over one pool of keep-alive connections (a
    :class:`~dlbench.frameworks.endpoint.requests.Sender`); use it in ``async with``.

    ``count_tokens``, when given, counts the tokens of a text with the client's
    tokenizer: each record's ``client_output_tokens``.
    """

    def __init__(self, settings: ClientSettings, t0_ns: int,
                 count_tokens: Callable[[str], int] | None = None) -> None:
        if settings.api not in _PATHS:
            raise EndpointError(f"endpoint.api={safe_text(settings.api)!r} is not known; "
                                f"accepted: {', '.join(_PATHS)}")
        self._settings = settings
        self._t0 = t0_ns
        self._count_tokens = count_tokens
        self._session: aiohttp.ClientSession | None = None
        self._base = settings.url.rstrip("/")
        self._shown_url = _shown_url(self._base)

    @property
    def settings(self) -> ClientSettings:
        """The settings in use: those given, less what :meth:`probe` found refused."""
        return self._settings

    async def __aenter__(self) -> EndpointClient:
        settings = self._settings
        headers = {"User-Agent": f"dlbench/{__version__}"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key}"
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=settings.connect_timeout_s,
                                        sock_read=settings.read_timeout_s)
        # limit=0 is aiohttp's "no limit", as endpoint.max_concurrency=0 is dlbench's.
        connector = aiohttp.TCPConnector(limit=settings.max_connections)
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout,
                                              headers=headers)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(self, prompt: Prompt, index: int, scheduled_ns: int,
                   warmup: bool = False) -> tuple[RequestRecord, str]:
        """Send ``prompt`` as request ``index``, due at ``scheduled_ns``: its record
        and the answer's content (reasoning left out), for a conversation's next turn.
        A failure is the record's ``error``, never an exception."""
        record = RequestRecord(index=index, scheduled_ns=scheduled_ns, sent_ns=scheduled_ns,
                               prompt_tokens=prompt.prompt_tokens, max_tokens=prompt.max_tokens,
                               session=prompt.session, turn=prompt.turn, warmup=warmup)
        answer = await self._exchange(request_body(self._settings, prompt), record)
        return record, "".join(answer.content)

    async def probe(self) -> dict[str, Any]:
        """Check, before any load, that the endpoint can be benchmarked as asked, and
        adjust the settings to what it accepts (``stream_options``, ``ignore_eos``
        refused with a 400 are dropped from then on; :attr:`settings` has the rest).
        Returns what it found: ``usage_in_stream`` (the answer carried ``usage``),
        ``ignore_eos`` (still asked for), ``server`` (the ``Server`` header) and
        ``models`` (those ``/models`` listed; empty when it is not served).
        :class:`~dlbench.errors.EndpointError` when it cannot be benchmarked."""
        models = await self._served_models()
        model = self._settings.model
        if models and model not in models:
            shown = ", ".join(safe_text(name) for name in models[:_MODELS_SHOWN])
            more = f" ({len(models)} in all)" if len(models) > _MODELS_SHOWN else ""
            raise EndpointError(f"endpoint.model={safe_text(model)!r} is not served at "
                                f"{self._shown_url}; served: {shown}{more}")
        prompt = Prompt(_PROBE_PROMPT, max_tokens=_PROBE_TOKENS)
        for _ in range(3):  # at most: as asked, less stream_options, less ignore_eos
            now = self._now()
            record = RequestRecord(index=-1, scheduled_ns=now, sent_ns=now)
            answer = await self._exchange(request_body(self._settings, prompt), record)
            if not self._drop_refused(record, answer.message):
                break
        self._check_probe(record, answer)
        return {"usage_in_stream": record.usage_output_tokens is not None,
                "ignore_eos": self._settings.ignore_eos,
                "server": answer.server,
                "models": models}

    def _drop_refused(self, record: RequestRecord, message: str) -> bool:
        """Drop from the settings the options a 400 (422 for some servers) names;
        whether any was dropped."""
        if record.error != "http" or record.status not in (400, 422):
            return False
        said = message.lower()
        settings = self._settings
        include_usage = settings.include_usage and not (settings.stream
                                                        and "stream_options" in said)
        ignore_eos = settings.ignore_eos and not ("ignore_eos" in said or "min_tokens" in said)
        if (include_usage, ignore_eos) == (settings.include_usage, settings.ignore_eos):
            return False
        self._settings = dataclasses.replace(settings, include_usage=include_usage,
                                             ignore_eos=ignore_eos)
        return True

    def _check_probe(self, record: RequestRecord, answer: _Answer) -> None:
        settings = self._settings
        url = self._shown_url
        asked = f"a {_PROBE_TOKENS}-token test request"
        if record.error == "connect":
            raise EndpointError(f"endpoint.url={url} is unreachable ({record.error_detail}); "
                                "is the server running, at this address?")
        if record.error == "http" and record.status in (401, 403):
            raise EndpointError(self._key_message(record.status))
        if record.error == "http" and record.status == 404:
            said = self._one_line(answer.message)
            if settings.model in answer.message:
                raise EndpointError(f"endpoint.model={safe_text(settings.model)!r} is not "
                                    f"served at {url} ({said})")
            raise EndpointError(
                f"endpoint.api={settings.api}: POST {url}{_PATHS[settings.api]} answered "
                f"HTTP 404 ({said}); accepted: chat (/chat/completions) or completions "
                "(/completions), under an endpoint.url that ends where the API starts "
                "(/v1 on most servers)")
        if record.error == "timeout":
            raise EndpointError(f"endpoint.url={url} did not answer {asked} within "
                                f"endpoint.read_timeout_s={settings.read_timeout_s:g}")
        if record.error in ("http", "stream_cut", "malformed", "server_error"):
            raise EndpointError(f"endpoint.url={url}: {asked} failed ({record.error}): "
                                f"{record.error_detail}")
        if settings.stream and not answer.streamed:
            raise EndpointError(f"endpoint.url={url} answered a streaming request with one "
                                f"{safe_text(answer.content_type or 'untyped')} body: it does not "
                                "stream; set endpoint.stream=false")

    def _key_message(self, status: int) -> str:
        if self._settings.api_key:
            return (f"endpoint.url={self._shown_url} refused the API key (HTTP {status}); "
                    "endpoint.api_key_env must name an environment variable that holds a "
                    "key this server accepts")
        return (f"endpoint.url={self._shown_url} asks for an API key (HTTP {status}); set "
                "endpoint.api_key_env to the name of an environment variable that holds it")

    async def _served_models(self) -> list[str]:
        """The model names ``GET /models`` lists; empty when the server does not
        answer it (not every server has it). An unreachable server or a refused key
        raises :class:`~dlbench.errors.EndpointError`."""
        try:
            async with self._open().get(self._base + "/models") as response:
                if response.status in (401, 403):
                    raise EndpointError(self._key_message(response.status))
                if response.status != 200:
                    return []
                listing = json.loads(await response.read())
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            kind, detail = self._classify(error, 0)
            if kind == "connect":
                raise EndpointError(f"endpoint.url={self._shown_url} is unreachable "
                                    f"({self._one_line(detail)}); is the server running, "
                                    "at this address?") from None
            return []
        except ValueError:
            return []
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            return []
        return [str(entry["id"]) for entry in data if isinstance(entry, dict) and "id" in entry]

    async def _exchange(self, body: dict[str, Any], record: RequestRecord) -> _Answer:
        """Send ``body``, read the answer into ``record``; what came back."""
        chat = self._settings.api == "chat"
        answer = _Answer(record, chat)
        session = self._open()
        record.sent_ns = self._now()
        try:
            async with session.post(self._base + _PATHS[self._settings.api],
                                    json=body) as response:
                record.status = response.status
                answer.server = response.headers.get("Server", "")
                answer.content_type = response.content_type
                if response.status >= 400:
                    raw = await _read_capped(response, _ERROR_BODY_BYTES)
                    record.done_ns = self._now()
                    answer.message = _server_message(raw.decode("utf-8", "replace"))
                    answer.fail("http", f"HTTP {response.status}: "
                                        f"{self._one_line(answer.message)}")
                elif response.content_type != "application/json" and body.get("stream"):
                    answer.streamed = True
                    await self._read_events(response, answer)
                else:
                    raw = await response.read()
                    record.done_ns = self._now()
                    answer.take_body(raw, record.done_ns)
        except asyncio.CancelledError:
            raise
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            if record.done_ns is None:
                record.done_ns = self._now()
            answer.fail(*self._classify(error, record.status))
        if answer.failure:
            record.error, detail = answer.failure
            record.error_detail = self._one_line(detail)
        elif not record.chunk_ns:
            record.error, record.error_detail = "empty", "the answer held no text"
        if self._count_tokens is not None:
            record.client_output_tokens = (self._count_tokens("".join(answer.content))
                                           + self._count_tokens("".join(answer.reasoning)))
        return answer

    async def _read_events(self, response: aiohttp.ClientResponse, answer: _Answer) -> None:
        """Read an event stream into ``answer`` until ``[DONE]``, a failure, or its end."""
        record = answer.record
        parser = SSEParser()
        clock, t0 = time.perf_counter_ns, self._t0
        async for data in response.content.iter_any():
            received = clock() - t0
            for event in parser.feed(data, received):
                if not answer.take_event(event.data, event.event, received):
                    if record.done_ns is None:
                        record.done_ns = received
                    if answer.done:
                        await _drain(response)
                    return
        end = clock() - t0
        for event in parser.finish(end):
            if not answer.take_event(event.data, event.event, end):
                break
        if record.done_ns is None:
            record.done_ns = end
        if not answer.done and answer.finished:
            # Some servers (transformers serve) end a whole answer without the [DONE]
            # terminator: the answer counts, and its record says so.
            record.error_detail = "the stream ended without [DONE], after a finish_reason"
        elif not answer.done:
            answer.fail("no_done", "the stream ended without [DONE] or a finish_reason")

    def _classify(self, error: BaseException, status: int) -> tuple[str, str]:
        """The record's error kind and detail for an exception of the transport."""
        settings = self._settings
        if isinstance(error, aiohttp.ConnectionTimeoutError):
            return "connect", (f"no connection within "
                               f"endpoint.connect_timeout_s={settings.connect_timeout_s:g}")
        if isinstance(error, asyncio.TimeoutError):
            return "timeout", (f"no byte came within "
                               f"endpoint.read_timeout_s={settings.read_timeout_s:g}")
        if isinstance(error, aiohttp.ClientConnectorError):
            return "connect", str(error)
        if isinstance(error, aiohttp.InvalidURL):
            return "connect", "endpoint.url is not a valid http(s) URL"
        if isinstance(error, aiohttp.ClientResponseError):
            return "malformed", f"the server's HTTP response is malformed ({error.message})"
        if isinstance(error, _STREAM_CUT):
            when = "mid-answer" if status else "before answering"
            return "stream_cut", f"the connection closed {when} ({type(error).__name__}: {error})"
        return "stream_cut", f"{type(error).__name__}: {error}"

    def _one_line(self, text: str) -> str:
        """``text`` as one line, terminal-safe, at most :data:`_DETAIL_CHARS`
        characters, with the API key (should a server echo it) masked."""
        key = self._settings.api_key
        if key:
            text = text.replace(key, "***")
        text = safe_text(" ".join(text.split()))
        return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS - 1] + "…"

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("EndpointClient is used outside `async with`")
        return self._session

    def _now(self) -> int:
        return time.perf_counter_ns() - self._t0


class _Answer:
    """What one response carried, gathered as it is read, into its record."""

    __slots__ = ("chat", "content", "content_type", "done", "failure", "finished",
                 "message", "reasoning", "record", "server", "streamed")

    def __init__(self, record: RequestRecord, chat: bool) -> None:
        self.record = record
        self.chat = chat
        self.content: list[str] = []
        self.reasoning: list[str] = []
        #: The first failure: kind and detail (not yet one line).
        self.failure: tuple[str, str] | None = None
        #: The server's error message, whole (the probe looks for words in it).
        self.message = ""
        self.done = False
        #: A choice carried a finish_reason: the answer is whole, [DONE] or not.
        self.finished = False
        self.streamed = False
        self.server = ""
        self.content_type = ""

    def fail(self, kind: str, detail: str) -> None:
        if self.failure is None:
            self.failure = (kind, detail)

    def take_event(self, data: str, name: str, received_ns: int) -> bool:
        """Take one event of the stream; whether to read on."""
        record = self.record
        if record.first_event_ns is None:
            record.first_event_ns = received_ns
        if data == "[DONE]":
            self.done = True
            record.done_ns = received_ns
            return False
        try:
            chunk = json.loads(data)
        except ValueError:
            self.fail("malformed", f"an event is not JSON: {data[:80]!r}")
            return False
        if name == "error":
            self.fail("server_error", _error_text(chunk) or data)
            return False
        return self._take(chunk, received_ns, streamed=True)

    def take_body(self, raw: bytes, received_ns: int) -> None:
        """Take a whole (non-streamed) answer."""
        try:
            answer = json.loads(raw)
        except ValueError:
            self.fail("malformed", f"the answer is not JSON: {raw[:80]!r}")
            return
        self.record.first_event_ns = received_ns
        self._take(answer, received_ns, streamed=False)

    def _take(self, chunk: Any, received_ns: int, streamed: bool) -> bool:
        if not isinstance(chunk, dict):
            self.fail("malformed", f"an event is not a JSON object: {str(chunk)[:80]}")
            return False
        if "error" in chunk or chunk.get("object") == "error":
            self.fail("server_error", _error_text(chunk))
            return False
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._take_usage(usage)
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            if isinstance(usage, dict):
                return True  # usage alone
            self.fail("malformed", "an event has no choices")
            return False
        if not choices:
            return True  # the usage event has an empty list
        choice = choices[0]
        if not isinstance(choice, dict):
            self.fail("malformed", "a choice is not a JSON object")
            return False
        if self.chat:
            part = choice.get("delta" if streamed else "message") or {}
            if not isinstance(part, dict):
                self.fail("malformed", "a choice's delta is not a JSON object")
                return False
            content = part.get("content")
            # vLLM's reasoning parsers used reasoning_content, later reasoning.
            reasoning = part.get("reasoning_content") or part.get("reasoning")
        else:
            content, reasoning = choice.get("text"), None
        if choice.get("finish_reason"):
            self.finished = True
        chars = 0
        for text, into in ((content, self.content), (reasoning, self.reasoning)):
            if text:
                if not isinstance(text, str):
                    self.fail("malformed", "a choice's text is not a string")
                    return False
                into.append(text)
                chars += len(text)
        if chars:
            self.record.chunk_ns.append(received_ns)
            self.record.chunk_chars.append(chars)
        return True

    def _take_usage(self, usage: dict[str, Any]) -> None:
        # The last one wins: servers that report usage in every chunk count up.
        completion, prompt = usage.get("completion_tokens"), usage.get("prompt_tokens")
        if isinstance(completion, int) and not isinstance(completion, bool):
            self.record.usage_output_tokens = completion
        if isinstance(prompt, int) and not isinstance(prompt, bool):
            self.record.usage_prompt_tokens = prompt


async def _read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """At most ``limit`` bytes of the body: a server's error text, however long."""
    parts: list[bytes] = []
    size = 0
    while size < limit:
        part = await response.content.read(limit - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


async def _drain(response: aiohttp.ClientResponse) -> None:
    """Read what follows ``[DONE]`` (the end of a chunked body), so the connection can
    be reused; a server that holds the stream open after it only loses that reuse."""
    with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError, OSError):
        await asyncio.wait_for(response.content.read(), _DRAIN_S)


def _error_text(answer: dict[str, Any]) -> str:
    """The message of an error object: OpenAI's ``{"error": {"message": ...}}``,
    vLLM's older ``{"object": "error", "message": ...}``, TGI's ``{"error": "..."}``,
    FastAPI's ``{"detail": ...}``."""
    error = answer.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        return str(message) if message is not None else json.dumps(error)
    if isinstance(error, str):
        return error
    for name in ("message", "detail"):
        if answer.get(name) is not None:
            return str(answer[name])
    return json.dumps(answer)


def _server_message(body: str) -> str:
    """What an HTTP error's body says: its error object's message, else its text."""
    try:
        answer = json.loads(body)
    except ValueError:
        return body
    return _error_text(answer) if isinstance(answer, dict) else body


def _shown_url(url: str) -> str:
    """``url`` as messages show it: a password in it masked, terminal-safe."""
    try:
        parsed = URL(url)
        if parsed.password:
            url = str(parsed.with_password("***"))
    except (ValueError, TypeError):
        pass
    return safe_text(url)
