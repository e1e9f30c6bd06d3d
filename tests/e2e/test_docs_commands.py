"""The commands the docs show still give output of the shape they show.

``docs/regenerate --check`` re-runs each page's commands in a fresh directory and
compares the shape of their output (numbers, times and ids masked) with the page.
Here only the cheap pages (``CHEAP_PAGES`` in the script: plans, help, the fake
workload); the others are checked by running the script by hand.
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
    done = subprocess.run([sys.executable, str(SCRIPT), "--check", "--timeout", "120", *pages],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    mismatches = [ln for ln in done.stdout.splitlines() if ": mismatch: " in ln]
    assert done.returncode == 0 and not mismatches, done.stdout + done.stderr
    # the skipped commands are listed with their reason, nothing else is printed
    assert all(": not run (" in ln for ln in done.stdout.splitlines()), done.stdout
