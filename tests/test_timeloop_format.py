"""Timeloop's YAML in and out (dsasim/architect/studies/timeloop.py, `dsasim timeloop`, `dsasim search --timeloop`).

Outside truth: five mappings of Accelergy-Project/timeloop-accelergy-exercises at commit
2d5510807128e9bd5f1cad0705cdf2ec4612fd4e, under workspace/tutorial_exercises/01_accelergy_timeloop_2020_ispass/
timeloop/. Their problem, architecture and mapping files are copied unchanged into tests/data/timeloop/ (README there
names each source); the expected counts are Timeloop's own, digit for digit from each exercise's
`ref-output/.../timeloop-model.stats.txt` ("Scalar reads / fills / updates (per-instance)" of each data space at
Buffer and MainMemory; "Computes" of MACC). tests/test_energy_timeloop.py reproduces three of them with hand-built
nests; here the same numbers come from reading the files.

What the reader must do to match (module docstring of dsasim/architect/studies/timeloop.py): the permutation is
innermost first (`PRK`: K outermost); a tensor is kept in the buffer across the innermost loops that do not index
it; Inputs slide along the output-position loop P (Timeloop's delta of consecutive tiles); the MAC holds nothing,
so every MAC reads a weight and an input and read-modify-writes a partial sum at the buffer (dsasim's
`no_local_reuse` dataflow on a 1 x 1 TensorCore).

Known differences, each asserted to be exactly its term:
* the drain read: dsasim's store of a finished output reads the SRAM; Timeloop does not count it at the Buffer.
  The derived "reads" of Outputs subtract it (the raw dsasim bytes keep it: Timeloop's + MainMemory's updates).
* sliding-window reuse along a kernel-tap loop (exercise 01, weight-stationary mapping `ws`): MainMemory loops
  R=3 outside, the Buffer holds P=16. Timeloop keeps the 15 inputs two consecutive taps share: 16 + 1 + 1 = 18
  fills. dsasim slides only along output positions, so it loads the 16-input window of each tap: 3 x 16 = 48.
* sliding below the SRAM (exercise 03, three levels): dsasim's levels below the SRAM do not slide, so its
  RegisterFile loads each 3-input window (768 fills) where Timeloop slides along P (288).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsasim.architect.model.analytic import analyze
from dsasim.architect.model.hierarchy import InnerTiling, LevelNest
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem
from dsasim.architect.studies.timeloop import (TimeloopFormatError, read_timeloop, rule_differences,
                                               timeloop_counts, timeloop_files, timeloop_hardware_priced)
from dsasim.cli import main
from dsasim.dataflow import operand_accesses
from dsasim.energy.report import LEAKAGE, TENSORCORE, energy_report
from dsasim.hardware import load_hardware
from dsasim.kernels.loopnest_kernel import run_levelnest, run_loopnest

DATA = Path(__file__).parent / "data" / "timeloop"
ACCELERGY = Path(__file__).parent / "data" / "accelergy"
ARCH = DATA / "2level.arch.yaml"
ERT, ART = ACCELERGY / "conv1d_2level.ERT_summary.yaml", ACCELERGY / "conv1d_2level.ART_summary.yaml"

# Timeloop's published counts, per exercise: (problem file, mapping file, computes, {(level, data space): (reads,
# fills, updates)}), from ref-output/<case>/timeloop-model.stats.txt of each exercise.
PUBLISHED = {
    "02-no-tiling": ("conv1d+oc.prob.yaml", "conv1d+oc-2level-os.map.yaml", 1536, {
        ("Buffer", "Weights"): (1536, 96, 0), ("Buffer", "Inputs"): (1536, 576, 0),
        ("Buffer", "Outputs"): (1024, 0, 1536), ("MainMemory", "Weights"): (96, 0, 0),
        ("MainMemory", "Inputs"): (576, 0, 0), ("MainMemory", "Outputs"): (0, 0, 512)}),
    "02-tiling": ("conv1d+oc.prob.yaml", "conv1d+oc-2level-os-tiled.map.yaml", 1536, {
        ("Buffer", "Weights"): (1536, 96, 0), ("Buffer", "Inputs"): (1536, 288, 0),
        ("Buffer", "Outputs"): (1024, 0, 1536), ("MainMemory", "Weights"): (96, 0, 0),
        ("MainMemory", "Inputs"): (288, 0, 0), ("MainMemory", "Outputs"): (0, 0, 512)}),
    "01-os": ("conv1d.prob.yaml", "conv1d-2level-os.map.yaml", 48, {
        ("Buffer", "Weights"): (48, 3, 0), ("Buffer", "Inputs"): (48, 18, 0),
        ("Buffer", "Outputs"): (32, 0, 48), ("MainMemory", "Weights"): (3, 0, 0),
        ("MainMemory", "Inputs"): (18, 0, 0), ("MainMemory", "Outputs"): (0, 0, 16)}),
    "01-ws": ("conv1d.prob.yaml", "conv1d-2level-ws.map.yaml", 48, {
        ("Buffer", "Weights"): (48, 3, 0), ("Buffer", "Inputs"): (48, 18, 0),
        ("Buffer", "Outputs"): (32, 0, 48), ("MainMemory", "Weights"): (3, 0, 0),
        ("MainMemory", "Inputs"): (18, 0, 0), ("MainMemory", "Outputs"): (0, 0, 16)}),
    # 03-model-conv1d+oc-3level, ref-output/no-bypass: arch/3level.arch.yaml (MainMemory DRAM, GlobalBuffer
    # 32768 x 64 bits, RegisterFile 64 x 8 bits), MainMemory factors all 1, GlobalBuffer K=16 P=16, RegisterFile
    # K=2 R=3
    "03-no-bypass": ("conv1d+oc.prob.yaml", "conv1d+oc-3level.map.yaml", 1536, {
        ("RegisterFile", "Weights"): (1536, 96, 0), ("RegisterFile", "Inputs"): (1536, 288, 0),
        ("RegisterFile", "Outputs"): (1024, 0, 1536), ("GlobalBuffer", "Weights"): (96, 96, 0),
        ("GlobalBuffer", "Inputs"): (288, 18, 0), ("GlobalBuffer", "Outputs"): (0, 0, 512),
        ("MainMemory", "Weights"): (96, 0, 0), ("MainMemory", "Inputs"): (18, 0, 0),
        ("MainMemory", "Outputs"): (0, 0, 512)}),
}
ARCHS = {"03-no-bypass": DATA / "3level.arch.yaml"}
# The published counts dsasim does not reproduce, and dsasim's own (module docstring: the two sliding rules).
# 01-ws: each of the 3 taps loads its 16-input window, 3 x 16 = 48 (Timeloop 16 + 1 + 1 = 18). 03: the
# RegisterFile holds 2 output channels x 1 position; per K tile (16) and position (16) it loads the 3 inputs of the
# window, 16 x 16 x 3 = 768 (Timeloop slides along P: 16 x (3 + 15) = 288), all read from the GlobalBuffer.
SLIDING = {"01-ws": {("Buffer", "Inputs"): (48, 3 * 16, 0), ("MainMemory", "Inputs"): (3 * 16, 0, 0)},
           "03-no-bypass": {("RegisterFile", "Inputs"): (1536, 16 * 16 * 3, 0),
                            ("GlobalBuffer", "Inputs"): (16 * 16 * 3, 18, 0)}}


def _read(case: str):
    problem, mapping, _, _ = PUBLISHED[case]
    return read_timeloop(DATA / problem, ARCHS.get(case, ARCH), DATA / mapping)


def _run(spec, hardware=None):
    if isinstance(spec.nest, LevelNest):
        run = run_levelnest(spec.on(hardware).nest if hardware else spec.nest, record_trace=False)
        assert run.status.value == "ok", run.message
        return run.access_counts
    run = run_loopnest(spec.nest, hardware or spec.hardware, record_trace=False)
    assert run.status.value == "ok", run.message
    return run.access_counts


@pytest.mark.parametrize("case", sorted(PUBLISHED))
def test_counts_equal_timeloops_published_ones(case):
    """dsasim's traced counts of the nest read from the files, in Timeloop's terms, equal Timeloop's published
    counts; the tap-slide difference of `01-ws` is exactly dsasim's 3 x 16 window loads."""
    spec = _read(case)
    counts = _run(spec)
    got = {(r.level, r.data_space): (r.reads, r.fills, r.updates) for r in timeloop_counts(spec, counts)}
    expected = dict(PUBLISHED[case][3])
    expected.update(SLIDING.get(case, {}))
    assert got == expected
    assert counts.macs == counts.padded_macs == PUBLISHED[case][2]


