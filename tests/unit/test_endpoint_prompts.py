"""What endpoint requests say (frameworks/endpoint/prompts.py): prompts of exact token
lengths with tokenizers trained here on a small made-up text (nothing downloaded),
the word fallback without one, and the datasets' formats and errors."""

from __future__ import annotations

import doctest
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from dlbench.frameworks.endpoint import prompts
from dlbench.frameworks.endpoint.prompts import (
    BLOCK_TOKENS,
    PromptSource,
    TextTokenizer,
    load_tokenizer,
    read_dataset,
)

#: Made-up words, and their forms, of the training text.
STEMS = ["alpha", "brio", "cadmus", "delta", "ember", "fjord", "gamut", "helix", "iris",
         "jolt", "kelp", "lumen", "myrrh", "nadir", "onyx", "prism", "quartz", "rune"]
ENDINGS = ["", "s", "ed", "ing", "er"]


def corpus() -> list[str]:
    """A few hundred lines of the made-up words, with punctuation and digits."""
    words = [s + e for s, e in itertools.product(STEMS, ENDINGS)]
    rng = np.random.default_rng(0)
    return [" ".join(rng.choice(words, size=20).tolist()) + ", 42. ok!" for _ in range(400)]


def train(kind: str, folder: Path) -> Path:
    """A tokenizer.json of ``kind``: byte-level BPE (GPT-2's kind), BPE over a
    metaspace (Llama's and sentencepiece's kind) or word-level."""
    special = ["<unk>", "<s>", "</s>"]
    if kind == "wordlevel":
        tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
        tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer: Any = trainers.WordLevelTrainer(special_tokens=special)
    elif kind == "bytelevel":
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=special,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
        tokenizer.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=special)
    tokenizer.train_from_iterator(corpus(), trainer)
    path = folder / f"{kind}.json"
    tokenizer.save(str(path))
    return path


@pytest.fixture(scope="module", params=["bytelevel", "metaspace", "wordlevel"])
def tokenizer_file(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                   ) -> Path:
    return train(request.param, tmp_path_factory.mktemp("tok"))


def server_count(path: Path, text: str) -> int:
    """Prompt tokens as a server counts them with the same tokenizer (no BOS added)."""
    return len(Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids)


# --- synthetic prompts ------------------------------------------------------------------


def test_prompts_are_exactly_as_long_as_asked(tokenizer_file: Path) -> None:
    source = PromptSource(37, 5, tokenizer=load_tokenizer(tokenizer_file), seed=3)
    for index in range(20):
        prompt = source.prompt(index)
        assert prompt.prompt_tokens == 37 == server_count(tokenizer_file, prompt.text)
        assert prompt.max_tokens == 5
    for length in (1, 2, 4, 5, 700):
        prompt = PromptSource(length, 1, tokenizer=load_tokenizer(tokenizer_file)).prompt(7)
        assert prompt.prompt_tokens == length == server_count(tokenizer_file, prompt.text)


def test_lengths_spread_around_the_mean_as_asked(tokenizer_file: Path) -> None:
    source = PromptSource(60, 30, prompt_tokens_sd=15, output_tokens_sd=40, seed=1,
                          tokenizer=load_tokenizer(tokenizer_file))
    prompts = [source.prompt(i) for i in range(300)]
    lengths = [p.prompt_tokens for p in prompts]
    assert all(server_count(tokenizer_file, p.text) == p.prompt_tokens for p in prompts[:40])
    assert np.mean(lengths) == pytest.approx(60, abs=3)
    assert np.std(lengths) == pytest.approx(15, rel=0.15)
    outputs = [p.max_tokens for p in prompts]
    assert min(outputs) == 1  # clipped: sd 40 around 30 goes below 1 often
    assert outputs == [source.prompt(i).max_tokens for i in range(300)]  # seeded


