"""What each request of an endpoint run says: its prompt text, how long it is in
tokens, and how many tokens it asks for.

**Synthetic prompts** (no ``endpoint.dataset``) are words drawn by a seeded generator.
With the model's tokenizer (``endpoint.tokenizer``: a local folder that
``transformers.AutoTokenizer`` loads, or a ``tokenizer.json`` for the ``tokenizers``
package) the words are taken from the tokenizer's own vocabulary: tokens that decode
to a plain word and encode back to that one token, alone and after another word. A
prompt of ``n`` such words, joined by spaces, is then ``n`` tokens; it is encoded
again to check, and trimmed or extended token by token until its length is exactly
``n``. The server, encoding the same text with the same tokenizer, counts the same
``n`` prompt tokens (``Prompt.prompt_tokens``), apart from what it adds itself: a
beginning-of-sequence token and, for ``chat``, the chat template's tokens.

Without a tokenizer the words come from a fixed list of common English words, one
word being about one token in the usual tokenizers; the count is then unknown
(``prompt_tokens=None``) and the figures rely on the server's ``usage``.

Every synthetic prompt starts with the digits of its request's number, written in
words (the least significant first), so that no two prompts share a first token and
a server's prefix cache cannot turn a synthetic load into cache hits. Prefixes are
shared only where that is the point: the turns of one conversation
(:class:`Conversation`) and the blocks of a replayed trace (:meth:`PromptSource.trace_prompt`:
the same hash id is the same 512 tokens of text, as in Mooncake's traces).

Lengths are ``exp.prompt_tokens`` and ``exp.output_tokens`` exactly, or normal around
them with ``endpoint.prompt_tokens_sd`` and ``endpoint.output_tokens_sd`` (rounded, at
least 1). Every random choice is seeded by ``endpoint.seed`` and the request's number,
never by the order in which concurrent requests ask, so a run's prompts are the same
whatever the timing.

**Datasets** (``endpoint.dataset``, a local file): a ShareGPT JSON file (a list of
``{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}``: the
first human message is the prompt, the answer after it gives the length asked for)
or JSON lines, each ``{"prompt": TEXT}`` or ``{"messages": [{"role": ..., "content":
...}, ...]}`` with an optional ``"output_tokens": N``. Requests take the entries in
a seeded order, and start again from the first when they run out (a server may then
serve the repeats from its prefix cache).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dlbench.frameworks.endpoint.requests import Prompt
from dlbench.textsafe import safe_text

__all__ = ["BLOCK_TOKENS", "Conversation", "DatasetEntry", "PromptSource", "TextTokenizer",
           "load_tokenizer", "read_dataset"]

#: Tokens of one hash id's block of a replayed trace (Mooncake's block size).
BLOCK_TOKENS = 512

#: The fallback vocabulary without a tokenizer: common English words, each a single
#: token in GPT-2's, Llama's and most other BPE vocabularies (after a space).
_FALLBACK_WORDS: tuple[str, ...] = (
    "the", "of", "and", "to", "in", "is", "was", "for", "that", "on", "as", "with", "by", "he",
    "at", "from", "his", "it", "an", "were", "are", "which", "this", "be", "or", "had", "not",
    "but", "have", "they", "one", "their", "first", "new", "has", "been", "its", "after", "who",
    "all", "also", "two", "her", "she", "more", "time", "other", "when", "into", "there", "can",
    "only", "over", "during", "most", "such", "some", "three", "city", "may", "these", "school",
    "many", "where", "year", "would", "then", "world", "made", "between", "about", "part", "used",
    "years", "both", "under", "known", "state", "later", "while", "four", "number", "since",
    "well", "family", "film", "team", "could", "each", "best", "people", "season", "found", "work",
    "music", "them", "through", "group", "back", "five", "name", "area", "south", "north", "west",
    "east", "main", "life", "high", "long", "game", "take", "line", "home", "day", "side", "early",
    "place", "end", "book", "water", "house", "church", "small", "war", "land", "great", "show",
    "last", "old", "good", "still", "left", "power", "point", "make", "free", "open", "body",
    "just", "word", "form", "case", "week", "town", "road", "real", "light", "run", "set", "age",
    "fact", "love", "play", "hand", "head", "night",
)
#: How many words the prompts of a tokenizer are drawn from, and the fewest it may
#: offer: a small vocabulary makes prompts repetitive, not wrong.
_POOL_SIZE = 4096
_MIN_POOL = 16
#: Vocabulary entries tried at most when gathering the pool (bounds the start-up time).
_POOL_SCAN = 200_000
#: Rounds of trimming or extending a prompt to its exact length before giving up.
_FIX_ROUNDS = 16
#: Words of the request number at the start of a synthetic prompt.
_NUMBER_WORDS = 4
#: Separate random streams (the second word of every seed), so that the lengths of
#: request 3 do not depend on its text, and so on.
_TEXT, _PROMPT_LEN, _OUTPUT_LEN, _TURN, _BLOCK, _ORDER, _FILL = range(7)


@dataclass(frozen=True)
class TextTokenizer:
    """A tokenizer reduced to what prompts need: text to token ids (no special tokens
    added), ids to text, and the vocabulary's ids that are not special tokens."""

    encode: Callable[[str], list[int]]
    decode: Callable[[list[int]], str]
    vocab_size: int
    special_ids: frozenset[int] = frozenset()

    def count(self, text: str) -> int:
        """Tokens of ``text``, as the server counts them without its own additions."""
        return len(self.encode(text))


