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