def test_prompts_differ_from_their_first_token(tokenizer_file: Path) -> None:
    tokenizer = load_tokenizer(tokenizer_file)
    source = PromptSource(16, 4, tokenizer=tokenizer)
    firsts = [tokenizer.encode(source.prompt(i).text)[:4] for i in range(300)]
    assert len({tuple(f) for f in firsts}) == 300
    pool = len(source.words)
    assert len({f[0] for f in firsts[:pool]}) == min(pool, 300)


def test_prompts_depend_on_seed_and_index_only(tokenizer_file: Path) -> None:
    tokenizer = load_tokenizer(tokenizer_file)
    one, two = PromptSource(20, 4, seed=8, tokenizer=tokenizer), \
        PromptSource(20, 4, seed=8, tokenizer=tokenizer)
    assert [one.prompt(i) for i in (5, 1, 3)] == [two.prompt(i) for i in (5, 1, 3)]
    other = PromptSource(20, 4, seed=9, tokenizer=tokenizer)
    assert one.prompt(5).text != other.prompt(5).text


def test_without_a_tokenizer_prompts_are_words_of_unknown_count() -> None:
    source = PromptSource(50, 9)
    prompt = source.prompt(3)
    assert len(prompt.text.split()) == 50
    assert prompt.prompt_tokens is None and source.count_tokens("a b") is None
    firsts = {source.prompt(i).text.split()[0] for i in range(len(source.words))}
    assert len(firsts) == len(source.words)  # no word is listed twice


def test_trace_blocks_are_shared_prefixes_of_exact_length(tokenizer_file: Path) -> None:
    tokenizer = load_tokenizer(tokenizer_file)
    source = PromptSource(8, 4, tokenizer=tokenizer)
    a = source.trace_prompt(0, 600, 7, [10, 11])
    b = source.trace_prompt(1, 1100, 9, [10, 12, 13])
    c = source.trace_prompt(2, 300, 2, [10])
    d = source.trace_prompt(3, 40, 2)
    for prompt, length in ((a, 600), (b, 1100), (c, 300), (d, 40)):
        assert prompt.prompt_tokens == length == server_count(tokenizer_file, prompt.text)
    ids_a, ids_b, ids_c = (tokenizer.encode(p.text) for p in (a, b, c))
    assert ids_a[:BLOCK_TOKENS - 1] == ids_b[:BLOCK_TOKENS - 1]
    assert ids_c[:299] == ids_a[:299]
    assert ids_a[BLOCK_TOKENS + 1:] != ids_b[BLOCK_TOKENS + 1:600]
    assert (a.max_tokens, b.max_tokens) == (7, 9)


def test_a_conversation_resends_everything_so_far() -> None:
    source = PromptSource(5, 3, seed=2)
    talk = source.conversation(4, turns=3)
    first = talk.next_prompt()
    talk.add_answer("first answer")
    second = talk.next_prompt()
    assert (first.session, first.turn, second.turn) == (4, 0, 1)
    assert second.messages is not None and first.messages is not None
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user"]
    assert second.messages[0] == first.messages[0]
    assert second.messages[1]["content"] == "first answer"
    assert second.text == "\n\n".join(m["content"] for m in second.messages)
    assert len(second.messages[2]["content"].split()) == 5
    other = source.conversation(5, turns=3).next_prompt()
    assert other.text.split()[0] != first.text.split()[0]


def test_a_conversation_counts_its_whole_text(tokenizer_file: Path) -> None:
    source = PromptSource(12, 3, tokenizer=load_tokenizer(tokenizer_file))
    talk = source.conversation(0, turns=2)
    talk.next_prompt()
    talk.add_answer("alpha brio")
    prompt = talk.next_prompt()
    assert prompt.prompt_tokens == server_count(tokenizer_file, prompt.text)


# --- tokenizers -----------------------------------------------------------------------------


