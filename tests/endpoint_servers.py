"""OpenAI-compatible servers for the endpoint tests, started as a user starts them.

Two kinds:

- ``transformers serve`` (Hugging Face Transformers' own server, the ``serving``
  extra) with a tiny random-weight Llama that :func:`make_tiny_model` builds on the
  spot: a word-level tokenizer trained here on a few hundred made-up words and a
  two-layer model. Nothing is downloaded; the server runs with the Hub offline.
- dlbench's scripted server (``python -m dlbench.frameworks.endpoint.scripted``),
  whose chunks come at the times its script gives.

Both are used the same way::

    with transformers_server(model_dir) as url:   # http://127.0.0.1:PORT/v1
        ...
    with scripted_server({"...": ...}) as url:
        ...

Each runs in its own process group on a port the system chose (``--port 0``: no race
for a free port), and is stopped, with everything it started, when the block ends.
Its output goes to a log file; when the block ends with an exception the log's path
and tail are attached to it, and the log is kept.

Why the tiny model is built the way it is (each choice makes a count exact):

- The tokenizer is word-level with a whitespace pre-tokenizer and no decoder, so the
  text of any sequence of its tokens is the words joined by single spaces, and
  encoding that text again gives the same tokens: the client's count of an answer
  equals the server's ``usage.completion_tokens``.
- It adds no special tokens when encoding, so a completions prompt of N tokens by the
  client's count is N prompt tokens at the server.
- The model never emits a special token (they are suppressed in its generation
  config): a random model would otherwise stop at a random end-of-sequence, and the
  server refuses ``ignore_eos``; so every answer has exactly ``max_tokens`` tokens.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

#: The name the server knows the tiny model by: the folder's name, served from its parent.
TINY_MODEL_NAME = "tiny-llama"
#: How many words the tokenizer knows besides its special tokens and template words.
TINY_VOCAB_WORDS = 300
#: The chat template: each message as ``role : content``, then ``assistant :``.
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}assistant :{% endif %}"
)
#: The packages of Transformers' ``serving`` extra that ``transformers serve`` imports.
SERVING_MODULES = ("fastapi", "uvicorn", "openai", "pydantic", "accelerate", "typer")

# uvicorn's line once it listens, with the port the system chose for --port 0.
_UVICORN_LISTENING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")
# The scripted server's first line of output.
_SCRIPTED_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+/v1)")


def tiny_words(count: int = TINY_VOCAB_WORDS, seed: int = 0) -> list[str]:
    """``count`` distinct made-up two-syllable words (``bako``, ``tire``, ...), the
    same for the same seed: the tiny tokenizer's vocabulary and the text of prompts.

    >>> words = tiny_words(5)
    >>> len(set(words)), all(len(w) == 4 and w.isalpha() for w in words)
    (5, True)
    """
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words = sorted({a + b for a in syllables for b in syllables})
    return random.Random(seed).sample(words, count)


def make_tiny_model(parent: Path, name: str = TINY_MODEL_NAME) -> Path:
    """Build the tiny model's folder ``parent/name`` (config, random weights, tokenizer
    with its chat template, generation config) and return it; a folder that is
    already complete is returned as it is."""
    folder = parent / name
    if (folder / "model.safetensors").exists() and (folder / "tokenizer.json").exists():
        return folder
    transformers = pytest.importorskip("transformers", reason="the tiny model needs the hf "
                                                              "extra (pip install -e '.[hf]')")
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    special = ["<unk>", "<s>", "</s>", "<pad>"]
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    # Each word once, in the given order (the trainer ranks ties by their order of
    # first appearance): the ids are the same on every machine.
    corpus = [*tiny_words(), "user", "assistant", "system", ":", ".", ","]
    tokenizer.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=special))
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
        pad_token="<pad>")
    fast.chat_template = TINY_CHAT_TEMPLATE
    ids = {"bos_token_id": fast.bos_token_id, "eos_token_id": fast.eos_token_id,
           "pad_token_id": fast.pad_token_id}
    # Heads of 32 dimensions, not hidden/heads = 16: vLLM's CPU attention has no kernel
    # for 16, and the same folder then serves there too.
    config = transformers.LlamaConfig(
        vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, head_dim=32,
        max_position_embeddings=4096, **ids)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    # Greedy, and never a special token: every answer is max_tokens words long.
    model.generation_config = transformers.GenerationConfig(
        do_sample=False, suppress_tokens=sorted(fast.all_special_ids), **ids)
    partial = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=parent))
    fast.save_pretrained(partial)
    model.save_pretrained(partial)
    with contextlib.suppress(OSError):  # another process finished it first: use theirs
        partial.rename(folder)
    shutil.rmtree(partial, ignore_errors=True)
    return folder


def count_tokens(model_dir: Path, text: str) -> int:
    """The tiny tokenizer's count of ``text``'s tokens, as a client counts them."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def serving_missing() -> str:
    """Why ``transformers serve`` cannot run here ("" when it can)."""
    missing = [m for m in ("transformers", *SERVING_MODULES) if importlib.util.find_spec(m) is None]
    if missing:
        return (f"transformers serve needs {', '.join(missing)} "
                "(pip install -e '.[serve-test]')")
    version = importlib.metadata.version("transformers")
    if int(version.split(".")[0]) < 5:  # its command line moved to transformers.cli in 5.0
        return f"transformers serve here needs Transformers 5 or later, not {version}"
    return ""


