"""The hardware's cost rules, written once: what a transfer, a DMA port, the TensorCore and the vector unit cost in
cycles, and the estimators that combine them. Every closed-form model (the one-level `analytic`, the level
hierarchy, the fused conv and GEMM chains and their search, the network evaluation, the conv-mapping rule) calls
these; the timing simulator (`dsasim/timing/model.pyx`) charges the same rules operation by operation, exactly:

* **A transfer** of b bytes over a port (DDR <-> SRAM: `dma_setup_cycles`, `dram_bytes_per_cycle`; an inner level:
  its `setup_cycles`, `bytes_per_cycle`) takes `setup + ceil(b / bandwidth)` cycles (`transfer_cycles`; the
  timing model's LOAD / STORE / STAGE / WRITEBACK duration, layout costs aside).
* **A direction's busy time**, many transfers summed (`busy_cycles`): transfers x setup + bytes / bandwidth, the
  bytes' time rounded up once (`whole=True`: integer cycles, at most one cycle under the sum of per-transfer
  ceilings) or left fractional (`whole=False`: the ranking estimates, which spread bytes evenly).
* **The DDR port rule** (`port_cycles`): one port shared by loads and stores (`dram_shared_load_store = true`)
  carries both, so their times add; separate load and store ports work in parallel, so the larger bounds the run.
  The timing model has one port resource when shared and two otherwise (`model.pyx`, `p_load` / `p_store`).
  `dma_cycles` applies it to loads and stores; an inner level has one port (`level_port`).
* **The TensorCore** (`tensorcore_cycles`): one cycle per pixel, tap, group and pair of (input, output) channel
  blocks: pixels x taps x groups x ceil(in / in_block) x ceil(out / out_block) (the traced TensorCore's charge).
  Summed over a loop's tiles, a dimension feeding a block of b channels costs `tile_blocks(extent, tile, b)`.
* **The vector unit** (`vector_cycles`): ceil(elements / lanes) per operation.

Estimators (the timing simulator gives the real number; these rank schedules):

* `overlapped_cycles(*busy)`: the busiest engine or port, when everything else overlaps it perfectly (a lower
  bound on the simulated time). The fused models use it with compute = TensorCore + vector and the DDR port.
* `pipeline_estimate`: the one-level loop nest's estimate, `overlapped(TensorCore + exposed, DMA) + fill +
  ISSUE_CYCLES x iterations`: 1-way scopes expose part of their transfers, the first loads and the last store
  (fill / drain) are not overlapped, and each tile compute costs an issue cycle.
* `band_pipeline_cycles`: the conv-mapping rule's band pipeline, `head + overlapped(engines, DDR - head - tail)
  + tail` (its head and tail taken out of the port's time rather than added on top of it).

Every function works on Python integers (exact at any size) and on numpy arrays alike (the searches evaluate
whole spaces at once), so the scalar and the vectorised models share one definition.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsasim.hardware import Accelerator, MemoryLevel
from dsasim.util import ceil_div, is_int

__all__ = ["ISSUE_CYCLES", "Port", "ddr_port", "level_port", "transfer_cycles", "busy_cycles", "port_cycles",
           "dma_cycles", "tensorcore_cycles", "tile_blocks", "padded_macs", "vector_cycles", "maximum",
           "overlapped_cycles", "pipeline_estimate", "band_pipeline_cycles"]

ISSUE_CYCLES = 1  # per tile compute, in `pipeline_estimate` only: the timing simulator does not charge it


@dataclass(frozen=True)
class Port:
    """A DMA port: each transfer costs `setup_cycles` plus its bytes over `bytes_per_cycle`; loads and stores share
    it (`shared_load_store`) or each direction has a port of its own of the same bandwidth."""

    setup_cycles: int
    bytes_per_cycle: float
    shared_load_store: bool = True

    def __post_init__(self) -> None:
        if not is_int(self.setup_cycles, numpy=True) or self.setup_cycles < 0:
            raise ValueError(f"Port setup_cycles must be an integer >= 0, got {self.setup_cycles!r}")
        if isinstance(self.bytes_per_cycle, bool) or not isinstance(self.bytes_per_cycle, (int, float)) \
                or not self.bytes_per_cycle > 0:
            raise ValueError(f"Port bytes_per_cycle must be a positive number, got {self.bytes_per_cycle!r}")
        if not isinstance(self.shared_load_store, bool):
            raise ValueError(f"Port shared_load_store must be True or False, got {self.shared_load_store!r}")


def ddr_port(hardware: Accelerator) -> Port:
    """The DDR <-> SRAM port of `hardware` (dma_setup_cycles, dram_bytes_per_cycle, dram_shared_load_store)."""
    return Port(hardware.dma_setup_cycles, hardware.dram_bytes_per_cycle, hardware.dram_shared_load_store)


def level_port(level: MemoryLevel, shared_load_store: bool = True) -> Port:
    """The port that fills and empties `level` from its parent (one port: the timing model runs a level's STAGEs
    and WRITEBACKs one at a time); the SRAM level's is the DDR port (pass the hardware's sharing)."""
    return Port(level.setup_cycles, level.bytes_per_cycle, shared_load_store)


def _ceil(x: Any) -> Any:
    """ceil of a float or a float array (int64)."""
    return np.ceil(x).astype(np.int64) if isinstance(x, np.ndarray) else math.ceil(x)


def maximum(a: Any, b: Any) -> Any:
    """Elementwise maximum that keeps Python numbers Python numbers (ints exact beyond int64; the first of equals)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a if a >= b else b
    return np.maximum(a, b)


