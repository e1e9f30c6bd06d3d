"""Adding a framework, as docs/extending.md walks through it: ONE module (its
declaration and its backend) plus one registration line. The test writes the module
the page shows, a NumPy forward pass of the toy MLP, registers it by module path, plans
it, runs it through a real worker process and removes it; then adds its line to a copy
of the registration list and plans it in a fresh interpreter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlbench.cli.main import main
from dlbench.config.catalog import FRAMEWORKS, model_frameworks
from dlbench.config.frameworks import MODULES
from dlbench.config.frameworks.base import load_declaration
from dlbench.config.registry import REGISTRY, register_framework, unregister_framework
from dlbench.plugins import load_attribute
from dlbench.results.log.parser import parse_log

ROOT = Path(__file__).resolve().parents[2]
EXTENDING = ROOT / "docs" / "extending.md"

# The module docs/extending.md shows, character for character (a test checks it).
NUMPY_MLP = '''\
"""numpy_mlp: a framework in one module, the toy MLP's forward pass in NumPy."""

from __future__ import annotations

from typing import Any

from dlbench.backends.base import Backend
from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.config.params import SEED, Param

FRAMEWORK = FrameworkInfo(
    id="numpy_mlp",
    title="NumPy MLP",
    module=__name__,  # its backend is this module's BACKEND, below
    requires=("numpy",),
    install_hint="pip install numpy",
    phases=("inference",),
    description="The toy MLP's forward pass in NumPy, on the CPU.",
    models=("toy",),
    dtypes=("float32",),
    dtype_note="this example computes in float32 only",
    devices=f"{__name__}:available_devices",
    params=(
        SEED.param("numpy_mlp.seed", "Seed of the weights and the batch."),
        Param("numpy_mlp.hidden", "int", 128, "Width of the hidden layer.", minimum=1),
    ),
)


class NumpyMLP(Backend):
    """Linear, ReLU, linear on a synthetic batch. NumPy is imported in setup: the
    parent imports this module to plan, and must not load a framework."""

    def setup(self) -> None:
        import numpy as np

        from dlbench.config.catalog import MODELS

        model = MODELS[self.params["exp.model"]]
        (features,) = model.input_shape
        hidden = int(self.params["numpy_mlp.hidden"])
        rng = np.random.default_rng(int(self.params["numpy_mlp.seed"]))
        self.np = np
        self.layers = [
            (rng.standard_normal((n, m), dtype=np.float32) / n**0.5, np.zeros(m, np.float32))
            for n, m in ((features, hidden), (hidden, model.num_classes))
        ]
        batch = int(self.params["exp.replica_batch"])
        self.batch = rng.standard_normal((batch, features), dtype=np.float32)
        self.flops = 2 * features * hidden + 2 * hidden * model.num_classes

    def step(self, index: int) -> None:
        (w1, b1), (w2, b2) = self.layers
        self.logits = self.np.maximum(self.batch @ w1 + b1, 0.0) @ w2 + b2

    def flops_per_sample(self) -> float | None:
        return float(self.flops)

    def environment(self) -> dict[str, Any]:
        return {"sys.framework_version": self.np.__version__, "hw.device_name": "cpu"}


BACKEND = NumpyMLP


def available_devices() -> list[str]:
    """NumPy computes on the CPU."""
    return ["cpu"]
