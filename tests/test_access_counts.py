"""Access counts (issue 28, "Counting"): every read and write per tensor and memory level, from the trace and from
the analytic models, equal to each other and to hand derivations.

The conventions (dsasim/dataflow.py, dsasim/energy/accesses.py): a DMA load reads DDR and writes the SRAM, a store
the reverse; a stage reads the parent level and writes the child, a write-back the reverse; the TensorCore's
operand reads and writes follow the hardware's dataflow, in the level each operand tile is in; output reads are
the writes less the call's fresh output elements (opened as zeros, not yet computed into). Every expected number
below is derived by hand in the comment beside it; word_bytes is 1 on blog and blog-l1, so bytes = elements."""

from __future__ import annotations

import dataclasses
import random
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from dsasim.dataflow import DATAFLOWS, OperandAccesses, operand_accesses
from dsasim.hardware import Accelerator, load_hardware, preset
from dsasim.traced import session as session_module
from dsasim.traced import tensorcore as tensorcore_module
from dsasim.traced.scope import GlobalHierarchy
from dsasim.traced.session import Session
from dsasim.traced.tensorcore import TensorCore, VectorUnit

sys.path.insert(0, str(Path(__file__).resolve().parent))

BLOG = preset("blog")
OUTPUT_STATIONARY = dataclasses.replace(BLOG, name="blog-os", tensorcore_dataflow="output_stationary")


@pytest.fixture(params=[True, False], ids=["compiled", "python"])
def core(request):
    """Run the test on the compiled core and on the pure-Python reference (`_bind_core`)."""
    session_module._bind_core(request.param)
    tensorcore_module._bind_core(request.param)
    yield request.param
    session_module._bind_core(True)
    tensorcore_module._bind_core(True)


def pairs(session: Session) -> dict[tuple[str, str], tuple[int, int]]:
    """{(tensor, level): (read bytes, write bytes)} of a finished session."""
    counts = session.counters.access_counts(session.hardware.word_bytes)
    return {(t.tensor, t.level): (t.read_bytes, t.write_bytes) for t in counts.tensors}


# -- the dataflow registry ------------------------------------------------------------------------------------
def test_weight_stationary_counts_of_one_call_by_hand():
    # P=10 pixels, T=9 taps, G=2 groups, I=20 (blocks of 16: 2), O=30 (blocks of 24: 2), 10 fresh outputs:
    # weights 9*2*20*30 = 10,800; inputs 10*9*2*20*2 = 7,200; output writes 10*9*2*2*30 = 10,800, reads - 10
    assert operand_accesses("weight_stationary", 10, 9, 2, 20, 30, 16, 24, 10) == \
        OperandAccesses(input_reads=7200, weight_reads=10800, output_reads=10790, output_writes=10800)


def test_output_stationary_counts_of_one_call_by_hand():
    # weights re-read every step: 10*9*2*20*30 = 108,000; inputs as weight-stationary 7,200; output written once
    # per (pixel, group, out element): 10*2*30 = 600, read unless fresh: 600 - 10
    assert operand_accesses("output_stationary", 10, 9, 2, 20, 30, 16, 24, 10) == \
        OperandAccesses(input_reads=7200, weight_reads=108000, output_reads=590, output_writes=600)


@pytest.mark.parametrize("name", sorted(DATAFLOWS))
def test_every_dataflow_reads_each_fresh_element_once_less(name):
    # the trace counts writes per call and subtracts its fresh elements: that holds for every registered dataflow
    flow = DATAFLOWS[name]
    base = flow(3, 4, 2, 17, 25, 16, 24)
    for fresh in (1, 7, 3 * 2 * 25):
        got = flow(3, 4, 2, 17, 25, 16, 24, fresh)
        assert got.output_writes == base.output_writes and got.output_reads == base.output_reads - fresh