def test_a_tokenizer_folder_loads_through_transformers(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    path = train("wordlevel", tmp_path)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), unk_token="<unk>",
                                                bos_token="<s>", eos_token="</s>")
    fast.save_pretrained(tmp_path / "model")
    tokenizer = load_tokenizer(tmp_path / "model")
    prompt = PromptSource(33, 2, tokenizer=tokenizer).prompt(0)
    assert prompt.prompt_tokens == 33 == server_count(path, prompt.text)
    assert tokenizer.special_ids >= {fast.bos_token_id, fast.eos_token_id}
    assert not any(w in ("<s>", "</s>", "<unk>") for w in prompt.text.split())


def test_count_tokens_is_the_tokenizers_count(tokenizer_file: Path) -> None:
    source = PromptSource(4, 4, tokenizer=load_tokenizer(tokenizer_file))
    assert source.count_tokens("alpha brio") == server_count(tokenizer_file, "alpha brio")
    assert source.token_counter is not None
    assert source.token_counter("alpha brio") == source.count_tokens("alpha brio")
    assert PromptSource(4, 4).token_counter is None


def test_unusable_tokenizers_are_refused_in_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "tokenizer.json"
    broken.write_text("{not a tokenizer")
    for path in (tmp_path / "missing", broken):
        with pytest.raises(ValueError, match=r"^endpoint\.tokenizer: ") as error:
            load_tokenizer(path)
        assert "\n" not in str(error.value)
    tiny = Tokenizer(models.WordLevel({"<unk>": 0, "a": 1}, unk_token="<unk>"))
    tiny.pre_tokenizer = pre_tokenizers.Whitespace()
    tiny.save(str(tmp_path / "tiny.json"))
    with pytest.raises(ValueError, match="only 1 of its tokens"):
        PromptSource(4, 4, tokenizer=load_tokenizer(tmp_path / "tiny.json"))


def test_a_tokenizer_that_never_fits_is_refused() -> None:
    # Every text is one token longer than its words: no text has exactly 3 tokens...
    words = [f"w{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    vocab = {w: i for i, w in enumerate(words)}
    odd = TextTokenizer(encode=lambda t: [vocab.get(w, 0) for w in t.split()] + [0],
                        decode=lambda ids: " ".join(words[i] for i in ids), vocab_size=26)
    fair = TextTokenizer(encode=lambda t: [vocab.get(w, 0) for w in t.split()],
                         decode=lambda ids: " ".join(words[i] for i in ids), vocab_size=26)
    source = PromptSource(3, 1, tokenizer=fair)
    source.tokenizer = odd  # ...once its pool is made
    with pytest.raises(RuntimeError, match="no text of exactly 3 tokens"):
        source.prompt(0)


# --- datasets -------------------------------------------------------------------------------


def sharegpt(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def jsonl(tmp_path: Path, lines: list[Any]) -> Path:
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n"
                            for x in lines))
    return path


def test_sharegpt_gives_the_first_question_and_its_answers_length(tmp_path: Path) -> None:
    path = sharegpt(tmp_path, [
        {"id": "a", "conversations": [{"from": "human", "value": "What is a prism?"},
                                      {"from": "gpt", "value": "A solid with two faces."},
                                      {"from": "human", "value": "And a helix?"}]},
        {"id": "b", "conversations": [{"from": "gpt", "value": "I start."}]},
        {"id": "c", "conversations": [{"from": "human", "value": "Only a question"}]},
    ])
    entries = read_dataset(path)
    assert [(e.text, e.output_tokens) for e in entries] == \
        [("What is a prism?", 5), ("Only a question", None)]
    tokenizer_path = train("wordlevel", tmp_path)
    counted = read_dataset(path, load_tokenizer(tokenizer_path))
    assert counted[0].output_tokens == server_count(tokenizer_path, "A solid with two faces.")


def test_jsonl_gives_prompts_messages_and_lengths(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [
        {"prompt": "Tell me about onyx.", "output_tokens": 12},
        "",
        {"messages": [{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "Why?"}]},
    ])
    entries = read_dataset(path)
    assert entries[0].text == "Tell me about onyx." and entries[0].output_tokens == 12
    assert entries[1].messages == ({"role": "system", "content": "Be brief."},
                                   {"role": "user", "content": "Why?"})
    assert entries[1].text == "Be brief.\n\nWhy?" and entries[1].output_tokens is None


