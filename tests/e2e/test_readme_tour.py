"""The README's tour runs: every command is one dlbench accepts, a run that takes more
than seconds says how long, every folder a command reads is made by a run before it,
and the whole tour, its runs on the fake framework (seconds, not minutes), goes
through end to end and ends in a `compare` of two runs it made."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.conftest import CliRunner

README = Path(__file__).resolve().parents[2] / "README.md"
#: A stated duration: "about 20 s", "about 3 minutes".
DURATION = re.compile(r"\babout \d+ (s|minutes?)\b")


def tour() -> list[tuple[list[str], str]]:
    """(words after ``dlbench``, comment) of each command of the README's tour."""
    text = README.read_text()
    block = text.split("## A tour", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        comment = line.split(" # ", 1)[1] if " # " in line else ""
        assert words[0] == "dlbench", line
        commands.append((words[1:], comment))
    return commands


def test_every_run_states_its_duration_and_every_input_is_made_before() -> None:
    made: set[str] = set()
    commands = tour()
    assert len(commands) >= 10
    for words, comment in commands:
        if words[0] == "run":
            assert DURATION.search(comment), f"a run says how long it takes: {words}"
            made.add(words[words.index("--out") + 1])
            continue
        read = [words[i + 1] for i, w in enumerate(words) if w == "--input"]
        read += [w for w in words[1:] if w.startswith("runs/")] if words[0] in (
            "compare", "parse") else []
        for folder in read:
            assert folder.split("/logs")[0] in made, f"{words}: nothing before makes {folder}"
    compares = [words for words, _ in commands if words[0] == "compare"]
    assert compares and all(w in made for w in compares[0][1:3])


def test_the_tour_runs_end_to_end(dlbench: CliRunner, tmp_path: Path) -> None:
    for words, _ in tour():
        if words[:2] == ["run", "--suite"]:  # minutes of real models: its plan only
            words = ["plan", *words[1:words.index("--out")]]
        elif words[0] == "run":  # the same sweep on the fake framework: seconds
            words = [*words, "-P", "exp.framework=fake"]
        done = dlbench(*words)
        assert done.returncode == 0, (words, done.stderr)
        assert "Traceback" not in done.stderr
    for made in ("runs/before/results.sqlite", "runs/after/results.sqlite", "before.csv",
                 "before.html", "tour.png"):
        assert (tmp_path / made).stat().st_size > 0, made