def test_unknown_dataflow_is_one_line_in_python_and_toml(tmp_path):
    with pytest.raises(ValueError) as err:
        Accelerator("x", 1024, 1, tensorcore_dataflow="row_stationary")
    assert str(err.value) == ("Accelerator 'x': tensorcore_dataflow must be one of weight_stationary, "
                              "output_stationary, no_local_reuse, got 'row_stationary'")
    path = tmp_path / "hw.toml"
    path.write_text('base = "blog"\ntensorcore_dataflow = "rowstationary"\n')
    with pytest.raises(ValueError) as err:
        load_hardware(path)
    assert "\n" not in str(err.value) and "must be one of weight_stationary, output_stationary" in str(err.value)
    path.write_text('base = "blog"\ntensorcore_dataflow = "output_stationary"\n')
    assert load_hardware(path).tensorcore_dataflow == "output_stationary"
    with pytest.raises(ValueError, match="fresh_output_elements must be an integer from 0 to the call's 6"):
        operand_accesses("weight_stationary", 2, 1, 1, 4, 3, 16, 24, 7)


def test_an_unknown_dataflow_on_the_command_line_is_one_line(tmp_path):
    import subprocess
    path = tmp_path / "hw.toml"
    path.write_text('base = "blog"\ntensorcore_dataflow = "rowstationary"\n')
    proc = subprocess.run([sys.executable, "-m", "dsasim.cli", "search", "gemm:m=8,n=8,k=8", "--hardware",
                           str(path)], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("dsasim search: hardware file") and "tensorcore_dataflow" in proc.stderr


# -- the trace, by hand ---------------------------------------------------------------------------------------
def _conv_1x1(hardware: Accelerator) -> Session:
    """x (1, 32, 4, 4) * w (48, 32, 1, 1) -> y (1, 48, 4, 4), one tile of everything."""
    s = Session(hardware, numeric=True)
    x = s.input("x", np.ones((1, 32, 4, 4), np.float32))
    w = s.input("w", np.ones((48, 32, 1, 1), np.float32), role="weight")
    y = s.output("y", (1, 48, 4, 4))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "t"):
        out = y[:, :, :, :]
        out += tc.conv2d(x[:, :, :, :], w[:, :, :, :])
    s.finish()
    return s


def test_a_1x1_conv_in_one_tile(core):
    s = _conv_1x1(BLOG)
    # P = 16 pixels, T = 1, G = 1, I = 32 (2 blocks of 16), O = 48 (2 blocks of 24); y opens as zeros (768 fresh):
    #   x: DDR read 512 (load); SRAM write 512 (load), read 16*32*2 = 1,024 (each input once per out-block)
    #   w: DDR read 1,536; SRAM write 1,536, read 32*48 = 1,536 (each weight once)
    #   y: SRAM write 16*2*48 = 1,536 (each sum once per in-block), read 1,536 - 768 fresh = 768, + 768 stored;
    #      DDR write 768
    assert pairs(s) == {("x", "DDR"): (512, 0), ("x", "SRAM"): (1024, 512),
                        ("w", "DDR"): (1536, 0), ("w", "SRAM"): (1536, 1536),
                        ("y", "DDR"): (0, 768), ("y", "SRAM"): (768 + 768, 1536)}
    counts = s.counters.access_counts(1)
    # MACs 48*32*16 = 24,576; steps 2*2*16 = 64 of 384 lanes = 24,576 padded (no ragged block)
    assert (counts.macs, counts.padded_macs, counts.vector_lane_ops) == (24576, 24576, 0)


def test_the_output_stationary_dataflow(core):
    s = _conv_1x1(OUTPUT_STATIONARY)
    # weights re-read at every step: P*T*G*I*O = 16*32*48 = 24,576; inputs as before 1,024; y written once per
    # element (768), every element fresh (no read) + the 768 the store reads
    got = pairs(s)
    assert got[("w", "SRAM")] == (24576, 1536) and got[("x", "SRAM")] == (1024, 512)
    assert got[("y", "SRAM")] == (0 + 768, 768)


