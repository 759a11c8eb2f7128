"""The command line's error contract, tried with well over 100 bad invocations.

Every mistake ends with exactly one line `dsasim COMMAND: what is wrong` on stderr, nothing on stdout, exit
status 2 and no traceback; it is found before any work starts (the work functions are replaced by tripwires);
Ctrl-C exits 130 with `dsasim COMMAND: interrupted` and leaves no partial or temporary file.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import importlib

import pytest

import dsasim.cli.demo
from dsasim.atomic import TEMP_MARK, atomic_path, probe_writable, write_text_atomic
from dsasim.cli import main

REPO = Path(__file__).resolve().parent.parent
HUGE = "9" * 400  # overflows a float: float(HUGE) == inf
UNWRITABLE = "/sys"  # no new files even for root (sysfs); the test that needs it skips where it is writable


def _tripwire(*_args, **_kwargs):
    raise AssertionError("the work started before the command line was checked")


@pytest.fixture
def no_work(monkeypatch):
    """Replace every expensive step by a tripwire: a bad command line must be refused before any of them."""
    # the commands import their model when they run: the tripwires sit where they import it from
    monkeypatch.setattr(dsasim.cli.demo, "_demo_one", _tripwire)
    monkeypatch.setattr(importlib.import_module("dsasim.traced.schedule"), "run_schedule", _tripwire)
    monkeypatch.setattr(dsasim.cli.simulate, "scope_names", _tripwire)
    monkeypatch.setattr(importlib.import_module("dsasim.architect.search.layer_search"), "search", _tripwire)
    monkeypatch.setattr(importlib.import_module("dsasim.architect.studies.sweep"), "sweep_sram", _tripwire)
    levels = importlib.import_module("dsasim.architect.search.level_search")
    monkeypatch.setattr(levels, "search_levels", _tripwire)
    monkeypatch.setattr(levels, "sweep_levels", _tripwire)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """A folder of bad inputs: hardware files of every kind of mistake, a plain file, a folder named .toml."""
    root = tmp_path_factory.mktemp("bad")
    (root / "file.txt").write_text("not a folder\n")
    (root / "folder.toml").mkdir()
    (root / "latin1.toml").write_bytes(b'base = "blog"\nname = "caf\xe9"\n')
    (root / "binary.toml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    hardware = {
        "syntax": "sram_bytes = = 3\n",
        "empty": "",
        "no-word": "sram_bytes = 4096\n",
        "unknown-key": 'base = "blog"\nsram_byte = 1024\n',
        "table": 'base = "blog"\n[tensorcore]\nin = 16\n',
        "base-list": 'base = ["blog"]\n',
        "base-number": "base = 1\n",
        "base-unknown": 'base = "tpu-v9"\n',
        "name-list": 'base = "blog"\nname = ["a", "b"]\n',
        "name-empty": 'base = "blog"\nname = ""\n',
        "sram-zero": 'base = "blog"\nsram_bytes = 0\n',
        "sram-negative": 'base = "blog"\nsram_bytes = -1024\n',
        "sram-float": 'base = "blog"\nsram_bytes = 1536.5\n',
        "sram-string": 'base = "blog"\nsram_bytes = "1536KiB"\n',
        "sram-list": 'base = "blog"\nsram_bytes = [1024]\n',
        "sram-bool": 'base = "blog"\nsram_bytes = true\n',
        "sram-huge": 'base = "blog"\nsram_bytes = 9223372036854775807\n',
        "word-huge": 'base = "blog"\nword_bytes = 1000\n',
        "word-above-sram": 'sram_bytes = 2\nword_bytes = 4\n',
        "clock-inf": 'base = "blog"\nclock_hz = inf\n',
        "clock-minus-inf": 'base = "blog"\nclock_hz = -inf\n',
        "clock-nan": 'base = "blog"\nclock_hz = nan\n',
        "clock-tiny": 'base = "blog"\nclock_hz = 1e-300\n',
        "clock-huge": 'base = "blog"\nclock_hz = 1e20\n',
        "bw-zero": 'base = "blog"\ndram_bytes_per_cycle = 0\n',
        "bw-tiny": 'base = "blog"\ndram_bytes_per_cycle = 1e-300\n',
        "bw-nan": 'base = "blog"\ndram_bytes_per_cycle = nan\n',
        "bw-string": 'base = "blog"\ndram_bytes_per_cycle = "fast"\n',
        "setup-negative": 'base = "blog"\ndma_setup_cycles = -1\n',
        "channels-zero": 'base = "blog"\ndma_load_channels = 0\n',
        "channels-huge": 'base = "blog"\ndma_load_channels = 100000\n',
        "lanes-float": 'base = "blog"\nvector_lanes = 32.0\n',
        "tc-zero": 'base = "blog"\ntensorcore_in_channels = 0\n',
        "shared-string": 'base = "blog"\ndram_shared_load_store = "yes"\n',
        "shared-list": 'base = "blog"\ndram_shared_load_store = [true]\n',
    }
    for name, text in hardware.items():
        (root / f"{name}.toml").write_text(text)
    return root


def _call(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except KeyboardInterrupt:  # would stop pytest itself: report it as what it is
        pytest.fail("KeyboardInterrupt escaped dsasim.cli.main")
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _assert_one_line(err: str, command: str) -> None:
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, f"not exactly one line: {err!r}"
    assert err.startswith(f"{command}: "), err


# --- argparse-level mistakes and bad numbers: (argv, fragment of the message) -------------------------------
NUMBERS = [
    # --jobs: >= 1
    (["demo", "--jobs", "0"], "argument --jobs: must be >= 1, got 0"),
    (["demo", "--jobs", "-3"], "argument --jobs: must be >= 1, got -3"),
    (["demo", "--jobs", "two"], "argument --jobs: expected a whole number >= 1, got 'two'"),
    (["demo", "--jobs", "1.5"], "argument --jobs: expected a whole number"),
    (["demo", "--jobs", "inf"], "argument --jobs: expected a whole number"),
    (["demo", "--jobs", "nan"], "argument --jobs: expected a whole number"),
    (["demo", "--jobs", "1e-300"], "argument --jobs: expected a whole number"),
    (["demo", "--jobs", ""], "argument --jobs: expected a whole number"),
    # --seed: 0 .. 2**64 - 1
    (["demo", "--seed", "-1"], "argument --seed: must be from 0 to 18,446,744,073,709,551,615, got -1"),
    (["demo", "--seed", str(2 ** 64)], "argument --seed: must be from 0 to"),
    (["demo", "--seed", HUGE], "argument --seed: must be from 0 to"),
    (["demo", "--seed", "1e9"], "argument --seed: expected a whole number"),
    (["demo", "--seed", "nan"], "argument --seed: expected a whole number"),
    # --timing-event-limit: >= 0
    (["demo", "--timing-event-limit", "-1"], "argument --timing-event-limit: must be >= 0, got -1"),
    (["demo", "--timing-event-limit", "3e6"], "argument --timing-event-limit: expected a whole number"),
    (["demo", "--timing-event-limit", "inf"], "argument --timing-event-limit: expected a whole number"),
    # simulate --ways (alias --buffers): 1 .. 64
    (["simulate", "demo6", "--buffers", "0"], "argument --ways/--buffers: must be from 1 to 64, got 0"),
    (["simulate", "demo6", "--ways", "0"], "argument --ways/--buffers: must be from 1 to 64, got 0"),
    (["simulate", "demo6", "--ways", "-2"], "argument --ways/--buffers: must be from 1 to 64, got -2"),
    (["simulate", "demo6", "--ways", "65"], "argument --ways/--buffers: must be from 1 to 64, got 65"),
    (["simulate", "demo6", "--ways", HUGE], "argument --ways/--buffers: must be from 1 to 64"),
    (["simulate", "demo6", "--ways", "2.0"], "argument --ways/--buffers: expected a whole number from 1 to 64"),
    (["simulate", "demo6", "--ways", "inf"], "argument --ways/--buffers: expected a whole number"),
    (["simulate", "demo6", "--ways", "nan"], "argument --ways/--buffers: expected a whole number"),
    (["simulate", "demo6", "--ways", "1e-300"], "argument --ways/--buffers: expected a whole number"),
    (["simulate", "demo6", "--ways", "ping-pong"], "argument --ways/--buffers: expected a whole number"),
    # simulate --window: 1 .. 10**15
    (["simulate", "demo6", "--window", "0"], "argument --window: must be from 1 to 1,000,000,000,000,000, got 0"),
    (["simulate", "demo6", "--window", "-100"], "argument --window: must be from 1"),
    (["simulate", "demo6", "--window", HUGE], "argument --window: must be from 1"),
    (["simulate", "demo6", "--window", "inf"], "argument --window: expected a whole number"),
    (["simulate", "demo6", "--window", "nan"], "argument --window: expected a whole number"),
    (["simulate", "demo6", "--window", "1e-300"], "argument --window: expected a whole number"),
    # search --confirm: >= 0
    (["search", "gemm-64", "--confirm", "-1"], "argument --confirm: must be >= 0, got -1"),
    (["search", "gemm-64", "--confirm", "three"], "argument --confirm: expected a whole number >= 0"),
    (["search", "gemm-64", "--confirm", "nan"], "argument --confirm: expected a whole number"),
    # argparse's own usage errors: unknown commands and options, missing arguments, bad choices
    ([], "the following arguments are required: command"),
    (["demoo"], "argument command: invalid choice: 'demoo'"),
    (["sweep"], "argument command: invalid choice: 'sweep'"),
    (["demo", "--bogus"], "unrecognized arguments: --bogus"),
    (["demo", "--only"], "argument --only: expected at least one argument"),
    (["demo", "--json"], "argument --json: expected one argument"),
    (["simulate"], "the following arguments are required: name"),
    (["simulate", "demo6", "extra"], "unrecognized arguments: extra"),
    (["search"], "the following arguments are required: layer"),
    (["search", "gemm-64", "--objective", "fast"], "argument --objective: invalid choice: 'fast'"),
    (["search", "gemm-64", "--sram", "-5KiB"], "argument --sram: expected one argument"),
    (["sweep-sram", "gemm-64"], "the following arguments are required: --sizes"),
]

# --- unknown names: schedules, layers, presets ---------------------------------------------------------------
ONE_LEVEL = "models one on-chip level (the SRAM), but hardware 'blog-l1' has levels below it (L1w, L1i, L1acc)"
NAMES = [
    # memory levels: a level that is not there, a hierarchy made invalid, a one-level command on blog-l1
    (["sweep-sram", "gemm-64", "--sizes", "1MiB", "--level", "L9"], "hardware 'blog' has no memory level 'L9'"),
    # DDR layouts
    (["simulate", "demo2", "--layout", "img=NHWC"], "--layout: demo2: layouts name tensor(s) ['img'] that workload"),
    (["simulate", "demo2", "--layout", "image=NHWC", "--layout", "weight=NCHW16c", "--layout", "output=NHWC",
      "--layout", "missing=NHWC"], "its tensors are ['image', 'weight', 'output']"),
    (["simulate", "demo2", "--layout", "image"], "--layout 'image': give TENSOR=LAYOUT, e.g. image=NHWC"),
    (["simulate", "demo2", "--layout", "image=NWHC"], "unknown layout 'NWHC'; layouts are ['row-major', 'NHWC'"),
    (["simulate", "demo2", "--layout", "image=NHWC", "--layout", "image=NCHW16c"],
     "--layout gives 'image' two layouts (NHWC, NCHW16c); give one"),
    (["sweep-sram", "gemm-64", "--sizes", "32KiB", "--hardware", "blog-l1"],
     "--level SRAM at 32 KiB: Accelerator 'blog-l1': memory level 'L1w' (65,536 bytes) is larger than its parent"),
    (["sweep-sram", "gemm-64", "--sizes", "2MiB", "--hardware", "blog-l1", "--level", "L1i"],
     "memory level 'L1i' (2,097,152 bytes) is larger than its parent 'SRAM'"),
    (["search", "gemm-64", "--hardware", "blog-l1", "--sram", "32KiB"], "'L1w' (65,536 bytes) is larger than its"),
    (["search", "resnet18.layer1.0", "--hardware", "blog-l1"], "the chain search " + ONE_LEVEL),
    (["sweep-sram", "resnet18.layer1.0", "--sizes", "1MiB", "--hardware", "blog-l1"], "the chain sweep " + ONE_LEVEL),
    (["sweep-sram", "--network", "resnet18", "--sizes", "32KiB", "--hardware", "blog-l1"],
     "SRAM size 32,768 B on blog-l1: Accelerator 'blog-l1': memory level 'L1w' (65,536 bytes) is larger than its"),
    (["network", "resnet18", "--hardware", "blog-l1", "--sram", "32KiB"],
     "SRAM size 32,768 B on blog-l1: Accelerator 'blog-l1': memory level 'L1w' (65,536 bytes) is larger than its"),
    (["shapes", "gemm-64", "--vary", "m=1:4", "--hardware", "blog-l1"], "the shape sweep " + ONE_LEVEL),
    (["demo", "--only", "demo9"],
     "unknown schedule(s) ['demo9']; known: conv1-direct, conv1-im2col-chip, conv1-im2col-ddr, demo1"),
    (["demo", "--only", "demo2", "DEMO3-2"], "unknown schedule(s) ['DEMO3-2']"),
    (["demo", "--only", "demo2", "--per-tensor", "demo3-2"], "--per-tensor 'demo3-2' is not among the schedules"),
    (["demo", "--only", "demo2", "--by-scope", "demo6"], "--by-scope 'demo6' is not among the schedules run"),
    (["demo", "--per-tensor", "nope"], "--per-tensor 'nope' is not among the schedules run"),
    (["simulate", "demo9"], "unknown schedule 'demo9'; known: demo1"),
    (["simulate", ""], "unknown schedule ''"),
    (["simulate", "demo6 "], "unknown schedule 'demo6 '"),
    (["demo", "--hardware", "tpu-v9"],
     "unknown hardware preset 'tpu-v9'; presets are ['blog', 'blog-fp32', 'blog-l1']"),
    (["demo", "--hardware", ""], "hardware is empty; give a preset"),
    (["simulate", "demo6", "--hardware", "BLOG"], "unknown hardware preset 'BLOG'"),
    (["simulate", "demo6", "--hardware", " "], "hardware is empty"),
    (["search", "gemm-64", "--hardware", "blog-fp64"], "unknown hardware preset 'blog-fp64'"),
    (["sweep-sram", "gemm-64", "--sizes", "1MiB", "--hardware", "h100"], "unknown hardware preset 'h100'"),
    (["search", "nosuch"], "unknown layer 'nosuch'"),
    (["search", "resnet50.nope"], "unknown ResNet-50 layer 'nope'"),
    (["search", "gemm-0"], "m must be an integer >= 1, got 0"),
    (["search", "gemm:m=0,n=1,k=1"], "m must be an integer >= 1, got 0"),
    (["search", "gemm:m=1.5,n=1,k=1"], "m='1.5' is not a non-negative integer"),
    (["search", "gemm:m=8,n=8"], "missing ['k']"),
    (["search", "gemm:m=8,n=8,k=8,q=1"], "unknown key(s) ['q']"),
    (["search", "conv:ic=-1,oc=1,h=1"], "ic='-1' is not a non-negative integer"),
    (["search", "conv:ic=8,oc=8"], "missing ['h']"),
    (["search", "conv:ic=1,oc=1,h=1,k=5"], "smaller than the dilated kernel extent"),
    (["search", "pool:k=2"], "unknown kind 'pool'"),
    (["search", "conv:ic=32,oc=48,h=8,k=3,g=5"], "g=5 groups must divide both ic=32 and oc=48"),
    (["search", "conv:ic=6,oc=9,h=8,g=2"], "use a common divisor: 1, 3"),
    (["search", "conv:ic=4,oc=4,h=8,g=0"], "groups must be an integer >= 1, got 0"),
    (["sweep-sram", "conv:ic=32,oc=30,h=8,g=32", "--sizes", "1MiB"], "g=32 groups must divide both ic=32 and oc=30"),
    (["sweep-sram", "nosuch", "--sizes", "1MiB"], "unknown layer 'nosuch'"),
]

# --- sizes: --sram and --sizes --------------------------------------------------------------------------------
SIZES = [
    (["search", "gemm-64", "--sram", "12XB"], "cannot read '12XB' as a size in bytes; write e.g. 65536, 64KiB"),
    (["search", "gemm-64", "--sram", "0"], "size '0' is not a positive whole number of bytes"),
    (["search", "gemm-64", "--sram=-5KiB"], "cannot read '-5KiB' as a size in bytes"),
    (["search", "gemm-64", "--sram", "inf"], "cannot read 'inf' as a size"),
    (["search", "gemm-64", "--sram", "nan"], "cannot read 'nan' as a size"),
    (["search", "gemm-64", "--sram", "1e-300"], "cannot read '1e-300' as a size"),
    (["search", "gemm-64", "--sram", "0.5"], "size '0.5' is not a positive whole number of bytes"),
    (["search", "gemm-64", "--sram", ""], "cannot read '' as a size"),
    (["search", "gemm-64", "--sram", HUGE], "--sram: size"),
    (["search", "gemm-64", "--sram", "2PiB"], "cannot read '2PiB' as a size"),
    (["search", "gemm-64", "--sram", "1048577GiB"], "sram_bytes must be a positive integer (at most"),
    (["search", "gemm-64", "--sram", "3", "--hardware", "blog-fp32"], "--sram 3 B is below one 4-byte word"),
    (["sweep-sram", "gemm-64", "--sizes", "12XB"], "cannot read '12XB' as a size in bytes"),
    (["sweep-sram", "gemm-64", "--sizes", "0"], "size '0' is not a positive whole number"),
    (["sweep-sram", "gemm-64", "--sizes=-5KiB"], "cannot read '-5KiB' as a size"),
    (["sweep-sram", "gemm-64", "--sizes", "inf"], "cannot read 'inf' as a size"),
    (["sweep-sram", "gemm-64", "--sizes", "nan:1MiB"], "cannot read 'nan' as a size"),
    (["sweep-sram", "gemm-64", "--sizes", "1e-300"], "cannot read '1e-300' as a size"),
    (["sweep-sram", "gemm-64", "--sizes", "8MiB:1MiB"], "HI (1,048,576 B) is below LO (8,388,608 B)"),
    (["sweep-sram", "gemm-64", "--sizes", "1KiB:2KiB:0"], "POINTS must be >= 1"),
    (["sweep-sram", "gemm-64", "--sizes", "1KiB:2KiB:-4"], "POINTS must be >= 1"),
    (["sweep-sram", "gemm-64", "--sizes", "1KiB:2KiB:x"], "POINTS must be an integer"),
    (["sweep-sram", "gemm-64", "--sizes", "1KiB:2KiB:nan"], "POINTS must be an integer"),
    (["sweep-sram", "gemm-64", "--sizes", "1:2:3:4"], "expected LO:HI or LO:HI:POINTS"),
    (["sweep-sram", "gemm-64", "--sizes", ","], "--sizes lists no size"),
    (["sweep-sram", "gemm-64", "--sizes", "1KiB,12XB"], "cannot read '12XB'"),
    (["sweep-sram", "gemm-64", "--sizes", f"1KiB:{HUGE}"], "has too many digits"),
    (["sweep-sram", "gemm-64", "--sizes", "1,2,3", "--hardware", "blog-fp32"], "at least one 4-byte word"),
]

# --- output paths ({d}: a fresh empty folder, {f}: its file.txt) -----------------------------------------------
PATHS = [
    (["demo", "--json", "{d}"], "--json '{d}' is a folder; give a file path, e.g. {d}/out.json"),
    (["demo", "--json", "{d}/missing/r.json"], "folder '{d}/missing' does not exist; create it first"),
    (["demo", "--json", "{d}/a/b/c/r.json"], "folder '{d}/a/b/c' does not exist"),
    (["demo", "--json", "{f}/r.json"], "--json '{f}/r.json': '{f}' is a file, not a folder"),
    (["demo", "--json", ""], "--json is empty; give a file path"),
    (["demo", "--json", "/dev/null"], "is not a regular file"),
    (["simulate", "demo6", "--json", "{d}"], "--json '{d}' is a folder"),
    (["simulate", "demo6", "--json", "{d}/no/r.json"], "folder '{d}/no' does not exist"),
    (["simulate", "demo6", "--perfetto", "{d}"], "--perfetto '{d}' is a folder"),
    (["simulate", "demo6", "--perfetto", "{f}/t.json"], "'{f}' is a file, not a folder"),
    (["simulate", "demo6", "--perfetto", "{d}/no/t.json"], "folder '{d}/no' does not exist"),
    (["simulate", "demo6", "--plot", "{f}"], "--plot '{f}' is a file, not a folder; give a folder"),
    (["simulate", "demo6", "--plot", "{d}/no/figs"], "folder '{d}/no' does not exist"),
    (["simulate", "demo6", "--plot", "{f}/figs"], "'{f}' is a file, not a folder"),
    (["simulate", "demo6", "--plot", ""], "--plot is empty; give a folder"),
    (["simulate", "demo6", "--json", "{d}/x.json", "--perfetto", "{d}/x.json"], "both name"),
    (["search", "gemm-64", "--json", "{d}"], "--json '{d}' is a folder"),
    (["search", "gemm-64", "--json", "{d}/no/s.json"], "folder '{d}/no' does not exist"),
    (["sweep-sram", "gemm-64", "--sizes", "1MiB", "--json", "{d}"], "--json '{d}' is a folder"),
    (["sweep-sram", "gemm-64", "--sizes", "1MiB", "--plot", "{d}"], "--plot '{d}' is a folder; give a file "
                                                                     "path, e.g. {d}/out.png"),
    (["sweep-sram", "gemm-64", "--sizes", "1MiB", "--plot", "{d}/s.txt"], "the file name must end in .png"),
    (["sweep-sram", "gemm-64", "--sizes", "1MiB", "--plot", "{d}/s"], "the file name must end in .png"),
    (["sweep-sram", "gemm-64", "--sizes", "1MiB", "--plot", "{d}/no/s.png"], "folder '{d}/no' does not exist"),
    (["sweep-sram", "gemm-64", "--sizes", "1MiB", "--json", "{d}/s.png", "--plot", "{d}/s.png"], "both name"),
]

# --- hardware files ({h}: the folder of bad files): a ValueError from dsasim.hardware naming the key ----------
HARDWARE = [
    ("folder.toml", "is a folder, not a file"),
    ("nowhere.toml", "does not exist"),
    ("latin1.toml", "not UTF-8 text (byte 25)"),  # len('base = "blog"\n') + len('name = "caf')
    ("binary.toml", "not UTF-8 text (byte 0)"),
    ("syntax.toml", "not valid TOML"),
    ("file.txt", "not valid TOML"),
    ("empty.toml", "missing ['sram_bytes', 'word_bytes']"),
    ("no-word.toml", "missing ['word_bytes']"),
    ("unknown-key.toml", "unknown key(s) ['sram_byte']; valid keys are 'base', 'accelergy' and"),
    ("table.toml", "unknown key(s) ['tensorcore']"),
    ("base-list.toml", "base must be a preset name in quotes (blog, blog-fp32, blog-l1), got ['blog']"),
    ("base-number.toml", "base must be a preset name in quotes"),
    ("base-unknown.toml", "unknown hardware preset 'tpu-v9'"),
    ("name-list.toml", "name must be a non-empty string, got ['a', 'b']"),
    ("name-empty.toml", "name must be a non-empty string, got ''"),
    ("sram-zero.toml", "sram_bytes must be a positive integer (at most 1,125,899,906,842,624), got 0"),
    ("sram-negative.toml", "sram_bytes must be a positive integer"),
    ("sram-float.toml", "sram_bytes must be a positive integer"),
    ("sram-string.toml", "sram_bytes must be a positive integer (at most 1,125,899,906,842,624), got '1536KiB'"),
    ("sram-list.toml", "sram_bytes must be a positive integer"),
    ("sram-bool.toml", "sram_bytes must be a positive integer"),
    ("sram-huge.toml", "sram_bytes must be a positive integer (at most 1,125,899,906,842,624)"),
    ("word-huge.toml", "word_bytes must be a positive integer (at most 64), got 1000"),
    ("word-above-sram.toml", "word_bytes (4) exceeds sram_bytes (2)"),
    ("clock-inf.toml", "clock_hz must be a positive number from 1000 to 1e+13"),
    ("clock-minus-inf.toml", "clock_hz must be a positive number"),
    ("clock-nan.toml", "clock_hz must be a positive number"),
    ("clock-tiny.toml", "clock_hz must be a positive number from 1000"),
    ("clock-huge.toml", "clock_hz must be a positive number from 1000 to 1e+13"),
    ("bw-zero.toml", "dram_bytes_per_cycle must be a positive number"),
    ("bw-tiny.toml", "dram_bytes_per_cycle must be a positive number from 0.000976562"),
    ("bw-nan.toml", "dram_bytes_per_cycle must be a positive number"),
    ("bw-string.toml", "dram_bytes_per_cycle must be a positive number"),
    ("setup-negative.toml", "dma_setup_cycles must be an integer >= 0"),
    ("channels-zero.toml", "dma_load_channels must be a positive integer"),
    ("channels-huge.toml", "dma_load_channels must be a positive integer (at most 1,024), got 100000"),
    ("lanes-float.toml", "vector_lanes must be a positive integer"),
    ("tc-zero.toml", "tensorcore_in_channels must be a positive integer"),
    ("shared-string.toml", "dram_shared_load_store must be true or false, got 'yes'"),
    ("shared-list.toml", "dram_shared_load_store must be true or false"),
]
# every file under simulate; a quarter of them under each of the other commands that read hardware
HARDWARE_COMMANDS = {
    "demo": ["demo", "--count-only", "--hardware"],
    "search": ["search", "gemm-64", "--hardware"],
    "sweep-sram": ["sweep-sram", "gemm-64", "--sizes", "1MiB", "--hardware"],
}
HARDWARE_CASES = [(["simulate", "demo6", "--hardware", "{h}/" + name], fragment) for name, fragment in HARDWARE]
HARDWARE_CASES += [(HARDWARE_COMMANDS[cmd] + ["{h}/" + name], fragment)
                   for k, cmd in enumerate(HARDWARE_COMMANDS) for name, fragment in HARDWARE[k::4]]
COMMANDS = {"demo", "simulate", "search", "sweep-sram", "network", "shapes"}


def _fill(items: list[str], files: Path, folder: Path) -> list[str]:
    return [x.format(d=folder, f=files / "file.txt", h=files) for x in items]


CORPUS = NUMBERS + NAMES + SIZES + PATHS + HARDWARE_CASES


def test_the_corpus_is_large():
    assert len(CORPUS) >= 100, len(CORPUS)


@pytest.mark.parametrize("argv, fragment", CORPUS, ids=[" ".join(a)[:60] or "(none)" for a, _ in CORPUS])
def test_a_bad_command_line_is_one_line_and_exit_2(argv, fragment, files, tmp_path, capsys, no_work):
    argv = _fill(argv, files, tmp_path)
    fragment = fragment.format(d=tmp_path, f=files / "file.txt", h=files)
    code, out, err = _call(argv, capsys)
    assert code == 2, (code, err)
    _assert_one_line(err, "dsasim" + (f" {argv[0]}" if argv and argv[0] in COMMANDS else ""))
    assert fragment in err, err
    assert out == ""  # nothing ran
    assert not [p for p in tmp_path.iterdir()], "a refused command wrote something"


@pytest.mark.parametrize("argv", [
    ["demo", "--count-only", "--only", "demo6", "--json", "{d}/r.json"],
    ["demo", "--count-only", "--only", "demo6", "--json", "r.json"],  # relative: in the current folder
    ["simulate", "demo6", "--plot", "{d}/out", "--perfetto", "{d}/out/t.json"],  # --plot makes the folder
    ["simulate", "demo6", "--json", "{d}/r.json", "--perfetto", "{d}/t.json", "--buffers", "64"],
    ["search", "gemm-64", "--sram", "64KiB", "--json", "{d}/r.json"],
    ["search", "gemm-64", "--hardware", "blog-l1", "--json", "{d}/r.json"],
    ["sweep-sram", "gemm-64", "--hardware", "blog-l1", "--level", "L1w", "--sizes", "1KiB:64KiB"],
    ["sweep-sram", "gemm-64", "--sizes", "1KiB:64KiB", "--plot", "{d}/s.svg", "--json", "{d}/s.json"],
])
def test_good_command_lines_pass_the_checks(argv, files, tmp_path, monkeypatch, no_work):
    """The checks are not over-strict: these reach the work (the tripwire) and have written nothing yet."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError, match="the work started"):
        main(_fill(argv, files, tmp_path))
    assert [p.name for p in tmp_path.rglob("*")] == (["out"] if "--plot" in argv and argv[0] == "simulate" else [])


