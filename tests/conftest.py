"""Shared fixtures: run the real command line in a subprocess, as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Writing an undeclared results.*, sys.* or hw.* key fails under test, in this process
# and in every worker it starts (dlbench.results.keys.lookup.check_key).
os.environ["DLBENCH_STRICT_KEYS"] = "1"
# The suite runs on the CPU: on a machine with GPUs, JAX used in this process (and in
# several of them under pytest-xdist) would each take 75% of a GPU's memory.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# The tests of Ctrl-C need SIGINT to interrupt, here and in the runs they start: a shell
# that starts the suite in the background (``pytest &``) hands it down ignored, and a
# signal ignored stays ignored in every child (one handled is reset to the default).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

CliRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def dlbench(tmp_path: Path) -> CliRunner:
    """Run ``python -m dlbench ARGS...`` in ``tmp_path``; returns the completed process."""

    def run(
        *args: str, timeout: float = 300, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dlbench", *args],
            cwd=cwd or tmp_path,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture
def two_cores() -> Iterator[None]:
    """This process, and what it starts, on its first two usable CPUs: tests of copies
    "on a core each" then mean one core per copy on any machine (on 16 cores a copy
    would get 8, and with them 8 BLAS threads' buffers under its memory cap)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs two usable cores")
    os.sched_setaffinity(0, cores[:2])
    yield
    os.sched_setaffinity(0, cores)


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Tests that run models in this process use one thread: at test sizes a second
    buys nothing, and when other processes share the two cores, threads that wait for
    each other make a step many times slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_llm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight Llama and its tokenizer, built once per session
    (tests/endpoint_servers.py says how, and why each count it gives is exact)."""
    from tests.endpoint_servers import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny-llm"))


@pytest.fixture(scope="session")
def tiny_llm_server(tiny_llm_dir: Path) -> Iterator[str]:
    """``transformers serve`` of the tiny model, started once per session: its base URL
    (``http://127.0.0.1:PORT/v1``); the model's name is ``tiny_llm_dir.name``."""
    from tests.endpoint_servers import transformers_server

    with transformers_server(tiny_llm_dir) as url:
        yield url
