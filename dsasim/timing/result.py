"""SimResult: what a timing simulation reports, and how it is derived from the timed operation graph (Timeline).

Definitions (cycles at the accelerator clock):
  * cycles: when the last operation ends (the first starts at 0).
  * busy cycles of an engine: the sum of its operations' durations; utilization = busy / cycles.
  * TensorCore MAC utilization: useful MACs / (cycles x ic_block x oc_block); padding waste: the MACs spent on the
    unused part of partial 16 x 24 blocks, (padded_macs - macs) / (cycles x ic_block x oc_block).
  * roofline bound: max(TensorCore busy, vector busy, DDR time), DDR time = (loaded + stored bytes) / bandwidth
    with a shared port, max(loaded, stored) / bandwidth with separate ones (rounded up). Always <= cycles.
  * stall attribution: every cycle the TensorCore is idle, from 0 to the end, is blamed on one cause. Before
    each TensorCore operation, the idle gap since the previous one is walked back along the critical chain:
    the dependency (or the engine predecessor) that finished last, or, for a transfer that waited for its port,
    the transfer that held the port. Each stretch of the gap is blamed on what the chain was doing then:
    "load:T" (a load of tensor T running, or queued behind another load), "store-port" (a store holding the
    shared DDR port, and everything that store was waiting for), "slot" (everything behind a wait for a free
    slot or buffer: the previous occupant's compute and store), "store:T" (a store of T that a load of the same
    DDR region had to wait for), "vector" (a vector operation producing the TensorCore's input), "stage:L" and
    "writeback:L" (a STAGE into, or a WRITEBACK out of, memory level L below the SRAM, running or queued on its
    engine dma-L), "other" (never expected). The first matching rule, walking back from the TensorCore, wins.
    The idle time after the last TensorCore operation is "drain". The stall cycles sum to cycles - TensorCore busy.
  * DDR bandwidth over time: bytes per window of `window_cycles`, a transfer's bytes spread evenly over its data
    phase (after its setup cycles).
  * SRAM occupancy over time: a buffer occupies its bytes (one copy, as allocated) from the start of its first
    fill until the end of the last operation on it (its release); per window, the time-averaged bytes per
    tensor. peak_sram_bytes is the exact peak of that; reserved_sram_bytes is the trace's capacity charge
    (bytes x ways of N-way scopes), which the schedule was checked against.
  * memory levels below the SRAM (`levels`, one `LevelFigures` each, empty on one-level hardware): per inner
    level, the bytes its STAGEs moved in and its WRITEBACKs moved out, its engine's busy cycles and utilization,
    its occupancy over time and exact peak (as the SRAM's, over that level's buffers) and its reserved bytes
    (the peak of the trace's charges there, from ALLOC_IN and FREE). The SRAM figures above count SRAM buffers
    only; a level's port time, ceil((staged + written back bytes) / bytes_per_cycle), is a roofline term.
  * power over time (`power.py`): each operation's energy (its transfer's bytes at its source's read and its
    destination's write energy; a compute's MACs or lane operations and its operand accesses) spread evenly over
    its duration, the on-chip leakage over the run; per window and component (`power_components`: DDR, the on-chip
    levels, tensorcore, vector, leakage) the energy in pJ (`window_energy_pj`) and the average power in W over the
    window (pJ / (window_cycles / clock) x 1e-12; the last window, which may end after the run, is averaged over a
    whole window as the DDR bytes are). peak_power_w: the highest window's total; average_power_w: the run's energy
    / its seconds. Absent (None) for a hand-built trace, which carries no operand accesses.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterator, Mapping, NamedTuple, Sequence

import numpy as np

from dsasim.cost import busy_cycles, ddr_port, dma_cycles, level_port
from dsasim.hardware import Accelerator
from dsasim.traced.trace import Region, Trace, format_region
from dsasim.timing._result import CriticalChain, buffer_ends, engine_figures, peak_bytes, spread_integrals
from dsasim.timing.engine import Timeline
from dsasim.timing.model import FREE_OP, KIND_NAMES, LOAD_OP, STAGE_OP, STORE_OP, WRITEBACK_OP, OpGraph
from dsasim.timing.power import operation_energy, window_energy_pj
from dsasim.util import format_bytes

# operation kinds as they appear in records (FREE nodes never do)
KINDS = KIND_NAMES


class OpRecord(NamedTuple):
    """One scheduled operation: engine, kind, [start, end) in cycles, bytes moved, tensor, region, buffer."""

    engine: str
    kind: str
    start: int
    end: int
    nbytes: int
    tensor: str
    region: Region
    buffer: int

    @property
    def name(self) -> str:
        """A slice name such as 'load image[0:1, 0:16, 0:2, 0:56]'."""
        return f"{self.kind} {self.tensor}{format_region(self.region)}"


def _frozen(a: Any) -> np.ndarray:
    arr = np.asarray(a).view()  # a read-only view: the graph's or timeline's own column stays writable
    arr.setflags(write=False)
    return arr


class OpRegions(Sequence):
    """The region of every reported operation, read lazily from the graph's region column (no copy: millions
    of operations would cost a tuple each). A read-only sequence; equal to any sequence of the same regions."""

    __slots__ = ("_regions", "_ops")

    def __init__(self, regions: Sequence[Region | None], ops: np.ndarray | None) -> None:
        self._regions = regions  # the graph's column, indexed by operation id
        self._ops = ops  # the operation id of each reported operation; None: every operation, in order

    def __len__(self) -> int:
        return len(self._regions) if self._ops is None else len(self._ops)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(len(self))))
        n = len(self)
        k = i.__index__()
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(f"operation {i} out of range: there are {n} operations")
        return self._regions[k if self._ops is None else int(self._ops[k])]

    def __iter__(self) -> Iterator[Region]:
        regions = self._regions
        if self._ops is None:
            yield from regions
            return
        for at in range(0, len(self._ops), 1 << 16):  # chunks: no list of millions of ids
            for k in self._ops[at:at + (1 << 16)].tolist():
                yield regions[k]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # equality by content, like a list

    def __repr__(self) -> str:
        return f"OpRegions({len(self)} operations)"


@dataclass(frozen=True, eq=False)
class LevelFigures:
    """One memory level below the SRAM in a timed run: its traffic with its parent, its engine, its occupancy."""

    name: str
    parent: str
    engine: str  # the engine of its STAGEs, "dma-<name>" (its WRITEBACKs: "dma-<name>-wb", on the same port)
    capacity_bytes: int
    bytes_per_cycle: float
    setup_cycles: int
    staged_bytes: int  # moved in from the parent (STAGE)
    written_back_bytes: int  # moved out to the parent (WRITEBACK)
    stages: int
    writebacks: int
    busy_cycles: int  # of its engine
    utilization: float  # busy_cycles / cycles, 0..1
    peak_bytes: int  # exact peak of its occupancy over time (one copy per buffer, as the SRAM's)
    reserved_bytes: int  # peak of the trace's charges in it (bytes x ways)
    tensors: tuple[str, ...]
    occupancy: np.ndarray  # (len(tensors), windows): time-averaged bytes per window

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary with a fixed key order."""
        return {"parent": self.parent, "engine": self.engine, "capacity_bytes": self.capacity_bytes,
                "staged_bytes": self.staged_bytes, "written_back_bytes": self.written_back_bytes,
                "stages": self.stages, "writebacks": self.writebacks, "busy_cycles": self.busy_cycles,
                "utilization": round(self.utilization, 6), "peak_bytes": self.peak_bytes,
                "reserved_bytes": self.reserved_bytes,
                "occupancy_bytes_per_window": [round(float(v), 3) for v in self.occupancy.sum(axis=0)]}

    def summary(self) -> str:
        """One readable line."""
        return (f"{self.name} (from {self.parent}): staged {self.staged_bytes:,} B in {self.stages:,} ops, written "
                f"back {self.written_back_bytes:,} B in {self.writebacks:,}; its port {self.utilization:.1%} busy; "
                f"peak {_size(self.peak_bytes)} occupied, {_size(self.reserved_bytes)} reserved of "
                f"{format_bytes(self.capacity_bytes)}")


