"""Issue 26, last gaps: options that a command cannot honour are refused, one line and exit 2, before any work.

* `search --confirm N` with N > 1 on a chain or on hardware with levels below the SRAM: those searches re-run only
  their chosen schedule(s), so N > 1 used to act as 1 silently. Now refused; 0 and 1 still work there, and the
  default there is 1 (a single layer's search on one-level hardware keeps its default of 3).
* Non-finite values of every float-valued option: `--vary FIELD=...` of the hardware's float fields
  (clock_hz, dram_bytes_per_cycle), `--within`, `--max-loss`, and the float fields of a hardware TOML file
  (including an inner level's bytes_per_cycle). inf, -inf and nan (and a literal that overflows to inf) are
  refused naming the field or flag. (At ca13671 each was already refused by `Accelerator`'s / `MemoryLevel`'s
  range checks and `parse_percent`; these cases add the class to the error corpus, and the mutants in
  bench/mutation.py's trust4 block show the tests would see a NaN slip through.)
"""

from __future__ import annotations

import importlib

import pytest

from dsasim.cli import main
from cli_helpers import one_line_error

CHAIN = "gemm-chain:m=96,n=48,k=32,l=120"
NETWORK = ["sweep-sram", "--network", "resnet18", "--sizes", "64KiB", "--quiet"]
OVERFLOW = "1e999"  # float("1e999") == inf


def _tripwire(*_args, **_kwargs):
    raise AssertionError("the work started before the command line was checked")


@pytest.fixture
def no_work(monkeypatch):
    """The searches, the network loader and the shape sweep's executor replaced by tripwires."""
    monkeypatch.setattr(importlib.import_module("dsasim.architect.search.layer_search"), "search", _tripwire)
    monkeypatch.setattr(importlib.import_module("dsasim.architect.search.fused_search"), "search_chain", _tripwire)
    levels = importlib.import_module("dsasim.architect.search.level_search")
    monkeypatch.setattr(levels, "search_levels", _tripwire)
    monkeypatch.setattr(importlib.import_module("dsasim.cli.network"), "load_network_quietly", _tripwire)
    monkeypatch.setattr(importlib.import_module("dsasim.architect.studies.executor"), "open_executor", _tripwire)


_one_line_error = one_line_error


# -- search --confirm N ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, where", [
    (["search", CHAIN, "--confirm", "2"], "--confirm 2 does not apply to a chain's search"),
    (["search", "resnet18.layer1.0", "--confirm", "3"], "--confirm 3 does not apply to a chain's search"),
    (["search", "gemm-64", "--hardware", "blog-l1", "--confirm", "2"],
     "--confirm 2 does not apply to a search on blog-l1"),
])
def test_confirm_above_one_is_refused_where_only_the_chosen_schedule_is_rerun(argv, where, capsys, no_work):
    line = _one_line_error(argv, capsys, where)
    assert "give 0 or 1" in line


def test_a_chain_confirms_with_the_default_and_with_one_and_not_with_zero(capsys):
    """Default (no --confirm) and --confirm 1: every chosen schedule traced and timed, cycles 'simulated';
    --confirm 0: the model's estimate."""
    for argv, source in ((["search", CHAIN, "--sram", "8KiB"], "(simulated)"),
                         (["search", CHAIN, "--sram", "8KiB", "--confirm", "1"], "(simulated)"),
                         (["search", CHAIN, "--sram", "8KiB", "--confirm", "0"], "(estimated)")):
        assert main(argv) == 0
        out, err = capsys.readouterr()
        cycles = [line for line in out.splitlines() if line.startswith("  cycles ")]
        assert len(cycles) == 1 and cycles[0].endswith(source), (argv, cycles)


def test_a_single_layer_still_confirms_its_top_n(monkeypatch, capsys):
    """On one-level hardware the count reaches the search as given (default 3), and a runner only when N > 0."""
    module = importlib.import_module("dsasim.architect.search.layer_search")
    real, seen = module.search, []

    def spy(*args, **kwargs):
        seen.append((kwargs["confirm_top"], kwargs["runner"] is not None))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "search", spy)
    for extra in ([], ["--confirm", "2"], ["--confirm", "1"], ["--confirm", "0"]):
        assert main(["search", "gemm:m=64,n=48,k=16", "--sram", "1KiB", *extra]) == 0
    assert "confirmed    2 candidate(s)" in capsys.readouterr().out  # the top list has 2 distinct nests here
    assert seen == [(3, True), (2, True), (1, True), (1, False)]


# -- non-finite floats -------------------------------------------------------------------------------------------
NON_FINITE = ["inf", "-inf", "nan", "NaN", OVERFLOW]


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize("field", ["clock_hz", "dram_bytes_per_cycle"])
def test_vary_of_a_float_field_refuses_non_finite_values(field, value, capsys, no_work):
    _one_line_error(NETWORK + ["--vary", f"{field}=32,{value}"], capsys, f"{field} must be a positive number")


@pytest.mark.parametrize("value", ["inf", "inf%", "nan", "nan%", OVERFLOW, "-1%"])
def test_within_refuses_non_finite_and_negative_percentages(value, capsys, no_work):
    _one_line_error(NETWORK + [f"--within={value}"], capsys, f"--within {value!r}: give a percentage >= 0")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan%", OVERFLOW + "%"])
def test_max_loss_refuses_non_finite_percentages(value, capsys, no_work):
    _one_line_error(["shapes", "gemm-64", "--vary", "m=1:4", f"--max-loss={value}", "--quiet"], capsys,
                    f"--max-loss {value!r}: give a percentage >= 0")


@pytest.mark.parametrize("text, expect", [
    ('base = "blog"\nclock_hz = nan\n', "clock_hz must be a positive number"),
    ('base = "blog"\ndram_bytes_per_cycle = inf\n', "dram_bytes_per_cycle must be a positive number"),
    ('base = "blog"\ndram_bytes_per_cycle = -inf\n', "dram_bytes_per_cycle must be a positive number"),
    ('name = "x"\nsram_bytes = 65536\nword_bytes = 1\n[[inner_levels]]\nname = "L1w"\ncapacity_bytes = 4096\n'
     'bytes_per_cycle = nan\nholds = ["weight"]\n', "'L1w': bytes_per_cycle must be a positive number"),
    ('name = "x"\nsram_bytes = 65536\nword_bytes = 1\n[[inner_levels]]\nname = "L1w"\ncapacity_bytes = 4096\n'
     'bytes_per_cycle = inf\nholds = ["weight"]\n', "'L1w': bytes_per_cycle must be a positive number"),
])
def test_toml_float_fields_refuse_non_finite_values(text, expect, tmp_path, capsys, no_work):
    path = tmp_path / "hw.toml"
    path.write_text(text)
    for argv in (["search", "gemm-64", "--hardware", str(path)],
                 NETWORK[:1] + ["gemm-64", "--sizes", "64KiB", "--hardware", str(path), "--quiet"]):
        _one_line_error(argv, capsys, expect)