def _matmul_session(k_splits: list[tuple[int, int]], store_between: bool) -> Session:
    """a (3, 40) @ b (40, 30) -> c (3, 30), the reduction split into `k_splits`; store_between: each split in its
    own scope (c stored and reloaded between them), else all in one scope."""
    s = Session(BLOG, numeric=True)
    rng = np.random.default_rng(0)
    a = s.input("a", rng.standard_normal((3, 40)).astype(np.float32))
    b = s.input("b", rng.standard_normal((40, 30)).astype(np.float32), role="weight")
    c = s.output("c", (3, 30))
    tc = TensorCore(s)
    if store_between:
        for k0, k1 in k_splits:
            with GlobalHierarchy(s, "k"):
                out = c[0:3, 0:30]
                out += tc.matmul(a[0:3, k0:k1], b[k0:k1, 0:30])
    else:
        with GlobalHierarchy(s, "all"):
            out = c[0:3, 0:30]
            for k0, k1 in k_splits:
                out += tc.matmul(a[0:3, k0:k1], b[k0:k1, 0:30])
    s.finish()
    return s


def test_a_matmul_with_ragged_channel_blocks(core):
    s = _matmul_session([(0, 40)], store_between=False)
    # M = 3 pixels, K = 40 (blocks 16, 16, 8: 3), N = 30 (blocks 24, 6: 2):
    #   a read 3*40*2 = 240; b read 40*30 = 1,200; c written 3*3*30 = 270, read 270 - 90 fresh = 180 (+ 90 stored)
    got = pairs(s)
    assert got[("a", "SRAM")] == (240, 120) and got[("b", "SRAM")] == (1200, 1200)
    assert got[("c", "SRAM")] == (180 + 90, 270) and got[("c", "DDR")] == (0, 90)
    counts = s.counters.access_counts(1)
    # MACs 3*30*40 = 3,600; steps 3 * 3 * 2 = 18 of 384 = 6,912 padded
    assert (counts.macs, counts.padded_macs) == (3600, 6912)


def test_a_ragged_reduction_split_in_one_buffer(core):
    s = _matmul_session([(0, 20), (20, 40)], store_between=False)
    # two calls of K = 20 (blocks 16, 4: 2) into one open buffer: the first finds all 90 outputs fresh, the second
    # none. a read 2 * 3*20*2 = 240; b 2 * 20*30 = 1,200; c written 2 * 3*2*30 = 360, read 360 - 90 = 270 (+ 90)
    got = pairs(s)
    assert got[("a", "SRAM")] == (240, 120) and got[("b", "SRAM")] == (1200, 1200)
    assert got[("c", "SRAM")] == (270 + 90, 360)


def test_partial_sums_back_from_ddr_are_not_fresh(core):
    s = _matmul_session([(0, 20), (20, 40)], store_between=True)
    # scope 1 opens c (90 fresh): writes 180, reads 90; stores 90 (SRAM read, DDR write). Scope 2 loads c back
    # (DDR read 90, SRAM write 90: a read-modify-write, nothing fresh): writes 180, reads 180; stores 90 again.
    #   c: DDR (90, 180); SRAM reads 90 + 90 + 180 + 90 = 450, writes 180 + 90 + 180 = 450
    got = pairs(s)
    assert got[("c", "DDR")] == (90, 180) and got[("c", "SRAM")] == (450, 450)
    assert s.counters.rmw_bytes == 90


def test_a_depthwise_conv(core):
    s = Session(BLOG, numeric=True)
    x = s.input("x", np.ones((1, 4, 5, 5), np.float32))
    w = s.input("w", np.ones((4, 1, 3, 3), np.float32), role="weight")
    y = s.output("y", (1, 4, 5, 5))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "t"):
        out = y[:, :, :, :]
        out += tc.conv2d(x[:, :, :, :], w[:, :, :, :], groups=4, padding=(1, 1, 1, 1))
    s.finish()
    # P = 25, T = 9, G = 4, I = O = 1: x read 25*9*4*1*1 = 900; w 9*4 = 36; y written 25*9*4*1*1 = 900,
    # read 900 - 100 fresh = 800 (+ 100 stored)
    got = pairs(s)
    assert got[("x", "SRAM")] == (900, 100) and got[("w", "SRAM")] == (36, 36)
    assert got[("y", "SRAM")] == (800 + 100, 900)
    counts = s.counters.access_counts(1)
    # MACs 4*1*25*9 = 900; 4 groups x 1 x 1 block x 225 = 900 steps of 384 lanes
    assert (counts.macs, counts.padded_macs) == (900, 900 * 384)