@dataclass(frozen=True, eq=False)
class SimResult:
    """The timed run of one trace on one accelerator (immutable; arrays are read-only)."""

    hardware: str
    clock_hz: float
    dram_bytes_per_cycle: float
    dram_shared_load_store: bool
    dma_setup_cycles: int
    sram_bytes: int
    tensorcore_block: int  # ic_block x oc_block: MACs per TensorCore cycle
    cycles: int
    engines: tuple[str, ...]
    engine_busy_cycles: Mapping[str, int]
    engine_operations: Mapping[str, int]
    loaded_bytes: int
    stored_bytes: int
    macs: int
    tensorcore_macs: int
    padded_macs: int
    roofline_cycles: int
    roofline_terms: Mapping[str, int]
    stall_cycles: Mapping[str, int]
    peak_sram_bytes: int
    reserved_sram_bytes: int
    window_cycles: int
    ddr_load_bytes: np.ndarray  # per window
    ddr_store_bytes: np.ndarray  # per window
    sram_tensors: tuple[str, ...]
    sram_occupancy: np.ndarray  # (len(sram_tensors), windows): time-averaged bytes per window
    tensors: tuple[str, ...]  # the trace's tensor names, indexed by op_tensor
    op_engine: np.ndarray  # index into engines, -1 for OPEN (no engine)
    op_kind: np.ndarray  # index into KINDS
    op_start: np.ndarray
    op_end: np.ndarray
    op_bytes: np.ndarray
    op_tensor: np.ndarray
    op_buffer: np.ndarray
    op_regions: Sequence[Region]  # OpRegions: read lazily from the graph
    buffer_tensor: np.ndarray  # per buffer: its tensor, bytes and occupancy interval [start, end)
    buffer_bytes: np.ndarray
    buffer_start: np.ndarray
    buffer_end: np.ndarray
    buffer_level: np.ndarray | None = None  # per buffer: its level's index (0: the SRAM, then `levels`' order)
    levels: tuple[LevelFigures, ...] = ()  # the memory levels below the SRAM, parents first
    power_components: tuple[str, ...] = ()  # the rows of window_energy_pj and op_energy_pj (energy breakdown keys)
    window_energy_pj: np.ndarray | None = None  # (len(power_components), windows): pJ per window
    op_energy_pj: np.ndarray | None = None  # per operation: its energy, every component, pJ (leakage apart)

    # -- derived figures -----------------------------------------------------------------------------------
    @property
    def operations(self) -> int:
        """Number of scheduled operations (transfers, computes, OPENs)."""
        return len(self.op_start)

    def utilization(self, engine: str) -> float:
        """Busy fraction of an engine, 0..1."""
        return self.engine_busy_cycles[engine] / self.cycles if self.cycles else 0.0

    @property
    def tensorcore_utilization(self) -> float:
        """TensorCore busy cycles / cycles, 0..1."""
        return self.utilization("tensorcore")

    @property
    def tensorcore_mac_utilization(self) -> float:
        """Useful MACs / (cycles x MACs per TensorCore cycle), 0..1."""
        if not self.cycles:
            return 0.0
        return self.tensorcore_macs / (self.cycles * self.tensorcore_block)

    @property
    def tensorcore_padding_waste(self) -> float:
        """MACs wasted on partial 16x24 blocks / (cycles x MACs per TensorCore cycle), 0..1."""
        if not self.cycles:
            return 0.0
        return (self.padded_macs - self.tensorcore_macs) / (self.cycles * self.tensorcore_block)

    @property
    def cycles_over_roofline(self) -> float:
        """cycles / roofline bound (>= 1)."""
        return self.cycles / self.roofline_cycles if self.roofline_cycles else 1.0

    @property
    def seconds(self) -> float:
        """Wall time on the accelerator at its clock."""
        return self.cycles / self.clock_hz

    @property
    def window_starts(self) -> np.ndarray:
        """Start cycle of each timeline window."""
        return np.arange(len(self.ddr_load_bytes)) * self.window_cycles

    @property
    def window_seconds(self) -> float:
        """The length of a timeline window, s."""
        return self.window_cycles / self.clock_hz

    @property
    def power_w(self) -> np.ndarray | None:
        """Average power per window by component (rows: power_components), W; None without energy."""
        if self.window_energy_pj is None:
            return None
        return self.window_energy_pj / self.window_seconds * 1e-12

    @property
    def energy_pj(self) -> float | None:
        """The run's energy over every window and component, pJ; None without energy."""
        return None if self.window_energy_pj is None else float(self.window_energy_pj.sum())

    @property
    def peak_power_w(self) -> float | None:
        """The highest window's total power, W; None without energy."""
        power = self.power_w
        return None if power is None else float(power.sum(axis=0).max(initial=0.0))

    @property
    def average_power_w(self) -> float | None:
        """The run's energy / its time, W; None without energy."""
        energy = self.energy_pj
        if energy is None:
            return None
        return energy * 1e-12 / self.seconds if self.cycles else 0.0

    def records(self) -> Iterator[OpRecord]:
        """Every scheduled operation, in program order."""
        names = self.engines
        tensors = self.tensors
        for e, k, s, t_end, nb, t, reg, b in zip(self.op_engine.tolist(), self.op_kind.tolist(),
                                                  self.op_start.tolist(), self.op_end.tolist(),
                                                  self.op_bytes.tolist(), self.op_tensor.tolist(), self.op_regions,
                                                  self.op_buffer.tolist()):
            yield OpRecord(names[e] if e >= 0 else "sram", KINDS[k], s, t_end, nb, tensors[t], reg, b)

    def to_json(self, name: str, ways: int | None = None) -> dict[str, Any]:
        """A JSON-ready summary with a fixed key order (same input, byte-identical output).

        `ways` is the N of N-way scopes the trace was recorded with (`simulate --ways N`; None: each scope's
        own)."""
        return {
            "name": name,
            "ways": ways,
            "hardware": self.hardware,
            "cycles": self.cycles,
            "seconds": self.seconds,
            "roofline_cycles": self.roofline_cycles,
            "roofline_terms": dict(self.roofline_terms),
            "cycles_over_roofline": round(self.cycles_over_roofline, 6),
            "loaded_bytes": self.loaded_bytes,
            "stored_bytes": self.stored_bytes,
            "peak_sram_bytes": self.peak_sram_bytes,
            "reserved_sram_bytes": self.reserved_sram_bytes,
            "macs": self.macs,
            "tensorcore_utilization": round(self.tensorcore_utilization, 6),
            "tensorcore_mac_utilization": round(self.tensorcore_mac_utilization, 6),
            "tensorcore_padding_waste": round(self.tensorcore_padding_waste, 6),
            "engines": {e: {"busy_cycles": self.engine_busy_cycles[e],
                            "utilization": round(self.utilization(e), 6),
                            "operations": self.engine_operations[e]} for e in self.engines},
            "stall_cycles": {k: self.stall_cycles[k] for k in sorted(self.stall_cycles)},
            "operations": self.operations,
            "window_cycles": self.window_cycles,
            "ddr_load_bytes_per_window": [round(float(v), 3) for v in self.ddr_load_bytes],
            "ddr_store_bytes_per_window": [round(float(v), 3) for v in self.ddr_store_bytes],
            **({"levels": {lv.name: lv.to_json() for lv in self.levels}} if self.levels else {}),
            **self._power_json(),
        }

    def _power_json(self) -> dict[str, Any]:
        """The power keys of `to_json`: per component, W per window; peak and average power, W (null without
        energy)."""
        power = self.power_w
        if power is None:
            return {"power_w": None, "peak_power_w": None, "average_power_w": None}
        return {"power_w": {name: [_sig(v) for v in power[r]] for r, name in enumerate(self.power_components)},
                "peak_power_w": _sig(self.peak_power_w), "average_power_w": _sig(self.average_power_w)}

    def summary(self) -> str:
        """A few readable lines."""
        lines = [
            f"{self.cycles:,} cycles ({self.seconds * 1e6:,.1f} us at {self.clock_hz / 1e9:g} GHz); roofline bound "
            f"{self.roofline_cycles:,} cycles ({', '.join(f'{k} {v:,}' for k, v in self.roofline_terms.items())}); "
            f"cycles / bound = {self.cycles_over_roofline:.3f}",
            f"DDR: loaded {self.loaded_bytes:,} B, stored {self.stored_bytes:,} B; SRAM peak "
            f"{_size(self.peak_sram_bytes)} occupied, {_size(self.reserved_sram_bytes)} reserved (x ways) of "
            f"{format_bytes(self.sram_bytes)}",
            f"TensorCore: {self.tensorcore_utilization:.1%} busy, {self.tensorcore_mac_utilization:.1%} useful "
            f"MACs, {self.tensorcore_padding_waste:.1%} lost to partial blocks",
            "engines: " + ", ".join(f"{e} {self.utilization(e):.1%} ({self.engine_operations[e]:,} ops)"
                                    for e in self.engines),
        ]
        lines += [lv.summary() for lv in self.levels]
        if self.power_w is not None:
            lines.append(self.power_summary())
        if self.peak_sram_bytes > self.sram_bytes:
            lines.append(f"warning: buffers overlap in time beyond the SRAM capacity ({_size(self.peak_sram_bytes)} > "
                         f"{_size(self.sram_bytes)}): the trace's ALLOC addresses place buffers beyond the SRAM")
        if self.stall_cycles:
            total = sum(self.stall_cycles.values())
            parts = sorted(self.stall_cycles.items(), key=lambda kv: (-kv[1], kv[0]))
            lines.append(f"TensorCore idle {total:,} cycles: " + ", ".join(f"{k} {v:,}" for k, v in parts))
        return "\n".join(lines)


    def power_summary(self) -> str:
        """One line: average and peak power, and the component drawing most on average."""
        energy = self.window_energy_pj.sum(axis=1)
        top = int(np.argmax(energy)) if len(energy) else 0
        share = energy[top] / energy.sum() if energy.sum() else 0.0
        return (f"power: average {_watts(self.average_power_w)}, peak {_watts(self.peak_power_w)} (windows of "
                f"{self.window_cycles:,} cycles); most from {self.power_components[top]} ({share:.0%} of the energy)")


