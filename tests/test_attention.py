"""Attention (issue 29): the problem as data, checked by hand and against torch; the vector unit's softmax operations;
the kernels against torch's scaled_dot_product_attention; the analytic model against the trace."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from dsasim.architect.problems.attention import AttentionProblem, parse_attention


# ---------------------------------------------------------------------------------------------- the problem
def test_spec_round_trip_and_defaults():
    p = parse_attention("attention:h=4,n=8,d=16")
    assert (p.b, p.h, p.hkv, p.n, p.m, p.d, p.causal) == (1, 4, 4, 8, 8, 16, False)
    q = parse_attention("attention:b=2,h=8,hkv=2,n=5,m=7,d=3,causal=1")
    assert q.spec() == "attention:b=2,h=8,hkv=2,n=5,m=7,d=3,causal=1"
    assert parse_attention(q.spec()) == q
    assert AttentionProblem.from_json(q.to_json()) == q


@pytest.mark.parametrize("spec, words", [
    ("attention:h=6,hkv=4,n=8,d=16", "multiple of hkv=4"),
    ("attention:h=4,n=8,d=0", "d must be an integer >= 1"),
    ("attention:h=4,n=0,d=8", "n must be an integer >= 1"),
    ("attention:h=4,n=8,m=4,d=8,causal=1", "causal with m=4 keys < n=8 queries is undefined"),
    ("attention:h=4,n=8,d=8,causal=2", "causal must be 0 or 1"),
    ("attention:h=4,n=8,d=8,x=1", "unknown key 'x'"),
    ("attention:h=4,n=8", "missing d"),
    ("attention:h=4,n=-8,d=8", "is not key=non-negative integer"),
    ("attention:b=64,h=64,n=65536,d=128", "too large for exact counts"),
])
def test_bad_specs_get_one_line_errors(spec, words):
    with pytest.raises(ValueError, match=None) as err:
        parse_attention(spec)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_exact_count_limit_by_hand():
    """count_bound_bytes = 8 x 64 x b h n m (d + 1): b=64, h=64, n=m=65536, d=128 gives 8*64*4096*2**32*129
    = 1.16e18 > 2**53 (refused above); b=1, h=1, n=m=65536, d=128: 8*64*2**32*129 = 2.84e14 <= 2**53 (accepted)."""
    p = AttentionProblem(1, 1, 1, 65536, 65536, 128)
    assert p.count_bound_bytes(64) == 8 * 64 * 2 ** 32 * 129 <= 2 ** 53


def test_visible_pairs_and_macs_by_hand():
    """Bottom-right causal, n=2, m=3: row 0 sees keys 0..1 (2), row 1 sees 0..2 (3): 5 pairs = 6 - 2*1/2.
    MACs = 2 (QKᵀ and PV) x b h x pairs x d = 2 x 1*2 x 5 x 4 = 80. Tiled 1 x 2: row 0's tiles [0,2) and [2,3):
    the second starts at key 2 > 0 + 1 (masked whole, skipped); row 1's both computed: (2 + 2 + 1) = 5 elements
    -> 80 as well; tiled 2 x 1: keys 0, 1, 2 each need c0 <= 1 + 1: all 3 x 2 rows = 6 elements -> 96."""
    p = AttentionProblem(1, 2, 1, 2, 3, 4, causal=True)
    assert p.visible_pairs == 5 and [p.visible_keys(i) for i in (0, 1)] == [2, 3]
    assert p.macs == 80
    assert p.tiled_macs(1, 2) == 80 and p.tiled_macs(2, 1) == 96
    assert AttentionProblem(1, 1, 1, 4, 4, 1, causal=True).visible_pairs == 10  # 1 + 2 + 3 + 4
    assert AttentionProblem(1, 1, 1, 4, 4, 1).visible_pairs == 16


def test_compulsory_bytes_by_hand():
    """b=2, h=8, hkv=2, n=5, m=7, d=3, 4-byte words: Q and O 2*8*5*3 = 240 elements each, K and V 2*2*7*3 = 84
    each: (240 + 84 + 84 + 240) x 4 = 2592 B."""
    assert AttentionProblem(2, 8, 2, 5, 7, 3, causal=True).compulsory_bytes(4) == 2592


def _softmax_attention(q, k, v, visible):
    """An independent float64 attention: per (batch, head) the dense formula, keys past `visible(i)` dropped."""
    b, h, n, d = q.shape
    group = h // k.shape[1]
    out = torch.zeros_like(q)
    for bi in range(b):
        for hi in range(h):
            s = q[bi, hi] @ k[bi, hi // group].T / math.sqrt(d)
            for i in range(n):
                row = s[i, :visible(i)]
                p = torch.exp(row - row.max())
                out[bi, hi, i] = (p / p.sum()) @ v[bi, hi // group, :visible(i)]
    return out


@pytest.mark.parametrize("n, m", [(5, 5), (3, 7)])
def test_reference_is_bottom_right_causal_gqa(n, m):
    """The reference equals a hand-written bottom-right softmax (query i sees keys 0 .. i + m - n) with query head
    i reading K/V head i // (h/hkv); with n = m it is torch's is_causal (top-left), with m > n it is not."""
    p = AttentionProblem(2, 4, 2, n, m, 3, causal=True)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(p.shape(t), generator=g, dtype=torch.float64) for t in "QKV")
    ours = p.reference(q, k, v)["O"].reshape(2, 4, n, 3)
    qs, ks, vs = q.reshape(2, 4, n, 3), k.reshape(2, 2, m, 3), v.reshape(2, 2, m, 3)
    expected = _softmax_attention(qs, ks, vs, lambda i: i + m - n + 1)
    assert torch.allclose(ours, expected, rtol=1e-12, atol=1e-12)
    top_left = F.scaled_dot_product_attention(qs, ks.repeat_interleave(2, 1), vs.repeat_interleave(2, 1),
                                              is_causal=True)
    assert torch.allclose(ours, top_left, rtol=1e-12, atol=1e-12) == (n == m)