@pytest.mark.parametrize("case", sorted(PUBLISHED))
def test_the_raw_bytes_keep_the_drain_read(case):
    """dsasim's own reads of Outputs at a level are Timeloop's reads there plus the updates of the level above
    (the write-back of each finished output reads it: 1024 + 512 = 1536 at exercise 02's Buffer, 32 + 16 = 48 at
    exercise 01's; 1024 + 512 at exercise 03's RegisterFile and 0 + 512 at its GlobalBuffer)."""
    spec = _read(case)
    rows = {(r.level, r.data_space): r for r in timeloop_counts(spec, _run(spec))}
    published = PUBLISHED[case][3]
    names = [lv.name for lv in spec.levels]
    for above, level in zip(names, names[1:]):
        assert rows[(level, "Outputs")].dsasim_read_bytes == published[(level, "Outputs")][0] + \
            published[(above, "Outputs")][2]


def test_the_nest_read_is_the_hand_built_one():
    """Exercise 02, tiled: `factors: R=1 P=16 K=16, permutation: PRK` at MainMemory is K outermost, then R (one trip),
    then P innermost; the
    Buffer's `K=2 R=3` is the tile; weights kept inside K, inputs sliding along P, outputs inside P (the nest
    tests/test_energy_timeloop.py builds by hand, its one-trip loops after the two)."""
    spec = _read("02-tiling")
    hand = LoopNest(ConvProblem(1, 1, 32, 1, 18, 1, 3), ("oc", "kw", "ow", "n", "oh", "ic", "kh"),
                    {"oc": 2, "ow": 1}, {"weight": "oc", "image": "ow", "output": "ow"}, slide=["image"])
    assert spec.nest == hand
    assert spec.dimension_names == {"K": "oc", "R": "kw", "P": "ow"}
    assert spec.tensor_names == {"Weights": "weight", "Inputs": "image", "Outputs": "output"}
    # the Buffer: depth 64 x width 8 bits = 64 bytes, 1-byte words; MACC as one MAC that holds nothing
    hw = spec.hardware
    assert (hw.sram_bytes, hw.word_bytes, hw.tensorcore_in_channels, hw.tensorcore_out_channels,
            hw.tensorcore_dataflow, hw.clock_hz) == (64, 1, 1, 1, "no_local_reuse", 1e9)


