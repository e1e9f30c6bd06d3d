"""The runner's signals: Ctrl-C and SIGTERM interrupt, SIGUSR1 stops after the
current experiment, and once an experiment is being stopped further interrupts wait.

- SIGINT (Ctrl-C) and SIGTERM raise :class:`KeyboardInterrupt` in the runner, which
  stops the running worker, records its experiment as ``interrupted`` and ends the
  sweep.
- SIGUSR1 (``kill -USR1 <pid>``, as in DLBS) only asks: the running experiment
  finishes and is recorded, and no further one starts.
- From the first interrupt on, SIGINT and SIGTERM are only noted
  (:func:`hold_interrupts`): a second Ctrl-C while the worker is being stopped and
  its experiment recorded must not leave it half-recorded. Stopping takes at most
  the worker's grace period (3 s) before it is killed.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

#: Exit status after SIGUSR1: 128 plus the signal's number, the shell's convention
#: for "ended by this signal" (138 on Linux).
SIGUSR1_EXIT_STATUS = 128 + int(signal.SIGUSR1)


@dataclass
class SignalState:
    """What the signals asked for while a sweep ran."""

    stop_requested: bool = False
    _saved: dict[signal.Signals, Any] = field(default_factory=dict)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def sweep_signals() -> Iterator[SignalState]:
    """Install the runner's handlers for a sweep (SIGTERM as Ctrl-C, SIGUSR1 as a
    request to stop); the previous handlers come back at the end. Outside the main
    thread signals are left alone."""
    state = SignalState()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        state.stop_requested = True

    handlers = {signal.SIGTERM: _raise_interrupt, signal.SIGUSR1: request_stop}
    try:
        for signum, handler in handlers.items():
            state._saved[signum] = signal.signal(signum, handler)
        state._saved.setdefault(signal.SIGINT, signal.getsignal(signal.SIGINT))
    except ValueError:  # not the main thread
        yield state
        return
    try:
        yield state
    finally:
        for signum, previous in state._saved.items():
            signal.signal(signum, previous)


def hold_interrupts(state: SignalState | None) -> None:
    """From now until the sweep of ``state`` ends, Ctrl-C and SIGTERM are ignored, not
    raised (nothing happens outside a sweep)."""
    if state is None or not state._saved:
        return

    # A handler that does nothing, not SIG_IGN: an ignored signal stays ignored in the
    # children started afterwards, a Python handler does not survive their exec.
    def ignore(signum: int, frame: FrameType | None) -> None:
        pass

    try:
        signal.signal(signal.SIGINT, ignore)
        signal.signal(signal.SIGTERM, ignore)
    except ValueError:  # not the main thread
        pass