# ---------------------------------------------------------------------------------------------- vector operations
import dataclasses  # noqa: E402

import numpy as np  # noqa: E402

from dsasim import GlobalHierarchy, Session, TensorCore, VectorUnit, preset  # noqa: E402
from dsasim.timing import simulate  # noqa: E402

NARROW = dataclasses.replace(preset("blog-fp32"), vector_lanes=7, tensorcore_in_channels=3, tensorcore_out_channels=5,
                             sram_bytes=1 << 24)


def test_softmax_vector_ops_values_lane_ops_and_cycles():
    """A (3, 5) tile x and a (3, 1) vector v on 7 lanes. Values against numpy. Lane operations by hand: row_max and
    row_sum one per input element (15 each, ceil(15/7) = 3 cycles); sub_rows, mul_rows, div_rows, exp, mask_causal
    one per output element (15, 3 cycles); sub and maximum on (3, 1): 3 each (1 cycle). Total 15*7 + 3*2 = 111
    lane operations, 3*7 + 1*2 = 23 cycles; the trace's vector unit is busy for exactly those 23 cycles."""
    rng = np.random.default_rng(3)
    x0, v0 = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((3, 1)).astype(np.float32)
    s = Session(NARROW, numeric=True)
    X, Vt = s.input("x", x0), s.input("v", v0)
    outs = {name: s.output(name, shape) for name, shape in (
        ("max", (3, 1)), ("sum", (3, 1)), ("subr", (3, 5)), ("mulr", (3, 5)), ("divr", (3, 5)), ("exp", (3, 5)),
        ("mask", (3, 5)), ("sub", (3, 1)), ("maximum", (3, 1)))}
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "top"):
        x, v = X[:, :], Vt[:, :]
        o = {name: t[:, :] for name, t in outs.items()}
        o["max"].assign(vec.row_max(x))
        o["sum"].assign(vec.row_sum(x))
        o["subr"].assign(vec.sub_rows(x, v))
        o["mulr"].assign(vec.mul_rows(x, v))
        o["divr"].assign(vec.div_rows(x, v))
        o["exp"].assign(vec.exp(x, 0.5))
        o["mask"].assign(vec.mask_causal(x, 1, 2, 1))  # row i (global 1 + i) sees columns 2 + j <= 1 + i + 1
        o["sub"].assign(vec.sub(v, o["max"]))
        o["maximum"].assign(vec.maximum(v, o["max"]))
        got = {name: t.data.copy() for name, t in o.items()}
    trace = s.finish()
    hidden = np.array([[j > i for j in range(5)] for i in range(3)])  # 2 + j > 1 + i + 1  <=>  j > i
    expected = {"max": x0.max(1, keepdims=True), "sum": x0.sum(1, keepdims=True), "subr": x0 - v0,
                "mulr": x0 * v0, "divr": x0 / v0, "exp": np.exp(0.5 * x0), "mask": np.where(hidden, -np.inf, x0)}
    expected["sub"] = v0 - expected["max"]
    expected["maximum"] = np.maximum(v0, expected["max"])
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-6, err_msg=name)
    assert s.counters.vector_lane_ops == 15 * 7 + 3 * 2 == 111
    assert s.counters.vector_cycles == 3 * 7 + 2 == 23
    assert simulate(trace, NARROW).engine_busy_cycles["vector"] == 23