def load_tokenizer(path: str | Path) -> TextTokenizer:
    """The tokenizer at ``path`` (``endpoint.tokenizer``): a ``tokenizer.json`` file,
    or a folder that ``transformers.AutoTokenizer`` loads without the network (a folder
    holding only a ``tokenizer.json`` works without transformers). Nothing is
    downloaded. ValueError naming endpoint.tokenizer when it cannot be loaded."""
    where = Path(path)
    shown = safe_text(str(path))
    if where.is_dir():
        try:
            import transformers  # noqa: F401  (only whether it is there)
        except ImportError:
            if not (where / "tokenizer.json").is_file():
                raise ValueError(f"endpoint.tokenizer: loading the folder {shown} needs "
                                 f"transformers (pip install transformers), or give its "
                                 f"tokenizer.json") from None
            where = where / "tokenizer.json"
    elif not where.is_file():
        raise ValueError(f"endpoint.tokenizer: {shown} is neither a tokenizer.json file "
                         f"nor a tokenizer's folder")
    try:
        return _from_transformers(where) if where.is_dir() else _from_tokenizers(where)
    except Exception as error:  # the libraries raise bare Exceptions for a bad file
        raise _load_error(shown, error) from error


def _load_error(shown: str, error: BaseException) -> ValueError:
    """A tokenizer that failed to load, in one line."""
    lines = str(error).strip().splitlines()
    detail = safe_text(lines[0]) if lines else type(error).__name__
    return ValueError(f"endpoint.tokenizer: {shown} could not be loaded as a local tokenizer "
                      f"(a tokenizer.json, or a folder transformers loads): {detail}")


def _from_tokenizers(path: Path) -> TextTokenizer:
    """A ``tokenizer.json`` through the ``tokenizers`` package."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    special = frozenset(i for i, token in tokenizer.get_added_tokens_decoder().items()
                        if token.special)
    return TextTokenizer(
        encode=lambda text: list(tokenizer.encode(text, add_special_tokens=False).ids),
        decode=lambda ids: str(tokenizer.decode(ids)),
        vocab_size=int(tokenizer.get_vocab_size(with_added_tokens=True)),
        special_ids=special)


def _from_transformers(path: Path) -> TextTokenizer:
    """A tokenizer's folder through ``transformers.AutoTokenizer``, offline."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    return TextTokenizer(
        encode=lambda text: list(tokenizer.encode(text, add_special_tokens=False)),
        decode=lambda ids: str(tokenizer.decode(ids)),
        vocab_size=len(tokenizer),
        special_ids=frozenset(int(i) for i in tokenizer.all_special_ids))


