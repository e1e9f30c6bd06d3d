"""docs/regenerate: how a page is read, the shape of an output, and matching."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "regenerate"


@pytest.fixture(scope="module")
def regen() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("docs_regenerate", str(SCRIPT))
    spec = importlib.util.spec_from_loader("docs_regenerate", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up while the class is built
    sys.modules["docs_regenerate"] = module
    loader.exec_module(module)
    return module


@pytest.mark.parametrize(("line", "masked"), [
    # numbers alone, in flags, signed, with exponents, thousands and percentages
    ("resnet18   4.39 ±3.3%   1,821.06", "resnet18 # ±#% #"),
    ("-P fake.step_ms=10 took -1.5e-3 s", "-P fake.step_ms=# took # s"),
    # a number inside a word is part of the name
    ("fake(resnet50) vgg16 float32", "fake(resnet50) vgg16 float32"),
    # exp.id and other hexadecimal ids; a short or letter-only word stays
    ("077273253295b530  resnet18  deadbeef cafe", "<id> resnet18 deadbeef cafe"),
    ("pytorch-resnet18-inference-077273253295b530.log", "pytorch-resnet18-inference-<id>.log"),
    # the CPU model says which machine ran the page
    ("hw.cpu_model               Intel(R) Xeon(R) Processor", "hw.cpu_model <cpu>"),
    ("AMD EPYC (cpu), measured 2026-11-22T01:53:37+00:00", "<cpu> (cpu), measured <date>"),
    # dates and clock times
    ("2024-05-01T12:30:45.123+02:00 then 2024-05-01", "<date> then <date>"),
    ("elapsed 0:41 or 1:02:03", "elapsed <time> or <time>"),
    # table rules and column widths
    ("---------  -------  ====", "--- --- ==="),
    ("  a     b  ", "a b"),
    # the progress line: ETA or done, and the machine's instability note
    ("[##########..........] 1/2 ok  exp.replica_batch=1: 994.32 samples/s "
     "(unstable: only 3 timed batches (< 5)) (0.8 s) ETA 0:00:01",
     "[##########..........] #/# ok exp.replica_batch=#: # samples/s (# s) <eta>"),
    ("[####################] 2/2 ok  x: 3 samples/s (0.8 s) done",
     "[####################] #/# ok x: # samples/s (# s) <eta>"),
])
def test_mask_line(regen: ModuleType, line: str, masked: str) -> None:
    assert regen.mask_line(line) == masked


def test_mask_line_drops_the_unstable_warning(regen: ModuleType) -> None:
    assert regen.mask_line("Warning: 1 of 6 result(s) unstable: toy batch 8 ...") is None
    # how many plain status lines a run prints depends on the machine's speed
    assert regen.mask_line("running 2/4: resnet18 batch 32 - timed 40/100, 0:30 elapsed") is None


def test_mask_line_a_bound_has_the_shape_of_a_number(regen: ModuleType) -> None:
    assert regen.mask_line("p-value <0.0001 here") == regen.mask_line("p-value 0.0068 here")
    assert regen.mask_line("a <b> tag") == "a <b> tag"


def test_match_same_shape_other_numbers(regen: ModuleType) -> None:
    shown = ["exp.model  time", "-----  ----", "toy   1.5", "(exit status 2)"]
    actual = ["exp.model      time", "---------  ------", "toy      123.25", "(exit status 2)"]
    mapping, why = regen.match(shown, actual)
    assert mapping == {0: 0, 1: 1, 2: 2, 3: 3} and why == ""


def test_match_ellipsis_and_differences(regen: ModuleType) -> None:
    assert regen.match(["a 1", "...", "z"], ["a 2", "b", "c", "z"])[0] == {0: 0, 2: 3}
    assert regen.match(["a", "...", "z"], ["a", "z"])[0] == {0: 0, 2: 1}
    assert regen.match(["a", "b"], ["a", "c"]) == (None, "line 2: shows 'b', got 'c'")
    assert regen.match(["a"], ["a", "b"])[1] == "1 more line(s) than shown, first 'b'"
    assert regen.match(["a", "b"], ["a"])[1] == "output ends before shown line 2: 'b'"
    # a command that failed where the page shows it succeeding
    assert regen.match(["ok"], ["ok", "(exit status 1)"])[0] is None


def test_parse_page_markers(regen: ModuleType) -> None:
    text = "\n".join([
        "<!-- file: spec.yaml -->", "```yaml", "parameters: {}", "```",
        "", "<!-- docs: setup: touch x -->", "```",
        "$ dlbench plan --config spec.yaml \\", "    -P a=1", "out 1", "...",
        "$ echo $?", "0", "```",
        "<!-- docs: not run (needs a GPU) -->", "  ```", "  $ dlbench run -P exp.gpus=0",
        "  done", "  ```",
        "<!-- docs: cat files -->", "```", "$ cat a.jsonl", "{\"x\": 1}", "```",
    ])
    page = regen.parse_page(Path("p.md"), text)
    first, second, gpu, cat = page.commands
    assert first.text == "dlbench plan --config spec.yaml \\\n    -P a=1"
    assert (first.line, first.shown, first.setup) == (8, ["out 1", "..."], ["touch x"])
    assert first.files == {"spec.yaml": "parameters: {}\n"}
    assert second.shown == ["0"] and not second.files and second.skip is None
    assert (gpu.skip, gpu.shown, gpu.indent) == ("needs a GPU", ["done"], "  ")
    assert cat.files == {"a.jsonl": "{\"x\": 1}\n"}


def test_rewritten_keeps_the_ellipsis(regen: ModuleType) -> None:
    command = regen.Command(1, "x", ["head 1", "...", "tail 9"], 0, 0, "")
    assert regen.rewritten(command, ["head 2", "a", "b", "tail 3"]) == \
        ["head 2", "...", "tail 3"]
    # no longer the same shape: the whole new output, for a person to shorten again
    assert regen.rewritten(command, ["other"]) == ["other"]


def test_run_page_in_order_in_one_shell(regen: ModuleType, tmp_path: Path) -> None:
    page_file = tmp_path / "p.md"
    page_file.write_text("\n".join([
        "<!-- file: in.txt -->", "```", "hello 1", "```", "```",
        "$ mkdir d && cd d && pwd", "~/bench/d",
        "$ cat ../in.txt; false", "hello 7", "(exit status 1)",
        "$ echo $?", "1", "```", ""]))
    assert regen.process(page_file, True, False, 60.0) == []
    page_file.write_text(page_file.read_text().replace("hello 7\n", ""))
    [line] = regen.process(page_file, True, False, 60.0)
    assert line.endswith("p.md:8: mismatch: line 1: shows '(exit status #)', got 'hello #'")


def test_sanitise_replaces_a_short_host_name_only_where_it_is_one(
    regen: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(regen.socket, "gethostname", lambda: "vm")
    text = 'sys.hostname   vm\n__sys.hostname__="vm"\n/proc/sys/vm/drop_caches'
    assert regen.sanitise(text, tmp_path) == (
        'sys.hostname   myhost\n__sys.hostname__="myhost"\n/proc/sys/vm/drop_caches')


# ---------------------------------------------------------------- figures quoted


def test_mask_line_keeps_a_place_in_the_source(regen: ModuleType) -> None:
    assert regen.mask_line("RuntimeError: fake failure at batch 3 (at fake.py:97 in _fail)") \
        == "RuntimeError: fake failure at batch # (at fake.py:97 in _fail)"
    # so a moved line is a mismatch of the output it came from
    mapping, _ = regen.match(["boom (at fake.py:94 in _fail)"], ["boom (at fake.py:97 in _fail)"])
    assert mapping is None


def _fail_line(text: str) -> int:
    source = Path(__file__).resolve().parents[2] / "src/dlbench/backends/fake.py"
    lines = source.read_text().split("\n")
    return next(n for n, line in enumerate(lines, 1) if text in line)


def test_a_quoted_place_in_the_source_is_checked_against_it(regen: ModuleType) -> None:
    at = _fail_line('raise RuntimeError(f"fake failure')
    good = f"RuntimeError: fake failure (at fake.py:{at} in _fail), in prose or output"
    stale = "RuntimeError: fake failure (at fake.py:3 in _fail)"
    past = "see backends/fake.py:99999"
    user = "(at my_script.py:12 in main)"  # not one of dlbench's files: not checked
    problems = regen.source_problems([good, stale, past, user, "fake.py:3 in no_such_fn"])
    assert [n for n, _ in problems] == [2, 3]
    assert problems[0][1].startswith("fake.py:3 in _fail: line 3 is not in _fail (_fail is at "
                                     "src/dlbench/backends/fake.py lines ")
    assert problems[1][1].startswith("backends/fake.py:99999: src/dlbench/backends/fake.py has ")


def test_check_fails_on_a_stale_quoted_place_and_an_exact_line(regen: ModuleType,
                                                                tmp_path: Path) -> None:
    page_file = tmp_path / "p.md"
    at = _fail_line('raise RuntimeError(f"fake failure')
    page_file.write_text("\n".join([
        f"The failure is raised at `fake.py:{at} in _fail`.", "",
        "<!-- docs: exact: columns$ -->", "```", "$ echo 4 records, 160 columns",
        "4 records, 160 columns", "```", ""]))
    assert regen.process(page_file, True, False, 60.0) == []
    assert regen.process(page_file, True, False, 60.0, figures_only=True) == []
    page_file.write_text(page_file.read_text().replace(f"fake.py:{at}", "fake.py:3")
                         .replace("4 records, 160 columns\n```", "4 records, 156 columns\n```"))
    found = regen.process(page_file, True, False, 60.0)
    assert len(found) == 2
    assert found[0].endswith("p.md:5: mismatch: exact lines /columns$/ show "
                             "['4 records, 156 columns'], the command printed "
                             "['4 records, 160 columns']")
    assert "p.md:1: mismatch: fake.py:3 in _fail: line 3 is not in _fail" in found[1]
    # without running a command, the quoted place is still checked
    [static] = regen.process(page_file, True, False, 60.0, figures_only=True)
    assert "p.md:1: mismatch: fake.py:3 in _fail" in static
    assert regen.main(["--check", "--figures", str(page_file)]) == 1