def test_writes_into_parts_of_a_buffer_count_each_part_fresh_once(core):
    s = Session(BLOG, numeric=False)
    x = s.input("x", (1, 32, 4, 4))
    w = s.input("w", (48, 32, 1, 1), role="weight")
    y = s.output("y", (1, 48, 4, 4))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "t"):
        whole = y[:, :, :, :]  # one buffer of 768 zeros
        for rows in ((0, 2), (2, 4), (0, 2)):
            out = y[:, :, rows[0]:rows[1], :]  # a hit: part of that buffer
            out += tc.conv2d(x[:, :, rows[0]:rows[1], :], w[:, :, :, :])
        assert whole.buffer.fresh_elements == 0
    s.finish()
    # each call: P = 8, writes 8*2*48 = 768; fresh 384, 384, then 0 (rows 0:2 written before):
    # reads 3 * 768 - 768 = 1,536 (+ 768 stored)
    assert pairs(s)[("y", "SRAM")] == (1536 + 768, 3 * 768)


def test_vector_ops_assign_and_accumulate(core):
    s = Session(BLOG, numeric=True)
    a = s.input("a", np.ones((4, 8), np.float32))
    b = s.input("b", np.ones((4, 8), np.float32))
    o = s.output("o", (4, 8))
    d = s.output("d", (1,))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "t"):
        o[0:4, 0:8].assign(vec.add(a[0:4, 0:8], b[0:4, 0:8]))
        o[0:4, 0:8].assign(vec.relu(o[0:4, 0:8]))  # o is not fresh now, but an overwrite reads none of it
        dot = d[0:1]
        dot += vec.dot(a[0:4, 0:8], b[0:4, 0:8])
        dot += vec.dot(a[0:4, 0:8], b[0:4, 0:8])
    s.finish()
    # add: reads a 32, b 32, writes o 32 (an overwrite reads nothing); 32 lane operations. relu: reads its operand
    # o (32), overwrites o (32 writes, no read of what it replaces); 32 lane operations.
    # dot x 2: reads a 32, b 32 each; writes d once each; the first finds d fresh, the second reads it; 32 lanes each
    got = pairs(s)
    assert got[("a", "SRAM")] == (32 + 64, 32) and got[("b", "SRAM")] == (32 + 64, 32)
    assert got[("o", "SRAM")] == (32 + 32, 64) and got[("d", "SRAM")] == (1 + 1, 2)
    counts = s.counters.access_counts(1)
    assert (counts.macs, counts.padded_macs, counts.vector_lane_ops) == (0, 0, 32 + 32 + 2 * 32)


def test_a_level_hierarchy_stages_and_writes_back(core):
    hw = preset("blog-l1")
    s = Session(hw, numeric=True)
    a = s.input("a", np.ones((2, 16), np.float32))
    b = s.input("b", np.ones((16, 24), np.float32), role="weight")
    c = s.output("c", (2, 24))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "sram"):
        a[0:2, 0:16], b[0:16, 0:24], c[0:2, 0:24]  # DDR loads of a (32) and b (384); c opens (no DMA)
        with GlobalHierarchy(s, "w", level="L1w"), GlobalHierarchy(s, "i", level="L1i"), \
                GlobalHierarchy(s, "acc", level="L1acc"):
            out = c[0:2, 0:24]  # opens as zeros in L1acc: 48 fresh
            out += tc.matmul(a[0:2, 0:16], b[0:16, 0:24])  # a, b staged from the SRAM into L1i, L1w
        done = c[0:2, 0:24]  # the SRAM buffer, written by the write-back: no longer fresh
        done += VectorUnit(s).relu(done)
    s.finish()
    # a: DDR read 32; SRAM write 32 (load), read 32 (stage); L1i write 32 (stage), read 2*16*1 = 32 (TensorCore)
    # b: DDR read 384; SRAM (384, 384); L1w write 384, read 16*24 = 384
    # c: L1acc written 2*1*24 = 48 (all fresh: no read), read 48 by the write-back; SRAM written 48 by the
    #    write-back, then the relu reads its operand (48) and the sums it adds to (48: not fresh), writes 48; the
    #    store reads 48: SRAM (48 + 48 + 48, 48 + 48); DDR write 48
    assert pairs(s) == {("a", "DDR"): (32, 0), ("a", "SRAM"): (32, 32), ("a", "L1i"): (32, 32),
                        ("b", "DDR"): (384, 0), ("b", "SRAM"): (384, 384), ("b", "L1w"): (384, 384),
                        ("c", "DDR"): (0, 48), ("c", "SRAM"): (144, 96), ("c", "L1acc"): (48, 48)}