def test_softmax_vector_ops_refuse_bad_operands():
    s = Session(NARROW, numeric=False)
    X, Vt = s.input("x", (3, 5)), s.input("v", (3, 2))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "top"):
        with pytest.raises(ValueError, match="per-row vector"):
            vec.sub_rows(X[:, :], Vt[:, :])
        with pytest.raises(ValueError, match="positive finite"):
            vec.exp(X[:, :], 0.0)
        with pytest.raises(ValueError, match="inner dimensions differ"):
            TensorCore(s).matmul_nt(X[:, :], Vt[:, :])


def test_matmul_nt_cost_by_hand():
    """(4, 7) @ (6, 7)ᵀ on 3 x 5 channels: ceil(7/3) * ceil(6/5) * 4 = 3 * 2 * 4 = 24 cycles, 4*6*7 = 168 MACs."""
    s = Session(NARROW, numeric=True)
    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal((4, 7)).astype(np.float32), rng.standard_normal((6, 7)).astype(np.float32)
    A, B, C = s.input("a", a0), s.input("b", b0, role="weight"), s.output("c", (4, 6))
    with GlobalHierarchy(s, "top"):
        c = C[:, :]
        c.assign(TensorCore(s).matmul_nt(A[:, :], B[:, :]))
        np.testing.assert_allclose(c.data, a0 @ b0.T, rtol=1e-5)
    s.finish()
    assert (s.counters.tensorcore_cycles, s.counters.macs) == (24, 168)


# ---------------------------------------------------------------------------------------------- kernels vs torch
from dsasim.architect.nests.attention_schedule import ATTENTION_KINDS, AttentionSchedule  # noqa: E402
from dsasim.kernels.attention_kernel import attention_schedule, attention_workload  # noqa: E402
from tests.helpers import assert_schedule_matches_torch  # noqa: E402

U32 = 2.0 ** -24


