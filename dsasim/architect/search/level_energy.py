"""The energy of the level search's candidates: the inner tilings of one outer nest priced, vectorised.

A candidate of `level_search`'s inner search (an inner tiling of one outer nest, with each staged tensor's options:
staged among the inner loops or in the outer nest, 1 or 2 ways) reads and writes, as the hierarchy model counts
them (`LevelAnalysis.access_counts`):

* DDR and the SRAM's DMA side from the outer nest, the same for every candidate of it: a load reads DDR and writes
  the SRAM, a store the reverse;
* per tensor staged in an inner level: its stages read the SRAM and write the level, its write-backs the reverse;
* the TensorCore's operands (`dsasim.dataflow`, over the inner tiles) in the innermost level of each role's path;
  the output's reads are its writes less its fresh elements (`analytic.fresh_outputs`), which depend on where the
  output's innermost buffer is staged, hence on the candidate and its options (`fresh_output_bytes`);
* padded MACs: the TensorCore's steps over the inner tiles, every lane of each.

`InnerPricing.energy_pj` prices them with `dsasim.energy.report.energy_pj_of` on the hardware being searched (its
SRAM size and every level's capacity set their energy per access and leakage, by the SRAM rule unless given),
leakage over the candidate's cost in cycles rounded as `LevelAnalysis.energy` rounds them: the energy the search
ranks by is the energy its result reports.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from dsasim.architect.model.analytic import Evaluator
from dsasim.architect.nests.loopnest import Problem
from dsasim.cost import padded_macs
from dsasim.dataflow import OperandAccesses
from dsasim.energy.report import energy_pj_of
from dsasim.hardware import DDR, SRAM_LEVEL, Accelerator

__all__ = ["InnerPricing", "fresh_output_bytes"]


def fresh_output_bytes(ev: Evaluator, compute_idx: Sequence[Any], tap_idx: Sequence[Any],
                       tap_above: Sequence[Any]) -> Any:
    """Bytes of the output that its innermost buffer opens as zeros and computes into while open
    (`analytic.fresh_outputs`), over arrays of candidates: `compute_idx[d]` is the position of dimension d's compute
    (innermost) tile in the evaluator's tiles; per window group (in `ev.groups` order) `tap_idx` the position of the
    tap tile the output's buffer sees and `tap_above` whether the tap loop is above that buffer (else every tap is
    computed into on its first visit)."""
    fresh: Any = ev.word * math.prod(ev.ext[d] for d in ev.plain_dims if d in ev.idx[ev.out_t])
    for g, taps, above in zip(ev.groups, tap_idx, tap_above, strict=True):
        pair = np.asarray(compute_idx[g.o]) * g.nk + np.asarray(taps)
        fresh = fresh * np.where(above, g.computed_first[pair], g.computed_all[pair])
    return fresh


class InnerPricing:
    """Prices the candidates of one outer nest's inner evaluation (module docstring). `levels` maps each tensor to
    the level its operand accesses happen in (its inner level's name, or the SRAM: every tensor of `problem`); `outer_loaded_bytes` /
    `outer_stored_bytes` are the outer nest's DDR loads and stores; `operand_bytes` the TensorCore's operand bytes
    over the inner tiles (output reads unused: they follow the output's staging) and `tensorcore_cycles` its steps
    (numpy arrays over the candidates, or numbers)."""

    def __init__(self, hardware: Accelerator, problem: Problem, levels: Mapping[str, str],
                 outer_loaded_bytes: int, outer_stored_bytes: int, operand_bytes: OperandAccesses,
                 tensorcore_cycles: Any) -> None:
        self.hardware = hardware
        self.levels = dict(levels)
        # the TensorCore's operand roles, as `LevelAnalysis.access_counts` assigns them
        self.input, self.weight, self.output = problem.tensors[0].name, problem.tensors[1].name, problem.output.name
        self.outer_loaded_bytes, self.outer_stored_bytes = int(outer_loaded_bytes), int(outer_stored_bytes)
        self.operand_bytes = operand_bytes
        self.padded_macs = padded_macs(hardware, np.asarray(tensorcore_cycles, np.float64))

    def level_bytes(self, moved: Mapping[str, tuple[Any, Any]],
                    output_fresh_bytes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """(read, write) bytes per level (DDR, SRAM, each inner level) of candidates whose staged tensors move
        `moved[tensor]` = (bytes staged in from the SRAM, bytes written back to it) and whose output opens
        `output_fresh_bytes` fresh (`fresh_output_bytes`)."""
        read: dict[str, Any] = {DDR: self.outer_loaded_bytes, SRAM_LEVEL: self.outer_stored_bytes}
        write: dict[str, Any] = {DDR: self.outer_stored_bytes, SRAM_LEVEL: self.outer_loaded_bytes}
        for tensor, (staged, written) in moved.items():
            level = self.levels[tensor]
            read[SRAM_LEVEL] = read[SRAM_LEVEL] + staged
            write[level] = write.get(level, 0) + staged
            read[level] = read.get(level, 0) + written
            write[SRAM_LEVEL] = write[SRAM_LEVEL] + written
        ops = self.operand_bytes
        for tensor, reads in ((self.input, ops.input_reads), (self.weight, ops.weight_reads),
                              (self.output, ops.output_writes - output_fresh_bytes)):
            level = self.levels[tensor]
            read[level] = read.get(level, 0) + reads
        out_level = self.levels[self.output]
        write[out_level] = write.get(out_level, 0) + ops.output_writes
        return read, write

    def energy_pj(self, moved: Mapping[str, tuple[Any, Any]], output_fresh_bytes: Any, cycles: Any) -> Any:
        """Energy per inference, pJ, of candidates (`level_bytes`' arguments) that take `cycles` (their cost)."""
        read, write = self.level_bytes(moved, output_fresh_bytes)
        return energy_pj_of(self.hardware, read, write, self.padded_macs, 0, np.round(cycles))