def _word_pool(tokenizer: TextTokenizer) -> tuple[str, ...]:
    """Words of ``tokenizer``'s vocabulary that are one token each, alone and after
    another word, up to :data:`_POOL_SIZE` of them, in a fixed pseudo-random order
    (the same for every run with this tokenizer)."""
    order = np.random.default_rng(0).permutation(tokenizer.vocab_size)[:_POOL_SCAN]
    words: dict[str, None] = {}
    for token in order.tolist():
        if token in tokenizer.special_ids:
            continue
        word = tokenizer.decode([token]).strip()
        if not (word.isascii() and word.isalpha()) or word in words:
            continue
        if tokenizer.count(word) == 1 and tokenizer.count(f"{word} {word}") == 2:
            words[word] = None
            if len(words) == _POOL_SIZE:
                break
    if len(words) < _MIN_POOL:
        raise ValueError(f"endpoint.tokenizer: only {len(words)} of its tokens are plain "
                         f"words of one token; prompts cannot be sized with it (give the "
                         f"model's own tokenizer, or none)")
    return tuple(words)


@dataclass(frozen=True)
class DatasetEntry:
    """One prompt of a dataset: its text (the messages' contents joined, for a chat),
    its messages when it came as a chat, and the output tokens it asks for (None: the
    run's exp.output_tokens)."""

    text: str
    messages: tuple[Mapping[str, str], ...] | None = None
    output_tokens: int | None = None


def read_dataset(path: str | Path, tokenizer: TextTokenizer | None = None
                 ) -> list[DatasetEntry]:
    """The prompts of ``path`` (``endpoint.dataset``): ShareGPT JSON when the file
    starts with ``[``, else JSON lines. A ShareGPT answer's length is counted by
    ``tokenizer``, or in words without one. ValueError naming endpoint.dataset (and
    the line or entry) when the file cannot be used."""
    shown = safe_text(str(path))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"endpoint.dataset: {shown} cannot be read as UTF-8 text "
                         f"({type(error).__name__})") from error
    if text.lstrip().startswith("["):
        entries = _sharegpt(text, shown, tokenizer)
    else:
        entries = _jsonl(text, shown)
    if not entries:
        raise ValueError(f"endpoint.dataset: {shown} holds no prompt (ShareGPT JSON with a "
                         f"human message, or JSON lines with `prompt` or `messages`)")
    return entries