def _watts(w: float) -> str:
    """A power for people: '1.23 W', '45.6 mW', '7.89 uW'."""
    for scale, unit in ((1.0, "W"), (1e-3, "mW"), (1e-6, "uW")):
        if abs(w) >= scale:
            return f"{w / scale:.3g} {unit}"
    return f"{w * 1e9:.3g} nW"


def _sig(value: float) -> float:
    """A float rounded to 9 significant digits (JSON: stable, readable)."""
    return float(f"{value:.9g}")


def _size(n_bytes: int) -> str:
    """An SRAM figure in the summary: exact bytes, then the size for people: '75,366 B (73.6 KiB)'."""
    return f"{n_bytes:,} B" if n_bytes < 1024 else f"{n_bytes:,} B ({format_bytes(n_bytes)})"


def _nice_window(cycles: int, target: int = 256) -> int:
    """A round window (1, 2 or 5 x 10^k cycles) giving about `target` windows or fewer."""
    raw = max(1, math.ceil(cycles / target))
    p = 10 ** (len(str(raw)) - 1)
    for m in (1, 2, 5, 10):
        if m * p >= raw:
            return m * p
    return 10 * p  # pragma: no cover


def _attribute_stalls(g: OpGraph, timeline: Timeline, cycles: int) -> dict[str, int]:
    """Blame every idle TensorCore cycle on a cause (see the module docstring); the walk is compiled
    (_result.CriticalChain)."""
    queue = g.queues[g.tensorcore_engine]
    if not len(queue):
        return {}
    return CriticalChain(g, timeline).attribute(queue, cycles)