@contextlib.contextmanager
def transformers_server(
    model_dir: Path,
    *,
    continuous_batching: bool = False,
    extra_args: Sequence[str] = (),
    startup_timeout_s: float = 180.0,
) -> Iterator[str]:
    """``transformers serve`` of the local model folder ``model_dir`` on the CPU; yields
    its API's base URL, ``http://127.0.0.1:PORT/v1``. The model's name at the server is
    the folder's name (``model_dir.name``): the server is pinned to it and refuses any
    other. Skips the test when the ``serving`` extra is missing.

    Without ``continuous_batching`` the server generates for one request at a time
    (the others wait); with it, requests are batched, and the first one waits for its
    set-up (seconds on a CPU)."""
    reason = serving_missing()
    if reason:
        pytest.skip(reason)
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", model_dir.name,
               "--device", "cpu", "--host", "127.0.0.1", "--port", "0"]
    if continuous_batching:
        command.append("--continuous-batching")
    command.extend(extra_args)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1"}
    with _served(command, cwd=model_dir.parent, env=env, what="transformers serve",
                 timeout_s=startup_timeout_s, pattern=_UVICORN_LISTENING,
                 url=lambda port: f"http://127.0.0.1:{port}/v1") as url:
        yield url


@contextlib.contextmanager
def scripted_server(
    script: Mapping[str, Any] | Path,
    *,
    extra_args: Sequence[str] = (),
    startup_timeout_s: float = 60.0,
) -> Iterator[str]:
    """dlbench's scripted server playing ``script`` (a mapping, written to a JSON file
    for it, or the path of a script file); yields its base URL ``http://127.0.0.1:PORT/v1``."""
    with contextlib.ExitStack() as stack:
        if isinstance(script, Path):
            path = script
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="dlbench-script-"))
            path = Path(folder) / "script.json"
            path.write_text(json.dumps(script))
        command = [sys.executable, "-m", "dlbench.frameworks.endpoint.scripted", "--port", "0",
                   "--script", str(path), *extra_args]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)}
        with _served(command, cwd=REPO, env=env, what="the scripted server",
                     timeout_s=startup_timeout_s, pattern=_SCRIPTED_LISTENING,
                     url=lambda found: found) as url:
            yield url


@contextlib.contextmanager
def _served(
    command: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    what: str,
    timeout_s: float,
    pattern: re.Pattern[str],
    url: Callable[[str], str],
) -> Iterator[str]:
    """Run ``command`` in a new process group with its output in a log file; once a
    line of the log matches ``pattern`` and the server answers HTTP, yield the base URL
    (``url`` of the pattern's group). The group is ended (SIGTERM, then SIGKILL) when the
    block ends; the log is deleted then, unless the server failed to start or the block
    failed (a skip is no failure)."""
    folder = Path(tempfile.mkdtemp(prefix="dlbench-server-"))
    log_path = folder / "server.log"
    keep_log = False
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    started = False
    try:
        base = _wait_until_serving(process, log_path, what, timeout_s, pattern, url)
        started = True
        yield base
    except BaseException as error:
        keep_log = not isinstance(error, (pytest.skip.Exception, GeneratorExit))
        # A failure to start says where the log is itself; one in the block gets a note
        # (Python 3.11+), shown with the failure.
        if keep_log and started and hasattr(error, "add_note"):
            error.add_note(f"{what}'s log ({log_path}), its end:\n{_tail(log_path)}")
        raise
    finally:
        _stop(process)
        if not keep_log:
            shutil.rmtree(folder, ignore_errors=True)


def _wait_until_serving(
    process: subprocess.Popen[bytes],
    log_path: Path,
    what: str,
    timeout_s: float,
    pattern: re.Pattern[str],
    url: Callable[[str], str],
) -> str:
    """The base URL once the server answers ``GET /models`` (with any status: it is
    serving); fails the test when the process ends first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    base = ""
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with status {process.returncode} before it served; "
                        f"its log ({log_path}) ends:\n{_tail(log_path)}", pytrace=False)
        if not base:
            found = pattern.search(log_path.read_text(errors="replace"))
            base = url(found.group(1)) if found else ""
        if base and _answers(base + "/models"):
            return base
        time.sleep(0.05)
    pytest.fail(f"{what} did not serve within {timeout_s:.0f} s (startup_timeout_s); "
                f"its log ({log_path}) ends:\n{_tail(log_path)}", pytrace=False)


def _answers(url: str) -> bool:
    """Whether GET ``url`` gets an HTTP answer, whatever its status."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End the server's process group: SIGTERM, then, after the server exits or 10 s
    pass, SIGKILL for whatever of the group is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _tail(path: Path, chars: int = 3000) -> str:
    """The end of the log at ``path``."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError as error:
        return f"(unreadable: {error})"