def _sharegpt(text: str, shown: str, tokenizer: TextTokenizer | None) -> list[DatasetEntry]:
    """ShareGPT: the first human message of each conversation and, when an answer
    follows it, that answer's length; conversations with no human message are left
    out (the published files have some)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"endpoint.dataset: {shown} line {error.lineno}: not JSON "
                         f"({error.msg})") from error
    entries = []
    for number, item in enumerate(data, start=1):
        turns = item.get("conversations") if isinstance(item, dict) else None
        if not isinstance(turns, list):
            raise ValueError(f"endpoint.dataset: {shown} entry {number}: not a ShareGPT "
                             f"conversation (an object with a `conversations` list)")
        prompt, answer = _first_exchange(turns, shown, number)
        if prompt is None:
            continue
        length = None
        if answer:
            length = max(1, tokenizer.count(answer) if tokenizer else len(answer.split()))
        entries.append(DatasetEntry(prompt, None, length))
    return entries


def _first_exchange(turns: list[Any], shown: str, number: int
                    ) -> tuple[str | None, str | None]:
    """The first human message of a ShareGPT conversation and the answer after it."""
    prompt: str | None = None
    for turn in turns:
        if not (isinstance(turn, dict) and isinstance(turn.get("value"), str)):
            raise ValueError(f"endpoint.dataset: {shown} entry {number}: each message needs "
                             f"`from` and a text `value`")
        speaker = turn.get("from")
        if prompt is None and speaker in ("human", "user") and turn["value"].strip():
            prompt = turn["value"]
        elif prompt is not None and speaker in ("gpt", "assistant", "chatgpt", "bing", "bard"):
            return prompt, turn["value"]
    return prompt, None


def _jsonl(text: str, shown: str) -> list[DatasetEntry]:
    """JSON lines of ``prompt`` or ``messages``, with an optional ``output_tokens``."""
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"endpoint.dataset: {shown} line {number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: not JSON ({error.msg})") from error
        if not isinstance(item, dict):
            raise ValueError(f"{where}: not an object with `prompt` or `messages`")
        output = item.get("output_tokens")
        if output is not None and not (type(output) is int and output >= 1):
            raise ValueError(f"{where}: `output_tokens` must be a whole number >= 1")
        if isinstance(item.get("prompt"), str) and item["prompt"]:
            entries.append(DatasetEntry(item["prompt"], None, output))
        elif isinstance(item.get("messages"), list) and item["messages"]:
            messages = tuple(_message(m, where) for m in item["messages"])
            joined = "\n\n".join(m["content"] for m in messages)
            entries.append(DatasetEntry(joined, messages, output))
        else:
            raise ValueError(f"{where}: needs a non-empty `prompt` text or `messages` list")
    return entries


def _message(item: Any, where: str) -> dict[str, str]:
    """One chat message of a JSON line: a role and a text content."""
    if not (isinstance(item, dict) and isinstance(item.get("role"), str)
            and isinstance(item.get("content"), str)):
        raise ValueError(f"{where}: each message needs a `role` and a text `content`")
    return {"role": item["role"], "content": item["content"]}


class PromptSource:
    """Each request's :class:`~dlbench.frameworks.endpoint.requests.Prompt`, by its
    number: synthetic prompts of exact lengths, or a dataset's.

    >>> source = PromptSource(prompt_tokens=6, output_tokens=16, seed=1)
    >>> prompt = source.prompt(0)
    >>> len(prompt.text.split()), prompt.max_tokens, prompt.prompt_tokens
    (6, 16, None)
    >>> source.prompt(0) == prompt, source.prompt(1).text.split()[0] != prompt.text.split()[0]
    (True, True)
    """

    def __init__(self, prompt_tokens: int, output_tokens: int, *, prompt_tokens_sd: float = 0.0,
                 output_tokens_sd: float = 0.0, seed: int = 0,
                 tokenizer: TextTokenizer | None = None,
                 dataset: Sequence[DatasetEntry] | None = None) -> None:
        if prompt_tokens < 1 or output_tokens < 1:
            raise ValueError("prompts need at least one prompt token and one output token")
        self.prompt_tokens = prompt_tokens
        self.output_tokens = output_tokens
        self.prompt_tokens_sd = prompt_tokens_sd
        self.output_tokens_sd = output_tokens_sd
        self.seed = seed % 2**63  # a seed sequence takes no negative entropy
        self.tokenizer = tokenizer
        self.words = _word_pool(tokenizer) if tokenizer is not None else _FALLBACK_WORDS
        self.dataset = list(dataset) if dataset is not None else None
        if self.dataset is not None and not self.dataset:
            raise ValueError("endpoint.dataset: the dataset holds no prompt")
        self._order: list[int] = []

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> PromptSource:
        """The prompts of an endpoint experiment's parameters (``exp.prompt_tokens``,
        ``exp.output_tokens``, ``endpoint.prompt_tokens_sd``, ``endpoint.output_tokens_sd``,
        ``endpoint.seed``, ``endpoint.tokenizer``, ``endpoint.dataset``)."""
        tokenizer = load_tokenizer(params["endpoint.tokenizer"]) \
            if params.get("endpoint.tokenizer") else None
        dataset = read_dataset(params["endpoint.dataset"], tokenizer) \
            if params.get("endpoint.dataset") else None
        return cls(int(params["exp.prompt_tokens"]), int(params["exp.output_tokens"]),
                   prompt_tokens_sd=float(params.get("endpoint.prompt_tokens_sd", 0.0)),
                   output_tokens_sd=float(params.get("endpoint.output_tokens_sd", 0.0)),
                   seed=int(params.get("endpoint.seed", 0)), tokenizer=tokenizer,
                   dataset=dataset)

    def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` by the client's tokenizer; None without one."""
        return self.tokenizer.count(text) if self.tokenizer is not None else None

    @property
    def token_counter(self) -> Callable[[str], int] | None:
        """The client tokenizer's count as a function (what the client takes to count
        an answer's tokens); None without a tokenizer."""
        return self.tokenizer.count if self.tokenizer is not None else None

    def prompt(self, index: int) -> Prompt:
        """Request ``index``'s prompt (the same for the same index and seed)."""
        if self.dataset is not None:
            return self._dataset_prompt(index)
        length = self._length(self.prompt_tokens, self.prompt_tokens_sd, _PROMPT_LEN, index)
        words = self._numbered(index, length, self._rng(_TEXT, index))
        text, tokens = self._sized(words, length, self._rng(_FILL, index))
        return Prompt(text, self.max_tokens(index), tokens)

    def max_tokens(self, index: int) -> int:
        """The output tokens request ``index`` asks for (a dataset's entry may say)."""
        return self._length(self.output_tokens, self.output_tokens_sd, _OUTPUT_LEN, index)

    def trace_prompt(self, index: int, input_tokens: int, output_tokens: int,
                     hash_ids: Sequence[int] = ()) -> Prompt:
        """A replayed trace's request ``index``: ``input_tokens`` tokens made of the
        blocks of ``hash_ids`` in order (each :data:`BLOCK_TOKENS` tokens, the same text
        for the same id in every request, so they are shared prefixes; the last one cut
        to length), then text of this request's own when the blocks fall short."""
        words: list[str] = []
        for block in hash_ids:
            if len(words) >= input_tokens:
                break
            words.extend(self._draw(self._rng(_BLOCK, block), BLOCK_TOKENS))
        del words[input_tokens:]
        if len(words) < input_tokens:
            rest = self._numbered(index, input_tokens - len(words), self._rng(_TEXT, index))
            words.extend(rest)
        text, tokens = self._sized(words, input_tokens, self._rng(_FILL, index))
        return Prompt(text, output_tokens, tokens)

    def conversation(self, session: int, turns: int) -> Conversation:
        """A new conversation of ``turns`` turns, numbered ``session``, whose turns
        :class:`Conversation` gives one by one."""
        return Conversation(self, session, turns)

    def user_message(self, session: int, turn: int, turns: int) -> tuple[str, int]:
        """The new user message of ``turn`` of conversation ``session`` (of ``turns``)
        and the output tokens that turn asks for: a dataset's entry (consecutive
        entries for consecutive turns), or synthetic text of exp.prompt_tokens (± sd)
        tokens, the first turn starting with the session's number."""
        key = (session, turn)
        if self.dataset is not None:
            entry = self._entry(session * turns + turn)
            return entry.text, entry.output_tokens or self._length(
                self.output_tokens, self.output_tokens_sd, _OUTPUT_LEN, *key)
        length = self._length(self.prompt_tokens, self.prompt_tokens_sd, _PROMPT_LEN, *key)
        rng = self._rng(_TURN, *key)
        words = self._numbered(session, length, rng) if turn == 0 else self._draw(rng, length)
        text, _ = self._sized(words, length, self._rng(_FILL, *key))
        return text, self._length(self.output_tokens, self.output_tokens_sd, _OUTPUT_LEN, *key)

    def _dataset_prompt(self, index: int) -> Prompt:
        """Request ``index``'s prompt from the dataset, in the seeded order."""
        entry = self._entry(index)
        return Prompt(entry.text, entry.output_tokens or self.max_tokens(index),
                      self.count_tokens(entry.text), entry.messages)

    def _entry(self, index: int) -> DatasetEntry:
        """The dataset's entry for ``index``: a seeded order, repeated."""
        assert self.dataset is not None
        if not self._order:
            rng = np.random.default_rng([self.seed, _ORDER])
            self._order = rng.permutation(len(self.dataset)).tolist()
        return self.dataset[self._order[index % len(self._order)]]

    def _rng(self, stream: int, *key: int) -> np.random.Generator:
        """A generator of its own for one stream and one request (or block)."""
        return np.random.default_rng([self.seed, stream, *(k % 2**63 for k in key)])

    def _length(self, mean: int, sd: float, stream: int, *key: int) -> int:
        """``mean``, or a normal draw around it rounded and at least 1."""
        if sd <= 0:
            return mean
        return max(1, round(float(self._rng(stream, *key).normal(mean, sd))))

    def _draw(self, rng: np.random.Generator, count: int) -> list[str]:
        """``count`` words of the pool at random."""
        return [self.words[i] for i in rng.integers(len(self.words), size=count).tolist()]

    def _numbered(self, number: int, count: int, rng: np.random.Generator) -> list[str]:
        """``count`` words: ``number``'s digits in base len(pool), least significant
        first (so neighbours differ in the first word), then random words."""
        base = len(self.words)
        digits = []
        for _ in range(min(_NUMBER_WORDS, count)):
            number, digit = divmod(number, base)
            digits.append(self.words[digit])
        return digits + self._draw(rng, count - len(digits))

    def _sized(self, words: list[str], length: int, rng: np.random.Generator
               ) -> tuple[str, int | None]:
        """The words as text of exactly ``length`` tokens and that count; without a
        tokenizer, the words joined and None. The words are one token each, so the
        first text is nearly always exact; otherwise its tokens are cut, or words
        added, until it is. RuntimeError when that does not converge."""
        text = " ".join(words)
        if self.tokenizer is None:
            return text, None
        for _ in range(_FIX_ROUNDS):
            ids = self.tokenizer.encode(text)
            if len(ids) == length:
                return text, length
            if len(ids) > length:
                text = self.tokenizer.decode(ids[:length])
            else:
                text = " ".join([text, *self._draw(rng, length - len(ids))])
        raise RuntimeError(f"endpoint.tokenizer: no text of exactly {length} tokens was found "
                           f"in {_FIX_ROUNDS} rounds")