class _OpArrays(NamedTuple):
    """The scheduled operations without FREE nodes, as arrays (index = position among them)."""

    starts: np.ndarray
    ends: np.ndarray
    kind: np.ndarray
    engine: np.ndarray
    nbytes: np.ndarray
    tensor: np.ndarray
    buffer: np.ndarray
    regions: OpRegions


def _op_arrays(g: OpGraph, timeline: Timeline) -> _OpArrays:
    """The operations that SimResult reports (FREE nodes dropped), as arrays: views of the graph's and the
    timeline's columns where no FREE node is dropped (no copy of millions of operations)."""
    real = g.kind != FREE_OP
    if bool(real.all()):
        return _OpArrays(
            starts=timeline.starts, ends=timeline.ends, kind=g.kind, engine=g.engine.astype(np.int16),
            nbytes=g.nbytes, tensor=g.tensor.astype(np.int32, copy=False), buffer=g.buffer.astype(np.int64),
            regions=OpRegions(g.region, None))
    return _OpArrays(
        starts=timeline.starts[real], ends=timeline.ends[real],
        kind=g.kind[real], engine=g.engine[real].astype(np.int16), nbytes=g.nbytes[real],
        tensor=g.tensor[real].astype(np.int32), buffer=g.buffer[real].astype(np.int64),
        regions=OpRegions(g.region, np.flatnonzero(real)))


