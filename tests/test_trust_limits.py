"""Trust, round two (limits): option validation, work estimates, bounded memory and Dask failures.

Every bad command line here ends with one line `dsasim COMMAND: ...` on stderr, exit 2 and no traceback, before
any work starts (the searches are tripwires); the library raises a specific exception. Work far beyond the usual
is refused with its estimate unless --force; the GEMM-chain space is evaluated in bounded chunks.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from dsasim.cli import main
from cli_helpers import one_line_error

HUGE = "9" * 400  # float(HUGE) == inf: a size parser working in floats overflows on it


def _tripwire(*_args, **_kwargs):
    raise AssertionError("the work started before the command line was checked")


@pytest.fixture
def no_work(monkeypatch):
    """Every search a command could start is a tripwire (the estimates are not: they must run to refuse)."""
    for module, names in (("dsasim.architect.search.layer_search", ("search",)),
                          ("dsasim.architect.studies.sweep", ("sweep_sram", "search_front")),
                          ("dsasim.architect.studies.shapes", ("_best_of",)),
                          ("dsasim.architect.search.fused_search", ("_layer_choice", "_fused_spaces")),
                          ("dsasim.architect.search.gemm_chain", ("evaluate_gemm_chain_space",)),
                          ("dsasim.architect.studies.network_eval", ("sweep_network",)),
                          ("dsasim.architect.search.level_search", ("search_levels", "sweep_levels"))):
        for name in names:
            monkeypatch.setattr(importlib.import_module(module), name, _tripwire)


_one_line_error = one_line_error


NETWORK = ["sweep-sram", "--network", "resnet18", "--sizes", "64KiB"]

BAD_OPTIONS = [
    # a range is counted before it is built; every value of --vary is checked, not only the first
    (["shapes", "gemm-64", "--vary", "m=1:1000000000000"], "1,000,000,000,000 shapes; at most 4096"),
    (["shapes", "conv:ic=64,oc=64,h=8,k=3,p=1,g=32", "--vary", "ic=32,33"], "--vary ic=33: "),
    (["shapes", "conv:ic=64,oc=64,h=8,k=3,p=1,g=32", "--vary", "ic=32:64:1"], "--vary ic=33: "),
    # Unicode digits: '²' passes str.isdigit but not int(); '٣' passes both (as 3): neither is a number typed here
    (["shapes", "gemm-64", "--vary", "m=1,²"], "digits 0-9"),
    (["shapes", "gemm-64", "--vary", "m=1,٣"], "digits 0-9"),
    (["shapes", "gemm-64", "--vary", "m=1:٣"], "digits 0-9"),
    (["search", "gemm-chain:m=64,n=²,k=64,l=64"], "digits 0-9"),
    (["search", "gemm-chain:m=64,n=٣,k=64,l=64"], "digits 0-9"),
    (["search", "conv:ic=٣,oc=8,h=8,k=3"], "ic"),
    (["search", "mobilenetv2.features.٣"], "unknown"),
    (["sweep-sram", *NETWORK[1:], "--vary", "vector_lanes=٨"], "is not a valid vector_lanes (int)"),
    # sizes past any float, or with an exponent, under every command that reads one
    (["shapes", "gemm-64", "--vary", "m=1:2", "--sram", HUGE], "too many digits"),
    (["shapes", "gemm-64", "--vary", "m=1:2", "--sram", "9e999"], "cannot read '9e999'"),
    (["network", "resnet18", "--sram", HUGE], "too many digits"),
    (["network", "resnet18", "--sram", "9e999"], "cannot read '9e999'"),
    (["search", "gemm-64", "--sram", HUGE], "too many digits"),
    (["search", "gemm-64", "--sram", "1." + "0" * 30 + "1"], "too many digits"),
    (["sweep-sram", "gemm-64", "--sizes", f"1KiB:{HUGE}"], "too many digits"),
    (["search", "gemm-64", "--sram", "9223372036854775808"], "too large"),  # 2**63: one past int64
    # a malformed Dask address
    (["sweep-sram", *NETWORK[1:], "--executor", "dask://localhost:abc"], "the port 'abc' is not a number"),
    (["sweep-sram", *NETWORK[1:], "--executor", "dask://localhost:99999"], "not from 1 to 65535"),
    (["sweep-sram", *NETWORK[1:], "--executor", "dask://localhost:٣"], "not a number"),
    (["sweep-sram", *NETWORK[1:], "--executor", "dask://:8786"], "dask://HOST:PORT"),
    # options that do not apply are refused, not ignored
    (["sweep-sram", "gemm-64", "--sizes", "64KiB", "--executor", "dask://127.0.0.1:8786", "--jobs", "5"],
     "--executor does not apply to a LAYER's sweep"),
    (["sweep-sram", "gemm-64", "--sizes", "64KiB", "--jobs", "5"], "--jobs does not apply to a LAYER's sweep"),
    ([*NETWORK, "--executor", "dask://127.0.0.1:8786", "--jobs", "5"], "--jobs does not apply to --executor dask://"),
    ([*NETWORK, "--level", "L1w"], "--level does not apply to a --network sweep"),
    ([*NETWORK, "--no-slide"], "--no-slide does not apply to a --network sweep"),
    ([*NETWORK, "--no-simulate"], "--no-simulate does not apply to a --network sweep"),
    ([*NETWORK, "--vary", "vector_lanes=8", "--vary", "vector_lanes=16"], "--vary vector_lanes is given twice"),
    ([*NETWORK, "--vary", "sram_bytes=65536"], "what --sizes sweeps"),
    (["sweep-sram", "gemm-64", "--sizes", "64KiB", "--objective", "cycles"], "--objective cycles does not apply"),
    (["sweep-sram", "resnet18.layer1.0", "--sizes", "64KiB", "--no-slide"], "--no-slide does not apply to a chain"),
    (["sweep-sram", "gemm-64", "--hardware", "blog-l1", "--sizes", "1KiB", "--no-simulate"],
     "--no-simulate (the one-level estimate of a checked nest's cycles) models one on-chip level"),
    (["sweep-sram", "gemm-64", "--sizes", "64KiB", "--level", "SRAM", "--within", "10%"],
     "--within does not apply"),
    (["search", "gemm-64", "--confirm", "0", "--no-simulate"], "--no-simulate does not apply with --confirm 0"),
    (["search", "resnet18.layer1.0", "--no-slide"], "--no-slide does not apply to a chain"),
    (["search", "gemm-64", "--hardware", "blog-l1", "--no-simulate"], "--no-simulate (the one-level estimate of a checked nest's cycles) models one on-chip level"),
]


@pytest.mark.parametrize("argv, expect", BAD_OPTIONS, ids=[" ".join(a)[:70] for a, _ in BAD_OPTIONS])
def test_bad_options_are_one_line_errors_before_any_work(argv, expect, capsys, no_work):
    _one_line_error(argv, capsys, expect)


# Work far beyond the usual (WORK_LIMIT_SECONDS = 600 s) is refused with its estimate, before any search starts.
# The figures are orders of magnitude (hand): res2a_branch2b's first pass alone is ~9.3 M candidates at n=1 and
# grows with n, so 4,096 shapes are > 4,096 x 9.3 M / 1.5 M/s / 2 workers ~ 3.5 hours; resnet18 at 265,214
# distinct sizes (1 KiB .. 1 GiB, whole KiB) costs >= 12 searches x 265,214 x 0.02 s / 2 workers ~ 8.8 hours;
# gemm-chain at 4096 has 127 x 145 x 147 x 148 x 2 orders ~ 8.0e8 fused nests at 1 M/s ~ 13 minutes.
TOO_MUCH = [
    (["shapes", "resnet50.res2a_branch2b", "--vary", "n=1:4096"], "searches of 4,096 shape(s)"),
    (["sweep-sram", "--network", "resnet18", "--sizes", "1KiB:1GiB:1000000"], "the sweep of resnet18"),
    (["search", "gemm-chain:m=4096,n=4096,k=4096,l=4096"], "search of the chain"),
    (["search", "gemm-chain:m=65536,n=65536,k=65536,l=65536"], "search of the chain"),
    (["sweep-sram", "gemm-chain:m=4096,n=4096,k=4096,l=4096", "--sizes", "64KiB:1MiB"], "search of the chain"),
]


@pytest.mark.parametrize("argv, expect", TOO_MUCH, ids=[" ".join(a)[:60] for a, _ in TOO_MUCH])
def test_work_far_beyond_the_usual_is_refused_with_its_estimate(argv, expect, capsys, no_work):
    line = _one_line_error(argv, capsys, "estimated work far beyond the usual")
    assert expect in line and "--force" in line and ("hours" in line or "minutes" in line or "days" in line)


def test_the_estimates_scale_as_derived():
    """estimate_shapes_work counts exactly at up to 5 shapes (= the per-shape search estimates summed), and the
    GEMM-chain grid it counts is the grid evaluated; a network sweep's per-size share is 0.02 s per size."""
    from dsasim.architect.search.gemm_chain import evaluate_gemm_chain_space, gemm_chain_space_size, parse_gemm_chain
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.layer_search import SECONDS_PER_CAPACITY, estimate_search_work
    from dsasim.architect.studies.shapes import estimate_shapes_work, shape_problems
    from dsasim.hardware import load_hardware

    hw = load_hardware("blog")
    problems = shape_problems(parse_layer("gemm-64"), "m", [1, 7, 30, 64])
    exact = sum(estimate_search_work(p, hw).evaluations for p in problems)
    assert estimate_shapes_work(problems, hw).evaluations == exact
    two = estimate_shapes_work(problems, hw, jobs=2)
    assert two.seconds == pytest.approx(estimate_shapes_work(problems, hw).seconds / 2)
    # 9 shapes, 5 counted: the others interpolated between their counted neighbours, so the total lies between
    # 9 x the least and 9 x the most count
    nine = shape_problems(parse_layer("gemm-64"), "m", list(range(8, 73, 8)))
    counts = [estimate_search_work(p, hw).evaluations for p in nine]
    assert 9 * min(counts) <= estimate_shapes_work(nine, hw).evaluations <= 9 * max(counts)
    chain = parse_gemm_chain("gemm-chain:m=48,n=24,k=16,l=48")
    assert gemm_chain_space_size(chain, hw) == evaluate_gemm_chain_space(chain, hw).evaluations
    assert SECONDS_PER_CAPACITY == 0.02  # the derivation in TOO_MUCH's comment relies on it