def test_help_exits_0(capsys):
    assert main(["demo", "--help"]) == 0
    assert "--count-only" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["demo", "--json", f"{UNWRITABLE}/r.json"],
    ["simulate", "demo6", "--perfetto", f"{UNWRITABLE}/t.json"],
    ["simulate", "demo6", "--plot", UNWRITABLE],
    ["sweep-sram", "gemm-64", "--sizes", "1MiB", "--plot", f"{UNWRITABLE}/s.png"],
])
def test_an_unwritable_folder_is_refused_before_the_work(argv, capsys, no_work):
    try:
        probe_writable(UNWRITABLE)
    except OSError:
        pass
    else:
        pytest.skip(f"{UNWRITABLE} is writable here")
    code, out, err = _call(argv, capsys)
    assert code == 2 and out == ""
    _assert_one_line(err, f"dsasim {argv[0]}")
    assert f"cannot create files in folder '{UNWRITABLE}'" in err


def test_a_read_only_folder_is_refused_for_non_root(tmp_path, capsys, no_work):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        code, _, err = _call(["demo", "--json", str(locked / "r.json")], capsys)
    finally:
        locked.chmod(stat.S_IRWXU)
    assert code == 2 and "cannot create files in folder" in err


def test_outputs_checked_first_would_be_missed_without_the_check(tmp_path, capsys, monkeypatch):
    """The tripwire really fires: with the path check removed, the same mistake reaches the work."""
    monkeypatch.setattr(dsasim.cli.demo, "output_file", lambda flag, text, suffixes=(): Path(text))
    monkeypatch.setattr(dsasim.cli.demo, "_demo_one", _tripwire)
    with pytest.raises(AssertionError, match="the work started"):
        main(["demo", "--count-only", "--only", "demo6", "--json", str(tmp_path / "missing" / "r.json")])