def attention_tolerance(problem: AttentionProblem, seed: int) -> float:
    """An absolute bound on |O - torch| for float32 kernels on the workload's inputs (seed), derived:
    each score S_ij = sum_k q_ik k_jk is off by at most gamma(d + 2) * sum_k |q_ik k_jk| <= gamma(d + 2) * A,
    A = max over (i, j) of that sum (S is computed in 16-channel slices, any order: gamma bounds them all); the
    running max is one of the scores, so every exponent (S_ij - max) / sqrt(d) is off by at most
    2 gamma(d + 2) A / sqrt(d) plus the roundings of the subtraction, scaling and exp (3u relative each): each
    p_ij = exp(...) has relative error e_p <= 2 gamma(d + 2) A / sqrt(d) + 4u (to first order), so do l and the
    rescales' products; O = sum_j p_ij v_j / l adds gamma(m + 4) relative to sum_j p_ij |v_j| / l <= max |v|.
    |O - torch| <= max|V| * (2 e_p + gamma(m + 4)) + torch's float64 error (negligible); times 2 for the second
    order terms."""
    inputs = attention_workload(problem).make_inputs(seed)
    q = inputs["Q"].astype(np.float64).reshape(problem.b, problem.h, problem.n, problem.d)
    k = inputs["K"].astype(np.float64).reshape(problem.b, problem.hkv, problem.m, problem.d)
    k = np.repeat(k, problem.group, axis=1)
    a = float(np.einsum("bhik,bhjk->bhij", np.abs(q), np.abs(k)).max())

    def gamma(n: int) -> float:
        return n * U32 / (1 - n * U32)

    e_p = 2 * gamma(problem.d + 2) * a / math.sqrt(problem.d) + 4 * U32
    return 2 * float(np.abs(inputs["V"]).max()) * (2 * e_p + gamma(problem.m + 4))


CASES = [AttentionProblem(1, 2, 1, 5, 7, 3, causal=True),  # GQA (2 heads on 1), m > n, ragged tiles
         AttentionProblem(2, 4, 2, 6, 6, 5),  # batch 2, GQA 2 heads per group
         AttentionProblem(1, 2, 2, 7, 7, 4, causal=True)]  # n = m: torch's is_causal too


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
@pytest.mark.parametrize("problem", CASES, ids=lambda p: p.spec())
def test_kernels_match_torch(kind, problem):
    """Every kind against torch's scaled_dot_product_attention (the reference: bottom-right mask, enable_gqa) through
    the one torch helper, with tiles 2 x 3 (ragged) and 2 ways."""
    sch = AttentionSchedule(problem, kind, 2, 3, 2)
    assert_schedule_matches_torch(attention_schedule(sch), NARROW, atol=attention_tolerance(problem, 0))
    if problem.n == problem.m and problem.causal:  # the same as torch's own is_causal (top-left) when n = m
        ref = attention_workload(problem).make_inputs(0)
        q, k, v = (torch.from_numpy(ref[x]).double() for x in "QKV")
        ours = problem.reference(q, k, v)["O"]
        theirs = F.scaled_dot_product_attention(q.reshape(1, 2, 7, 4), k.reshape(1, 2, 7, 4), v.reshape(1, 2, 7, 4),
                                                is_causal=True).reshape(14, 4)
        assert torch.allclose(ours, theirs, atol=1e-12)


# ---------------------------------------------------------------------------------------------- model = trace
import random  # noqa: E402

from dsasim.architect.model.attention import analyze_attention  # noqa: E402
from dsasim.kernels.attention_kernel import count_attention  # noqa: E402


def trace_figures(sch: AttentionSchedule, hw=NARROW) -> dict:
    c = count_attention(sch, hw, enforce_capacity=False)
    ddr = [x for x in c.per_tensor if x in "QKVSPMLO"]
    return dict(loaded=c.loaded_bytes, stored=c.stored_bytes, rmw=c.rmw_bytes, loads=c.loads, stores=c.stores,
                opens=c.opens, macs=c.macs, padded=c.padded_macs, tc=c.tensorcore_cycles, vec=c.vector_cycles,
                lanes=c.vector_lane_ops, peak=c.peak_sram_bytes,
                per_loaded={x: c.per_tensor[x].loaded_bytes for x in ddr},
                per_stored={x: c.per_tensor[x].stored_bytes for x in ddr},
                accesses=c.access_counts(hw.word_bytes))