class Conversation:
    """One multi-turn conversation: each turn resends every message so far (the user's
    and the server's answers, a shared prefix) with a new user message.

    >>> talk = PromptSource(prompt_tokens=3, output_tokens=8).conversation(5, turns=2)
    >>> first = talk.next_prompt(); talk.add_answer("an answer")
    >>> second = talk.next_prompt()
    >>> [m["role"] for m in second.messages], second.turn, second.session
    (['user', 'assistant', 'user'], 1, 5)
    """

    def __init__(self, source: PromptSource, session: int, turns: int) -> None:
        self.source = source
        self.session = session
        self.turns = turns
        self.turn = 0
        self.messages: list[dict[str, str]] = []

    def next_prompt(self) -> Prompt:
        """The next turn: the conversation so far plus a new user message (the text,
        for the ``completions`` API, is every message joined by blank lines)."""
        text, max_tokens = self.source.user_message(self.session, self.turn, self.turns)
        self.messages.append({"role": "user", "content": text})
        joined = "\n\n".join(m["content"] for m in self.messages)
        prompt = Prompt(joined, max_tokens, self.source.count_tokens(joined),
                        tuple(dict(m) for m in self.messages), self.session, self.turn)
        self.turn += 1
        return prompt

    def add_answer(self, text: str) -> None:
        """The server's answer to the last turn, resent with the next."""
        self.messages.append({"role": "assistant", "content": text})

