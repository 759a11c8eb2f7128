"""Lower bounds on the DDR traffic (loaded + stored bytes) of any schedule of a conv or matmul.

All bounds count elements (then x word_bytes) and take S = sram_bytes // word_bytes elements of SRAM; N-way
buffering only lowers the usable capacity, so they hold for every schedule the memory model accepts.

* Compulsory: every input element that some MAC reads is loaded at least once and every output element is
  stored at least once. Elements never touched are excluded: image rows/columns that no output position and
  tap reads (e.g. the odd rows of a 1x1 stride-2 conv) and weight taps that only ever meet padding.
* Matmul (M x K) @ (K x N), and convs that are exactly one (1x1 kernel, no padding, any stride: the image
  elements read form a dense (N*OH*OW) x IC operand):
  - Q >= 2MNK/sqrt(S) + MN when sqrt(S) <= min(M, N) and K >= 2 sqrt(S) (Smith, Lowery, Langou, van de Geijn,
    "A tight I/O lower bound for matrix multiplication", arXiv:1702.02017, and Kwasniewski et al., "Red-blue
    pebbling revisited: near optimal parallel matrix-matrix multiplication", SC'19). Outside that range it can
    fail: M=256, K=32, N=256, S=824 elements has a schedule below it.
  - elsewhere Q >= MNK / (2 sqrt(2) sqrt(S)) - S (Irony, Toledo, Tiskin, "Communication lower bounds for
    distributed-memory matrix multiplication", JPDC 64(9), 2004: the Hong-Kung segment argument with the
    Loomis-Whitney inequality: a segment of S transfers has at most 2S elements of each operand at hand, so it
    performs at most (2S)^(3/2) MACs).
* Conv: its im2col matmul view (M = N*OH*OW pixels, K = IC*KH*KW, N = OC) with the window reuse factor
  R = max over image elements of the (pixel, tap) pairs that read it (= ceil(KH/stride) x ceil(KW/stride) for
  dilation 1): in a segment the im2col entries available are at most R x the image elements at hand, so
  Loomis-Whitney gives at most sqrt(R) (2S)^(3/2) MACs per segment and
  Q >= MACs_real / (2 sqrt(2) sqrt(R S)) - S, MACs_real counting only MACs on real (non-padding) inputs
  (the form of Chen, Han, Wang, "Communication lower bound in convolution accelerators", HPCA 2020; see also
  Demmel and Dinh, "Communication-optimal convolutional neural nets", arXiv:1802.06905). The tighter
  2MNK/sqrt(S) form is not used for convs with R > 1 or padding: its proof assumes a dense operand without
  aliasing, so it is not provably safe there.
* Grouped convs (groups G > 1, `ConvProblem`'s group dimension g): the compulsory traffic counts the grouped
  tensors, so the weight is OC x IC/G x KH x KW elements. A grouped conv is G block-diagonal matmuls, never a
  dense one (`dense_matmul` is None), so it takes the conv form with its own MACs (OC x IC/G x KH x KW x OH x OW
  per image): its MACs are a subset of the dense conv's iteration space and Loomis-Whitney holds for any subset,
  so the segment argument and the bound carry over unchanged.
The reported bound is the largest safe one: max(compulsory, the matmul/conv bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from dsasim.architect.nests.loopnest import Axis, Problem
from dsasim.geometry import tap_outputs

__all__ = ["Bound", "touched_elements", "compulsory_bytes", "lower_bound", "window_reuse", "real_macs",
           "matmul_bound_elements"]


@dataclass(frozen=True)
class Bound:
    """A lower bound on loaded + stored bytes for SRAM of `sram_bytes`."""

    bytes: int  # the bound: max(compulsory, the dataflow bound)
    compulsory_bytes: int
    dataflow_bytes: int  # the matmul / conv bound alone (0 when it is not positive)
    kind: str  # which bound is the larger: "compulsory", "matmul-2mnk", "itt", "conv-itt-window"
    formula: str  # the dataflow bound as evaluated
    sram_bytes: int
    word_bytes: int


def _axis_touched(axis: Axis, extents: Mapping[str, int]) -> tuple[int, int, int, int]:
    """Along one window axis: (rows read, taps that read a real row, (position, tap) pairs on real rows, max pairs
    per row)."""
    count = [0] * axis.size
    taps_used = 0
    for t in range(extents[axis.tap]):
        off = t * axis.dilation - axis.padding
        lo, hi = tap_outputs(0, extents[axis.dim], off, axis.stride, axis.size)
        if lo <= hi:
            taps_used += 1
            for o in range(lo, hi + 1):
                count[o * axis.stride + off] += 1
    rows = sum(1 for c in count if c)
    return rows, taps_used, sum(count), max(count, default=0)


def touched_elements(problem: Problem) -> dict[str, int]:
    """Elements of each tensor that the computation touches (reads, or writes for the output): along a window
    axis the rows some (position, tap) pair reads, along a tap dimension the taps that meet a real row, else the
    whole extent."""
    ext = problem.extents
    touched = {a.tap: _axis_touched(a, ext) for a in problem.windows}

    def along(a: Axis) -> int:
        if a.is_window:
            return touched[a.tap][0]
        return touched[a.dim][1] if a.dim in touched else ext[a.dim]

    return {t.name: math.prod(along(a) for a in t.axes) for t in problem.tensors}


def compulsory_bytes(problem: Problem, word_bytes: int) -> int:
    """Every touched input element loaded once, every output element stored once, in bytes."""
    return sum(touched_elements(problem).values()) * word_bytes


def window_reuse(problem: Problem) -> int:
    """R: the most (output position, tap) pairs that read one image element (1 for a matmul)."""
    return max(1, math.prod(_axis_touched(a, problem.extents)[3] for a in problem.windows))


def real_macs(problem: Problem) -> int:
    """MACs whose input is a real element (padding taps excluded)."""
    windowed = {d for a in problem.windows for d in a.dims()}
    plain = math.prod(e for d, e in problem.extents.items() if d not in windowed)
    return plain * math.prod(_axis_touched(a, problem.extents)[2] for a in problem.windows)


def _ceil_safe(x: float) -> int:
    """ceil of a float bound, backing off a hair so rounding error can never lift it above the true value."""
    if x <= 0:
        return 0
    return max(0, math.ceil(x * (1 - 1e-12) - 1e-9))


def matmul_bound_elements(m: int, n: int, k: int, s: int) -> tuple[float, str, str]:
    """(bound in elements, kind, formula) of the matmul dataflow bound with S = s elements."""
    r = math.sqrt(s)
    if r <= min(m, n) and k >= 2 * r:
        return (2 * m * n * k / r + m * n, "matmul-2mnk",
                f"2MNK/sqrt(S) + MN = 2*{m}*{n}*{k}/sqrt({s}) + {m}*{n}")
    return (m * n * k / (2 * math.sqrt(2) * r) - s, "itt",
            f"MNK/(2*sqrt(2)*sqrt(S)) - S = {m}*{n}*{k}/(2*sqrt(2)*sqrt({s})) - {s}")


def lower_bound(problem: Problem, sram_bytes: int, word_bytes: int) -> Bound:
    """The largest provably safe lower bound on loaded + stored bytes (see the module docstring)."""
    if sram_bytes < word_bytes or word_bytes < 1:
        raise ValueError(f"lower_bound: need sram_bytes >= word_bytes >= 1, got {sram_bytes}, {word_bytes}")
    s = sram_bytes // word_bytes
    comp = compulsory_bytes(problem, word_bytes)
    mnk = problem.dense_matmul()
    if mnk is not None:
        value, kind, formula = matmul_bound_elements(*mnk, s)
    else:
        rr = window_reuse(problem)
        macs = real_macs(problem)
        value = macs / (2 * math.sqrt(2) * math.sqrt(rr * s)) - s
        kind = "conv-itt-window"
        formula = f"MACs/(2*sqrt(2)*sqrt(R*S)) - S = {macs}/(2*sqrt(2)*sqrt({rr}*{s})) - {s}"
    dataflow = _ceil_safe(value) * word_bytes
    if dataflow > comp:
        return Bound(dataflow, comp, dataflow, kind, formula, sram_bytes, word_bytes)
    return Bound(comp, comp, dataflow, "compulsory", formula, sram_bytes, word_bytes)
