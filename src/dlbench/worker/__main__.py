"""``python -m dlbench.worker EXP.json``: run one experiment, write its log, exit 0 if ok."""

from __future__ import annotations

import sys

from dlbench.worker.experiment import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
