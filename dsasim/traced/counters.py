"""A run's traffic counters: per tensor (`TensorTraffic`) and for the whole run (`Counters`), in bytes and counts.

Their fields are C integers of the compiled core (`_core.TrafficFields`, `_core.CounterFields`), which adds to them
on every access; this module gives them their names, equality, repr and pickling."""

from __future__ import annotations

from dsasim.traced import _core
from dsasim.traced.levels import LevelTraffic

__all__ = ["TensorTraffic", "Counters"]


class TensorTraffic(_core.TrafficFields):
    """Per-tensor traffic counters, in bytes and counts (C integers: `_core.TrafficFields`)."""

    FIELDS: tuple[str, ...] = ("loaded_bytes", "stored_bytes", "rmw_bytes", "loads", "stores", "hits", "opens",
                               "blog_loaded_elements")  # rmw: loads of stored (partial) results modified again

    def __init__(self, **values: int) -> None:
        for name, value in values.items():
            if name not in self.FIELDS:
                raise TypeError(f"{type(self).__name__} has no counter {name!r}; its counters: "
                                f"{', '.join(self.FIELDS)}")
            setattr(self, name, value)

    def values(self) -> tuple[int, ...]:
        """The counters, in FIELDS order."""
        return tuple([getattr(self, name) for name in self.FIELDS])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.values() == other.values() and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  (mutable, like the dataclass it replaced)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.__dict__.items())
        return (f"{type(self).__name__}("
                + ", ".join(f"{n}={v}" for n, v in zip(self.FIELDS, self.values())) + extra + ")")

    def __reduce__(self) -> tuple:
        return _restore_counters, (type(self), dict(zip(self.FIELDS, self.values())), dict(self.__dict__))


class Counters(TensorTraffic, _core.CounterFields):
    """Whole-run counters, in bytes, elements, MACs and cycles: the traffic of all tensors, then these; and
    `per_tensor`, each tensor's `TensorTraffic` by name."""

    FIELDS = TensorTraffic.FIELDS + ("macs", "padded_macs", "tensorcore_cycles", "vector_cycles", "peak_sram_bytes")

    def __init__(self, per_tensor: dict[str, TensorTraffic] | None = None, **values: int) -> None:
        super().__init__(**values)
        self.per_tensor: dict[str, TensorTraffic] = {} if per_tensor is None else per_tensor
        self.levels: dict[str, LevelTraffic] = {}  # each inner memory level's traffic with its parent, by name


def _restore_counters(kind: type, values: dict[str, int], extra: dict) -> TensorTraffic:
    """Unpickle a TensorTraffic or Counters."""
    counters = kind.__new__(kind)
    for name, value in values.items():
        setattr(counters, name, value)
    counters.__dict__.update(extra)
    return counters