'''

# The toy model's forward pass: 64 features, 128 hidden, 10 classes, 2*m*n per product.
TOY_FORWARD = 2 * 64 * 128 + 2 * 128 * 10

PLAN = ("-P", "exp.framework=numpy_mlp", "-P", "exp.model=toy", "-P", "exp.phase=inference")


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder holding numpy_mlp.py, on this process's path and on the PYTHONPATH the
    workers inherit."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "numpy_mlp.py").write_text(NUMPY_MLP)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]))
    yield folder
    sys.modules.pop("numpy_mlp", None)


def test_the_page_shows_the_module_the_test_runs() -> None:
    assert f"```python\n{NUMPY_MLP}```" in EXTENDING.read_text()


def test_a_one_module_framework_is_planned_run_and_removed(
    plugin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    info = register_framework("numpy_mlp")  # the registration line, at run time
    try:
        assert FRAMEWORKS["numpy_mlp"] is info and info.module == "numpy_mlp"
        assert model_frameworks("toy")[-1] == "numpy_mlp"
        assert main(["help", "--frameworks", "numpy_mlp"]) == 0
        assert "numpy_mlp.hidden  (int, default 128)" in capsys.readouterr().out

        out = tmp_path / "run"
        assert main(["plan", *PLAN, "-V", "numpy_mlp.hidden=[16,128]", "--out", str(out),
                     "--format", "json"]) == 0
        planned = json.loads(capsys.readouterr().out)["data"]
        assert [e["numpy_mlp.hidden"] for e in planned] == [16, 128]
        assert {e["exp.framework_module"] for e in planned} == {"numpy_mlp"}
        assert main(["plan", *PLAN, "-P", "exp.phase=training", "--out", str(out)]) == 2
        assert "exp.phase='training'" in capsys.readouterr().err

        # One experiment through a worker process, which finds the module from
        # exp.framework_module and PYTHONPATH: its own catalog never heard of it.
        assert main(["run", *PLAN, "-P", "exp.replica_batch=8", "-P", "exp.num_warmup_batches=1",
                     "-P", "exp.num_batches=5", "-P", "monitor.enabled=false",
                     "--out", str(out)]) == 0
        [log] = (out / "logs").glob("numpy_mlp-toy-inference-*.log")
        record, warnings = parse_log(log)
        assert warnings == [] and record["exp.status"] == "ok", record.get("exp.status_msg")
        assert record["results.throughput"] > 0
        assert record["results.flops_per_sample_framework"] == TOY_FORWARD  # NumPy's MLP ran
        # and toy's architecture, counted from its PyTorch definition, says the same
        assert record["results.flops_per_sample"] == TOY_FORWARD
        assert record["results.flops_source"] == "architecture"
        assert record["sys.framework_version"] == pytest.importorskip("numpy").__version__
    finally:
        unregister_framework("numpy_mlp")
    assert "numpy_mlp" not in FRAMEWORKS and REGISTRY.get("numpy_mlp.hidden") is None
    assert main(["plan", *PLAN, "--out", str(tmp_path / "gone")]) == 2
    assert "is not a known framework" in capsys.readouterr().err


def test_one_line_in_the_registration_list_adds_it(plugin_dir: Path, tmp_path: Path) -> None:
    # A copy of the package with the line added, planned by a fresh interpreter: the
    # module imports dlbench.backends.base while the catalog is loading it.
    copy = tmp_path / "src" / "dlbench"
    shutil.copytree(ROOT / "src" / "dlbench", copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    registration = copy / "config" / "frameworks" / "__init__.py"
    last = f'    "{MODULES[-1]}",\n'
    text = registration.read_text()
    assert text.count(last) == 1
    registration.write_text(text.replace(last, last + '    "numpy_mlp",\n'))
    code = ("import sys\n"
            "from dlbench.cli.main import main\n"
            f"status = main(['plan', *{list(PLAN)!r}, '--out', {str(tmp_path / 'run')!r}])\n"
            "print(status, 'numpy' in sys.modules, sys.modules['dlbench'].__file__)\n")
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(copy.parent), str(plugin_dir)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    *table, last_line = done.stdout.splitlines()
    assert "1 experiment" in table
    # planned without importing NumPy, by the copy that lists it
    assert last_line == f"0 False {copy / '__init__.py'}"


def test_a_registration_naming_no_declaration_is_refused(plugin_dir: Path) -> None:
    (plugin_dir / "not_one.py").write_text("from numpy_mlp import FRAMEWORK as F\n"
                                          "FRAMEWORK = (F,)\n")
    try:
        with pytest.raises(TypeError, match=r"not_one\.FRAMEWORK is a tuple, not a"):
            load_declaration("not_one")
    finally:
        sys.modules.pop("not_one", None)
    with pytest.raises(AttributeError):
        load_declaration("dlbench.config.frameworks.base")
    with pytest.raises(ValueError, match="framework fake is already declared"):
        register_framework("dlbench.config.frameworks.fake")
    with pytest.raises(ValueError, match=r"'numpy_mlp' is not 'package\.module:name'"):
        load_attribute("numpy_mlp")
