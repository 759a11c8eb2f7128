"""The conv mapping variants (kernels/conv_mapping.py): direct, im2col in DDR, im2col on chip.

Each mapping equals torch on small shapes (stride, padding, dilation, batch, KxK and KHxKW kernels, channel counts
off the 16/24 blocks); traffic, MACs, padded MACs and peak SRAM are derived by hand below; the rule's pick is the
mapping with the fewest simulated cycles, on layers where each of its terms (TensorCore blocks, vector lanes, SRAM)
decides.
"""

from __future__ import annotations

import dataclasses

import pytest
from helpers import assert_schedule_matches_torch

from dsasim import ConvProblem, Schedule, preset, run_schedule
from dsasim.architect.problems.layers import parse_layer
from dsasim.timing import simulate
from dsasim.kernels.conv_mapping import (MAPPINGS, SCHEDULES, conv_mapping_schedule, estimate_mapping, fastest_mapping,
                                  footprint_bytes, format_mapping_table, mapping_table)

BLOG = preset("blog")
# ic=5: one partial 16-block; 3x3, stride 2, padding 1 on a 9x8 image -> output 5x4
STRIDED = ConvProblem(1, 5, 7, 9, 8, 3, stride=2, padding=1)

SHAPES = {
    "3x3 s2 p1 ic5": STRIDED,
    # batch 2, a 3x2 kernel dilated 2, stride (1, 2), padding (2, 1); 18 input channels: two 16-blocks, the
    # second partial; 30 output channels: two 24-blocks
    "batch2 3x2 d2 s(1,2) ic18": ConvProblem(2, 18, 30, 11, 9, 3, kw=2, stride=(1, 2), padding=(2, 1), dilation=2),
    # conv1's shape, scaled down: 3 channels, 7x7, stride 2, padding 3
    "7x7 s2 p3 ic3": ConvProblem(1, 3, 8, 20, 20, 7, stride=2, padding=3),
    "1x1 ic20": ConvProblem(1, 20, 26, 6, 5, 1),
}


def _run(schedule: Schedule, hardware=BLOG):
    result = run_schedule(schedule, hardware, numeric=False)
    assert result.status == "ok", result.message
    return result


def _tensor(result, name):
    return next(t for t in result.tensors if t.name == name)


# -- numbers ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows", [2, None], ids=["2-row bands", "default bands"])
@pytest.mark.parametrize("mapping", MAPPINGS)
@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_each_mapping_equals_torch(shape, mapping, rows):
    problem = SHAPES[shape]
    assert_schedule_matches_torch(conv_mapping_schedule(problem, mapping, rows=rows), BLOG)


def test_each_registered_schedule_equals_torch_on_its_full_layer():
    """ResNet-50 conv1 and res2a_branch2b in every mapping, at full size (numeric, about a second each)."""
    for schedule in SCHEDULES:
        assert_schedule_matches_torch(schedule, BLOG)