def test_the_run_result_carries_the_counts():
    from dsasim.kernels.loopnest_kernel import blog_demo_nest, run_loopnest
    result = run_loopnest(blog_demo_nest("demo3-2"), BLOG, record_trace=False)
    counts = result.access_counts
    assert counts.read_bytes("DDR") == result.loaded_bytes and counts.write_bytes("DDR") == result.stored_bytes
    assert counts.macs == result.macs


# -- the models equal the trace ----------------------------------------------------------------------------------
def _check_nests(hardware: Accelerator, make_problem, seed: int, count: int) -> None:
    from test_analytic import _random_nest
    from dsasim.architect.model.analytic import reconcile
    from dsasim.kernels.loopnest_kernel import run_loopnest
    rng = random.Random(seed)
    for _ in range(count):
        nest = _random_nest(rng, make_problem(rng))
        result = run_loopnest(nest, hardware, record_trace=False)
        rec = reconcile(nest, result, hardware)
        assert rec.ok, str(rec)


@pytest.mark.parametrize("hardware", [BLOG, OUTPUT_STATIONARY], ids=lambda h: h.tensorcore_dataflow)
def test_model_equals_trace_on_random_nests(hardware):
    """Ragged tiles, halos, strides, dilation, padding-only windows, 1-3 ways, sliding windows: every (tensor,
    level) read and write equal (`reconcile` compares the access counts beside the traffic)."""
    from test_analytic import _block_problem, _random_grouped_problem, _random_problem
    _check_nests(hardware, _random_problem, 28, 250)
    _check_nests(hardware, _random_grouped_problem, 29, 80)
    _check_nests(hardware, _block_problem, 30, 40)


def test_reconcile_names_an_access_count_that_differs(monkeypatch):
    from dsasim.architect.model import analytic
    from dsasim.kernels.loopnest_kernel import blog_demo_nest, run_loopnest
    nest = blog_demo_nest("demo3-2")
    result = run_loopnest(nest, BLOG, record_trace=False)
    true_counts = analytic.Analysis.access_counts

    def off_by_one(self):
        counts = true_counts(self)
        first = counts.tensors[0]
        return dataclasses.replace(counts, tensors=(dataclasses.replace(first, read_bytes=first.read_bytes + 1),
                                                    *counts.tensors[1:]))

    monkeypatch.setattr(analytic.Analysis, "access_counts", off_by_one)
    rec = analytic.reconcile(nest, result, BLOG)
    assert [(m.tensor, m.quantity, m.model - m.trace) for m in rec.mismatches] == [
        (result.access_counts.tensors[0].tensor, f"{result.access_counts.tensors[0].level} read_bytes", 1)]


@pytest.mark.parametrize("hardware", [BLOG, OUTPUT_STATIONARY], ids=lambda h: h.tensorcore_dataflow)
def test_the_vectorised_model_equals_the_scalar_one(hardware):
    from test_analytic import _block_problem, _random_nest, _random_problem
    from dsasim.architect.model.analytic import analyze
    from dsasim.architect.search.layer_search import evaluate_nests
    rng = random.Random(31)
    for make in (_random_problem, _block_problem) * 15:
        problem = make(rng)
        nests = [_random_nest(rng, problem) for _ in range(4)]
        v = evaluate_nests(nests, hardware)
        levels = v.level_bytes()
        for i, nest in enumerate(nests):
            a = analyze(nest, hardware)
            assert tuple(int(x[i]) for x in v.operand_bytes) == tuple(a.operand_bytes), nest
            counts = a.access_counts()
            for level, (read, write) in levels.items():
                assert (int(read[i]), int(write[i])) == (counts.read_bytes(level), counts.write_bytes(level))


