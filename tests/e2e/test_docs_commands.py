"""The commands the docs show still give output of the shape they show.

``docs/regenerate --check`` re-runs each page's commands in a fresh directory and
compares the shape of their output (numbers, times and ids masked) with the page.
Here only the cheap pages (``CHEAP_PAGES`` in the script: plans, help, the fake
workload); the others are checked by running the script by hand. The figures in the
prose of every page (``--figures``: no command runs) are checked against the blocks
they comment.
"""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "regenerate"


def _cheap_pages() -> list[str]:
    # The script's module-level names, without running its main (it is not a module).
    pages = runpy.run_path(str(SCRIPT))["CHEAP_PAGES"]
    return [str(page) for page in pages]


def test_cheap_pages_match_their_commands() -> None:
    pages = _cheap_pages()
    assert len(pages) >= 3 and all((ROOT / p).is_file() for p in pages)
    # Two checks at once, every other page each: a page runs in a directory and a home
    # of its own, and its commands mostly wait for one worker at a time, so the second
    # core shortens the test by about a third (the output's numbers are masked).
    checks = [subprocess.Popen([sys.executable, str(SCRIPT), "--check", "--timeout", "120",
                                *half], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
              for half in (pages[0::2], pages[1::2])]
    try:
        for check in checks:
            stdout, stderr = check.communicate(timeout=300)
            mismatches = [ln for ln in stdout.splitlines() if ": mismatch: " in ln]
            assert check.returncode == 0 and not mismatches, stdout + stderr
            # the skipped commands are listed with their reason, nothing else is printed
            assert all(": not run (" in ln for ln in stdout.splitlines()), stdout
    finally:
        for check in checks:  # the other half, when one failed
            if check.poll() is None:
                check.kill()
                check.wait()


def test_every_pages_figures_agree_with_the_blocks_they_comment() -> None:
    # No command runs: each page's <!-- fig: --> figures against its blocks as shown,
    # so a figure that drifted from its table fails here even on a slow page.
    done = subprocess.run([sys.executable, str(SCRIPT), "--check", "--figures"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
