"""A run's traffic counters: per tensor (`TensorTraffic`) and for the whole run (`Counters`), in bytes and counts.

Their fields are C integers of the compiled core (`_core.TrafficFields`, `_core.CounterFields`), which adds to them
on every access; this module gives them their names, equality, repr and pickling."""

from __future__ import annotations

from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.hardware import DDR, SRAM_LEVEL
from dsasim.traced import _core
from dsasim.traced.levels import LevelTraffic

__all__ = ["TensorTraffic", "Counters"]


class TensorTraffic(_core.TrafficFields):
    """Per-tensor traffic counters, in bytes and counts (C integers: `_core.TrafficFields`)."""

    FIELDS: tuple[str, ...] = ("loaded_bytes", "stored_bytes", "rmw_bytes", "loads", "stores", "hits", "opens",
                               "blog_loaded_elements")  # rmw: loads of stored (partial) results modified again
    # counted beside FIELDS (in equality, repr and pickling): the compute units' reads and writes of the
    # tensor's SRAM buffers, in elements (`Counters.access_counts`)
    ACCESS_FIELDS: tuple[str, ...] = ("operand_read_elements", "operand_write_elements")

    def __init__(self, **values: int) -> None:
        for name, value in values.items():
            if name not in self.FIELDS and name not in self.ACCESS_FIELDS:
                raise TypeError(f"{type(self).__name__} has no counter {name!r}; its counters: "
                                f"{', '.join(self.FIELDS)}")
            setattr(self, name, value)

    def values(self) -> tuple[int, ...]:
        """The counters, in FIELDS order."""
        return tuple([getattr(self, name) for name in self.FIELDS])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return (self.values() == other.values() and self.access_values() == other.access_values()
                and self.__dict__ == other.__dict__)

    def access_values(self) -> tuple[int, ...]:
        """The ACCESS_FIELDS counters, in order."""
        return tuple([getattr(self, name) for name in self.ACCESS_FIELDS])

    __hash__ = None  # type: ignore[assignment]  (mutable, like the dataclass it replaced)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.__dict__.items())
        names, values = self.FIELDS + self.ACCESS_FIELDS, self.values() + self.access_values()
        return f"{type(self).__name__}(" + ", ".join(f"{n}={v}" for n, v in zip(names, values)) + extra + ")"

    def __reduce__(self) -> tuple:
        names = self.FIELDS + self.ACCESS_FIELDS
        return _restore_counters, (type(self), dict(zip(names, self.values() + self.access_values())),
                                   dict(self.__dict__))


class Counters(TensorTraffic, _core.CounterFields):
    """Whole-run counters, in bytes, elements, MACs and cycles: the traffic of all tensors, then these; and
    `per_tensor`, each tensor's `TensorTraffic` by name."""

    FIELDS = TensorTraffic.FIELDS + ("macs", "padded_macs", "tensorcore_cycles", "vector_cycles", "peak_sram_bytes")
    # macs counts the vector unit's dot products too; these split the compute units' work for `access_counts`
    ACCESS_FIELDS = TensorTraffic.ACCESS_FIELDS + ("tensorcore_macs", "vector_lane_ops")

    def __init__(self, per_tensor: dict[str, TensorTraffic] | None = None, **values: int) -> None:
        super().__init__(**values)
        self.per_tensor: dict[str, TensorTraffic] = {} if per_tensor is None else per_tensor
        self.levels: dict[str, LevelTraffic] = {}  # each inner memory level's traffic with its parent, by name

    def access_counts(self, word_bytes: int) -> AccessCounts:
        """The run's reads and writes per tensor and level, in bytes (`word_bytes` per element), and its compute
        work: DMA loads read DDR and write the SRAM, stores the reverse; a stage reads the parent level and writes
        the child, a write-back the reverse; the compute units' operand accesses (`dsasim.dataflow`) go to the level
        each tile was in. Pairs with no access are left out; tensors in creation order, then DDR, SRAM and the
        inner levels in the hardware's order."""
        levels = list(self.levels.values())
        out = []
        for name, t in self.per_tensor.items():
            moved = {DDR: [t.loaded_bytes, t.stored_bytes],
                     SRAM_LEVEL: [t.stored_bytes + t.operand_read_elements * word_bytes,
                                  t.loaded_bytes + t.operand_write_elements * word_bytes]}
            for lv in levels:
                moved[lv.level] = [0, 0]
            for lv in levels:
                staged = lv.per_tensor.get(name)
                if staged:  # stage: parent read, child write; write-back: child read, parent write
                    moved[lv.parent][0] += staged["loaded_bytes"]
                    moved[lv.level][1] += staged["loaded_bytes"]
                    moved[lv.level][0] += staged["stored_bytes"]
                    moved[lv.parent][1] += staged["stored_bytes"]
                operand = lv.operand_elements.get(name)
                if operand:
                    moved[lv.level][0] += operand[0] * word_bytes
                    moved[lv.level][1] += operand[1] * word_bytes
            out += [TensorAccesses(name, level, read, write) for level, (read, write) in moved.items()
                    if read or write]
        return AccessCounts(tuple(out), macs=self.tensorcore_macs, padded_macs=self.padded_macs,
                            vector_lane_ops=self.vector_lane_ops)


def _restore_counters(kind: type, values: dict[str, int], extra: dict) -> TensorTraffic:
    """Unpickle a TensorTraffic or Counters."""
    counters = kind.__new__(kind)
    for name, value in values.items():
        setattr(counters, name, value)
    counters.__dict__.update(extra)
    return counters
