"""The TensorCore's dataflow: which operand elements one TensorCore call reads and writes, per the hardware's choice.

A TensorCore call (`tc.conv2d` or `tc.matmul` written into an output tile) has, in elements:
pixels P (output positions: N x OH x OW of a conv, M of a matmul), taps T (KH x KW; 1 for a matmul), groups G,
in_per_group I and out_per_group O (channels of one group; K and N of a matmul), on an array of in_block Bi x
out_block Bo MAC lanes (16 x 24). It runs P x T x G x ceil(I/Bi) x ceil(O/Bo) steps; each step multiplies an
in-block of one pixel's inputs (<= Bi elements) by a weight block (<= Bi x Bo real elements) into that pixel's
out-block of partial sums (<= Bo elements). Where an operand sits between steps is the dataflow:

* ``weight_stationary`` (the default): per (group, tap, in-block, out-block) the weight block is read once and
  held while the call's pixels stream past; per pixel the in-block's inputs are read and the out-block's partial
  sums are read, added to and written back in the output tile. So, summed over the call's steps:
    weight reads  = T x G x I x O                      (every weight element of the call once)
    input reads   = P x T x G x I x ceil(O/Bo)          (each input element once per out-block)
    output writes = P x T x G x ceil(I/Bi) x O          (each output element once per (tap, in-block))
* ``output_stationary``: the array holds one pixel's out-block of sums across all the call's taps and in-blocks
  (the weight block is re-read at every step, the inputs as above); the sums leave the array once:
    weight reads  = P x T x G x I x O
    input reads   = P x T x G x I x ceil(O/Bo)
    output writes = P x G x O

Output reads, in every dataflow, are the writes less the call's fresh output elements:
    output reads  = output writes - fresh_output_elements
since each element's first write in the call reads the accumulator it adds to, except where that accumulator is
fresh: **a fresh output element** is one whose buffer (in the level the compute writes, the SRAM or an inner
level) was opened without loading it (zero-filled: the memory model's OPEN, no DMA and no stage) and that no
compute and no write-back has written since. The first write of such a zero-filled accumulator is not a read
(its value is known to be 0). An `out.assign(product)` overwrites: every output element of that call counts as
fresh. The traced session tracks this per buffer (`Buffer.fresh_elements`, set at an open, cleared by the
writes); the analytic models count it as the output elements opened without a load: stored output elements minus
the loaded partial results (every opened element is computed into before it is stored).

Each count is a product of per-factor terms: a factor's extent ("elements"), its blocks (ceil(extent / block),
in and out only), or nothing ("once": the count does not grow with it). `Dataflow` declares that form, so the
analytic models sum it over a loop nest's tiles as separable per-dimension sums (`Dataflow.terms`), and a new
dataflow is one entry of `DATAFLOWS` here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

from dsasim.util import ceil_div, is_int

__all__ = ["FACTORS", "TERMS", "OperandAccesses", "Dataflow", "DATAFLOWS", "DEFAULT_DATAFLOW", "check_dataflow",
           "operand_accesses"]

FACTORS = ("pixels", "taps", "groups", "in", "out")  # a TensorCore call's dimensions (see the module docstring)
TERMS = ("elements", "blocks", "once")  # how a count grows with one factor: its extent, its blocks, not at all
COUNTS = ("input_reads", "weight_reads", "output_writes")  # the counts a dataflow declares; output reads follow


class OperandAccesses(NamedTuple):
    """The operand elements one TensorCore call (or a sum of calls) reads and writes, in elements."""

    input_reads: int
    weight_reads: int
    output_reads: int
    output_writes: int


@dataclass(frozen=True)
class Dataflow:
    """A TensorCore dataflow: per count (`COUNTS`), how it grows with each factor (`FACTORS` -> a `TERMS` entry;
    a factor left out is "once"). Calling it gives one call's `OperandAccesses` (elements)."""

    name: str
    input_reads: Mapping[str, str]
    weight_reads: Mapping[str, str]
    output_writes: Mapping[str, str]
    description: str

    def __post_init__(self) -> None:
        for count in COUNTS:
            form = getattr(self, count)
            if not isinstance(form, Mapping):
                raise ValueError(f"Dataflow {self.name!r}: {count} must map factors to terms, got {form!r}")
            for factor, term in form.items():
                if factor not in FACTORS or term not in TERMS:
                    raise ValueError(f"Dataflow {self.name!r}: {count} maps {factor!r} to {term!r}; factors are "
                                     f"{FACTORS}, terms {TERMS}")
                if term == "blocks" and factor not in ("in", "out"):
                    raise ValueError(f"Dataflow {self.name!r}: {count}: only in and out come in blocks, not "
                                     f"{factor!r}")
            object.__setattr__(self, count, {f: form.get(f, "once") for f in FACTORS})

    def terms(self, count: str) -> dict[str, str]:
        """How `count` ("input_reads", "weight_reads" or "output_writes") grows with each factor (all FACTORS)."""
        return dict(getattr(self, count))

    def summed(self, count: str, sums: Mapping[str, tuple]) -> Any:
        """`count` summed over calls whose factors range independently (their product set), in elements: per
        factor in `sums`, (the sum of its extents, the sum of its blocks, the number of its values) over the calls,
        the one its term takes, multiplied (a factor left out is 1). Works on numpy arrays alike."""
        total: Any = 1
        for factor, term in getattr(self, count).items():
            if factor in sums:
                total = total * sums[factor][TERMS.index(term)]
        return total

    def __call__(self, pixels: int, taps: int, groups: int, in_per_group: int, out_per_group: int, in_block: int,
                 out_block: int, fresh_output_elements: int = 0) -> OperandAccesses:
        """One call's operand reads and writes, in elements (see the module docstring)."""
        sizes = {"pixels": pixels, "taps": taps, "groups": groups, "in": in_per_group, "out": out_per_group}
        for name, value in (*sizes.items(), ("in_block", in_block), ("out_block", out_block)):
            if not is_int(value, numpy=True) or value < 1:
                raise ValueError(f"dataflow {self.name}: {name} must be an integer >= 1, got {value!r}")
        blocks = {"in": in_block, "out": out_block}
        counts = []
        for count in COUNTS:
            n = 1
            for factor, term in getattr(self, count).items():
                if term == "elements":
                    n *= sizes[factor]
                elif term == "blocks":
                    n *= ceil_div(sizes[factor], blocks[factor])
            counts.append(int(n))
        input_reads, weight_reads, output_writes = counts
        outputs = pixels * groups * out_per_group
        if not is_int(fresh_output_elements, numpy=True) or not 0 <= fresh_output_elements <= outputs:
            raise ValueError(f"dataflow {self.name}: fresh_output_elements must be an integer from 0 to the call's "
                             f"{outputs} output elements, got {fresh_output_elements!r}")
        return OperandAccesses(input_reads, weight_reads, output_writes - int(fresh_output_elements), output_writes)