# --- Ctrl-C -------------------------------------------------------------------------------------------------

def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if TEMP_MARK in p.name)


def test_ctrl_c_during_the_run_exits_130_and_writes_nothing(tmp_path, capsys, monkeypatch):
    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(dsasim.cli.demo, "_demo_one", interrupted)
    code, out, err = _call(["demo", "--count-only", "--quiet", "--only", "demo6", "--jobs", "1", "--json",
                            str(tmp_path / "r.json")], capsys)
    assert code == 130 and err == "dsasim demo: interrupted\n" and out == ""
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_writing_leaves_the_old_file_and_no_temporary(tmp_path, capsys, monkeypatch):
    """Interrupted half-way through writing the Perfetto trace: the old trace stays whole, the JSON written
    before it is complete, and no temporary file is left."""
    import dsasim.view.perfetto

    old = tmp_path / "t.json"
    old.write_text('{"old": true}\n')

    class HalfWriter:
        @staticmethod
        def dump(doc, f, **_kwargs):
            f.write(json.dumps(doc)[:100])  # a truncated document, then Ctrl-C
            raise KeyboardInterrupt

    monkeypatch.setattr(dsasim.view.perfetto, "json", HalfWriter)
    code, out, err = _call(["simulate", "demo6", "--json", str(tmp_path / "r.json"), "--perfetto", str(old)],
                           capsys)
    assert code == 130 and err == "dsasim simulate: interrupted\n"
    assert old.read_text() == '{"old": true}\n'
    assert json.loads((tmp_path / "r.json").read_text())["name"] == "demo6"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "t.json"]