# -- traffic, MACs and SRAM by hand -------------------------------------------------------------------------------
def test_strided_layer_traffic_macs_and_peak_by_hand():
    """STRIDED in 2-row bands: output rows 0:2, 2:4, 4:5. Output row oh reads input rows 2*oh - 1 .. 2*oh + 1, so
    the bands load rows 0..3 (4; row -1 is padding), 3..7 (5) and 7..8 (2; row 9 is padding): 11 rows of all 8
    columns (ow = 0..3 reads columns -1..7) x 5 channels = 440 B. Weight 7*5*3*3 = 315 B. Output 7 x 5*4 = 140 B.
    Patch matrix: 5*4 = 20 pixels x 5*3*3 = 45 columns = 900 B."""
    results = {m: _run(conv_mapping_schedule(STRIDED, m, rows=2)) for m in MAPPINGS}
    image, weight, output, patches = 11 * 8 * 5, 7 * 5 * 9, 7 * 20, 20 * 45
    for m in ("direct", "im2col-chip"):
        assert (results[m].loaded_bytes, results[m].stored_bytes) == (image + weight, output), m
    ddr = results["im2col-ddr"]
    assert (ddr.loaded_bytes, ddr.stored_bytes) == (image + weight + patches, output + patches)
    p = _tensor(ddr, "patches")
    assert (p.stored_bytes, p.loaded_bytes, p.rmw_bytes) == (patches, patches, 0)  # written once, read back once
    assert _tensor(ddr, "image").loaded_bytes == image
    # MACs: 7 out x 5 in x 9 taps x 20 pixels everywhere; padded: the direct conv pads 5 input channels to one
    # 16-block per tap (16 x 9 = 144 lanes of reduction), the GEMM pads 45 to ceil(45/16) = 3 blocks (48)
    for m, result in results.items():
        assert result.macs == 7 * 5 * 9 * 20, m
    padded = {m: simulate(r.trace, BLOG).padded_macs for m, r in results.items()}
    assert padded["direct"] == 16 * 9 * 24 * 20
    assert padded["im2col-ddr"] == padded["im2col-chip"] == 48 * 24 * 20
    # peak, 2 ways: the weight + 2 x the largest band (the middle one: 5 rows x 8 x 5 = 200 B of input, 8 pixels)
    out_band, patch_band, in_band = 8 * 7, 8 * 45, 200
    assert results["direct"].peak_sram_bytes == weight + 2 * (in_band + out_band) == 827
    assert results["im2col-chip"].peak_sram_bytes == weight + 2 * (in_band + patch_band + out_band) == 1547
    # im2col-ddr: stage 1 holds 2 x (input + patch band) = 1120, stage 2 the weight + 2 x (patch + output) = 1147
    assert results["im2col-ddr"].peak_sram_bytes == max(2 * (in_band + patch_band),
                                                         weight + 2 * (patch_band + out_band)) == 1147
    for m, result in results.items():
        assert footprint_bytes(STRIDED, m, rows=2, ways=2, word_bytes=1) == result.peak_sram_bytes, m


def test_word_bytes_scale_every_byte_count():
    """With 4-byte words every DDR and SRAM figure is 4x the 1-byte one (same elements)."""
    fp32 = preset("blog-fp32")
    for m in MAPPINGS:
        one, four = _run(conv_mapping_schedule(STRIDED, m, rows=2)), \
            _run(conv_mapping_schedule(STRIDED, m, rows=2, hardware=fp32), fp32)
        assert (four.loaded_bytes, four.stored_bytes, four.peak_sram_bytes) == \
               (4 * one.loaded_bytes, 4 * one.stored_bytes, 4 * one.peak_sram_bytes), m


def test_im2col_chip_loads_the_image_once_with_one_band():
    """One band of all 5 output rows reads input rows -1..9 clipped to 0..8: the whole 5x9x8 image, once."""
    result = _run(conv_mapping_schedule(STRIDED, "im2col-chip", rows=5))
    assert _tensor(result, "image").loaded_bytes == 5 * 9 * 8
    assert result.loaded_bytes == 5 * 9 * 8 + 7 * 5 * 9


def test_a_1x1_conv_loads_the_image_once_in_any_bands():
    """A 1x1, stride-1 conv's bands do not overlap: 20 x 6 x 5 image bytes once, for 1-, 2- and 4-row bands;
    its patch matrix is the image transposed (30 pixels x 20 columns), written once and read once."""
    problem = SHAPES["1x1 ic20"]
    for rows in (1, 2, 4):
        for m in MAPPINGS:
            result = _run(conv_mapping_schedule(problem, m, rows=rows))
            assert _tensor(result, "image").loaded_bytes == 20 * 6 * 5, (m, rows)
        ddr = _run(conv_mapping_schedule(problem, "im2col-ddr", rows=rows))
        assert (_tensor(ddr, "patches").stored_bytes, _tensor(ddr, "patches").loaded_bytes) == (30 * 20, 30 * 20)


