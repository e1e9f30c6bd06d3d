"""docs/regenerate: figures in the prose filled from the block they comment, and a
figure that drifted from it caught by ``--check``."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "regenerate"

PAGE = """\
# A page

```
$ dlbench report --input runs
exp.model      8      16
---------  -----  ------
resnet18   4.00  1,600.00
```
<!-- capture: ^resnet18 +(?P<t8>[\\d.]+) +(?P<tp16>[\\d,.]+)$ -->

Batch 8 gives 8 × 1000 / <!-- fig: t8 -->4.00<!-- /fig --> =
<!-- fig: 8 * 1000 / t8 -->0<!-- /fig --> samples/s, batch 16
<!-- fig: tp16 / (8 * 1000 / t8) | .3g -->?<!-- /fig --> times as many
(<!-- fig: tp16 -->1,000.0<!-- /fig -->).
"""

FILLED = [
    "Batch 8 gives 8 × 1000 / <!-- fig: t8 -->4.00<!-- /fig --> =",
    "<!-- fig: 8 * 1000 / t8 -->2000<!-- /fig --> samples/s, batch 16",
    "<!-- fig: tp16 / (8 * 1000 / t8) | .3g -->0.8<!-- /fig --> times as many",
    "(<!-- fig: tp16 -->1,600.0<!-- /fig -->).",
]


@pytest.fixture(scope="module")
def regen() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("docs_regenerate_figures", str(SCRIPT))
    spec = importlib.util.spec_from_loader("docs_regenerate_figures", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["docs_regenerate_figures"] = module  # dataclasses look it up
    loader.exec_module(module)
    return module


def test_fill_figures_known_answers(regen: ModuleType) -> None:
    lines, figures, problems = regen.fill_figures(PAGE.split("\n"))
    assert problems == []
    assert lines[10:14] == FILLED
    # 8000 / 4 = 2000 with SHOWN's 0 decimals; 1600 / 2000 = 0.8 with .3g; 1600 with
    # one decimal and a thousands separator, as shown
    assert [(f.line, f.shown, f.computed) for f in figures] == [
        (11, "4.00", "4.00"), (12, "0", "2000"), (13, "?", "0.8"), (14, "1,000.0", "1,600.0")]
    # filling a filled page changes nothing
    again, _, _ = regen.fill_figures(lines)
    assert again == lines


def test_format_figure(regen: ModuleType) -> None:
    assert regen.format_figure(1876.3849, "1.0", None) == "1876.4"
    assert regen.format_figure(1876.3849, "1,000", None) == "1,876"
    assert regen.format_figure(0.88059, "", ".1%") == "88.1%"


def test_later_capture_replaces_a_name_from_there_on(regen: ModuleType) -> None:
    page = ["```", "a 1", "```", "<!-- capture: a (?P<x>\\d) -->",
            "<!-- fig: x * 10 -->0<!-- /fig -->",
            "```", "a 2", "```", "<!-- capture: a (?P<x>\\d) -->",
            "<!-- fig: x * 10 -->0<!-- /fig -->"]
    lines, _, problems = regen.fill_figures(page)
    assert problems == []
    assert (lines[4], lines[9]) == ("<!-- fig: x * 10 -->10<!-- /fig -->",
                                    "<!-- fig: x * 10 -->20<!-- /fig -->")


@pytest.mark.parametrize(("page", "problem"), [
    (["<!-- capture: (?P<x>\\d) -->"], "no block above it"),
    (["```", "a", "```", "<!-- capture: (?P<x>\\d) -->"], "matches nothing in the block above"),
    (["```", "a", "```", "<!-- capture: (?P<x>a) -->"], "x is 'a', not a number"),
    (["```", "1", "```", "<!-- capture: (\\d) -->"], "no named group"),
    (["```", "1", "```", "<!-- capture: (?P<x>\\d -->"], "invalid regular expression"),
    (["<!-- fig: y + 1 -->0<!-- /fig -->"], "y is not captured above (captured: none)"),
    (["```", "1", "```", "<!-- capture: (?P<x>\\d) -->", "<!-- fig: x / 0 -->0<!-- /fig -->"],
     "ZeroDivisionError"),
    (["<!-- fig: __import__('os') -->0<!-- /fig -->"], "not allowed"),
    (["<!-- fig: 1 + -->0<!-- /fig -->"], "invalid expression"),
    (["<!-- fig: 'a' -->0<!-- /fig -->"], "not a number"),
])
def test_bad_captures_and_figures_are_problems(regen: ModuleType, page: list[str],
                                               problem: str) -> None:
    lines, figures, problems = regen.fill_figures(page)
    assert lines == page and figures == []
    [(line, what)] = problems
    assert line == len(page) and problem in what, what


def test_a_drifted_figure_is_one_mismatch_line_of_check(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    # the block's command is not run: the figure is checked against the block as shown
    drifted = PAGE.replace("```\n$ dlbench", "<!-- docs: not run (an example) -->\n```\n$ dlbench")
    page.write_text(drifted.replace("-->0<!--", "-->1876<!--"))

    def regenerate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(SCRIPT), *args, str(page)], text=True,
                              capture_output=True, timeout=120, check=False)

    done = regenerate("--check", "--figures")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"{page}:13: mismatch: figure `8 * 1000 / t8` shows '1876', the output above gives "
        "'2000'",
        f"{page}:14: mismatch: figure `tp16 / (8 * 1000 / t8) | .3g` shows '?', the output "
        "above gives '0.8'",
        f"{page}:15: mismatch: figure `tp16` shows '1,000.0', the output above gives"
        " '1,600.0'"]
    # the full check (commands run, this one listed as not run) reports the same
    full = regenerate("--check")
    assert full.returncode == 1 and full.stdout.splitlines()[1:] == done.stdout.splitlines()
    # rewriting fills them in; then the check passes
    assert regenerate("--figures").returncode == 0
    assert page.read_text().split("\n")[11:15] == FILLED
    assert regenerate("--check", "--figures").stdout == ""
