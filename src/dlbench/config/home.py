"""dlbench's home: the one folder it keeps things in outside a run directory.

``$DLBENCH_HOME`` when set and not empty, else ``~/.dlbench``. It holds the measured
device peaks (``peaks.json``, :mod:`dlbench.measure.peak.peaks`), the default history
(``history.sqlite``, :mod:`dlbench.results.history.store`) and the ONNX export cache
(``onnx/``, :mod:`dlbench.backends.onnxruntime`). Not under ``~/.cache``, whose contents
may be deleted at any time: a history and the peaks every MFU is divided by are data.
The parent and its workers resolve it alike: a worker inherits ``DLBENCH_HOME``.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable that moves the home.
HOME_VARIABLE = "DLBENCH_HOME"


def dlbench_home() -> Path:
    """``$DLBENCH_HOME``, else ``~/.dlbench``; read at each call, so a test or a user
    that sets the variable later is obeyed. The folder is not created here."""
    home = os.environ.get(HOME_VARIABLE)
    return Path(home) if home else Path.home() / ".dlbench"
