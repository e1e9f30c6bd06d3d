"""Control characters and escape sequences from users and workers are shown escaped,
never sent to the terminal: the helper, tables, progress lines, error lines."""

from __future__ import annotations

import pytest

from dlbench.cli.main import main
from dlbench.launch.progress_bar import Progress
from dlbench.launch.sweep import Outcome
from dlbench.results.text_table import format_table
from dlbench.textsafe import safe_text


@pytest.mark.parametrize(("raw", "shown"), [
    ("resnet50", "resnet50"),
    ("naïve 中文 ✓", "naïve 中文 ✓"),               # printable non-ASCII is kept
    ("a\x1b[2Jb", "a\\x1b[2Jb"),                    # clear screen
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),     # window title, BEL
    ("one\ntwo\r\tthree", "one\\ntwo\\r\\tthree"),
    ("\x00\x7f\x9b", "\\x00\\x7f\\x9b"),            # NUL, DEL, C1 CSI
    ("abc\u202edcba", "abc\\u202edcba"),           # right-to-left override
    ("line\u2028sep", "line\\u2028sep"),
    ("C:\\path", "C:\\path"),                       # a backslash stays as it is
])
def test_safe_text_known_answers(raw: str, shown: str) -> None:
    assert safe_text(raw) == shown
    assert safe_text(shown) == shown  # escaping twice changes nothing more


def test_tables_escape_cells_and_headers_but_csv_keeps_data() -> None:
    rows = [{"exp.model": "evil\x1b[31m", "user.note": "a\u202eb"}]
    for fmt in ("text", "markdown"):
        text = "\n".join(format_table(rows, ["exp.model", "user.note"], fmt=fmt))
        assert "\x1b" not in text and "\u202e" not in text
        assert "evil\\x1b[31m" in text and "a\\u202eb" in text
    csv_lines = format_table(rows, ["exp.model"], fmt="csv")
    assert csv_lines[1] == "evil\x1b[31m"


def test_progress_line_escapes_values_and_messages() -> None:
    lines: list[str] = []
    progress = Progress(2, lines.append, ["user.tag"])
    progress.done(Outcome({"user.tag": "x\x1b[2J", "exp.status": "failure",
                           "exp.status_msg": "boom\x1b]0;pwned\x07\nnext"}, ran=True))
    (line,) = lines
    assert "\x1b" not in line and "\n" not in line and "\x07" not in line
    assert "user.tag=x\\x1b[2J" in line and "boom\\x1b]0;pwned\\x07\\nnext" in line


def test_progress_line_keeps_the_start_of_a_long_message() -> None:
    lines: list[str] = []
    message = "worker killed by SIGKILL in the timed batches at batch 7: " + "x" * 500
    Progress(1, lines.append, []).done(Outcome(
        {"exp.model": "m", "exp.status": "failure", "exp.status_msg": message}, ran=True))
    assert "at batch 7" in lines[0] and "…" in lines[0]
    assert len(lines[0]) < 400


def test_error_line_escapes_what_the_user_typed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--format", "x\x1b[2J\ny"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err
    assert "x\\x1b[2J\\ny" in err
