"""The live status of a running experiment: reading progress lines from a growing log,
redrawing one line on a terminal or printing plain lines, silences, copies."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from dlbench.errors import ConfigError
from dlbench.launch.live import LiveStatus, LogTail, Watch, plain_seconds
from dlbench.launch.progress_bar import format_clock
from dlbench.results.log.file import LogWriter

_EXP = {"exp.timeout": "auto", "exp.num_warmup_batches": 2, "exp.num_batches": 10,
        "exp.max_warmup_batches": 50, "exp.max_duration": 60.0}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _progress(path: Path, **value: Any) -> None:
    with LogWriter(path) as log:
        log.write("results.progress", value)


def test_tail_reads_only_new_complete_progress_lines(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    tail = LogTail(path)
    assert tail.read() == []  # no log yet
    _progress(path, phase="setup")
    with path.open("a") as log:
        log.write("framework output\n__results.progress__={not json}\n__exp.model__=\"x\"\n")
        log.write('__results.progress__={"phase": "warmup", "do')  # being written
    assert tail.read() == [{"phase": "setup"}]
    with path.open("a") as log:
        log.write('ne": 1}\n')
    assert tail.read() == [{"phase": "warmup", "done": 1}]
    assert tail.read() == []


def test_terminal_redraws_one_line_in_place_and_clears_it() -> None:
    terminal, lines = io.StringIO(), []
    status = LiveStatus(lines.append, terminal, interval=30.0)
    status.show("running 1/2: x — set-up, 0:01 elapsed", 0.0)
    status.show("running 1/2: x — set-up, 0:01 elapsed", 0.5)  # unchanged: not redrawn
    status.show("running 1/2: user.tag=a\x1b[2J — warm-up 1/2, 0:02 elapsed", 1.0)
    status.wrap(lines.append)("[####] 1/2 ok")
    assert terminal.getvalue() == (
        "\rrunning 1/2: x — set-up, 0:01 elapsed\x1b[K"
        "\rrunning 1/2: user.tag=a\\x1b[2J — warm-up 1/2, 0:02 elapsed\x1b[K"
        "\r\x1b[K")
    assert lines == ["[####] 1/2 ok"]
    status.show("x" * 200, 2.0)
    assert terminal.getvalue().endswith("\r" + "x" * 78 + "…\x1b[K")  # never wraps


def test_plain_lines_come_at_a_modest_rate_and_at_phase_changes() -> None:
    lines: list[str] = []
    status = LiveStatus(lines.append, None, interval=30.0)
    status.begin(0.0)
    status.show("set-up", 1.0, phase_changed=True)  # a short experiment prints none
    status.show("warm-up", 20.0, phase_changed=True)
    status.show("warm-up 1/2", 31.0)
    status.show("warm-up 2/2", 40.0)
    status.show("timed 0/10", 45.0, phase_changed=True)
    status.show("timed 5/10", 70.0)
    status.show("timed 9/10", 76.0)
    assert lines == ["warm-up 1/2", "timed 0/10", "timed 9/10"]
    quiet: list[str] = []
    LiveStatus(quiet.append, None, interval=0.0).show("x", 100.0, phase_changed=True)
    assert quiet == []


def test_plain_seconds_from_the_environment() -> None:
    assert plain_seconds({}) == 30.0 and plain_seconds({"DLBENCH_PROGRESS_SECONDS": "5"}) == 5
    for bad in ("soon", "-1", "nan"):
        with pytest.raises(ConfigError, match=r"^DLBENCH_PROGRESS_SECONDS='.*': expected "
                                              r"seconds .* >= 0"):
            plain_seconds({"DLBENCH_PROGRESS_SECONDS": bad})


def test_format_clock() -> None:
    assert [format_clock(s) for s in (0, 41.7, 725, 3723)] == ["0:00", "0:41", "12:05",
                                                               "1:02:03"]


def test_watch_shows_progress_says_silence_once_and_times_out(tmp_path: Path) -> None:
    log, clock, lines = tmp_path / "x.log", Clock(), []
    watch = Watch(LiveStatus(lines.append, None, interval=10.0), "2/3: exp.model=m",
                  [(_EXP, log)], clock)
    clock.now += 11
    watch.poll()
    assert lines == ["running 2/3: exp.model=m — starting, 0:11 elapsed"]
    _progress(log, phase="timed", batch=6, done=4, total=10, elapsed=2.0, samples=64.0,
              unit="images/s")
    clock.now += 1
    watch.poll()  # a phase change, after a plain line: shown at once
    assert lines[-1] == ("running 2/3: exp.model=m — timed 4/10, 32.00 images/s so far, "
                         "0:12 elapsed")
    assert not watch.expired()
    clock.now += 59.9
    watch.poll()
    assert not any("no progress" in line for line in lines)
    clock.now += 0.2
    watch.poll()
    clock.now += 1
    watch.poll()
    assert [line for line in lines if "no progress" in line] == [
        "2/3: exp.model=m: no progress for 1:00 (last: timed 4/10 at batch 6)"]
    # The deadline: 2 x (6 batches left at 0.5 s) + 120 s = 126 s after the last line.
    clock.now += 64.8
    assert not watch.expired()
    clock.now += 0.2
    assert watch.expired()


def test_watch_sums_copies_and_shows_the_one_behind(tmp_path: Path) -> None:
    logs, clock, lines = [tmp_path / "a.log", tmp_path / "b.log"], Clock(), []
    watch = Watch(LiveStatus(lines.append, None, interval=1.0), "1/1: x",
                  [(_EXP, logs[0]), (_EXP, logs[1])], clock)
    base = {"phase": "timed", "total": 10, "elapsed": 2.0, "unit": "samples/s"}
    _progress(logs[0], **base, done=5, samples=50.0)
    _progress(logs[1], **base, done=3, samples=30.0)
    clock.now += 2
    watch.poll()
    assert lines == ["running 1/1: x — 2 copies, slowest at timed 3/10, 40.00 samples/s so "
                     "far, 0:02 elapsed"]
