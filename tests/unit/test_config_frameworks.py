"""Framework declarations: shared knobs declared once, a framework added by declaring it
(seen by the registry, the plan, `dlbench help` and the launcher), and no config code
that branches on a framework's name."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.commands import help as commands_help
from dlbench.cli.main import main
from dlbench.config.catalog import FRAMEWORKS, model_frameworks
from dlbench.config.frameworks import DECLARATIONS, MODULES
from dlbench.config.frameworks.base import FrameworkInfo, Shown, load_declaration
from dlbench.config.params import DOCKER_IMAGE, KNOBS, SEED, THREADS, Param
from dlbench.config.registry import (
    REGISTRY,
    container_image,
    register_framework,
    unregister_framework,
)
from dlbench.config.spec import load_spec
from dlbench.config.validate import plan_experiments
from dlbench.errors import ConfigError
from dlbench.launch.copies.copies import Share, copy_experiment

SRC = Path(__file__).resolve().parents[2] / "src" / "dlbench"


def _check_tiny(values: Mapping[str, Any], shown: Shown) -> None:
    if values["tiny.level"] > 3:
        raise ConfigError(f"{shown('tiny.level')}: framework tiny goes up to 3")


TINY = FrameworkInfo(
    id="tiny",
    title="Tiny",
    module="dlbench.backends.fake",  # what it runs does not matter to the plan
    requires=(),
    install_hint="",
    description="A framework declared by a test.",
    models=("toy",),
    dtypes=("float32",),
    dtype_note="tiny has float32 kernels only",
    check=_check_tiny,
    devices="dlbench.backends.fake:available_devices",
    params=(
        THREADS.param("tiny.workers", "Threads of tiny.", minimum_note="0: tiny's own count"),
        SEED.param("tiny.seed", "Seed of tiny."),
        DOCKER_IMAGE.param("tiny.docker_image", "Image of tiny.", default="tiny:1"),
        Param("tiny.level", "int", 1, "How hard tiny tries."),
    ),
)


@pytest.fixture
def tiny() -> Iterator[FrameworkInfo]:
    register_framework(TINY)
    try:
        yield TINY
    finally:
        unregister_framework(TINY.id)


def plan(*params: str) -> list[dict[str, Any]]:
    return plan_experiments(load_spec(params=list(params)))


def error_of(*params: str) -> str:
    with pytest.raises(ConfigError) as caught:
        plan(*params)
    return str(caught.value)


def test_a_declared_framework_is_registered_planned_and_listed(
    tiny: FrameworkInfo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    param = REGISTRY.get("tiny.workers")
    assert param is not None and (param.knob, param.type, param.default) == ("threads", "int", 0)
    framework = REGISTRY.get("exp.framework")
    assert framework is not None and "tiny" in (framework.choices or ())
    out = str(tmp_path)
    [experiment] = plan("exp.framework=tiny", "exp.model=toy", f"exp.out_dir={out}")
    assert experiment["exp.framework_title"] == "Tiny"
    assert (experiment["tiny.workers"], experiment["tiny.level"]) == (0, 1)
    assert not any(name.startswith(("fake.", "pytorch.")) for name in experiment)
    assert container_image(experiment) == "tiny:1"
    copy = copy_experiment(experiment, Share(1, 2, (0, 1, 2), 0, ""))
    assert copy["tiny.workers"] == 3  # its thread knob, sized to the copy's cores
    assert FRAMEWORKS["pytorch"].knob_param("threads") not in copy

    assert main(["help", "--frameworks", "tiny"]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("tiny: Tiny. A framework declared by a test.")
    assert "tiny.workers  (int, default 0)" in listing and "tiny.level" in listing

    asked: dict[str, str] = {}

    def devices(modules: dict[str, str], timeout: float = 1.0) -> dict[str, str]:
        asked.update(modules)
        return {"tiny": "cpu"}

    monkeypatch.setattr(commands_help, "framework_devices", devices)
    assert main(["help", "--frameworks"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert [row for row in rows if row[0] == "tiny"] == [
        ["tiny", "Tiny", "training,", "inference", "yes", "(built", "in)", "cpu"]]
    assert asked["tiny"] == "dlbench.backends.fake:available_devices"
    assert model_frameworks("toy")[-1] == "tiny"
    assert "tiny" not in model_frameworks("resnet50")


def test_a_declared_framework_s_checks_apply(tiny: FrameworkInfo, tmp_path: Path) -> None:
    base = ("exp.framework=tiny", "exp.model=toy", f"exp.out_dir={tmp_path}")
    assert error_of(*base, "tiny.level=4") == (
        "tiny.level=4 (from -P flag): framework tiny goes up to 3")
    assert error_of(*base, "tiny.workers=-2") == (
        "tiny.workers=-2 (from -P flag) must be >= 0 (0: tiny's own count)")
    assert error_of(*base, "exp.dtype=float16") == (
        "exp.dtype='float16' (from -P flag): framework tiny runs float32; tiny has float32 "
        "kernels only")
    assert "is not defined for framework tiny; defined: toy" in error_of(
        "exp.framework=tiny", "exp.model=resnet50", f"exp.out_dir={tmp_path}")
    with pytest.raises(ValueError, match="already declared"):
        register_framework(tiny)


def test_a_framework_is_gone_once_unregistered(tmp_path: Path) -> None:
    register_framework(TINY)
    unregister_framework(TINY.id)
    assert "tiny" not in FRAMEWORKS and REGISTRY.get("tiny.workers") is None
    assert "is not a known framework" in error_of(
        "exp.framework=tiny", "exp.model=toy", f"exp.out_dir={tmp_path}")
    assert "unknown parameter tiny.level" in error_of("tiny.level=2")


def test_a_framework_s_parameters_stay_in_its_namespace() -> None:
    with pytest.raises(ValueError, match="is not under tiny"):
        FrameworkInfo("tiny", "Tiny", "m", (), "", params=(SEED.param("fake.x", "x"),))


def test_the_registry_holds_every_declaration_in_order() -> None:
    assert list(FRAMEWORKS) == [info.id for info in DECLARATIONS] == [
        "pytorch", "jax", "onnxruntime", "tensorflow", "fake", "endpoint"]
    # One registration line each, the declaration's module: the older frameworks' in
    # config/frameworks/ with their backends in backends/; a framework of one folder
    # (frameworks/<id>/) holds its declaration and its backend together.
    assert (*(f"dlbench.config.frameworks.{info.id}" for info in DECLARATIONS[:-1]),
            "dlbench.frameworks.endpoint.declaration") == MODULES
    assert all(load_declaration(path) is info
               for path, info in zip(MODULES, DECLARATIONS, strict=True))
    assert all(info.module.startswith(("dlbench.backends.", f"dlbench.frameworks.{info.id}."))
               for info in DECLARATIONS)
    for info in DECLARATIONS:
        assert [p.name for p in REGISTRY.namespace(info.id)] == [p.name for p in info.params]


# Each framework's name for each shared knob: the names users' specs have always used.
KNOB_NAMES = {
    "seed": {"pytorch": "pytorch.seed", "jax": "jax.seed", "onnxruntime": "onnxruntime.seed",
             "tensorflow": "tensorflow.seed", "fake": "fake.seed", "endpoint": "endpoint.seed"},
    "threads": {"pytorch": "pytorch.num_threads", "onnxruntime": "onnxruntime.intra_op_threads",
                "tensorflow": "tensorflow.num_threads"},
    "inter_op_threads": {"onnxruntime": "onnxruntime.inter_op_threads",
                         "tensorflow": "tensorflow.inter_op_threads"},
    "optimizer": {"pytorch": "pytorch.optimizer", "jax": "jax.optimizer",
                  "tensorflow": "tensorflow.optimizer"},
    "compile": {"pytorch": "pytorch.compile", "tensorflow": "tensorflow.xla"},
    "docker_image": {"pytorch": "pytorch.docker_image"},
}


def test_shared_knobs_are_declared_once_under_each_framework_s_names() -> None:
    assert set(KNOB_NAMES) == set(KNOBS)
    for knob_id, names in KNOB_NAMES.items():
        found = {info.id: info.knob_param(knob_id) for info in DECLARATIONS}
        assert {k: v for k, v in found.items() if v} == names
        knob = KNOBS[knob_id]
        for name in names.values():
            param = REGISTRY.get(name)
            assert param is not None
            assert (param.type, param.choices, param.minimum) == (
                knob.type, knob.choices, knob.minimum)
            if knob_id != "docker_image":  # each framework has its own image
                assert param.default == knob.default


def test_the_config_layer_never_branches_on_a_framework_s_name() -> None:
    names = "|".join(re.escape(info.id) for info in DECLARATIONS)
    branch = re.compile(rf"""[!=]= *["']({names})["']|\bin \(["']({names})["']""")
    offenders = []
    for path in SRC.rglob("*.py"):
        own = {path.stem, path.parent.name, path.stem.removesuffix("_backend")}
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            found = branch.search(line)
            if found and not own & {found.group(1), found.group(2)}:
                offenders.append(f"{path.relative_to(SRC)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_frameworks_page_lists_each_frameworks_phases_as_declared() -> None:
    # docs/frameworks.md's first table: | `id` | install | phases | models | replicas |
    text = (Path(__file__).resolve().parents[2] / "docs" / "frameworks.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| [^|]* \| ([^|]*) \|", text, re.M)
    shown = {fid: [re.sub(r"\s*\(.*\)", "", p).strip() for p in phases.split(",")]
             for fid, phases in rows}
    declared = {info.id: list(info.phases) for info in DECLARATIONS if info.id in shown}
    assert declared and shown == declared