def _engine_figures(names: tuple[str, ...], ops: _OpArrays) -> tuple[dict[str, int], dict[str, int]]:
    """Per engine: busy cycles (sum of its operations' durations) and number of operations."""
    busy, counts = engine_figures(ops.engine, ops.starts, ops.ends, len(names))
    return dict(zip(names, busy)), dict(zip(names, counts))


def _roofline_terms(g: OpGraph, hardware: Accelerator, busy: Mapping[str, int]) -> dict[str, int]:
    """The roofline's terms in cycles: TensorCore busy, vector busy, DDR time (see the module docstring)."""
    ddr = dma_cycles(ddr_port(hardware), 0, g.loaded_bytes, 0, g.stored_bytes)  # the port rule, setups left out
    terms = {"tensorcore": busy["tensorcore"], "vector": busy["vector"], "ddr": ddr}
    for i, lv in enumerate(hardware.levels[1:], start=1):  # a level's port carries its transfers one at a time
        mine = np.isin(g.engine, (g.level_engines[i], g.level_writeback_engines[i]))
        moved = int(g.nbytes[np.isin(g.kind, (STAGE_OP, WRITEBACK_OP)) & mine].sum())
        terms[lv.name] = busy_cycles(level_port(lv), 0, moved)
    return terms


def _ddr_per_window(ops: _OpArrays, setup_cycles: int, edges: np.ndarray) -> list[np.ndarray]:
    """Loaded and stored bytes per window, each transfer's bytes spread evenly over its data phase."""
    starts, ends = ops.starts.astype(np.int64, copy=False), ops.ends.astype(np.int64, copy=False)
    nbytes = ops.nbytes.astype(np.int64, copy=False)
    return [spread_integrals(starts, ends, nbytes, np.flatnonzero(ops.kind == k).astype(np.int64, copy=False),
                             setup_cycles, True, edges) for k in (LOAD_OP, STORE_OP)]