# one test per (dataflow, hierarchy): each traces 10 nests (about 20 s), so xdist spreads the nine over its workers
# instead of one worker tracing 30 in a row; the same hierarchies, seeds and nests as one loop over the three
@pytest.mark.parametrize("base_name", ["L1", "SHARED", "WEIGHTS_ONLY"])
@pytest.mark.parametrize("dataflow", sorted(DATAFLOWS))
def test_level_model_equals_trace_on_random_level_nests(dataflow, base_name):
    import test_hierarchy
    from test_hierarchy import random_level_nest
    from dsasim.architect.model.analytic import reconcile_accesses
    from dsasim.architect.model.hierarchy import analyze_levels
    from dsasim.kernels.loopnest_kernel import execute_levels, loopnest_workload
    from dsasim.traced.schedule import bind_tensors
    hw = dataclasses.replace(getattr(test_hierarchy, base_name), tensorcore_dataflow=dataflow)
    rng = random.Random(zlib.crc32(hw.name.encode()) + 28)
    for _ in range(10):  # (the brute-force runs are slow; tests/test_levels.py draws 40 per hardware)
        nest = random_level_nest(rng, hw)
        s = Session(hw, numeric=False, enforce_capacity=False)
        execute_levels(nest, s, bind_tensors(s, loopnest_workload(nest.problem), None))
        s.finish()
        diffs: list = []
        reconcile_accesses(analyze_levels(nest).access_counts(), s.counters.access_counts(hw.word_bytes),
                           lambda *d: diffs.append(d), {}, "")
        assert not diffs, (hw.name, nest.format(), diffs)


def test_fresh_outputs_skip_tiles_that_read_only_padding():
    from dsasim.architect.model.analytic import computed_outputs
    # a 1-tap axis of 4 image columns padded by 2 each side: 8 output columns, 0, 1, 6, 7 read only padding.
    # Tiles of 2: [0:2) and [6:8) compute nothing, so 4 of 8 positions are computed into
    assert computed_outputs(8, 1, 1, 2, 4, 2, 1) == 4
    # tiles of 3: [0:3) holds column 2 (image column 0), [3:6) inside, [6:8) only padding: 6
    assert computed_outputs(8, 1, 1, 2, 4, 3, 1) == 6


# -- the GEMM chain model ------------------------------------------------------------------------------------------
def test_a_gemm_chain_by_hand():
    from dsasim.architect.search.gemm_chain import GemmChain, GemmChainNest, analyze_gemm_chain
    from dsasim.kernels.fused_kernel import count_fused
    chain = GemmChain(4, 24, 32, 24, relu=True)  # C (4, 24) = relu(A (4, 32) @ B (32, 24)); E (4, 24) = C @ D (24, 24)
    nest = GemmChainNest(chain, "ml", {"m": 4, "l": 24, "k": 16, "n": 24}, 1)
    # GEMM 1, two calls (k tiles of 16): A read 2 * 4*16*1 = 128; B 2 * 16*24 = 768; C written 2 * 4*1*24 = 192,
    #   read 192 - 96 fresh = 96. ReLU: reads C 96, overwrites it (96 writes, 96 lane operations).
    # GEMM 2, one call (m 4, in l 24: 2 blocks, out n 24: 1 block): C read 4*24*1 = 96; D 24*24 = 576;
    #   E written 4*2*24 = 192, read 192 - 96 fresh = 96, + 96 stored.
    want = {("A", "DDR"): (128, 0), ("A", "SRAM"): (128, 128), ("B", "DDR"): (768, 0), ("B", "SRAM"): (768, 768),
            ("D", "DDR"): (576, 0), ("D", "SRAM"): (576, 576), ("E", "DDR"): (0, 96), ("E", "SRAM"): (96 + 96, 192),
            ("C", "SRAM"): (96 + 96 + 96, 192 + 96)}
    for counts in (analyze_gemm_chain(nest, BLOG).access_counts, count_fused(nest, BLOG).access_counts(1)):
        assert {(t.tensor, t.level): (t.read_bytes, t.write_bytes) for t in counts.tensors} == want
        assert counts.vector_lane_ops == 96 and counts.macs == 4 * 24 * 32 + 4 * 24 * 24


