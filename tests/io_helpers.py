"""What several tests of user-facing errors and outputs share: the one error line a
command must print, and a reader on the other end of a FIFO."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest


def one_error_line(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    """The single ``dlbench: error:`` line on stderr, holding each of ``words``."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dlbench: error: "), captured.err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


class FifoReader:
    """Reads a FIFO in a thread until its writer closes it."""

    def __init__(self, path: Path) -> None:
        self.data = b""
        self._thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self._thread.start()

    def _read(self, path: Path) -> None:
        with open(path, "rb") as fifo:
            self.data = fifo.read()

    def join(self) -> bytes:
        self._thread.join(timeout=60)  # a guard only: a writer that never came
        assert not self._thread.is_alive()
        return self.data
