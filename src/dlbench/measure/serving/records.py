"""The raw measurements of one served request, kept in the log so that every figure
can be computed again, in dlbench's definitions or another tool's.

Times are integer nanoseconds of a monotonic clock (``time.perf_counter_ns``),
counted from the run's start (``t0``), so that a record is small and exact. A
request's latency starts at its **scheduled** moment (the arrival an open-loop
schedule gave it, or the moment its closed-loop slot freed), not when the client got
round to sending it: the gap is the client's own queueing, ``sent_ns - scheduled_ns``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ERROR_KINDS", "RequestRecord", "from_rows", "to_rows"]

#: Why a request failed (``RequestRecord.error``); empty: it did not.
ERROR_KINDS: dict[str, str] = {
    "connect": "the connection could not be made or was refused",
    "http": "the server answered with an HTTP error status",
    "timeout": "no byte came within the read timeout, or the whole request overran",
    "stream_cut": "the connection closed in the middle of the answer",
    "malformed": "an event of the stream was not JSON or not a completion chunk",
    "no_done": "the stream ended without its [DONE] event and before any finish_reason "
               "(a stream that gave a finish_reason is whole: its record's error_detail "
               "notes the missing [DONE])",
    "empty": "the answer held no text at all",
    "server_error": "the stream carried an error object",
}


@dataclass
class RequestRecord:
    """One request: when it was due, sent and answered, what it asked and got."""

    #: Issue order, from 0, over the whole run (warm-up included).
    index: int
    #: When it was due and when its bytes went to the connection, ns from t0.
    scheduled_ns: int
    sent_ns: int
    #: Each event that carried text (content or reasoning; never a role-only or
    #: usage-only one), the moment it was read, ns from t0.
    chunk_ns: list[int] = field(default_factory=list)
    #: The characters of text each of those events carried.
    chunk_chars: list[int] = field(default_factory=list)
    #: The first event of any kind (a role-only chunk included): what peers that stop
    #: TTFT at the first event measure; None when none came.
    first_event_ns: int | None = None
    #: When the response ended (``[DONE]``, or the stream's end), ns from t0.
    done_ns: int | None = None
    #: Prompt tokens the client meant to send (its tokenizer's count), None unknown.
    prompt_tokens: int | None = None
    #: Output tokens asked for (``max_tokens``).
    max_tokens: int | None = None
    #: The server's ``usage``: prompt and completion tokens; None when it gave none.
    usage_prompt_tokens: int | None = None
    usage_output_tokens: int | None = None
    #: The client tokenizer's count of the whole answer's text; None without one.
    client_output_tokens: int | None = None
    #: "" when it succeeded, else one of ERROR_KINDS; the detail is one line.
    error: str = ""
    error_detail: str = ""
    #: HTTP status (0: none was received).
    status: int = 0
    #: Multi-turn sessions: which conversation and which turn (0-based); -1: none.
    session: int = -1
    turn: int = -1
    #: Sent before the steady-state window (its figures are not counted).
    warmup: bool = False
    #: When a capped open loop gave it a slot (it may wait for one after its scheduled
    #: time: the user's cap, counted in its latency), ns from t0; None: at its
    #: scheduled time. ``sent_ns - released_ns`` is the client's own lag.
    released_ns: int | None = None

    @property
    def released(self) -> int:
        """When it could be sent: its slot's time, else its scheduled time."""
        return self.scheduled_ns if self.released_ns is None else self.released_ns

    @property
    def ok(self) -> bool:
        """Completed without an error, with some text."""
        return not self.error

    def output_tokens(self) -> tuple[int, str]:
        """The request's output tokens and where the count came from: the server's
        ``usage`` (``usage``), else the client's tokenizer (``client``), else one token
        per text event (``events``, a lower bound where a chunk holds several)."""
        if self.usage_output_tokens is not None:
            return self.usage_output_tokens, "usage"
        if self.client_output_tokens is not None:
            return self.client_output_tokens, "client"
        return len(self.chunk_ns), "events"


#: The order of a record's fields in a stored row.
_FIELDS: tuple[str, ...] = tuple(RequestRecord.__dataclass_fields__)


def to_rows(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """``records`` as stored in a log (``results.request_data``): the field names once
    and one list of values per request, JSON as it is."""
    return {"fields": list(_FIELDS),
            "rows": [[getattr(r, name) for name in _FIELDS] for r in records]}


def from_rows(data: Mapping[str, Any]) -> list[RequestRecord]:
    """The records :func:`to_rows` stored (fields a later dlbench added that this one
    does not know are left out; fields it does not find take their defaults).
    ``ValueError`` when ``data`` is not such a table."""
    try:
        names = [str(name) for name in data["fields"]]
        rows = data["rows"]
    except (KeyError, TypeError) as error:
        raise ValueError("results.request_data is not a table of fields and rows") from error
    known = [(i, name) for i, name in enumerate(names) if name in _FIELDS]
    records = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(names):
            raise ValueError("results.request_data: a row does not match its fields")
        records.append(RequestRecord(**{name: row[i] for i, name in known}))
    return records
