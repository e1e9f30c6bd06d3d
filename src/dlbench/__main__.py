"""``python -m dlbench`` is the same as the ``dlbench`` command."""

from __future__ import annotations

from dlbench.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