def test_ctrl_c_while_plotting_leaves_no_partial_png(tmp_path, capsys, monkeypatch):
    from matplotlib.figure import Figure

    def half_png(self, fname, **_kwargs):
        Path(fname).write_bytes(b"\x89PNG\r\n\x1a\n")  # the first bytes of a PNG, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", half_png)
    figs = tmp_path / "figs"
    code, _, err = _call(["simulate", "demo6", "--plot", str(figs)], capsys)
    assert code == 130 and err == "dsasim simulate: interrupted\n"
    assert not figs.exists() or list(figs.iterdir()) == []


def test_a_disk_full_while_writing_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    import errno

    import dsasim.atomic

    def full(_fd):
        raise OSError(errno.ENOSPC, "No space left on device", "r.json")

    monkeypatch.setattr(dsasim.atomic.os, "fsync", full)
    code, _, err = _call(["demo", "--count-only", "--quiet", "--no-timing", "--only", "demo6", "--jobs", "1",
                          "--json", str(tmp_path / "r.json")], capsys)
    assert code == 2 and err == "dsasim demo: No space left on device: r.json\n"
    assert list(tmp_path.iterdir()) == []


def _children(pid: int) -> list[int]:
    """The child processes of `pid` (Linux /proc)."""
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(c) for c in text.split()]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to see the workers start")
def _sigint_default() -> None:
    """A shell's background job (`cmd &`, as CI may run us) inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt; a terminal's foreground job has the default action. Give the child the terminal's."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_reaches_a_real_multi_process_demo(tmp_path):
    """End to end: SIGINT to the whole process group (what a terminal sends) while two workers run demo1 and
    demo2; the parent exits 130 with one line, the workers print nothing, no JSON is written."""
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "dsasim.cli", "demo", "--count-only", "--quiet", "--no-timing",
                             "--only", "demo1", "demo2", "--jobs", "2", "--json", str(out)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_sigint_default)
    try:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 2:  # the workers start after the imports and the checks
            assert proc.poll() is None and time.monotonic() < deadline, "the demo did not start its workers"
            time.sleep(0.1)
        time.sleep(0.5)  # inside demo1 and demo2 (minutes each)
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert stderr == "dsasim demo: interrupted\n" and stdout == ""
    assert list(tmp_path.iterdir()) == []


# --- end to end through the interpreter and the console script ------------------------------------------------

def test_no_traceback_end_to_end(tmp_path):
    """Two mistakes, one through `python -m dsasim.cli` and one through the `dsasim` console script (each start
    imports torch: seconds), run side by side."""
    script = Path(sys.executable).parent / "dsasim"
    entry = [str(script)] if script.exists() else [sys.executable, "-m", "dsasim.cli"]
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "blog"\nclock_hz = inf\n')
    runs = [
        ([sys.executable, "-m", "dsasim.cli", "demo", "--json", str(tmp_path / "no" / "r.json")],
         f"dsasim demo: --json '{tmp_path / 'no' / 'r.json'}': folder '{tmp_path / 'no'}' does not exist"),
        (entry + ["simulate", "demo6", "--hardware", str(bad)],
         f"dsasim simulate: hardware file {bad}: Accelerator 'bad': clock_hz must be a positive number"),
    ]
    procs = [subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for argv, _ in runs]
    for (argv, fragment), proc in zip(runs, procs):
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 2, (argv, stderr)
        assert "Traceback" not in stderr and stderr.count("\n") == 1 and stderr.startswith(fragment), stderr
        assert stdout == ""


# --- the atomic writer ----------------------------------------------------------------------------------------

def test_atomic_write_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "r.json"
    write_text_atomic(target, "first\n")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("disk full")
    assert target.read_text() == "first\n" and _leftovers(tmp_path) == []
    write_text_atomic(target, "second\n")
    assert target.read_text() == "second\n" and sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_atomic_write_follows_a_link_and_keeps_the_usual_permissions(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    mask = os.umask(0o022)
    try:
        write_text_atomic(link, "new")
    finally:
        os.umask(mask)
    assert link.is_symlink() and real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o644  # 0o666 minus the umask, like open(); not mkstemp's 0o600