_STREAMED_INPUTS = {"pixels": "elements", "taps": "elements", "groups": "elements", "in": "elements",
                    "out": "blocks"}

DATAFLOWS: dict[str, Dataflow] = {d.name: d for d in (
    Dataflow("weight_stationary", input_reads=_STREAMED_INPUTS,
             weight_reads={"taps": "elements", "groups": "elements", "in": "elements", "out": "elements"},
             output_writes={"pixels": "elements", "taps": "elements", "groups": "elements", "in": "blocks",
                            "out": "elements"},
             description="a weight block is read once per call and held while the pixels stream; partial sums "
                         "are read-modify-written per (tap, in-block)"),
    Dataflow("output_stationary", input_reads=_STREAMED_INPUTS,
             weight_reads={"pixels": "elements", "taps": "elements", "groups": "elements", "in": "elements",
                           "out": "elements"},
             output_writes={"pixels": "elements", "groups": "elements", "out": "elements"},
             description="a pixel's out-block of sums stays in the array over the call's taps and in-blocks; "
                         "weights are re-read every step"),
    Dataflow("no_local_reuse", input_reads=_STREAMED_INPUTS,
             weight_reads={"pixels": "elements", "taps": "elements", "groups": "elements", "in": "elements",
                           "out": "elements"},
             output_writes={"pixels": "elements", "taps": "elements", "groups": "elements", "in": "blocks",
                            "out": "elements"},
             description="nothing stays in the array between steps: every step reads its weight block and inputs "
                         "and read-modify-writes its partial sums (Timeloop's MAC with no storage of its own)"),
)}
DEFAULT_DATAFLOW = "weight_stationary"


def check_dataflow(name: object, owner: str) -> Dataflow:
    """The registered dataflow `name`, or a one-line ValueError naming `owner` and the choices."""
    if not isinstance(name, str) or name not in DATAFLOWS:
        raise ValueError(f"{owner}: tensorcore_dataflow must be one of {', '.join(DATAFLOWS)}, got {name!r}")
    return DATAFLOWS[name]


def operand_accesses(dataflow: str, pixels: int, taps: int, groups: int, in_per_group: int, out_per_group: int,
                     in_block: int, out_block: int, fresh_output_elements: int = 0) -> OperandAccesses:
    """One TensorCore call's operand reads and writes under the registered `dataflow`, in elements."""
    return check_dataflow(dataflow, "operand_accesses")(pixels, taps, groups, in_per_group, out_per_group,
                                                         in_block, out_block, fresh_output_elements)