def transfer_cycles(port: Port, nbytes: Any) -> Any:
    """One transfer of `nbytes`: setup + ceil(bytes / bandwidth) cycles (the timing model's transfer duration)."""
    return port.setup_cycles + _ceil(nbytes / port.bytes_per_cycle)


def busy_cycles(port: Port, transfers: Any, nbytes: Any, whole: bool = True) -> Any:
    """Cycles `transfers` transfers of `nbytes` bytes in all keep one direction busy: transfers x setup + bytes /
    bandwidth, rounded up once (whole) or fractional (a ranking estimate's float)."""
    if whole:
        return _ceil(nbytes / port.bytes_per_cycle) + transfers * port.setup_cycles
    return transfers * float(port.setup_cycles) + nbytes / float(port.bytes_per_cycle)


def port_cycles(port: Port, load: Any, store: Any) -> Any:
    """The DDR port rule on the two directions' times (or bytes): a shared port adds them, separate ports run
    them in parallel and the larger bounds the run."""
    return load + store if port.shared_load_store else maximum(load, store)


def dma_cycles(port: Port, loads: Any, loaded_bytes: Any, stores: Any, stored_bytes: Any,
               whole: bool = True) -> Any:
    """The port's busy cycles for some loads and stores (`busy_cycles` per port, `port_cycles` across them): a
    shared port carries every transfer, separate ports carry one direction each."""
    if port.shared_load_store:
        return busy_cycles(port, loads + stores, loaded_bytes + stored_bytes, whole)
    return maximum(busy_cycles(port, loads, loaded_bytes, whole), busy_cycles(port, stores, stored_bytes, whole))


def tensorcore_cycles(hardware: Accelerator, pixels: Any, taps: int, groups: int, in_per_group: int,
                      out_per_group: int) -> Any:
    """TensorCore cycles of a convolution (or GEMM: taps = groups = 1): pixels x taps x groups x ceil(in /
    in_block) x ceil(out / out_block), one cycle per pair of channel blocks."""
    return pixels * taps * groups * ceil_div(in_per_group, hardware.tensorcore_in_channels) * ceil_div(
        out_per_group, hardware.tensorcore_out_channels)


def tile_blocks(extent: int, tile: Any, block: int) -> Any:
    """Sum over a loop's tiles of ceil(tile length / block): the full tiles, then the ragged last one (block 0:
    the dimension feeds no block, the sum of the tile lengths = extent). Tiles: an int or an array."""
    if block == 0:
        return extent
    return extent // tile * ceil_div(tile, block) + ceil_div(extent % tile, block)


def padded_macs(hardware: Accelerator, tensorcore_cycles: Any) -> Any:
    """MACs the TensorCore's cycles could run (each cycle a full in_block x out_block of MACs)."""
    return tensorcore_cycles * hardware.tensorcore_in_channels * hardware.tensorcore_out_channels


def vector_cycles(elements: Any, lanes: int) -> Any:
    """One vector operation over `elements`: ceil(elements / lanes) cycles."""
    return ceil_div(elements, lanes)


def overlapped_cycles(*busy: Any) -> Any:
    """The busiest of engines and ports working in parallel, each overlapping the others perfectly."""
    return functools.reduce(maximum, busy)


def pipeline_estimate(compute_cycles: Any, exposed_cycles: Any, transfer_busy_cycles: Any, fill_cycles: Any,
                      iterations: Any) -> Any:
    """The loop nest's cycle estimate, in cycles: overlapped(TensorCore + exposed transfers, DMA) + fill / drain +
    ISSUE_CYCLES x iterations (module docstring)."""
    return overlapped_cycles(compute_cycles + exposed_cycles, transfer_busy_cycles) + fill_cycles + ISSUE_CYCLES * iterations


def band_pipeline_cycles(head_cycles: int, tail_cycles: int, engine_cycles: list[int], ddr_cycles: int) -> int:
    """A band pipeline, in cycles: `head_cycles` before the steady state, `tail_cycles` after it, and between them
    the busiest of the compute engines and the DDR port's time outside the head and the tail."""
    return head_cycles + max(*engine_cycles, ddr_cycles - head_cycles - tail_cycles, 0) + tail_cycles
