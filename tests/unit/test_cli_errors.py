"""Malformed command lines and paths: each is one line on stderr and exit status 2.

Every case goes through ``dlbench.cli.main.main`` in this process: exit status 2,
exactly one line on stderr starting ``dlbench: error:``, no traceback, nothing on
stdout, and no file created or changed in the working directory. A few go through a
real subprocess too, as a user types them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dlbench.cli.main import main

FAKE = ["-P", "exp.framework=fake", "-P", "exp.num_batches=1", "-P", "exp.num_warmup_batches=0"]

#: (case id, argv, words the message must contain). In argv, ``{file}`` is an existing
#: regular file, ``{dir}`` an existing empty directory, ``{missing}`` a path that does
#: not exist, ``{bad_yaml}``/``{bad_json}`` files that do not parse.
CASES: list[tuple[str, list[str], list[str]]] = [
    # argparse: commands, flags, values, types
    ("unknown-command", ["nosuch"], ["'nosuch'", "run"]),
    ("unknown-flag", ["run", "--bogus"], ["--bogus"]),
    ("unknown-top-flag", ["--verbose", "run"], ["--verbose"]),
    ("abbreviated-flag", ["plan", "--form", "json"], ["--form"]),
    ("out-without-value", ["run", "--out"], ["--out", "value"]),
    ("config-without-value", ["plan", "--config"], ["--config"]),
    ("P-without-value", ["plan", "-P"], ["-P"]),
    ("plan-format-choice", ["plan", "--format", "x"], ["--format", "'x'", "text, json"]),
    ("plan-format-missing", ["plan", "--format"], ["--format"]),
    ("query-no-input", ["query"], ["--input", "required"]),
    ("query-input-empty", ["query", "--input"], ["--input"]),
    ("query-format", ["query", "--input", "x", "--format", "yaml"], ["--format", "'yaml'"]),
    ("report-no-input", ["report"], ["--input"]),
    ("report-type", ["report", "--input", "x", "--type", "nope"], ["--type", "scorecard"]),
    ("report-format", ["report", "--input", "x", "--format", "pdf"], ["--format", "'pdf'"]),
    ("baseline-no-output", ["baseline", "--input", "x"], ["--output"]),
    ("compare-nothing", ["compare"], ["A"]),
    ("compare-one", ["compare", "a"], ["B"]),
    ("plot-no-x", ["plot", "--input", "x", "--output", "o.png"], ["--x"]),
    ("plot-chart", ["plot", "--input", "x", "--x", "a", "--output", "o.png", "--chart", "pie"],
     ["--chart", "'pie'", "line, bar"]),
    ("plot-aggregation", ["plot", "--input", "x", "--x", "a", "--output", "o.png",
                          "--aggregation", "sum"], ["--aggregation"]),
    ("sysinfo-format", ["sysinfo", "--format", "xml"], ["--format", "'xml'"]),
    ("sysinfo-extra", ["sysinfo", "extra"], ["extra"]),
    ("peak-seconds-type", ["peak", "--seconds", "abc"], ["--seconds", "'abc'", "number"]),
    ("peak-size-float", ["peak", "--size", "1.5"], ["--size", "'1.5'", "whole number"]),
    ("peak-size-type", ["peak", "--size", "x"], ["--size"]),
    ("help-flag-value", ["help", "--models=3"], ["--models", "no value"]),
    ("help-unknown", ["help", "--bogus"], ["--bogus"]),
    ("parse-nothing", ["parse"], ["PATH"]),
    ("launcher-choice", ["run", "--launcher", "pbs"], ["--launcher", "'pbs'", "local, slurm"]),
    ("slurm-flag-local", ["run", *FAKE, "--slurm-partition", "x"], ["--slurm-partition"]),
    # the sweep spec
    ("unknown-param", ["plan", "-P", "exp.nosuch=1"], ["exp.nosuch"]),
    ("param-type", ["plan", "-P", "exp.num_batches=abc"], ["exp.num_batches"]),
    ("param-no-equals", ["plan", "-P", "noequals"], ["noequals"]),
    ("variable-yaml", ["plan", "-V", "exp.replica_batch=[1,"], ["exp.replica_batch"]),
    ("extension-json", ["plan", "-E", "{not json"], ["-E"]),
    ("param-choice", ["plan", "-P", "exp.phase=sleeping"], ["exp.phase"]),
    ("framework-choice", ["plan", "-P", "exp.framework=nosuch"], ["exp.framework"]),
    ("config-missing", ["plan", "--config", "{missing}"], ["missing"]),
    ("config-directory", ["plan", "--config", "{dir}"], ["dir"]),
    ("config-bad-yaml", ["plan", "--config", "{bad_yaml}"], ["bad.yaml"]),
    ("suite-unknown", ["plan", "--suite", "nosuch"], ["nosuch"]),
    ("control-chars-in-value", ["plan", *FAKE, "-P", "exp.model=a\x1b[2J\nb"], ["\\x1b[2J"]),
    # run directory and log paths
    ("out-is-file", ["run", *FAKE, "--out", "{file}"], ["--out", "not a directory"]),
    ("out-under-file", ["run", *FAKE, "--out", "{file}/sub"], ["--out", "a file"]),
    ("out-dev-null", ["run", *FAKE, "--out", "/dev/null"], ["--out", "/dev/null"]),
    ("out-empty", ["run", *FAKE, "--out", ""], ["--out", "empty"]),
    ("out-blank", ["run", *FAKE, "--out", "   "], ["--out", "empty"]),
    ("out-dir-param-file", ["run", *FAKE, "-P", "exp.out_dir={file}"], ["exp.out_dir"]),
    ("log-under-file", ["run", *FAKE, "--out", "{dir}", "-P",
                        "exp.log_file=${exp.out_dir}/f/x.log"], ["exp.log_file"]),
    ("log-is-directory", ["run", *FAKE, "--out", "{dir}", "-P",
                          "exp.log_file=${exp.out_dir}/sub"], ["exp.log_file"]),
    ("log-trailing-slash", ["run", *FAKE, "--out", "{dir}", "-P",
                            "exp.log_file=${exp.out_dir}/new/"], ["exp.log_file"]),
    # results sources and outputs
    ("query-input-missing", ["query", "--input", "{missing}"], ["missing"]),
    ("query-input-bad-json", ["query", "--input", "{bad_json}"], ["bad.json"]),
    ("query-where-json", ["query", "--input", "{dir}", "--where", "{bad"], ["--where"]),
    ("report-input-missing", ["report", "--input", "{missing}"], ["missing"]),
    ("parse-missing", ["parse", "{missing}"], ["missing"]),
    ("compare-missing", ["compare", "{missing}", "{missing}"], ["missing"]),
    ("baseline-input-missing", ["baseline", "--input", "{missing}", "--output", "b.json"],
     ["missing"]),
    ("report-fail-on-miss-type", ["report", "--input", "{dir}", "--fail-on-miss"],
     ["--fail-on-miss", "--type scorecard only"]),
    ("report-fail-on-verdict-type", ["report", "--input", "{dir}", "--fail-on-verdict"],
     ["--fail-on-verdict", "--type scorecard only"]),
    ("status-no-input", ["status"], ["--input", "required"]),
    ("status-input-missing", ["status", "--input", "{missing}"], ["--input", "not a directory"]),
    ("status-not-a-run-dir", ["status", "--input", "{dir}"], ["--input", "no results.sqlite"]),
    ("status-format", ["status", "--input", "{dir}", "--format", "csv"],
     ["--format", "'csv'", "text, json"]),
    ("query-where-not-object", ["query", "--input", "{dir}", "--where", "[1]"], ["--where"]),
    ("variable-duplicate-value", ["plan", "-V", "user.x=[1, 2, 1]"], ["user.x", "1 twice"]),
    ("help-flags-value", ["help", "--flags=all"], ["--flags", "no value"]),
]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding the files the cases name."""
    (tmp_path / "afile.txt").write_text("not a directory\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "f").write_text("a file\n")
    (tmp_path / "dir" / "sub").mkdir()
    (tmp_path / "bad.yaml").write_text("parameters: [unclosed\n")
    (tmp_path / "bad.json").write_text("{not json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fill(argv: list[str], root: Path) -> list[str]:
    names = {"{file}": root / "afile.txt", "{dir}": root / "dir", "{missing}": root / "missing",
             "{bad_yaml}": root / "bad.yaml", "{bad_json}": root / "bad.json"}
    out = []
    for arg in argv:
        for placeholder, path in names.items():
            arg = arg.replace(placeholder, str(path))
        out.append(arg)
    return out


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in root.rglob("*")}


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 50
    assert len({case_id for case_id, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("argv", "words"), [(argv, words) for _, argv, words in CASES],
                         ids=[case_id for case_id, _, _ in CASES])
def test_malformed_command_is_one_line_and_status_2(
    workspace: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]
) -> None:
    before = _tree(workspace)
    status = main(_fill(argv, workspace))
    captured = capsys.readouterr()
    assert status == 2, captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("dlbench: error: ")
    assert "Traceback" not in captured.err
    assert "\x1b" not in captured.err
    assert captured.out == ""
    for word in words:
        assert word in lines[0], lines[0]
    assert _tree(workspace) == before


def test_help_still_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: dlbench plan")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_out_is_refused(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    locked = workspace / "locked"
    locked.mkdir(mode=0o500)
    assert main(["run", *FAKE, "--out", str(locked / "run")]) == 2
    assert "not writable" in capsys.readouterr().err


@pytest.mark.parametrize("case_id", ["unknown-flag", "plan-format-choice", "out-dev-null",
                                     "peak-seconds-type"])
def test_malformed_command_in_a_subprocess(workspace: Path, case_id: str) -> None:
    argv, words = next((a, w) for c, a, w in CASES if c == case_id)
    proc = subprocess.run([sys.executable, "-m", "dlbench", *_fill(argv, workspace)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dlbench: error: "), proc.stderr
    assert all(word in lines[0] for word in words)
