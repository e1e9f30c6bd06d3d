"""A real OpenAI-compatible server, ``transformers serve``, with the tiny local model:
it streams, and the tokens the client's own tokenizer counts are the tokens the
server reports in ``usage`` — the ground the endpoint benchmark's counts stand on.

The server is started once per session (the ``tiny_llm_server`` fixture: about 7 s
on two cores) and skipped, with the reason, when Transformers' ``serving`` extra is
missing. What this server does that a client must cope with (Transformers 5.24):

- the stream ends without ``data: [DONE]``;
- a chat stream opens with a role-only chunk, sent before generation starts;
- ``usage`` comes in the last chunk, with its ``finish_reason``, whether or not
  ``stream_options.include_usage`` was asked for (``stream_options`` is ignored);
- fields that are not OpenAI's (``ignore_eos``, ``min_tokens``) are refused with 422
  ``Unexpected fields in the request: {...}``;
- an error during generation is ``data: {"error": "text"}`` inside a 200 stream;
- one request generates at a time unless ``--continuous-batching``;
- no Prometheus ``/metrics`` (404).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.endpoint_servers import count_tokens, tiny_words

# A real server, started once per session: seconds, not milliseconds.
pytestmark = pytest.mark.slow

aiohttp = pytest.importorskip("aiohttp", reason="the endpoint client needs aiohttp "
                                                "(pip install -e '.[endpoint]')")


async def _stream(url: str, body: dict[str, Any]) -> tuple[int, list[Any]]:
    """POST ``body`` with streaming on; the HTTP status and each event's data, parsed
    from JSON (the text ``[DONE]`` kept as it is)."""
    events: list[Any] = []
    async with aiohttp.ClientSession() as session, session.post(
        url, json={**body, "stream": True}
    ) as response:
        async for raw in response.content:
            line = raw.decode().strip()
            if line.startswith("data:"):
                data = line[len("data:"):].strip()
                events.append(data if data == "[DONE]" else json.loads(data))
        return response.status, events


def _text_pieces(events: list[Any], field: str) -> list[str]:
    """The non-empty text of each event (``delta.content`` for chat, ``text`` for
    completions)."""
    pieces = []
    for event in events:
        if not isinstance(event, dict) or not event.get("choices"):
            continue
        choice = event["choices"][0]
        text = choice.get("delta", {}).get("content") if field == "chat" else choice.get("text")
        if text:
            pieces.append(text)
    return pieces


def _usage(events: list[Any]) -> dict[str, int]:
    """The one ``usage`` the stream carried."""
    usages = [e["usage"] for e in events if isinstance(e, dict) and e.get("usage")]
    assert len(usages) == 1, events[-3:]
    return dict(usages[0])


def test_chat_stream_counts_equal_the_local_tokenizer(
    tiny_llm_server: str, tiny_llm_dir: Path
) -> None:
    words = tiny_words()
    question = " ".join(words[:24])
    status, events = asyncio.run(_stream(tiny_llm_server + "/chat/completions", {
        "model": tiny_llm_dir.name, "max_tokens": 17,
        "messages": [{"role": "user", "content": question}],
        "stream_options": {"include_usage": True}}))
    assert status == 200
    first = events[0]["choices"][0]
    assert first["delta"] == {"role": "assistant"}  # role only: it must not stop TTFT
    pieces = _text_pieces(events, "chat")
    answer = "".join(pieces)
    usage = _usage(events)
    # One event per token, every token a word of the vocabulary, and exactly max_tokens.
    assert len(pieces) == 17 and all(w in words for w in answer.split())
    assert usage["completion_tokens"] == count_tokens(tiny_llm_dir, answer) == 17
    # The prompt is the chat template's text: "user : QUESTION assistant :".
    assert usage["prompt_tokens"] == count_tokens(tiny_llm_dir, f"user : {question} assistant :")
    assert usage["prompt_tokens"] == 24 + 4


def test_completions_stream_counts_equal_the_local_tokenizer(
    tiny_llm_server: str, tiny_llm_dir: Path
) -> None:
    words = tiny_words()
    prompt = " ".join(words[100:164])
    status, events = asyncio.run(_stream(tiny_llm_server + "/completions", {
        "model": tiny_llm_dir.name, "prompt": prompt, "max_tokens": 9}))
    assert status == 200
    pieces = _text_pieces(events, "completions")
    answer = "".join(pieces)
    usage = _usage(events)
    assert len(pieces) == 9 and pieces[0] == pieces[0].lstrip()  # no space before the first
    # The prompt as the client counts it, no special token added by the server.
    assert count_tokens(tiny_llm_dir, prompt) == 64
    assert count_tokens(tiny_llm_dir, answer) == 9
    assert usage == {"prompt_tokens": 64, "completion_tokens": 9, "total_tokens": 64 + 9}
    assert events[-1]["choices"][0]["finish_reason"] == "length"


def test_two_requests_at_once_each_get_their_own_answer(
    tiny_llm_server: str, tiny_llm_dir: Path
) -> None:
    words = tiny_words()

    async def both() -> list[tuple[int, list[Any]]]:
        return await asyncio.gather(*(
            _stream(tiny_llm_server + "/completions",
                    {"model": tiny_llm_dir.name, "prompt": " ".join(words[k:k + 8]),
                     "max_tokens": n})
            for k, n in ((0, 5), (50, 12))))

    answers = asyncio.run(both())
    assert [status for status, _ in answers] == [200, 200]
    assert [len(_text_pieces(events, "completions")) for _, events in answers] == [5, 12]
    assert [_usage(events)["completion_tokens"] for _, events in answers] == [5, 12]