def test_the_gemm_chain_space_is_evaluated_in_bounded_chunks():
    """_grid_chunks never gives more than chunk_nests nests (or one row of the last axis), covers every grid index
    exactly once; a chunked evaluation keeps the same fronts as one chunk."""
    from dsasim.architect.search.gemm_chain import _grid_chunks, evaluate_gemm_chain_space, parse_gemm_chain
    from dsasim.hardware import load_hardware

    sizes = [3, 4, 5, 6]  # 360 nests; one m index holds 120, one (m, l) pair 30, one (m, l, k) row 6
    for chunk in (1, 6, 29, 30, 119, 120, 121, 1000):
        seen = np.zeros(sizes, np.int64)
        for idx in _grid_chunks(sizes, chunk):
            n = math.prod(len(i) for i in idx)
            assert n <= max(chunk, sizes[-1]), (chunk, n)
            seen[np.ix_(*idx)] += 1
        assert (seen == 1).all(), chunk
    hw = load_hardware("blog")
    chain = parse_gemm_chain("gemm-chain:m=48,n=24,k=16,l=48")
    whole = evaluate_gemm_chain_space(chain, hw)
    per_m = math.prod(whole.shape[2:])
    small = evaluate_gemm_chain_space(chain, hw, chunk_nests=max(1, per_m // 3))  # splits along l
    for name in whole.fronts:
        for a, b in zip(whole.fronts[name], small.fronts[name]):
            assert np.array_equal(a, b), name
    for a, b in zip(whole.chimera_front, small.chimera_front):
        assert np.array_equal(a, b), "chimera"


def test_a_chain_search_prints_its_header_once(capsys):
    from dsasim.architect.search.gemm_chain import parse_gemm_chain

    spec = "gemm-chain:m=48,n=24,k=16,l=48"
    assert main(["search", spec, "--confirm", "0"]) == 0
    out = capsys.readouterr().out
    assert out.count(parse_gemm_chain(spec).describe()) == 1


# -------------------------------------------------------------------------------------------- library errors
def test_sizes_and_whole_numbers_are_read_exactly():
    from dsasim.architect.studies.sweep import MAX_SIZE_BYTES, parse_bytes
    from dsasim.util import is_ascii_whole, parse_whole

    # 1.0009765625 KiB = 1.0009765625 x 1024 = 1024 + 1 = 1025 B (0.0009765625 = 1/1024); 8 GiB = 2**33
    assert parse_bytes("1.0009765625KiB") == 1025 and parse_bytes("8GiB") == 2 ** 33
    assert parse_bytes(str(2 ** 63 - 1)) == MAX_SIZE_BYTES == 2 ** 63 - 1
    for bad in (HUGE, "9e999", str(2 ** 63), "1.5", "²", "٣KiB", "1_000", "inf", "nan", "1.0" + "0" * 40):
        with pytest.raises(ValueError):
            parse_bytes(bad)
    assert parse_whole(" 42 ", "x") == 42 and is_ascii_whole("0042") and not is_ascii_whole("4²")
    for bad in ("²", "٣", "-1", "1_0", "", "1" * 31):
        with pytest.raises(ValueError, match="x"):
            parse_whole(bad, "x")


def test_parse_vary_counts_before_building():
    from dsasim.architect.studies.shapes import parse_vary

    with pytest.raises(ValueError, match="1,000,000,000,000 shapes"):
        parse_vary("m=1:1000000000000")  # a list of 10**12 ints would be a MemoryError
    assert parse_vary("m=1:4096")[1][-1] == 4096
    with pytest.raises(ValueError, match="4,097 shapes"):
        parse_vary("m=1:4097")


def test_dask_addresses_are_checked():
    from dsasim.architect.studies.executor import open_executor, parse_dask_address

    assert parse_dask_address("dask://127.0.0.1:8786") == "tcp://127.0.0.1:8786"
    assert parse_dask_address("dask://[::1]:1") == "tcp://[::1]:1"
    for bad in ("dask://host", "dask://host:", "dask://:1", "dask://h:0", "dask://h:65536", "dask://h:x1",
                "dask://h:٣"):
        with pytest.raises(ValueError, match="dask://HOST:PORT"):
            open_executor(bad, 1)


def _loopnest_json() -> dict:
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.nests.loopnest import LoopNest

    p = parse_layer("gemm:m=32,n=48,k=16")
    return LoopNest(p, ["m", "n", "k"], {"m": 16}, {"a": "m", "b": "top", "c": "m"}).to_json()


def test_loopnest_from_json_names_missing_keys():
    from dsasim.architect.nests.loopnest import LoopNest

    good = _loopnest_json()
    assert LoopNest.from_json(good).to_json() == good
    for drop, missing in (("order", "['order']"), ("problem", "['problem']")):
        data = {k: v for k, v in good.items() if k != drop}
        with pytest.raises(ValueError, match=f"LoopNest JSON: missing key\\(s\\) \\{missing}"):
            LoopNest.from_json(data)
    bad_problem = dict(good, problem={k: v for k, v in good["problem"].items() if k != "k"})
    with pytest.raises(ValueError, match=r"matmul problem JSON: missing key\(s\) \['k'\]"):
        LoopNest.from_json(bad_problem)
    with pytest.raises(ValueError, match="expected a JSON object"):
        LoopNest.from_json(["not", "a", "nest"])


def test_levelnest_from_json_names_missing_keys_and_checks_its_levels():
    from dsasim.architect.model.hierarchy import LevelNest
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.level_search import search_levels
    from dsasim.hardware import load_hardware

    hw = load_hardware("blog-l1")
    best = search_levels(parse_layer("gemm:m=32,n=48,k=16"), hw).best
    data = best.nest.to_json()
    assert LevelNest.from_json(data, hw).to_json() == data
    with pytest.raises(ValueError, match=r"LevelNest JSON: missing key\(s\) \['inner'\]"):
        LevelNest.from_json({"outer": data["outer"]}, hw)
    inner = {k: v for k, v in data["inner"].items() if k != "stage"}
    with pytest.raises(ValueError, match=r"LevelNest JSON 'inner': missing key\(s\) \['stage'\]"):
        LevelNest.from_json(dict(data, inner=inner), hw)
    levels = data["inner"]["levels"]
    assert levels, "blog-l1 puts some tensor in a level below the SRAM"
    renamed = {n: "L9" for n in levels}  # written for hardware whose level is called L9: not this hardware's
    with pytest.raises(ValueError, match="levels .* differ from 'blog-l1'"):
        LevelNest.from_json(dict(data, inner=dict(data["inner"], levels=renamed)), hw)