def test_each_difference_is_named_where_it_applies():
    """The rules printed: the drain in every case; the tap slide only where an input's innermost MainMemory loop
    is a kernel tap (01-ws: R outside); the slide below the SRAM only in 03 (P innermost at the GlobalBuffer);
    none about strided windows (all strides 1)."""
    for case in PUBLISHED:
        rules = rule_differences(_read(case))
        assert any(r.startswith("the drain read") for r in rules)
        tap = [r for r in rules if r.startswith("sliding-window reuse along a kernel-tap loop")]
        assert len(tap) == (1 if case == "01-ws" else 0), (case, rules)
        below = [r for r in rules if r.startswith("sliding-window reuse below the SRAM")]
        assert len(below) == (1 if case == "03-no-bypass" else 0), (case, rules)
        assert not any("strided" in r for r in rules)
    assert "the tap R" in next(r for r in rule_differences(_read("01-ws")) if "kernel-tap" in r)


def test_three_levels_read_as_a_level_nest():
    """Exercise 03: MainMemory (a DRAM, no depth) is DDR, the GlobalBuffer (32768 x 64 bits = 262,144 B) the SRAM,
    the RegisterFile (64 x 8 bits) a level below it holding every operand; the outer nest runs once (MainMemory's
    factors are 1) with every tensor whole in the SRAM; the inner loops K (16 trips) then P (16), the weights kept
    inside K, inputs and outputs inside P."""
    spec = _read("03-no-bypass")
    assert isinstance(spec.nest, LevelNest)
    hw = spec.hardware
    assert (hw.sram_bytes, [(lv.name, lv.capacity_bytes, lv.holds) for lv in hw.inner_levels]) == \
        (262144, [("RegisterFile", 64, ("input", "weight", "output"))])
    order = ("oc", "kw", "ow", "n", "oh", "ic", "kh")
    outer = LoopNest(ConvProblem(1, 1, 32, 1, 18, 1, 3), order, None, {"image": 0, "weight": 0, "output": 0})
    assert spec.nest.outer == outer
    assert spec.nest.inner == InnerTiling(order, {"oc": 2, "ow": 1, "kw": 3}, {"weight": 1, "image": 3, "output": 3})


