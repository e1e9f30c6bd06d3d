"""What the load generator hands the client and what the client gives back: the
types that :mod:`.client` and :mod:`.load` share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from dlbench.measure.serving.records import RequestRecord

__all__ = ["ClientSettings", "Prompt", "Sender"]


@dataclass(frozen=True)
class ClientSettings:
    """How to reach the server and what to ask of it."""

    #: The API's base URL, ending in ``/v1`` (``http://127.0.0.1:8000/v1``).
    url: str
    #: The model's name at the server.
    model: str
    #: ``chat`` (``/chat/completions``) or ``completions`` (``/completions``).
    api: str = "chat"
    stream: bool = True
    #: The API key's value (read from the variable the user named); None: none sent.
    api_key: str | None = field(default=None, repr=False)
    connect_timeout_s: float = 10.0
    #: The longest wait for the next byte of an answer.
    read_timeout_s: float = 300.0
    #: Connections the keep-alive pool holds: the most requests in flight.
    max_connections: int = 100
    #: Ask the server to ignore end-of-sequence (``ignore_eos``, ``min_tokens``), so
    #: that each answer has max_tokens tokens; dropped when the server refuses them.
    ignore_eos: bool = True
    #: Ask for ``usage`` in the stream (``stream_options.include_usage``); dropped
    #: when the server refuses it.
    include_usage: bool = True
    #: Further fields of every request's body.
    extra_body: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Prompt:
    """One request's input: a prompt (``completions``) or messages (``chat``; a
    single user message is made from ``text`` when ``messages`` is None)."""

    text: str
    max_tokens: int
    #: Prompt tokens by the client's tokenizer; None: unknown.
    prompt_tokens: int | None = None
    messages: tuple[Mapping[str, str], ...] | None = None
    session: int = -1
    turn: int = -1


class Sender(Protocol):
    """What sends one request and times it (:class:`.client.EndpointClient`)."""

    async def send(self, prompt: Prompt, index: int, scheduled_ns: int,
                   warmup: bool = False) -> tuple[RequestRecord, str]:
        """Send ``prompt`` as request ``index``, due at ``scheduled_ns`` (ns from the
        run's t0); its record, never an exception for the request's own failure, and
        the answer's text (for the next turn of a conversation)."""
        ...