def _buffer_intervals(g: OpGraph, timeline: Timeline) -> tuple[np.ndarray, ...]:
    """(tensor, bytes, start, end, level) of every filled buffer: occupied from its first fill to its release."""
    first = np.asarray(g.buffer_first_op, dtype=np.int64)
    keep = first >= 0
    # the end of the last of its final users (never freed: occupied until the end)
    b_end = buffer_ends(np.asarray(g.buffer_final_ptr, dtype=np.int64), np.asarray(g.buffer_final_n, dtype=np.int64),
                        np.asarray(g.buffer_final_ops, dtype=np.int64), timeline.ends, timeline.cycles)
    every = bool(keep.all())  # (the usual case: the graph's columns as they are, no masked copies)
    columns = (np.asarray(g.buffer_tensor, dtype=np.int32), np.asarray(g.buffer_nbytes, dtype=np.int64),
               timeline.starts[first if every else first[keep]], b_end, np.asarray(g.buffer_level, dtype=np.int32))
    if every:
        return columns
    return columns[0][keep], columns[1][keep], columns[2], columns[3][keep], columns[4][keep]


def _sram_occupancy(g: OpGraph, b_tensor: np.ndarray, b_bytes: np.ndarray, b_start: np.ndarray, b_end: np.ndarray,
                    edges: np.ndarray, w: int) -> tuple[tuple[str, ...], np.ndarray]:
    """The tensors present in the buffers given (one level's) and their time-averaged bytes per window, one row
    each."""
    by_tensor = np.argsort(b_tensor, kind="stable").astype(np.int64, copy=False)  # each tensor's buffers, in
    in_order = b_tensor[by_tensor]  # buffer order, as one run
    bounds = [0] + (np.flatnonzero(np.diff(in_order)) + 1).tolist() + [len(by_tensor)] if len(by_tensor) else [0]
    present = [int(in_order[at]) for at in bounds[:-1]]
    del in_order
    occupancy = np.zeros((len(present), len(edges) - 1))
    for row in range(len(present)):
        occupancy[row] = spread_integrals(b_start, b_end, b_bytes, by_tensor[bounds[row]:bounds[row + 1]], 0, False,
                                          edges) / w
    return tuple(g.tensor_names[t] for t in present), occupancy


