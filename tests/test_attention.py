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
