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
from dsasim.timing.model import LOAD_OP, STAGE_OP, STORE_OP, TC_OP, VEC_OP, WRITEBACK_OP, OpGraph
from dsasim.traced.trace import Trace

__all__ = ["OperationEnergy", "operation_energy", "window_energy_pj"]


@dataclass(frozen=True, eq=False)
class OperationEnergy:
    """The reported operations' energy by component, sparse: `charges[c]` holds the pieces (operations, pJ) of
    component `components[c]` (the keys of `energy_breakdown_pj`: DDR, the on-chip levels, tensorcore, vector,
    leakage; an operation may appear in several pieces, e.g. a compute reading an input and its output in the SRAM;
    leakage has none: it belongs to the run's time, not to an operation). `operations`: how many there are."""

    components: tuple[str, ...]
    charges: tuple[tuple[tuple[np.ndarray, np.ndarray], ...], ...]
    operations: int

    def __post_init__(self) -> None:
        if len(self.charges) != len(self.components):
            raise ValueError(f"OperationEnergy: one charge per component ({len(self.components)}), got "
                             f"{len(self.charges)}")

    def per_operation_pj(self) -> np.ndarray:
        """Each operation's energy, all components, pJ."""
        total = np.zeros(self.operations, np.float64)
        for pieces in self.charges:
            for ops, pj in pieces:
                if len(ops):
                    total += np.bincount(ops, weights=pj, minlength=self.operations)
        return total

    def component_pj(self) -> dict[str, float]:
        """Each component's energy over every operation, pJ."""
        return {name: float(sum(pj.sum() for _, pj in pieces)) for name, pieces in zip(self.components, self.charges)}


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
        if not len(ops):
            return
        lo, hi = int(rows.min()), int(rows.max())
        if lo == hi:  # (the usual case: one level)
            pieces[lo].append((ops, amount * per_byte[lo]))
            return
        for r in range(lo, hi + 1):
            mine = rows == r
            if mine.any():
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
        for name, column, price in ((TENSORCORE, 8, costs.mac_pj.value), (VECTOR, 7, costs.vector_lane_op_pj.value)):
            used = np.flatnonzero(accesses[:, column])
            if len(used):
                pieces[row[name]].append((computes[used], accesses[used, column] * price))
    return OperationEnergy(components, tuple(tuple(p) for p in pieces), len(kind))


def window_energy_pj(energy: OperationEnergy, starts: np.ndarray, ends: np.ndarray, hardware: Accelerator,
                     cycles: int, edges: np.ndarray) -> np.ndarray:
    """Energy per window [edges[k], edges[k+1]) by component (rows as `energy.components`), pJ: each operation's
    spread evenly over its duration, the leakage over [0, cycles) (module docstring). Windows are `edges[1]`
    cycles wide from 0 (as `build_result` makes them)."""
    costs = EnergyCosts.of(hardware)
    starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    n_windows = len(edges) - 1
    width = int(edges[1] - edges[0])
    out = np.zeros((len(energy.components), n_windows), np.float64)
    for r, (name, pieces) in enumerate(zip(energy.components, energy.charges)):
        if name == LEAKAGE:  # mW x s x 1e9 = pJ, over the part of each window inside the run
            inside = np.clip(np.minimum(edges[1:], cycles) - edges[:-1], 0, None)
            out[r] = costs.leakage_mw * 1e9 * inside / costs.clock_hz
            continue
        for ops, pj in pieces:
            out[r] += _spread(starts[ops], ends[ops], pj, width, n_windows)
    return out


def _spread(s: np.ndarray, e: np.ndarray, pj: np.ndarray, width: int, n_windows: int) -> np.ndarray:
    """pj[i] spread evenly over [s[i], e[i]) into windows of `width` cycles (0 cycles: all in the window of s[i]),
    pJ per window: one pass, no sort (an operation inside one window adds there; one crossing windows adds its rate
    x the cycles it spends in each: its first, its last and every whole window between)."""
    def add(windows: np.ndarray, amounts: np.ndarray) -> np.ndarray:
        return np.bincount(windows, weights=amounts, minlength=n_windows)[:n_windows].astype(np.float64, copy=False)

    first = np.minimum(s // width, n_windows - 1)
    last = np.maximum(np.minimum((e - 1) // width, n_windows - 1), first)
    inside = first == last  # (0 cycles included)
    out = add(first[inside], pj[inside])
    cross = np.flatnonzero(~inside)
    if len(cross):
        s, e, first, last = s[cross], e[cross], first[cross], last[cross]
        rate = pj[cross] / (e - s)
        out += add(first, rate * ((first + 1) * width - s))
        out += add(last, rate * (e - last * width))
        between = last - first - 1  # whole windows: few (an engine's operations do not overlap in time)
        if between.any():
            total = int(between.sum())
            begins = np.repeat(first + 1, between)
            offset = np.arange(total) - np.repeat(np.cumsum(between) - between, between)
            out += add(begins + offset, np.repeat(rate * width, between))
    return out