def test_direct_loads_what_the_row_slab_schedule_loads():
    """The direct mapping is `row_slab_conv` generalised: on its 3x3, pad-1 layer it loads the weight once and the
    image once plus 2 halo rows per slab boundary (the formula of test_timing's row-slab test), event for event
    the same trace."""
    from dsasim.kernels.resnet_schedules import SCHEDULES as RESNET, conv3x3_workload, row_slab_conv

    problem = ConvProblem(1, 20, 30, 11, 9, 3, padding=1)
    for rows in (3, 4, 11):
        direct = _run(conv_mapping_schedule(problem, "direct", rows=rows))
        slabs = -(-11 // rows)
        assert direct.loaded_bytes == 30 * 20 * 9 + 20 * 9 * (11 + 2 * (slabs - 1))
        slab = _run(Schedule("slab", conv3x3_workload("small-3x3", (1, 20, 11, 9), 30), row_slab_conv(rows=rows)))
        assert list(direct.trace.events) == list(slab.trace.events), rows
    # so res2a_branch2b's direct mapping (default 4-row bands) is the registered res2a-branch2b
    direct = _run(conv_mapping_schedule(parse_layer("resnet50.res2a_branch2b"), "direct"))
    assert list(direct.trace.events) == list(_run(RESNET[0]).trace.events)


def test_full_conv1_macs_padded_macs_and_patch_traffic_by_hand():
    """ResNet-50 conv1: 64 x 3 x 7 x 7 x 112 x 112 = 118,013,952 MACs. Direct: 3 input channels pad to one 16-block
    per tap, 64 outputs to 3 24-blocks: 16 x 72 x 12,544 pixels x 49 taps padded MACs. im2col: 147 columns pad to
    ceil(147/16) = 10 blocks (160). The patch matrix, 12,544 x 147 = 1,843,968 B, is stored once and loaded once."""
    conv1 = parse_layer("resnet50.conv1")
    results = {m: _run(conv_mapping_schedule(conv1, m)) for m in MAPPINGS}
    padded = {m: simulate(r.trace, BLOG).padded_macs for m, r in results.items()}
    assert all(r.macs == 64 * 3 * 49 * 12_544 == 118_013_952 for r in results.values())
    assert padded["direct"] == 16 * 72 * 12_544 * 49
    assert padded["im2col-ddr"] == padded["im2col-chip"] == 160 * 72 * 12_544
    # TensorCore cycles = padded / 384: 49 steps of 16 x 24 per pixel and 24-block against 10
    assert results["direct"].tensorcore_cycles == 49 * 3 * 12_544
    assert results["im2col-chip"].tensorcore_cycles == 10 * 3 * 12_544
    p = _tensor(results["im2col-ddr"], "patches")
    assert p.stored_bytes == p.loaded_bytes == 12_544 * 147
    assert results["im2col-ddr"].loaded_bytes - results["im2col-chip"].loaded_bytes == 12_544 * 147
    assert results["im2col-ddr"].stored_bytes - results["im2col-chip"].stored_bytes == 12_544 * 147


def test_vector_gather_cycles_by_hand():
    """STRIDED in 2-row bands gathers 8, 8 and 4 pixels x 45 columns: ceil(360/32) + ceil(360/32) + ceil(180/32)
    = 12 + 12 + 6 vector cycles; the direct mapping uses no vector unit."""
    for m, cycles in (("direct", 0), ("im2col-ddr", 30), ("im2col-chip", 30)):
        result = run_schedule(conv_mapping_schedule(STRIDED, m, rows=2), BLOG, numeric=False)
        assert simulate(result.trace, BLOG).engine_busy_cycles["vector"] == cycles, m


# -- the rule ------------------------------------------------------------------------------------------------------
RULE_CASES = {
    # 3 channels: the direct conv uses 3 of 16 lanes for each of 49 taps, the GEMM 147 of 160: im2col on chip
    "conv1": (parse_layer("resnet50.conv1"), BLOG, "im2col-chip"),
    # 64 channels fill 4 whole 16-blocks per tap: the GEMM saves no TensorCore cycle, the gather only costs
    "res2a_branch2b": (parse_layer("resnet50.res2a_branch2b"), BLOG, "direct"),
    "res2a_branch2a (1x1)": (parse_layer("resnet50.res2a_branch2a"), BLOG, "direct"),
    "v1.5 layer2.0.conv2 (3x3, stride 2)": (ConvProblem(1, 128, 128, 56, 56, 3, stride=2, padding=1), BLOG,
                                            "direct"),
    # 14 channels: 9 steps per pixel direct, ceil(126/16) = 8 as a GEMM; the 32-lane gather keeps up
    "ic14 3x3": (ConvProblem(1, 14, 48, 56, 56, 3, padding=1), BLOG, "im2col-chip"),
    # the same layer at 112 x 112 with a 4-lane vector unit: the gather takes 126/4 = 31.5 cycles per pixel, more
    # than the 9 x 2 steps of the direct conv (the first band's gather alone would not decide: 56 bands)
    "ic14 3x3, 4 vector lanes": (ConvProblem(1, 14, 48, 112, 112, 3, padding=1),
                                 dataclasses.replace(BLOG, vector_lanes=4), "direct"),
    # conv1 in 60 KiB: a 1-row band's patch tile (112 x 147 B) beside its input and output tiles, 2 ways, does not
    # fit next to the weight, so the patch matrix goes through DDR, still 4x faster than the direct conv
    "conv1, 60 KiB SRAM": (parse_layer("resnet50.conv1"), dataclasses.replace(BLOG, sram_bytes=60 * 1024),
                           "im2col-ddr"),
}


@pytest.mark.parametrize("case", RULE_CASES, ids=list(RULE_CASES))
def test_the_rule_picks_the_mapping_with_the_fewest_simulated_cycles(case):
    problem, hardware, expected = RULE_CASES[case]
    simulated = {}
    for m in MAPPINGS:
        if not estimate_mapping(problem, hardware, m).fits:
            with pytest.raises(ValueError, match="does not fit"):
                conv_mapping_schedule(problem, m, hardware=hardware)
            continue
        result = _run(conv_mapping_schedule(problem, m, hardware=hardware), hardware)
        simulated[m] = simulate(result.trace, hardware).cycles
    fastest = min(simulated, key=simulated.get)
    assert fastest_mapping(problem, hardware) == fastest == expected, simulated


def test_estimates_count_the_tensorcore_and_vector_work_by_hand():
    """res2a_branch2b: direct 4 x 3 x 3,136 x 9 = 338,688 TensorCore cycles, and the GEMM's ceil(576/16) x 3 x
    3,136 is the same; the gather is 14 bands x 224 pixels x 576 / 32 lanes = 56,448 vector cycles; im2col-ddr
    moves the patch matrix (3,136 x 576 B) twice more."""
    problem = parse_layer("resnet50.res2a_branch2b")
    est = {m: estimate_mapping(problem, BLOG, m) for m in MAPPINGS}
    assert est["direct"].tensorcore_cycles == est["im2col-chip"].tensorcore_cycles == 338_688
    assert (est["direct"].vector_cycles, est["im2col-chip"].vector_cycles) == (0, 56_448)
    assert est["im2col-ddr"].ddr_bytes - est["im2col-chip"].ddr_bytes == 2 * 3_136 * 576
    for m in MAPPINGS:  # never below the busiest engine
        assert est[m].cycles >= max(est[m].tensorcore_cycles, est[m].vector_cycles)


# -- the table -----------------------------------------------------------------------------------------------------
def test_table_marks_the_fastest_and_the_rule_pick_and_is_deterministic():
    layers = {"small 7x7": SHAPES["7x7 s2 p3 ic3"], "1x1": SHAPES["1x1 ic20"]}
    rows = mapping_table(BLOG, layers, numeric=True)
    assert [(r["layer"], r["mapping"]) for r in rows] == [(layer, m) for layer in layers for m in MAPPINGS]
    for layer in layers:
        mine = [r for r in rows if r["layer"] == layer]
        assert sum(r["fastest"] for r in mine) == sum(r["rule_pick"] for r in mine) == 1
        assert min(mine, key=lambda r: r["cycles"])["fastest"]
        assert all(r["max_abs_err"] < 1e-4 for r in mine)
    again = mapping_table(BLOG, layers, numeric=True)
    assert again == rows
    assert list(rows[0]) == ["layer", "shape", "mapping", "rows", "loaded_bytes", "stored_bytes", "peak_sram_bytes",
                             "macs", "padded_macs", "mac_efficiency", "tensorcore_mac_utilization", "cycles",
                             "estimated_cycles", "max_abs_err", "fastest", "rule_pick"]
    text = format_mapping_table(rows)
    assert text.splitlines()[0].split()[:3] == ["layer", "mapping", "rows"]


def test_module_main_writes_the_json(tmp_path, monkeypatch, capsys):
    import json

    import dsasim.kernels.conv_mapping as cm

    monkeypatch.setattr(cm, "table_layers", lambda: {"1x1": SHAPES["1x1 ic20"]})
    path = tmp_path / "table.json"
    assert cm.main(["--count-only", "--json", str(path)]) == 0
    doc = json.loads(path.read_text())
    assert doc["hardware"] == "blog" and [r["mapping"] for r in doc["rows"]] == list(MAPPINGS)
    assert doc["rows"][0]["max_abs_err"] is None
    assert "im2col-chip" in capsys.readouterr().out


# -- bad input -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda: conv_mapping_schedule(STRIDED, "winograd"), r"unknown conv mapping 'winograd'; pass one of direct"),
    (lambda: conv_mapping_schedule(STRIDED, "direct", rows=0), r"rows must be an integer in 1\.\.5"),
    (lambda: conv_mapping_schedule(STRIDED, "direct", rows=6), r"rows must be an integer in 1\.\.5"),
    (lambda: conv_mapping_schedule(STRIDED, "direct", rows=2.0), r"rows must be an integer"),
    (lambda: conv_mapping_schedule(STRIDED, "direct", ways=0), r"ways must be an integer in 1\.\.64"),
    # one band of conv1: weight 9,408 + 2 x (image 150,528 + patches 1,843,968 + output 802,816) B
    (lambda: conv_mapping_schedule(parse_layer("resnet50.conv1"), "im2col-chip", rows=112),
     r"needs 5,604,032 B of SRAM, more than blog's 1,572,864 B; pass fewer rows"),
    (lambda: conv_mapping_schedule(parse_layer("resnet50.conv1"), "im2col-chip",
                                   hardware=dataclasses.replace(BLOG, sram_bytes=60 * 1024)),
     r"does not fit blog's SRAM of 61,440 B even with 1-row bands"),
    (lambda: conv_mapping_schedule(ConvProblem(1, 8, 8, 6, 6, 3, padding=1, groups=2), "direct"),
     r"dense convs \(groups = 1\), got groups = 2"),
    (lambda: conv_mapping_schedule("resnet50.conv1", "direct"), r"needs a ConvProblem"),
    # a 1x1 conv padded by 2: output row 0 reads input row -2 only
    (lambda: conv_mapping_schedule(ConvProblem(1, 2, 2, 3, 3, 1, padding=2), "direct", rows=1),
     r"output rows 0:1 read only padding"),
    (lambda: fastest_mapping(parse_layer("resnet50.conv1"), dataclasses.replace(BLOG, sram_bytes=1024)),
     r"no conv mapping fits"),
])
def test_bad_input_is_a_value_error_saying_what_to_pass(call, message):
    with pytest.raises(ValueError, match=message):
        call()