def test_dataset_prompts_take_every_entry_in_a_seeded_order(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [{"prompt": f"question {i}"} for i in range(10)]
                 + [{"prompt": "long", "output_tokens": 99}])
    source = PromptSource(8, 6, seed=4, dataset=read_dataset(path))
    texts = [source.prompt(i).text for i in range(11)]
    assert sorted(texts) == sorted([f"question {i}" for i in range(10)] + ["long"])
    assert texts != [f"question {i}" for i in range(10)] + ["long"]
    assert [source.prompt(i + 11).text for i in range(11)] == texts  # then again
    lengths = {source.prompt(i).text: source.prompt(i).max_tokens for i in range(11)}
    assert lengths["long"] == 99 and lengths["question 3"] == 6
    chat = PromptSource(8, 6, dataset=read_dataset(jsonl(tmp_path, [
        {"messages": [{"role": "user", "content": "hi"}]}])))
    assert chat.prompt(0).messages == ({"role": "user", "content": "hi"},)


@pytest.mark.parametrize(("lines", "message"), [
    (['{"prompt": "ok"}', "{broken"], "line 2: not JSON"),
    (['"just text"'], "line 1: not an object"),
    ([{"prompt": "ok", "output_tokens": 0}], "line 1: `output_tokens` must be"),
    ([{"prompt": "ok", "output_tokens": 2.5}], "line 1: `output_tokens` must be"),
    ([{"text": "no prompt"}], "line 1: needs a non-empty `prompt`"),
    ([{"prompt": ""}], "line 1: needs a non-empty `prompt`"),
    ([{"messages": [{"role": "user"}]}], "line 1: each message needs"),
    ([""], "holds no prompt"),
])
def test_bad_jsonl_is_refused_naming_the_line(tmp_path: Path, lines: list[Any],
                                              message: str) -> None:
    with pytest.raises(ValueError, match=r"^endpoint\.dataset: ") as error:
        read_dataset(jsonl(tmp_path, lines))
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(("text", "message"), [
    ('[{"conversations": []},\n {"conversations": [}]', "line 2: not JSON"),
    ('[{"conversations": []}, "text"]', "entry 2: not a ShareGPT conversation"),
    ('[{"conversations": [{"from": "human"}]}]', "entry 1: each message needs"),
    ('[{"conversations": [{"from": "gpt", "value": "hello"}]}]', "holds no prompt"),
])
def test_bad_sharegpt_is_refused_naming_the_entry(tmp_path: Path, text: str,
                                                  message: str) -> None:
    path = tmp_path / "sharegpt.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"^endpoint\.dataset: ") as error:
        read_dataset(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_an_unreadable_dataset_is_refused(tmp_path: Path) -> None:
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\xff\xfe\x00")
    for path in (tmp_path / "missing.jsonl", binary):
        with pytest.raises(ValueError, match=r"^endpoint\.dataset: .* cannot be read"):
            read_dataset(path)


def test_from_params_builds_the_experiments_prompts(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [{"prompt": "hello there"}])
    params = {"exp.prompt_tokens": 10, "exp.output_tokens": 20, "endpoint.prompt_tokens_sd": 0.0,
              "endpoint.output_tokens_sd": 0.0, "endpoint.seed": -3,
              "endpoint.tokenizer": str(train("wordlevel", tmp_path)), "endpoint.dataset": ""}
    source = PromptSource.from_params(params)
    assert source.prompt(0).prompt_tokens == 10 and source.prompt(0).max_tokens == 20
    source = PromptSource.from_params({**params, "endpoint.dataset": str(path),
                                       "endpoint.tokenizer": ""})
    assert source.prompt(0).text == "hello there" and source.prompt(0).prompt_tokens is None


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(prompts).failed == 0