def model_figures(sch: AttentionSchedule, hw=NARROW) -> dict:
    a = analyze_attention(sch, hw)
    return dict(loaded=a.loaded_bytes, stored=a.stored_bytes, rmw=a.rmw_bytes, loads=a.loads, stores=a.stores,
                opens=a.opens, macs=a.macs, padded=a.padded_macs, tc=a.tensorcore_cycles, vec=a.vector_cycles,
                lanes=a.vector_lane_ops, peak=a.peak_sram_bytes, per_loaded=dict(a.per_tensor_loaded),
                per_stored=dict(a.per_tensor_stored), accesses=a.access_counts)


def _random_schedules(count: int, seed: int) -> list[AttentionSchedule]:
    """Random problems (GQA groups of 1-3, lengths 1-9 not multiples of the tiles, causal where m >= n) and
    schedules of every kind, 1 or 2 ways."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        hkv, g, n = rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 9)
        m = n + rng.randint(0, 6) if rng.random() < 0.7 else rng.randint(1, 9)
        p = AttentionProblem(rng.randint(1, 2), hkv * g, hkv, n, m, rng.randint(1, 6), m >= n and rng.random() < 0.6)
        out.append(AttentionSchedule(p, ATTENTION_KINDS[i % len(ATTENTION_KINDS)], rng.randint(1, n),
                                     rng.randint(1, m), rng.randint(1, 2)))
    return out


@pytest.mark.parametrize("sch", _random_schedules(40, 29), ids=lambda s: f"{s.kind}-{s.problem.spec()}-{s.br}x{s.bc}")
def test_model_equals_trace(sch):
    """Every count of the model (traffic per tensor, transfers, MACs, cycles, lane operations, peak SRAM, access
    counts per level) equals the traced run's, on 3 x 5 TensorCore blocks and 7 lanes (ragged everywhere)."""
    assert model_figures(sch) == trace_figures(sch)
    assert analyze_attention(sch, NARROW).macs == sch.problem.tiled_macs(sch.br, sch.bc)  # the problem's own count


def test_model_equals_trace_on_blog_hardware():
    """The same on the blog's preset (16 x 24 blocks, 32 lanes, 1-byte words) with tiles over a block."""
    p = AttentionProblem(1, 4, 2, 40, 70, 20, causal=True)
    for kind in ATTENTION_KINDS:
        sch = AttentionSchedule(p, kind, 17, 30, 2)
        assert model_figures(sch, preset("blog")) == trace_figures(sch, preset("blog"))


def test_unfused_traffic_per_head_by_hand():
    """One head, n=6, m=10, d=4, tiles 4 x 3 (Tr = 2 row tiles, Tc = 4 key tiles), 4-byte words. Pass 1 loads Q
    once (6*4 = 24 elements) and K once per row tile (2 x 10*4 = 80), stores S (6*10 = 60); pass 2 loads S (60),
    stores P (60); pass 3 loads P (60) and V once per row tile (80), stores O (24). Loaded 24 + 80 + 60 + 60 + 80 =
    304 elements = 1216 B; stored 60 + 60 + 24 = 144 elements = 576 B."""
    a = analyze_attention(AttentionSchedule(AttentionProblem(1, 1, 1, 6, 10, 4), "unfused", 4, 3), NARROW)
    assert a.per_tensor_loaded == {"Q": 96, "K": 320, "V": 320, "S": 240, "P": 240, "O": 0}
    assert a.per_tensor_stored == {"Q": 0, "K": 0, "V": 0, "S": 240, "P": 240, "O": 96}
    assert (a.loaded_bytes, a.stored_bytes) == (1216, 576)


