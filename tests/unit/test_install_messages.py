"""Install guidance keeps the user's torch: every message that suggests installing a
package built on torch names the installed torch, read from its metadata (torch is
not imported), and a local build (+cpu) the index to install from."""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError
from pathlib import Path

import pytest

from dlbench.config import install
from dlbench.config.external import REQUIREMENTS
from dlbench.config.install import install_command, installed_torch
from tests.conftest import CliRunner


@pytest.mark.parametrize(("packages", "torch", "expected"), [
    ("torchvision", "2.5.1", 'pip install torchvision "torch==2.5.1"'),
    ("timm", "2.4.0+cu121",
     'pip install timm "torch==2.4.0+cu121" --index-url <the index torch 2.4.0+cu121 came from>'),
    ("'dlbench[hf]'", "2.13.0+cpu", "pip install 'dlbench[hf]' \"torch==2.13.0+cpu\" "
                                    "--index-url <the index torch 2.13.0+cpu came from>"),
    ("timm", None, "pip install timm"),
])
def test_the_command_pins_the_torch_it_is_given(packages: str, torch: str | None,
                                                expected: str) -> None:
    assert install_command(packages, torch=torch) == expected


def test_the_installed_torch_is_read_from_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "version", lambda name: {"torch": "9.9.0+cpu"}[name])
    assert installed_torch() == "9.9.0+cpu"
    assert install_command("timm").startswith('pip install timm "torch==9.9.0+cpu" --index-url')

    def absent(name: str) -> str:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(install, "version", absent)
    assert installed_torch() is None and install_command("timm") == "pip install timm"


def test_every_library_source_is_installed_keeping_torch() -> None:
    assert set(REQUIREMENTS) == {"hf", "timm", "torchvision"}
    for _, wanted in REQUIREMENTS.values():
        assert not wanted.startswith("pip")  # the command is made when it is said


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is not None,
                    reason="torchvision installed: the plan does not refuse")
@pytest.mark.skipif(installed_torch() is None, reason="no torch to keep")
def test_plan_names_a_command_that_keeps_the_installed_torch(dlbench: CliRunner,
                                                             tmp_path: Path) -> None:
    done = dlbench("plan", "-P", "exp.model=torchvision:resnet50")
    torch = installed_torch()
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "dlbench: error: exp.model='torchvision:resnet50' (from -P flag) needs "
        f"`{install_command('torchvision', torch=torch)}`: torchvision is not installed\n")
    assert f'"torch=={torch}"' in done.stderr
