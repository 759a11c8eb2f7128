"""The reads and writes of one network entry (a tensorcore layer, a vector layer, a chain) at one SRAM size: the
input of its energy (`dsasim.energy.report.energy_report`), from the counts its search's model already gave
(`TargetFigures.access_counts`, per repeat), so pricing a network adds no model evaluation.

What the network evaluation adds to a searched schedule, counted by the conventions of `dsasim.energy.accesses`:

* a batched layer (`count` repeats) runs its schedule `count` times: its accesses scaled;
* an operand the entry loads beside its schedule (a fused residual add's other operand, the biases: the
  `extra_read_elements` and `bias_elements` the traffic already counts) is a DMA load (DDR read, SRAM write) read
  once by the vector unit (SRAM read), tensor `extra`;
* a tensorcore layer's fused epilogue (`epilogue_ops`) is that many vector lane operations (its operand tile is
  the output, already in the SRAM: the model does not count the epilogue's own reads and writes of it);
* a vector layer streams: its operands loaded (DDR read, SRAM write), read by the vector unit (SRAM read), its result
  written (SRAM write) and stored (SRAM read, DDR write); one lane operation per `vector_ops`.
"""

from __future__ import annotations

from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.hardware import DDR, SRAM_LEVEL

__all__ = ["EXTRA_TENSOR", "extra_operand_counts", "tensorcore_layer_counts", "vector_layer_counts",
           "chain_entry_counts"]

EXTRA_TENSOR = "extra"  # what an entry loads beside its schedule: a residual's other operand, its biases


def extra_operand_counts(extra_bytes: int, vector_lane_ops: int = 0) -> AccessCounts:
    """`extra_bytes` loaded beside the schedule (DDR read, SRAM write) and read once by the vector unit, and
    `vector_lane_ops` lane operations."""
    tensors = ((TensorAccesses(EXTRA_TENSOR, DDR, extra_bytes, 0),
                TensorAccesses(EXTRA_TENSOR, SRAM_LEVEL, extra_bytes, extra_bytes)) if extra_bytes else ())
    return AccessCounts(tensors, macs=0, padded_macs=0, vector_lane_ops=vector_lane_ops)


def tensorcore_layer_counts(schedule: AccessCounts, count: int, extra_bytes: int, epilogue_ops: int) -> AccessCounts:
    """A tensorcore layer's accesses: its schedule's (`schedule`, one repeat) `count` times, the extra operand's
    load and read (`extra_bytes`) and the epilogue's lane operations."""
    return AccessCounts.sum([schedule.scaled(count), extra_operand_counts(extra_bytes, epilogue_ops)])


def chain_entry_counts(partition: AccessCounts, extra_bytes: int) -> AccessCounts:
    """A chain's accesses: its best partition's (`partition`) and the extra operand's load and read."""
    return AccessCounts.sum([partition, extra_operand_counts(extra_bytes)])


def vector_layer_counts(loaded_bytes: int, stored_bytes: int, vector_ops: int) -> AccessCounts:
    """A streaming vector layer's accesses (module docstring): tensors `input` and `output`."""
    tensors = tuple(t for t in (TensorAccesses("input", DDR, loaded_bytes, 0),
                                TensorAccesses("input", SRAM_LEVEL, loaded_bytes, loaded_bytes),
                                TensorAccesses("output", SRAM_LEVEL, stored_bytes, stored_bytes),
                                TensorAccesses("output", DDR, 0, stored_bytes))
                    if t.read_bytes or t.write_bytes)
    return AccessCounts(tensors, macs=0, padded_macs=0, vector_lane_ops=vector_ops)