def test_fused_with_whole_tiles_moves_the_compulsory_traffic():
    """q-outer with br = n, bc = m: Q, K, V loaded once, O stored once, nothing else; K and V once per group, not per
    query head: b=2, h=4, hkv=2, n=5, m=7, d=3: Q, O 2*4*5*3 = 120 elements each, K, V 2*2*7*3 = 84 each; 4-byte
    words: loaded (120 + 84 + 84) x 4 = 1152 B, stored 480 B = the compulsory 1632 B."""
    p = AttentionProblem(2, 4, 2, 5, 7, 3, causal=True)
    a = analyze_attention(AttentionSchedule(p, "q-outer", 5, 7), NARROW)
    assert (a.loaded_bytes, a.stored_bytes) == (1152, 480)
    assert a.traffic_bytes == a.compulsory_bytes == p.compulsory_bytes(4) == 1632


def test_flashattention_algorithm1_count():
    """Dao et al. 2022, Algorithm 1 with SRAM of M elements: Bc = ceil(M / 4d), Br = min(Bc, d); outer loop over
    the Tc = ceil(N / Bc) key tiles (K_j, V_j loaded once), inner over the Tr row tiles: Q_i, O_i, l_i, m_i read
    and O_i, l_i, m_i written every inner iteration; O, l, m first written as zeros (line 2). HBM accesses, in
    elements, per head: 2Nd (K, V) + Tc (Nd + Nd + 2N) reads + Tc (Nd + 2N) writes + (Nd + 2N) initial writes.
    Our kv-outer opens O, M, L as zeros on their first visit instead of writing and re-reading them, so it moves
    exactly 2 (Nd + 2N) fewer. M = 96, d = 4: Bc = 6, Br = 4; N = 24: Tc = 4. Algorithm 1: 2*96 + 4*(96 + 96 + 48)
    + 4*(96 + 48) + (96 + 48) = 192 + 960 + 576 + 144 = 1872; ours 1872 - 2*144 = 1584 elements. Theorem 2's
    Θ(N²d²/M): the leading term 3 Tc N d = 3 * 4 * 96 = 1152 = 12 N²d²/M exactly here (Tc = 4Nd/M)."""
    M, d, N = 96, 4, 24
    bc = -(-M // (4 * d))
    br = min(bc, d)
    tc = -(-N // bc)
    assert (bc, br, tc) == (6, 4, 4)
    algorithm1 = 2 * N * d + tc * (2 * N * d + 2 * N) + tc * (N * d + 2 * N) + (N * d + 2 * N)
    assert algorithm1 == 1872
    hw1 = dataclasses.replace(NARROW, word_bytes=1)
    sch = AttentionSchedule(AttentionProblem(1, 1, 1, N, N, d), "kv-outer", br, bc)
    a = analyze_attention(sch, hw1)
    assert a.traffic_bytes == algorithm1 - 2 * (N * d + 2 * N) == 1584
    assert 3 * tc * N * d == 12 * N * N * d * d // M == 1152
    assert trace_figures(sch, hw1)["loaded"] + trace_figures(sch, hw1)["stored"] == 1584


def test_q_outer_lane_operations_by_hand():
    """q-outer, n = m = 4, d = 2, tiles 2 x 2, one head, no mask. Per row tile (2 rows): the first key tile does
    row_max, sub_rows, exp, row_sum over its 4 scores (16 lane ops); the second row_max 4, maximum 2, sub 2, exp 2,
    copy 2, sub_rows 4, exp 4, mul (l·alpha) 2, row_sum 4, mul_rows (O·alpha, 2 x 2) 4 = 30; the end divides O
    (4): 50 per row tile, 100 in all. Causal (bottom-right, n = m): row tile 0 skips key tile 1 and masks key tile
    0 (4 more): 16 + 4 + 4 = 24; row tile 1 masks key tile 1: 50 + 4 = 54; 78 in all."""
    plain = AttentionSchedule(AttentionProblem(1, 1, 1, 4, 4, 2), "q-outer", 2, 2)
    causal = AttentionSchedule(AttentionProblem(1, 1, 1, 4, 4, 2, causal=True), "q-outer", 2, 2)
    assert analyze_attention(plain, NARROW).vector_lane_ops == 100 == trace_figures(plain)["lanes"]
    assert analyze_attention(causal, NARROW).vector_lane_ops == 78 == trace_figures(causal)["lanes"]


# ---------------------------------------------------------------------------------------------- search
from dsasim.architect.search.attention_search import attention_tiles, search_attention  # noqa: E402


def test_attention_tiles_by_hand():
    """extent 100, block 16: 100 and 16, 32, 64 (128 passes 100): [100, 64, 32, 16]; extent 8, block 16: [8]."""
    assert attention_tiles(100, 16) == [100, 64, 32, 16]
    assert attention_tiles(8, 16) == [8]


def test_search_picks_the_least_traffic_the_trace_confirms():
    """n = m = 8, d = 4, g = 2 (GQA), causal, on 3 x 5 blocks: every (kind, br, bc) of the grid traced, the least
    traffic among those whose traced peak fits 2,000 B (ties: first in kind, br, bc order, as the search breaks
    them when cycles and peak tie too) has the search's traffic; the search's choice fits; the bound is the
    compulsory traffic (Q, O: 2*8*4, K, V: 8*4 elements, x 4 B = 768 B) and no schedule goes below it."""
    p = AttentionProblem(1, 2, 1, 8, 8, 4, causal=True)
    cap = 2000
    result = search_attention(p, NARROW, cap)
    traced = []
    for kind in ATTENTION_KINDS:
        for br in attention_tiles(8, 3):
            for bc in attention_tiles(8, 5):
                c = count_attention(AttentionSchedule(p, kind, br, bc), NARROW, enforce_capacity=False)
                assert c.loaded_bytes + c.stored_bytes >= 768
                if c.peak_sram_bytes <= cap:
                    traced.append(c.loaded_bytes + c.stored_bytes)
    assert result.lower_bound_bytes == (2 * 8 * 4 + 8 * 4 + 8 * 4 + 2 * 8 * 4) * 4 == 768
    assert result.best is not None and result.best.peak_sram_bytes <= cap
    assert result.best.traffic_bytes == min(traced)
    assert result.evaluations == 5 * 3 * 2


def test_search_with_room_for_everything_reaches_the_bound_and_refuses_too_little():
    """With SRAM for whole tiles, q-outer moves exactly the compulsory traffic (see the whole-tile test); with 8 B
    (two fp32 words) nothing fits: best None, every kind None."""
    p = AttentionProblem(1, 2, 1, 8, 8, 4, causal=True)
    big = search_attention(p, NARROW, 1 << 20)
    assert big.best.traffic_bytes == big.lower_bound_bytes == 768
    assert big.best_fused.schedule.kind in ("q-outer", "kv-outer")
    assert big.best_fused.traffic_bytes == 768  # q-outer with whole tiles
    small = search_attention(p, NARROW, 8)
    assert small.best is None and all(v is None for v in small.best_by_kind.values())


def test_search_by_cycles_and_energy_rank_their_own_figure():
    """The cycles objective's choice has the least estimated cycles of every kind's best by cycles; the energy
    objective's the least energy (energy_pj_of on the analysis)."""
    from dsasim.architect.search.attention_search import energy_pj_of_analysis
    p = AttentionProblem(1, 4, 2, 16, 24, 8, causal=True)
    hw = dataclasses.replace(preset("blog"), sram_bytes=1 << 20)
    by_cycles = search_attention(p, hw, 4096, "cycles")
    assert by_cycles.best.estimated_cycles == min(a.estimated_cycles for a in by_cycles.best_by_kind.values() if a)
    by_energy = search_attention(p, hw, 4096, "energy")
    sized = dataclasses.replace(hw, sram_bytes=4096)
    assert energy_pj_of_analysis(by_energy.best, sized) == min(
        energy_pj_of_analysis(a, sized) for a in by_energy.best_by_kind.values() if a)


def test_exact_count_limit_is_the_searches():
    from dsasim.architect.problems.attention import EXACT_COUNT_LIMIT
    from dsasim.architect.search import layer_search
    assert EXACT_COUNT_LIMIT == layer_search.EXACT_COUNT_LIMIT


# ---------------------------------------------------------------------------------------------- command line
import json  # noqa: E402

from dsasim.cli import main  # noqa: E402


def test_cli_search_attention_json_is_the_models(tmp_path, capsys):
    """`dsasim search attention:...` prints the best schedule and writes JSON whose figures are analyze_attention's
    of the schedule it names (independently recomputed here), with the compulsory bound: b=1, h=4, hkv=2, n=m=64,
    d=16 on blog (1-byte words): Q, O 4*64*16 = 4096 B each, K, V 2*64*16 = 2048 B each: 12,288 B."""
    path = tmp_path / "a.json"
    spec = "attention:h=4,hkv=2,n=64,d=16,causal=1"
    assert main(["search", spec, "--sram", "16KiB", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "best" in out and "bound (compulsory" in out
    data = json.loads(path.read_text())
    assert data["lower_bound_bytes"] == 12_288
    sch = AttentionSchedule.from_json(data["best"]["schedule"])
    a = analyze_attention(sch, dataclasses.replace(preset("blog"), sram_bytes=16 * 1024))
    assert data["best"]["traffic_bytes"] == a.traffic_bytes >= 12_288
    assert data["best"]["peak_sram_bytes"] == a.peak_sram_bytes <= 16 * 1024


@pytest.mark.parametrize("argv, words", [
    (["search", "attention:h=6,hkv=4,n=64,d=16"], "multiple of hkv=4"),
    (["search", "attention:h=4,n=64,d=16", "--confirm", "2"], "--confirm 2 does not apply to attention"),
    (["search", "attention:h=4,n=64,d=16", "--no-slide"], "--no-slide does not apply to attention"),
    (["search", "attention:h=4,n=64,d=16", "--hardware", "blog-l1"], "levels below it"),
])
def test_cli_search_attention_refusals_are_one_line(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------- timing
from dsasim.kernels.attention_kernel import run_attention  # noqa: E402


@pytest.mark.parametrize("kind", ["q-outer", "kv-outer", "unfused"])
def test_timing_runs_the_traces_with_the_units_busy_as_counted(kind):
    """The timing simulator takes the attention traces (the new vector ops included): the vector unit is busy for
    exactly the model's vector cycles and the TensorCore for its TensorCore cycles, and the run lasts at least the
    longer of the two (the units serialise on each tile's data)."""
    sch = AttentionSchedule(AttentionProblem(1, 4, 2, 9, 13, 6, causal=True), kind, 4, 5, 2)
    result = run_attention(sch, NARROW)
    timed = simulate(result.trace, NARROW)
    a = analyze_attention(sch, NARROW)
    assert timed.engine_busy_cycles["vector"] == a.vector_cycles
    assert timed.engine_busy_cycles["tensorcore"] == a.tensorcore_cycles
    assert timed.cycles >= max(a.vector_cycles, a.tensorcore_cycles)


@pytest.mark.parametrize("kind, br, bc, ways, words", [
    ("fused", 2, 2, 1, "kinds are unfused, store-p"),
    ("q-outer", 9, 2, 1, "a tile holds at most n=8"),
    ("q-outer", 2, 0, 1, "bc must be an integer >= 1"),
    ("q-outer", 2, 2, 0, "ways must be an integer >= 1"),
])
def test_bad_schedules_get_one_line_errors(kind, br, bc, ways, words):
    with pytest.raises(ValueError) as err:
        AttentionSchedule(AttentionProblem(1, 1, 1, 8, 8, 4), kind, br, bc, ways)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_schedule_json_round_trips():
    sch = AttentionSchedule(AttentionProblem(2, 4, 2, 5, 7, 3, causal=True), "kv-outer", 2, 3, 2)
    assert AttentionSchedule.from_json(json.loads(json.dumps(sch.to_json()))) == sch