def test_bypass_above_the_lowest_level_is_refused_below_it_read(tmp_path):
    """Exercise 03's bypass mapping bypasses Outputs at the GlobalBuffer (dsasim's SRAM holds every tensor:
    refused); bypassing only at the RegisterFile is read: it holds the outputs alone, and the MAC reads weights and
    inputs from the GlobalBuffer (Timeloop's published GlobalBuffer reads: 1536 each)."""
    with pytest.raises(TimeloopFormatError, match=r"bypass \['Outputs'\] at GlobalBuffer is not modelled"):
        _read_files("conv1d+oc.prob.yaml", "3level.arch.yaml", "conv1d+oc-3level-bypass.map.yaml")
    text = (DATA / "conv1d+oc-3level-bypass.map.yaml").read_text()
    mapping = tmp_path / "rf-bypass.map.yaml"
    mapping.write_text(text[:text.index("  - target: GlobalBuffer\n    type: dataspace")] +
                       text[text.index("  - target: RegisterFile\n    type: dataspace"):])
    spec = read_timeloop(DATA / "conv1d+oc.prob.yaml", DATA / "3level.arch.yaml", mapping)
    assert spec.hardware.inner_levels[0].holds == ("output",)
    rows = {(r.level, r.data_space): (r.reads, r.fills, r.updates) for r in timeloop_counts(spec, _run(spec))}
    # published (ref-output/bypass): GlobalBuffer Weights 1536 reads / 96 fills, Inputs 1536 / 18; RegisterFile
    # Outputs 1024 / 0 / 1536; MainMemory as before
    assert rows[("GlobalBuffer", "Weights")] == (1536, 96, 0) and rows[("GlobalBuffer", "Inputs")] == (1536, 18, 0)
    assert rows[("RegisterFile", "Outputs")] == (1024, 0, 1536)
    assert ("RegisterFile", "Weights") not in rows


def _read_files(problem: str, arch: str, mapping: str):
    return read_timeloop(DATA / problem, DATA / arch, DATA / mapping)


def test_no_local_reuse_dataflow_by_hand():
    """One call of 10 pixels, 9 taps, 2 groups, 20 in and 30 out channels on a 16 x 24 array, 10 fresh outputs:
    inputs read P x T x G x I x ceil(O/24) = 10*9*2*20*2 = 7,200; weights every step, P x T x G x I x O =
    10*9*2*20*30 = 108,000; output writes P x T x G x ceil(I/16) x O = 10*9*2*2*30 = 10,800, reads 10,800 - 10."""
    assert operand_accesses("no_local_reuse", 10, 9, 2, 20, 30, 16, 24, 10) == (7200, 108000, 10790, 10800)