@pytest.mark.parametrize("hardware", [BLOG, OUTPUT_STATIONARY], ids=lambda h: h.tensorcore_dataflow)
def test_gemm_chain_model_equals_trace_on_random_nests(hardware):
    from test_gemm_chain import NARROW, random_nest
    from dsasim.architect.model.analytic import reconcile_accesses
    from dsasim.architect.search.gemm_chain import analyze_gemm_chain
    from dsasim.kernels.fused_kernel import count_fused
    rng = random.Random(28)
    for hw in (hardware, dataclasses.replace(NARROW, tensorcore_dataflow=hardware.tensorcore_dataflow)):
        for _ in range(100):
            nest = random_nest(rng)
            model = analyze_gemm_chain(nest, hw)
            diffs: list = []
            reconcile_accesses(model.access_counts, count_fused(nest, hw, enforce_capacity=False).access_counts(
                hw.word_bytes), lambda *d: diffs.append(d), {}, "")
            assert not diffs, (nest, diffs)
            assert model.access_counts.padded_macs == model.padded_macs


def test_the_gemm_chain_space_gives_level_bytes_as_arrays():
    import numpy as np
    from dsasim.architect.search.gemm_chain import GemmChain, GemmChainNest, _closed_form, analyze_gemm_chain
    chain = GemmChain(9, 30, 20, 13, relu=True)
    tiles = {"m": np.array([2, 9]), "l": np.array([13, 5]), "k": np.array([7, 20]), "n": np.array([30, 11])}
    f = _closed_form(chain, BLOG, "lm", tiles, np.array([1, 1]))
    for i in range(2):
        counts = analyze_gemm_chain(GemmChainNest(chain, "lm", {d: int(v[i]) for d, v in tiles.items()}, 1),
                                    BLOG).access_counts
        for level, (read, write) in f["level_bytes"].items():
            assert (int(read[i]), int(write[i])) == (counts.read_bytes(level), counts.write_bytes(level))


# -- the fused conv chain model ----------------------------------------------------------------------------------
@pytest.mark.parametrize("hardware", [BLOG, OUTPUT_STATIONARY], ids=lambda h: h.tensorcore_dataflow)
def test_fused_conv_chain_model_equals_trace_on_random_nests(hardware):
    """Recomputed or kept halos, sliding line buffers, resident or per-tile weights, residuals and ReLUs, fp32 and
    narrow units: every (tensor, level) read and write of `analyze_fused` equal to the traced run."""
    from test_fused import random_nest
    from dsasim.architect.model.analytic import reconcile_accesses
    from dsasim.architect.model.fused import analyze_fused
    from dsasim.kernels.fused_kernel import count_fused
    rng = random.Random(2028)
    narrow = dataclasses.replace(preset("blog-fp32"), vector_lanes=7, tensorcore_in_channels=3,
                                 tensorcore_out_channels=5, tensorcore_dataflow=hardware.tensorcore_dataflow)
    residual = 0
    for hw in (hardware, narrow):
        for _ in range(100):
            nest = random_nest(rng)
            residual += nest.chain.residual
            model = analyze_fused(nest, hw).access_counts
            diffs: list = []
            reconcile_accesses(model, count_fused(nest, hw, enforce_capacity=False).access_counts(hw.word_bytes),
                               lambda *d: diffs.append(d), {}, "")
            assert not diffs, (nest, diffs)
    assert residual > 20
