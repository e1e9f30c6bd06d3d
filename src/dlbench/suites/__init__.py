"""Named suites: sweep spec files shipped with dlbench (`dlbench run --suite NAME`).

Each is an ordinary YAML spec that a user can copy and edit; its first comment lines
describe it.
"""

from __future__ import annotations

from pathlib import Path

from dlbench.errors import SpecError

SUITES_DIR = Path(__file__).resolve().parent


def suite_names() -> list[str]:
    """The names of the shipped suites, sorted."""
    return sorted(path.stem for path in SUITES_DIR.glob("*.yaml"))


def suite_path(name: str, flag: str = "--suite") -> Path:
    """The spec file of suite ``name``; SpecError listing the known ones otherwise."""
    path = SUITES_DIR / f"{name}.yaml"
    if not path.is_file():
        raise SpecError(f"{flag} {name!r} is not a known suite; known: {', '.join(suite_names())}")
    return path


def suite_description(name: str) -> str:
    """The suite's leading comment, joined into one line."""
    lines = []
    for line in suite_path(name).read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# ").strip())
    return " ".join(line for line in lines if line)