def test_energy_from_the_accelergy_table_equals_the_hand_built_hardware():
    """The arch priced by the exercise's ERT/ART (the components named by the arch) gives the energy of
    tests/data/accelergy/conv1d_2level.toml's hand-written binding, and Timeloop's published per-component energies
    of exercise 02 (no tiling): MAC 1536 x 0.845 = 1297.92 pJ; Buffer 694.64 + 898.95 + 1089.64 = 2683.23 pJ plus
    the 512 drain reads x 0.42564 pJ; leakage 1536 cycles x 0.000861 pJ = 1.32 pJ."""
    spec = _read("02-no-tiling")
    priced = timeloop_hardware_priced(spec, ERT, ART)
    counts = _run(spec, priced)
    report = energy_report(counts, priced, 1536)
    hand = energy_report(counts, load_hardware(ACCELERGY / "conv1d_2level.toml"), 1536)
    for key in ("DDR", "SRAM", TENSORCORE, LEAKAGE):
        assert report.energy_breakdown_pj[key] == pytest.approx(hand.energy_breakdown_pj[key], rel=1e-12)
    br = report.energy_breakdown_pj
    assert abs(br[TENSORCORE] - 1297.92) < 0.005 + 1e-9
    assert abs(br["SRAM"] - (694.64 + 898.95 + 1089.64 + 512 * 0.42564)) < 3 * 0.005
    assert abs(br[LEAKAGE] - 1.32) < 0.005 + 1e-9