def _peak_bytes(b_bytes: np.ndarray, b_start: np.ndarray, b_end: np.ndarray) -> int:
    """The exact peak of occupied bytes (a release at t comes before a fill at t)."""
    return peak_bytes(np.asarray(b_bytes, dtype=np.int64), np.asarray(b_start, dtype=np.int64),
                      np.asarray(b_end, dtype=np.int64))


def build_result(g: OpGraph, timeline: Timeline, hardware: Accelerator, window_cycles: int | None,
                 trace: Trace | None = None) -> SimResult:
    """Assemble the SimResult of a timed graph (its power over time from the trace's operand accesses, when the
    trace is given and carries them)."""
    cycles = timeline.cycles
    ops = _op_arrays(g, timeline)
    names = tuple(g.engine_names)
    busy, counts = _engine_figures(names, ops)
    terms = _roofline_terms(g, hardware, busy)
    w = window_cycles if window_cycles is not None else _nice_window(cycles)
    if w < 1:
        raise ValueError(f"window_cycles must be >= 1, got {w}")
    edges = np.arange(max(1, math.ceil(cycles / w)) + 1, dtype=np.float64) * w
    # the DDR windows do not depend on the buffers' figures: on a long trace another core builds them meanwhile
    # (their C loop and numpy's sorts release the GIL); the arrays are the same either way
    ddr_job = _Background(_ddr_per_window, ops, hardware.dma_setup_cycles, edges, threaded=g.n >= _THREAD_MIN_OPS)
    b_tensor, b_bytes, b_start, b_end, b_level = _buffer_intervals(g, timeline)
    in_sram = b_level == 0
    sram = (b_tensor, b_bytes, b_start, b_end) if in_sram.all() else tuple(
        a[in_sram] for a in (b_tensor, b_bytes, b_start, b_end))
    sram_names, occupancy = _sram_occupancy(g, *sram, edges, w)
    peak_sram_bytes = _peak_bytes(*sram[1:])
    stalls = _attribute_stalls(g, timeline, cycles)
    levels = _level_figures(g, hardware, ops, busy, cycles, (b_tensor, b_bytes, b_start, b_end, b_level), edges, w)
    ddr_bytes = ddr_job.result()
    energy = None if trace is None else operation_energy(g, trace, hardware, ops.kind, ops.buffer, ops.nbytes)
    windows = None if energy is None else window_energy_pj(energy, ops.starts, ops.ends, hardware, cycles, edges)
    return SimResult(
        hardware=hardware.name, clock_hz=hardware.clock_hz, dram_bytes_per_cycle=float(hardware.dram_bytes_per_cycle),
        dram_shared_load_store=hardware.dram_shared_load_store, dma_setup_cycles=hardware.dma_setup_cycles,
        sram_bytes=hardware.sram_bytes,
        tensorcore_block=hardware.tensorcore_in_channels * hardware.tensorcore_out_channels, cycles=cycles,
        engines=names, engine_busy_cycles=MappingProxyType(busy), engine_operations=MappingProxyType(counts),
        loaded_bytes=g.loaded_bytes, stored_bytes=g.stored_bytes, macs=g.macs,
        tensorcore_macs=g.tensorcore_macs, padded_macs=g.padded_macs,
        roofline_cycles=max(terms.values()), roofline_terms=MappingProxyType(terms),
        stall_cycles=MappingProxyType(stalls), peak_sram_bytes=peak_sram_bytes,
        reserved_sram_bytes=g.reserved_sram_bytes, window_cycles=w,
        ddr_load_bytes=_frozen(ddr_bytes[0]), ddr_store_bytes=_frozen(ddr_bytes[1]), sram_tensors=sram_names,
        sram_occupancy=_frozen(occupancy), tensors=tuple(g.tensor_names), op_engine=_frozen(ops.engine),
        op_kind=_frozen(ops.kind), op_start=_frozen(ops.starts), op_end=_frozen(ops.ends),
        op_bytes=_frozen(ops.nbytes), op_tensor=_frozen(ops.tensor), op_buffer=_frozen(ops.buffer),
        op_regions=ops.regions, buffer_tensor=_frozen(b_tensor), buffer_bytes=_frozen(b_bytes),
        buffer_start=_frozen(b_start), buffer_end=_frozen(b_end), buffer_level=_frozen(b_level), levels=levels,
        power_components=() if energy is None else energy.components,
        window_energy_pj=None if windows is None else _frozen(windows),
        op_energy_pj=None if energy is None else _frozen(energy.per_operation_pj()))


