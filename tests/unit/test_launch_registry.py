"""The launcher registry: adding a launcher is one class plus one registration line;
the command line's ``--launcher`` choices, their help and a launcher's own flags come
from the registry, and a launcher that starts experiments its own way still gets the
runner's resume, progress and recording."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import build_parser, main
from dlbench.launch import launchers
from dlbench.launch.launchers import Finish, Flag, LaunchContext, Launcher
from dlbench.launch.progress_bar import Reporter
from dlbench.results.io import load_records

FAKE = ["-P", "exp.framework=fake", "-V", "exp.replica_batch=[1, 2]"]


class DryRun(Launcher):
    """A launcher written for this test: records every experiment as skipped, with the
    note of its ``--dryrun-note`` flag, and starts nothing."""

    def __init__(self, note: str) -> None:
        self.note = note

    @classmethod
    def create(cls, options: Mapping[str, Any], report: Reporter) -> DryRun:
        """The note of ``--dryrun-note``, or a default."""
        return cls(options.get("dryrun_note") or "dry run")

    def launch(self, batch: Sequence[tuple[int, Mapping[str, Any]]], finish: Finish,
               context: LaunchContext) -> bool:
        """Every experiment ends at once, skipped."""
        for index, experiment in batch:
            finish(index, {**experiment, "exp.status": "skipped",
                           "exp.status_msg": self.note}, 0.0)
        return False


@pytest.fixture
def dryrun() -> Iterator[None]:
    """The ``dryrun`` launcher, registered for one test only."""
    launchers.register("dryrun", "record every experiment as skipped", DryRun,
                       [Flag("dryrun-note", "TEXT", "exp.status_msg of every experiment")])
    yield
    launchers.unregister("dryrun")


def _launcher_choices() -> list[str]:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    run = commands.choices["run"]
    return list(next(a for a in run._actions if a.dest == "launcher").choices or ())


def _stored(out: Path) -> list[tuple[str, str]]:
    """(batch, exp.status_msg) of every record in the run directory's store."""
    assert (out / "results.sqlite").is_file()
    return sorted((str(r["exp.replica_batch"]), str(r["exp.status_msg"]))
                  for r in load_records([out]))


def test_the_shipped_launchers_are_the_cli_choices() -> None:
    assert [e.name for e in launchers.launchers()] == ["local", "slurm"] == _launcher_choices()
    assert [f.name for f in launchers.launcher("slurm").flags] == [
        "slurm-partition", "slurm-gres", "slurm-time", "slurm-array-parallelism",
        "slurm-account", "slurm-option"]
    assert launchers.launcher("local").create({}, print).defaults() == {}


def test_a_registered_launcher_runs_a_sweep_end_to_end_and_leaves_no_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    launchers.register("dryrun", "record every experiment as skipped", DryRun,
                       [Flag("dryrun-note", "TEXT", "exp.status_msg of every experiment")])
    try:
        assert _launcher_choices() == ["local", "slurm", "dryrun"]
        assert main(["run", "--help"]) == 0
        help_text = " ".join(capsys.readouterr().out.split())
        assert "dryrun: record every experiment as skipped" in help_text
        assert "--dryrun-note TEXT" in help_text
        out = tmp_path / "out"
        assert main(["run", "--launcher", "dryrun", "--dryrun-note", "not today", *FAKE,
                     "--out", str(out)]) == 0
        captured = capsys.readouterr()
        assert "2 experiment(s) skipped" in captured.err
        assert _stored(out) == [("1", "not today"), ("2", "not today")]
        # Another launcher's flag is refused, naming the launcher it belongs to.
        assert main(["run", "--launcher", "dryrun", "--slurm-gres", "gpu:1", *FAKE]) == 2
        assert capsys.readouterr().err.strip() == (
            "dlbench: error: --slurm-gres needs --launcher slurm (the launcher is dryrun)")
        assert main(["run", "--dryrun-note", "x", *FAKE]) == 2
        assert capsys.readouterr().err.strip() == (
            "dlbench: error: --dryrun-note needs --launcher dryrun (the launcher is local)")
    finally:
        launchers.unregister("dryrun")
    assert _launcher_choices() == ["local", "slurm"]
    assert main(["run", "--dryrun-note", "x", *FAKE]) == 2
    assert "--dryrun-note" in capsys.readouterr().err


def test_a_new_launcher_keeps_earlier_results_as_the_local_runner_does(
    dryrun: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["run", "--launcher", "dryrun", *FAKE, "-P", "exp.rerun=never",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["run", "--launcher", "dryrun", "--dryrun-note", "second", *FAKE,
                 "-P", "exp.rerun=never", "--out", str(out)]) == 0
    assert capsys.readouterr().err.count("(kept)") == 2
    assert _stored(out) == [("1", "dry run"), ("2", "dry run")]


def test_registry_refuses_taken_names_and_flags(dryrun: None) -> None:
    with pytest.raises(ValueError, match="'dryrun' is already registered"):
        launchers.register("dryrun", "again", DryRun)
    with pytest.raises(ValueError, match=r"launcher 'other': flags .* are taken"):
        launchers.register("other", "x", DryRun, [Flag("slurm-gres", "G", "taken")])
    with pytest.raises(ValueError, match="unknown launcher 'dry'; accepted: local, slurm, dryrun"):
        launchers.launcher("dry")