def test_cli_prints_both_counts_and_writes_json(tmp_path, capsys):
    out = tmp_path / "tl.json"
    assert main(["timeloop", str(DATA / "conv1d.prob.yaml"), str(ARCH), str(DATA / "conv1d-2level-ws.map.yaml"),
                 "--accelergy", str(ERT), str(ART), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "sliding-window reuse along a kernel-tap loop" in text and "energy (Accelergy table" in text
    data = json.loads(out.read_text())
    rows = {(r["level"], r["data_space"]): r for r in data["counts"]}
    assert (rows[("MainMemory", "Outputs")]["updates"], rows[("Buffer", "Weights")]["reads"]) == (16, 48)
    assert data["energy"]["energy_breakdown_pj"]["tensorcore"] == pytest.approx(48 * 0.845)


# -- bad input: one line naming the file and the entry, exit 2, nothing written ----------------------------------
PROBLEM_TEXT = (DATA / "conv1d+oc.prob.yaml").read_text()
ARCH_TEXT = ARCH.read_text()
MAP_TEXT = (DATA / "conv1d+oc-2level-os-tiled.map.yaml").read_text()
BAD = {
    "malformed YAML": ("problem", PROBLEM_TEXT.replace("dimensions: [ K, R, P ]", "dimensions: [ K, R, P"),
                       "not valid YAML"),
    "unknown problem shape": ("problem", PROBLEM_TEXT.replace("      - [ [R], [P] ]", "      - [ [K] ]\n"
                                                                                   "      - [ [R], [P] ]"),
                              "dimension(s) ['K'] fit no role of a conv"),
    "two dimensions, one role": ("problem", PROBLEM_TEXT.replace("      - [ [K] ]\n      - [ [R] ]",
                                                                  "      - [ [K] ]\n      - [ [R] ]\n      - [ [P] ]"),
                                 "dimensions ['K', 'P'] all play 'oc'"),
    "unknown key in the problem": ("problem", PROBLEM_TEXT.replace("  instance:", "  densities: {}\n  instance:"),
                                   "problem: unknown key(s) ['densities']"),
    "spatial factors": ("mapping", MAP_TEXT + "  - target: Buffer\n    type: spatial\n    factors: K=2\n",
                        "spatial factors {'K': 2} are not modelled"),
    "unknown mapping key": ("mapping", MAP_TEXT.replace("    permutation: RPK", "    permutation: RPK\n    split: 1"),
                            "unknown key(s) ['split']"),
    "factors do not multiply": ("mapping", MAP_TEXT.replace("R=1 P=16 K=16", "R=1 P=16 K=8"),
                                "factors of K: MainMemory x Buffer = 8 x 2 = 16, but the problem's K is 32"),
    "level the arch lacks": ("mapping", MAP_TEXT.replace("target: Buffer", "target: GlobalBuffer"),
                             "target 'GlobalBuffer' is not a storage level of the architecture"),
    "four levels": ("arch", ARCH_TEXT.replace("  - !Container\n    name: PE",
                                              "".join(f"  - !Component\n    name: L{k}\n    class: SRAM\n    "
                                                      f"attributes:\n      depth: 128\n      width: 8\n      "
                                                      f"datawidth: 8\n" for k in (2, 3))),
                    "4 storage level(s)"),
    "spatial fan-out": ("arch", ARCH_TEXT.replace("    name: PE", "    name: PE\n    spatial: {meshX: 4}"),
                        "spatial fan-out is not modelled"),
    "fan-out as an attribute": ("arch", ARCH_TEXT.replace("      depth: 64", "      depth: 64\n      meshX: 2"),
                                "spatial fan-out is not modelled"),
    "bypass": ("mapping", MAP_TEXT + "  - target: Buffer\n    type: dataspace\n    bypass: [Inputs]\n",
               "bypass ['Inputs'] at Buffer is not modelled"),
    "unknown attribute": ("arch", ARCH_TEXT.replace("      depth: 64", "      depth: 64\n      colour: red"),
                          "unknown key(s) ['colour']"),
}
ENTRIES = {"malformed YAML": "line 6", "two dimensions, one role": "problem.shape",
           "unknown problem shape": "problem.shape", "unknown key in the problem": "problem",
           "spatial factors": "mapping[2] (Buffer, spatial)", "unknown mapping key": "mapping[1]",
           "factors do not multiply": "factors of K", "level the arch lacks": "mapping[1] (GlobalBuffer, temporal)",
           "four levels": "architecture.nodes", "spatial fan-out": "architecture.nodes[2] (PE).spatial",
           "bypass": "mapping (dataspace of Buffer)",
           "fan-out as an attribute": "architecture.nodes[3] (Buffer).spatial",
           "unknown attribute": "architecture.nodes[3] (Buffer).attributes"}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_line_naming_file_and_entry(name, tmp_path, capsys):
    which, text, message = BAD[name]
    files = {"problem": PROBLEM_TEXT, "arch": ARCH_TEXT, "mapping": MAP_TEXT}
    files[which] = text
    paths = {}
    for kind, body in files.items():
        paths[kind] = tmp_path / f"{kind}.yaml"
        paths[kind].write_text(body)
    out = tmp_path / "out.json"
    code = main(["timeloop", str(paths["problem"]), str(paths["arch"]), str(paths["mapping"]), "--json", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"dsasim timeloop: {paths[which]}: {ENTRIES[name]}"), err
    assert message in err, err
    assert not out.exists()
    with pytest.raises(TimeloopFormatError):
        read_timeloop(paths["problem"], paths["arch"], paths["mapping"])


def test_tiles_that_overflow_the_buffer_fail_in_one_line(tmp_path, capsys):
    """Everything in the 64-byte Buffer (96 weights + 18 inputs + 512 outputs): exit 1, one line on stderr naming
    the mapping, the buffer and the overflow (Timeloop rejects the mapping for capacity too)."""
    mapping = tmp_path / "big.map.yaml"
    mapping.write_text(MAP_TEXT.replace("R=1 P=16 K=16", "R=1 P=1 K=1").replace("R=3 P=1 K=2", "R=3 P=16 K=32"))
    assert main(["timeloop", str(DATA / "conv1d+oc.prob.yaml"), str(ARCH), str(mapping)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"dsasim timeloop: {mapping}: the mapping's tiles do not fit: SRAM overflow")


# -- out: search --timeloop, read back ---------------------------------------------------------------------------
ROUND_TRIP = {
    # a nest Timeloop expresses: every tensor staged inside its innermost tiled loop, the image sliding along ow
    "conv": LoopNest(ConvProblem(1, 4, 8, 6, 10, 3, 3), ("oc", "oh", "ow", "n", "ic", "kh", "kw"),
                     {"oc": 4, "oh": 1, "ow": 2}, {"weight": "oc", "image": "ow", "output": "ow"},
                     {"image": 2}, slide=["image"]),
    "matmul": LoopNest(MatmulProblem(64, 48, 32), ("m", "k", "n"), {"m": 16, "k": 8},
                       {"a": "k", "b": "k", "c": "m"}),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
def test_written_files_read_back_as_the_same_nest_and_counts(name, tmp_path):
    """`timeloop_files` then `read_timeloop`: the same nest (ways aside: Timeloop has no double buffering) and the
    same DDR bytes per tensor, by the analytic model and by the trace."""
    nest = ROUND_TRIP[name]
    blog = load_hardware("blog")
    texts = timeloop_files(nest, blog)
    for kind, text in texts.items():
        (tmp_path / f"{kind}.yaml").write_text(text)
    spec = read_timeloop(tmp_path / "problem.yaml", tmp_path / "arch.yaml", tmp_path / "mapping.yaml")
    single = nest.replace(ways={t: 1 for t in nest.problem.tensor_names})
    assert spec.nest.problem == nest.problem
    assert spec.nest == single.replace(order=spec.nest.order) and \
        [d for d in spec.nest.order if spec.nest.trips(d) > 1] == [d for d in nest.order if nest.trips(d) > 1]
    assert spec.hardware.sram_bytes == blog.sram_bytes
    theirs, ours = analyze(spec.nest, spec.hardware), analyze(nest, blog)
    for t in nest.problem.tensor_names:
        assert (theirs.tensor(t).loaded_bytes, theirs.tensor(t).stored_bytes) == \
            (ours.tensor(t).loaded_bytes, ours.tensor(t).stored_bytes)
    traced = {(r.tensor, r.level): (r.read_bytes, r.write_bytes) for r in _run(spec).tensors if r.level == "DDR"}
    assert traced == {(t, "DDR"): (ours.tensor(t).loaded_bytes, ours.tensor(t).stored_bytes)
                      for t in nest.problem.tensor_names}


def test_a_nest_timeloop_stages_differently_is_refused():
    """The weight staged above its innermost tiled loop: Timeloop would refetch it there, a different schedule."""
    nest = ROUND_TRIP["matmul"].replace(stage={"b": "top"})
    with pytest.raises(ValueError, match="stages b inside top; Timeloop keeps it inside k"):
        timeloop_files(nest, load_hardware("blog"))
    ragged = ROUND_TRIP["matmul"].replace(tiles={"m": 24})
    with pytest.raises(ValueError, match="tiles m by 24, which does not divide 64"):
        timeloop_files(ragged, load_hardware("blog"))


def test_search_writes_the_files_and_never_overwrites(tmp_path, capsys):
    folder = tmp_path / "tl"
    argv = ["search", "gemm:m=64,n=48,k=32", "--sram", "4KiB", "--confirm", "0", "--timeloop", str(folder)]
    assert main(argv) == 0
    written = {p.name: p.read_text() for p in folder.iterdir()}
    assert sorted(written) == ["arch.yaml", "map.yaml", "problem.yaml"]
    spec = read_timeloop(folder / "problem.yaml", folder / "arch.yaml", folder / "map.yaml")
    assert spec.nest.problem == MatmulProblem(64, 48, 32)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exist" in err and "never overwritten" in err
    assert {p.name: p.read_text() for p in folder.iterdir()} == written


def test_search_refuses_padding_before_searching(tmp_path, capsys):
    folder = tmp_path / "tl"
    assert main(["search", "conv:ic=16,oc=16,h=8,k=3,p=1", "--timeloop", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "padding (1, 1)" in captured.err
    assert not folder.exists()


@pytest.mark.parametrize("argv", [["resnet18.layer1.0"], ["gemm:m=64,n=48,k=32", "--hardware", "blog-l1"]])
def test_search_refuses_chains_and_inner_levels_before_searching(argv, tmp_path, capsys):
    folder = tmp_path / "tl"
    assert main(["search", *argv, "--timeloop", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "--timeloop writes a single layer's loop nest on one-level hardware" in captured.err
    assert not folder.exists()

