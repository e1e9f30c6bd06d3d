"""Server-Sent Events read incrementally from the bytes of a streamed answer, each
event stamped with the moment the read that completed it returned.

That stamp is why dlbench parses the stream itself rather than through a library's
event iterator: a token's time is when its bytes reached the client, and an iterator
that hides the reads loses it (events that came in one read share that read's time;
an event split over two reads gets the second's). The rules are the WHATWG HTML
standard's event-stream format (section 9.2.6):

- a line ends with CRLF, LF or CR, and may be split anywhere across reads (a CR that
  ends one read and an LF that starts the next are one line ending);
- ``data:`` lines add to the event's data (several lines are joined by LF); one space
  after the colon is dropped; a line without a colon is a field with an empty value;
- ``event:`` names the event; ``id:`` and ``retry:`` are read and ignored (a benchmark
  does not reconnect); a line starting with ``:`` is a comment (keep-alive pings);
- a blank line ends the event; one with no data is not dispatched;
- a UTF-8 byte order mark at the very start is dropped.

One leniency: at the end of the stream an event whose ``data:`` lines are complete but
whose closing blank line never came is still dispatched by :meth:`SSEParser.finish`
(the standard discards it), since the server closed the answer cleanly and what it
sent is whole; a line cut in the middle is discarded.

The work is done per line with bytes methods that run in C (``splitlines``,
``startswith``), never per byte in Python, so that the client keeps up with tens of
thousands of events a second.

Example::

    >>> parser = SSEParser()
    >>> parser.feed(b'data: {"a": 1}\\n\\ndata: [DO', 5)
    [Event(received_ns=5, data='{"a": 1}', event='')]
    >>> parser.feed(b"NE]\\r\\n\\r\\n", 9)
    [Event(received_ns=9, data='[DONE]', event='')]
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Event", "SSEParser"]

_BOM = b"\xef\xbb\xbf"


class Event(NamedTuple):
    """One dispatched event."""

    #: When the read that completed it returned (the caller's clock, e.g. ns from t0).
    received_ns: int
    #: Its ``data:`` lines, joined by LF, decoded as UTF-8 (undecodable bytes replaced).
    data: str
    #: Its ``event:`` name; "" for the default (``message``).
    event: str


class SSEParser:
    """Turns the reads of one stream into events; one parser per stream."""

    __slots__ = ("_data", "_event", "_pending", "_skip_lf", "_started")

    def __init__(self) -> None:
        #: The start of a line whose ending has not come yet.
        self._pending = b""
        #: The last read ended with CR: an LF starting the next one ends no line.
        self._skip_lf = False
        #: The ``data:`` values of the event being built.
        self._data: list[bytes] = []
        self._event = b""
        self._started = False

    def feed(self, chunk: bytes, received_ns: int) -> list[Event]:
        """The events that ``chunk`` (the next bytes read) completes, each stamped
        ``received_ns``."""
        if not self._started:
            chunk = self._pending + chunk
            self._pending = b""
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._pending = chunk  # perhaps a byte order mark split over reads
                return []
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM):]
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        if not chunk:
            return []
        if self._pending:
            chunk = self._pending + chunk
        lines = chunk.splitlines()  # CRLF, LF and CR only, for bytes
        last = chunk[-1]
        if last == 0x0A or last == 0x0D:
            self._pending = b""
            self._skip_lf = last == 0x0D
        else:
            self._pending = lines.pop()
        events: list[Event] = []
        for line in lines:
            if line:
                self._field(line)
            elif self._data:
                events.append(self._dispatch(received_ns))
            else:
                self._event = b""
        return events

    def finish(self, received_ns: int) -> list[Event]:
        """At the end of the stream: the event whose lines were all complete but whose
        closing blank line never came (see the module's note); a partial line is
        dropped."""
        self._pending = b""
        if self._data:
            return [self._dispatch(received_ns)]
        return []

    def _field(self, line: bytes) -> None:
        if line.startswith(b"data:"):  # nearly every line of a completion stream
            value = line[5:]
            self._data.append(value[1:] if value.startswith(b" ") else value)
            return
        colon = line.find(b":")
        if colon == 0:
            return  # a comment
        if colon < 0:
            name, value = line, b""
        else:
            name, value = line[:colon], line[colon + 1:]
            if value.startswith(b" "):
                value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value
        # id, retry and unknown fields: ignored.

    def _dispatch(self, received_ns: int) -> Event:
        data = b"\n".join(self._data).decode("utf-8", "replace")
        event = Event(received_ns, data, self._event.decode("utf-8", "replace"))
        self._data = []
        self._event = b""
        return event
