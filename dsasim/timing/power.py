"""Energy over time: each timed operation's energy (pJ), and the run's energy per timeline window by component.

Per operation (the prices of `dsasim.energy.costs.EnergyCosts`, the conventions of `dsasim.energy.accesses`):

* a DMA transfer of b bytes: b x (its source level's read + its destination level's write energy per byte) — a
  LOAD (or a SLIDE's new rows) reads DDR and writes the buffer's level, a STORE the reverse, a STAGE reads the
  parent level and writes the inner one, a WRITEBACK the reverse;
* a compute: its padded MACs x the MAC lane energy (TensorCore), its lane operations x the lane energy (vector), and
  its operand accesses (`Trace.compute_accesses`: input reads, output reads and writes, in elements x word bytes)
  priced at the level of the buffer each tile is in;
* an OPEN (a zero-fill on chip) and a HIT: nothing.

Over time each operation's energy is spread evenly over its duration [start, end) (an operation of 0 cycles puts
its energy in the window holding its start), and the on-chip leakage is spread evenly over the run [0, cycles).
So the windows of a component sum to that component of `energy_report(run.access_counts, hardware, cycles)`, to
float rounding: the same accesses, priced the same way, summed in another order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dsasim.energy.costs import EnergyCosts
from dsasim.energy.report import LEAKAGE, TENSORCORE, VECTOR
from dsasim.hardware import DDR, Accelerator
from dsasim.timing._result import window_integrals
from dsasim.timing.model import LOAD_OP, STAGE_OP, STORE_OP, TC_OP, VEC_OP, WRITEBACK_OP, OpGraph
from dsasim.traced.trace import Trace

__all__ = ["OperationEnergy", "operation_energy", "window_energy_pj"]


@dataclass(frozen=True, eq=False)
class OperationEnergy:
    """The reported operations' energy by component, sparse: `charges[c]` = (operations, pJ) of component
    `components[c]` (the keys of `energy_breakdown_pj`: DDR, the on-chip levels, tensorcore, vector, leakage; an
    operation may appear twice, e.g. a compute reading an input and its output in the SRAM; leakage has none: it
    belongs to the run's time, not to an operation). `operations`: how many operations there are."""

    components: tuple[str, ...]
    charges: tuple[tuple[np.ndarray, np.ndarray], ...]
    operations: int

    def __post_init__(self) -> None:
        if len(self.charges) != len(self.components):
            raise ValueError(f"OperationEnergy: one charge per component ({len(self.components)}), got "
                             f"{len(self.charges)}")

    def per_operation_pj(self) -> np.ndarray:
        """Each operation's energy, all components, pJ."""
        total = np.zeros(self.operations, np.float64)
        for ops, pj in self.charges:
            if len(ops):
                total += np.bincount(ops, weights=pj, minlength=self.operations)
        return total

    def component_pj(self) -> dict[str, float]:
        """Each component's energy over every operation, pJ."""
        return {name: float(pj.sum()) for name, (_, pj) in zip(self.components, self.charges)}


def operation_energy(g: OpGraph, trace: Trace, hardware: Accelerator, kind: np.ndarray, buffer: np.ndarray,
                     nbytes: np.ndarray) -> OperationEnergy | None:
    """The energy of each operation given by its kind, buffer and bytes (the graph's reported operations, in program
    order), pJ by component; None when the trace carries no operand accesses (a hand-built trace)."""
    accesses = trace.compute_accesses()
    if accesses is None:
        return None
    costs = EnergyCosts.of(hardware)
    components = (*(lv.name for lv in costs.levels), TENSORCORE, VECTOR, LEAKAGE)
    row = {name: i for i, name in enumerate(components)}
    # per level index of the graph (0: the SRAM, then the inner levels), its row and its parent's
    level_rows = np.array([row[name] for name in g.level_names], np.int64)
    parent_rows = np.array([row[lv.parent] for lv in hardware.levels], np.int64)  # (the SRAM's parent: DDR)
    read_pb = np.array([lv.read_pj_per_byte for lv in costs.levels], np.float64)  # by component row (levels first)
    write_pb = np.array([lv.write_pj_per_byte for lv in costs.levels], np.float64)
    b_level = np.asarray(g.buffer_level, np.int64)
    nb = np.asarray(nbytes, np.float64)
    pieces: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in components]

    def charge(ops: np.ndarray, rows: np.ndarray, amount: np.ndarray, per_byte: np.ndarray) -> None:
        """Charge ops[i] amount[i] bytes at row rows[i]'s per-byte energy."""
        for r in np.unique(rows).tolist():
            mine = rows == r
            pieces[r].append((ops[mine], amount[mine] * per_byte[r]))

    ddr = row[DDR]
    for op_kind, source_is_ddr in ((LOAD_OP, True), (STORE_OP, False)):
        ops = np.flatnonzero(kind == op_kind)
        here = level_rows[b_level[buffer[ops]]]
        there = np.full(len(ops), ddr, np.int64)
        src, dst = (there, here) if source_is_ddr else (here, there)
        charge(ops, src, nb[ops], read_pb)
        charge(ops, dst, nb[ops], write_pb)
    for op_kind, into_inner in ((STAGE_OP, True), (WRITEBACK_OP, False)):
        ops = np.flatnonzero(kind == op_kind)
        level = b_level[buffer[ops]]
        here, parent = level_rows[level], parent_rows[level]
        src, dst = (parent, here) if into_inner else (here, parent)
        charge(ops, src, nb[ops], read_pb)
        charge(ops, dst, nb[ops], write_pb)
    computes = np.flatnonzero((kind == TC_OP) | (kind == VEC_OP))
    if len(computes) != len(accesses):
        raise ValueError(f"the trace has {len(accesses)} COMPUTE events but the graph {len(computes)} compute "
                         f"operations: they must pair in program order")
    if len(computes):
        word = float(trace.word_bytes)
        out, first, second = accesses[:, 0], accesses[:, 1], accesses[:, 2]
        for buf, elements, per_byte in ((first, accesses[:, 3], read_pb), (second, accesses[:, 4], read_pb),
                                        (out, accesses[:, 5], read_pb), (out, accesses[:, 6], write_pb)):
            used = np.flatnonzero((buf >= 0) & (elements != 0))
            charge(computes[used], level_rows[b_level[buf[used]]], elements[used] * word, per_byte)
        pieces[row[TENSORCORE]].append((computes, accesses[:, 8] * costs.mac_pj.value))
        pieces[row[VECTOR]].append((computes, accesses[:, 7] * costs.vector_lane_op_pj.value))
    empty = (np.zeros(0, np.int64), np.zeros(0, np.float64))
    charges = tuple((np.concatenate([o for o, _ in p]), np.concatenate([e for _, e in p])) if p else empty
                    for p in pieces)
    return OperationEnergy(components, charges, len(kind))


