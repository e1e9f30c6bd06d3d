"""The server-sent-events parser: the standard's line and field rules, events split
anywhere across reads, and the read time each event is stamped with."""

from __future__ import annotations

import doctest
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from dlbench.frameworks.endpoint.sse import Event, SSEParser


def events_of(*reads: bytes) -> list[tuple[int, str, str]]:
    """Feed ``reads`` (read i at time i), then finish at time len(reads)."""
    parser = SSEParser()
    found = [event for i, read in enumerate(reads) for event in parser.feed(read, i)]
    found += parser.finish(len(reads))
    return [tuple(event) for event in found]  # type: ignore[misc]


def test_one_read_with_several_events() -> None:
    assert events_of(b'data: {"a":1}\n\ndata: [DONE]\n\n') == [
        (0, '{"a":1}', ""), (0, "[DONE]", "")]


def test_each_line_ending_crlf_lf_cr() -> None:
    for end in (b"\r\n", b"\n", b"\r"):
        assert events_of(b"data: x" + end + end + b"data: y" + end + end) == [
            (0, "x", ""), (0, "y", "")]


def test_an_event_is_stamped_with_the_read_that_completed_it() -> None:
    assert events_of(b"da", b"ta: he", b"llo\n", b"\n") == [(3, "hello", "")]


def test_a_crlf_split_across_reads_is_one_line_ending() -> None:
    # CR ends one read, LF starts the next: not an extra blank line (which would end
    # the event between its two data lines).
    assert events_of(b"data: a\r", b"\ndata: b\r\n\r\n") == [(1, "a\nb", "")]
    # And a CR alone at a read's end is a line ending on its own.
    assert events_of(b"data: a\r", b"\r") == [(1, "a", "")]


def test_multi_line_data_is_joined_by_lf() -> None:
    assert events_of(b"data: one\ndata: two\ndata:\n\n") == [(0, "one\ntwo\n", "")]


def test_comments_event_names_and_other_fields() -> None:
    stream = (b": ping\n\n"                       # a comment alone: no event
              b"event: error\nid: 7\nretry: 10\ndata: boom\n\n"
              b"data:no-space\n: inline comment\nunknown: x\n\n"
              b"data\n\n")                         # a field with no colon: empty value
    assert events_of(stream) == [(0, "boom", "error"), (0, "no-space", ""), (0, "", "")]


def test_a_blank_line_without_data_dispatches_nothing_and_resets_the_name() -> None:
    assert events_of(b"event: error\n\ndata: x\n\n") == [(0, "x", "")]


def test_only_one_space_after_the_colon_is_dropped() -> None:
    assert events_of(b"data:  two spaces\n\n") == [(0, " two spaces", "")]


def test_a_byte_order_mark_at_the_start_is_dropped_even_when_split() -> None:
    assert events_of(b"\xef\xbb\xbfdata: x\n\n") == [(0, "x", "")]
    assert events_of(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == [(2, "x", "")]


def test_utf8_split_across_reads_decodes_whole() -> None:
    text = "héllo ✓".encode()
    assert events_of(b"data: " + text[:2], text[2:] + b"\n\n") == [(1, "héllo ✓", "")]


def test_at_the_end_complete_lines_are_dispatched_a_partial_line_is_not() -> None:
    assert events_of(b"data: [DONE]\n") == [(1, "[DONE]", "")]
    assert events_of(b"data: [DONE]\n\ndata: {\"cut") == [(0, "[DONE]", "")]


def test_events_are_a_named_tuple() -> None:
    event = SSEParser().feed(b"data: x\n\n", 42)[0]
    assert event == Event(received_ns=42, data="x", event="")


STREAM = (b'\xef\xbb\xbf: hello\r\n\r\ndata: {"choices":[{"delta":{"content":"a"}}]}\n\n'
          b"event: message\r\ndata: line1\r\ndata: line2\r\r"
          b'data: {"t":"\xc3\xa9"}\n\ndata: [DONE]\r\n\r\n')


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_into_reads_gives_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    reads = [STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    found = [(data, name) for _, data, name in events_of(*reads)]
    assert found == [('{"choices":[{"delta":{"content":"a"}}]}', ""),
                     ("line1\nline2", "message"), ('{"t":"é"}', ""), ("[DONE]", "")]


def test_the_module_examples() -> None:
    from dlbench.frameworks.endpoint import client, sse

    assert doctest.testmod(sse).failed == 0
    assert doctest.testmod(client).failed == 0
