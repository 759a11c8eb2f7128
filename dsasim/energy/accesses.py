"""Every memory access and compute operation of a run, counted: the input of the energy model.

A run's `AccessCounts` holds, per tensor and memory level, the bytes read from and written to that level, and the
compute units' work. The conventions (docs/model/energy.md states them beside the numbers):

* A DMA transfer reads its source level and writes its destination: a load DDR -> SRAM reads DDR and writes the
  SRAM; a store reads the SRAM and writes DDR; a stage from a level into an inner level reads the parent and writes
  the child; a write-back the other way round.
* A compute unit reads its operand tiles from the level they are in (the innermost level holding the role; the SRAM
  with no inner levels) and writes (or read-modify-writes) its output there. Which operand elements a TensorCore
  step reads is the hardware's dataflow (`dsasim/dataflow.py`); the first write of a zero-filled accumulator is not
  a read.
* Counts are exact integers (bytes), derived from the events a run has (no event per byte); the analytic models give
  the same counts as the trace.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

from dsasim.util import is_int

__all__ = ["TensorAccesses", "AccessCounts"]


@dataclass(frozen=True)
class TensorAccesses:
    """The bytes one tensor reads from and writes to one memory level (`level`: "DDR", "SRAM" or an inner level's
    name) over a run."""

    tensor: str
    level: str
    read_bytes: int
    write_bytes: int

    def __post_init__(self) -> None:
        for name in ("tensor", "level"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"TensorAccesses: {name} must be a non-empty string, got {getattr(self, name)!r}")
        for name in ("read_bytes", "write_bytes"):
            value = getattr(self, name)
            if not is_int(value, numpy=True) or value < 0:
                raise ValueError(f"TensorAccesses {self.tensor}@{self.level}: {name} must be an integer >= 0, "
                                 f"got {value!r}")


@dataclass(frozen=True)
class AccessCounts:
    """A run's accesses: per (tensor, level) bytes read and written (`tensors`, each pair once), and the compute
    units' work: useful MACs, padded MACs (what the TensorCore's steps could run: every lane switches, so they are
    what costs energy), and vector lane operations (elements processed, one lane operation each)."""

    tensors: tuple[TensorAccesses, ...]
    macs: int
    padded_macs: int
    vector_lane_ops: int

    def __post_init__(self) -> None:
        if not isinstance(self.tensors, tuple) or not all(isinstance(t, TensorAccesses) for t in self.tensors):
            raise ValueError(f"AccessCounts: tensors must be a tuple of TensorAccesses, got {self.tensors!r}")
        pairs = [(t.tensor, t.level) for t in self.tensors]
        if len(set(pairs)) != len(pairs):
            raise ValueError(f"AccessCounts: a (tensor, level) pair repeats in {pairs}; sum them into one")
        for name in ("macs", "padded_macs", "vector_lane_ops"):
            value = getattr(self, name)
            if not is_int(value, numpy=True) or value < 0:
                raise ValueError(f"AccessCounts: {name} must be an integer >= 0, got {value!r}")
        if self.padded_macs < self.macs:
            raise ValueError(f"AccessCounts: padded_macs ({self.padded_macs}) < macs ({self.macs}); the TensorCore "
                             f"cannot run more MACs than its steps hold")

    @staticmethod
    def sum(parts: Sequence["AccessCounts"]) -> "AccessCounts":
        """The accesses of runs one after another: per (tensor, level) the bytes summed (first-seen order), and the
        compute counts summed; ValueError for no part. Parts whose tensors are different buffers that share a name
        are `qualified` first, so that their bytes stay apart."""
        if not parts:
            raise ValueError("AccessCounts.sum needs at least one part")
        moved: dict[tuple[str, str], list[int]] = {}
        for part in parts:
            for t in part.tensors:
                pair = moved.setdefault((t.tensor, t.level), [0, 0])
                pair[0] += int(t.read_bytes)
                pair[1] += int(t.write_bytes)
        return AccessCounts(tuple(TensorAccesses(tensor, level, r, w) for (tensor, level), (r, w) in moved.items()),
                            macs=sum(int(p.macs) for p in parts), padded_macs=sum(int(p.padded_macs) for p in parts),
                            vector_lane_ops=sum(int(p.vector_lane_ops) for p in parts))

    def scaled(self, times: int) -> "AccessCounts":
        """The accesses of `times` runs of this one (a batched layer counted `count` times); ValueError for a
        count below 1."""
        if not is_int(times) or times < 1:
            raise ValueError(f"AccessCounts.scaled: times must be an integer >= 1, got {times!r}")
        return AccessCounts(tuple(TensorAccesses(t.tensor, t.level, int(t.read_bytes) * times,
                                                 int(t.write_bytes) * times) for t in self.tensors),
                            macs=int(self.macs) * times, padded_macs=int(self.padded_macs) * times,
                            vector_lane_ops=int(self.vector_lane_ops) * times)

    def qualified(self, prefix: str) -> "AccessCounts":
        """The same accesses with every tensor named `prefix.tensor` (a chain's layers each have an "image" and a
        "weight": summed unqualified, the per-tensor energy would merge different buffers)."""
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"AccessCounts.qualified: prefix must be a non-empty string, got {prefix!r}")
        return dataclasses.replace(self, tensors=tuple(dataclasses.replace(t, tensor=f"{prefix}.{t.tensor}")
                                                       for t in self.tensors))

    @property
    def levels(self) -> tuple[str, ...]:
        """The levels accessed, in first-seen order."""
        return tuple(dict.fromkeys(t.level for t in self.tensors))

    def read_bytes(self, level: str) -> int:
        """Bytes read from `level` by every tensor."""
        return sum(t.read_bytes for t in self.tensors if t.level == level)

    def write_bytes(self, level: str) -> int:
        """Bytes written to `level` by every tensor."""
        return sum(t.write_bytes for t in self.tensors if t.level == level)

    def to_json(self) -> dict:
        """Plain JSON: per level, then per tensor, read and write bytes; the compute counts."""
        return {
            "levels": {lv: {"read_bytes": int(self.read_bytes(lv)), "write_bytes": int(self.write_bytes(lv))}
                       for lv in self.levels},
            "tensors": [{"tensor": t.tensor, "level": t.level, "read_bytes": int(t.read_bytes),
                         "write_bytes": int(t.write_bytes)} for t in self.tensors],
            "macs": int(self.macs), "padded_macs": int(self.padded_macs), "vector_lane_ops": int(self.vector_lane_ops),
        }