def window_energy_pj(energy: OperationEnergy, starts: np.ndarray, ends: np.ndarray, hardware: Accelerator,
                     cycles: int, edges: np.ndarray) -> np.ndarray:
    """Energy per window [edges[k], edges[k+1]) by component (rows as `energy.components`), pJ: each operation's
    spread evenly over its duration, the leakage over [0, cycles) (module docstring)."""
    costs = EnergyCosts.of(hardware)
    starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    n_windows = len(edges) - 1
    width = int(edges[1] - edges[0])
    out = np.zeros((len(energy.components), n_windows), np.float64)
    for r, (name, (ops, pj)) in enumerate(zip(energy.components, energy.charges)):
        if name == LEAKAGE:  # mW x s x 1e9 = pJ, over the part of each window inside the run
            inside = np.clip(np.minimum(edges[1:], cycles) - edges[:-1], 0, None)
            out[r] = costs.leakage_mw * 1e9 * inside / costs.clock_hz
            continue
        keep = pj != 0
        ops, pj = ops[keep], pj[keep]
        s, e = starts[ops], ends[ops]
        duration = e - s
        spread = duration > 0
        if spread.any():
            out[r] = window_integrals(s[spread], e[spread], pj[spread] / duration[spread], edges)
        if not spread.all():  # 0 cycles: all of it in the window holding its start
            np.add.at(out[r], np.minimum(s[~spread] // width, n_windows - 1), pj[~spread])
    return out