_THREAD_MIN_OPS = 1 << 16  # below this many operations a second thread costs more than it saves


class _Background:
    """`fn(*args)` in a thread of its own (or at once, with threaded=False); `result()` waits for it and returns its
    value or raises its exception."""

    def __init__(self, fn: Any, *args: Any, threaded: bool) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
            self._thread.start()
        else:
            self._run(fn, args)

    def _run(self, fn: Any, args: tuple) -> None:
        try:
            self._value = fn(*args)
        except BaseException as err:  # (re-raised in the caller's thread by result())
            self._error = err

    def result(self) -> Any:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def _level_figures(g: OpGraph, hardware: Accelerator, ops: _OpArrays, busy: Mapping[str, int], cycles: int,
                   buffers: tuple[np.ndarray, ...], edges: np.ndarray, w: int) -> tuple[LevelFigures, ...]:
    """The figures of each memory level below the SRAM (none on one-level hardware)."""
    b_tensor, b_bytes, b_start, b_end, b_level = buffers
    figures = []
    for i, lv in enumerate(hardware.levels[1:], start=1):
        name, wb_name = g.engine_names[g.level_engines[i]], g.engine_names[g.level_writeback_engines[i]]
        mine = np.isin(ops.engine, (g.level_engines[i], g.level_writeback_engines[i]))
        staged, back = mine & (ops.kind == STAGE_OP), mine & (ops.kind == WRITEBACK_OP)
        port_busy = busy[name] + busy[wb_name]  # (the two queues share the level's port: never both at once)
        held = b_level == i
        tensors, occupancy = _sram_occupancy(g, b_tensor[held], b_bytes[held], b_start[held], b_end[held], edges, w)
        figures.append(LevelFigures(
            name=lv.name, parent=lv.parent, engine=name, capacity_bytes=lv.capacity_bytes,
            bytes_per_cycle=float(lv.bytes_per_cycle), setup_cycles=lv.setup_cycles,
            staged_bytes=int(ops.nbytes[staged].sum()), written_back_bytes=int(ops.nbytes[back].sum()),
            stages=int(staged.sum()), writebacks=int(back.sum()), busy_cycles=port_busy,
            utilization=port_busy / cycles if cycles else 0.0,
            peak_bytes=_peak_bytes(b_bytes[held], b_start[held], b_end[held]),
            reserved_bytes=int(g.reserved_level_bytes[i]), tensors=tensors, occupancy=_frozen(occupancy)))
    return tuple(figures)
