"""The trace: the ordered, append-only record of what a schedule did to SRAM, DDR and the compute units.

A trace is the one product of running a schedule, and the only input of everything downstream (reports,
the timing simulation, the analytic check). Events are stored as plain tuples, the first field an `EventKind`,
because a schedule emits millions of them and a tuple costs a fraction of an object; `Trace.typed()` yields the
same events as named tuples for readers. Field layouts (after the kind):

  ENTER   scope_id, instance                     a scope instance begins (instance counts from 0 per scope)
  EXIT    scope_id, instance                     it ends: its buffers were freed just before
  ALLOC   buffer, tensor, region, nbytes, address, charged_bytes
                                                 a new SRAM buffer at byte `address` (its physical place:
                                                 buffers live in a stack, an N-way scope's block holds N copies
                                                 used in turn), `charged_bytes` = nbytes x ways
  LOAD    buffer, tensor, region, nbytes, reuse  DDR->SRAM DMA of region into buffer
  OPEN    buffer, tensor, region, reuse          an output region never written before: zeroed on chip, no DMA
  HIT     buffer, tensor, region, reuse          region already resident in buffer: no DMA
  COMPUTE unit, op, out_buffer, in_buffers, macs, cycles, padded_macs
  STORE   buffer, tensor, region, nbytes         SRAM->DDR DMA of a modified buffer
  FREE    buffer, charged_bytes                  the buffer's scope ended

`tensor` indexes `Trace.tensors`, `scope_id` indexes `Trace.scopes`; a region is a tuple of (start, stop)
pairs, one per tensor dimension, in elements. Buffers are numbered from 0 in allocation order.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Iterator, NamedTuple

from dsasim.util import Region, region_elements, shape_elements  # noqa: F401  (Region, region_elements: re-exported)


class EventKind(IntEnum):
    ENTER = 0
    EXIT = 1
    ALLOC = 2
    LOAD = 3
    OPEN = 4
    HIT = 5
    COMPUTE = 6
    STORE = 7
    FREE = 8


ENTER, EXIT, ALLOC, LOAD, OPEN, HIT, COMPUTE, STORE, FREE = (int(k) for k in EventKind)


class Enter(NamedTuple):
    kind: int
    scope_id: int
    instance: int


class Exit(NamedTuple):
    kind: int
    scope_id: int
    instance: int


class Alloc(NamedTuple):
    kind: int
    buffer: int
    tensor: int
    region: Region
    nbytes: int
    address: int
    charged_bytes: int


class Load(NamedTuple):
    kind: int
    buffer: int
    tensor: int
    region: Region
    nbytes: int
    reuse: bool


class Open(NamedTuple):
    kind: int
    buffer: int
    tensor: int
    region: Region
    reuse: bool


class Hit(NamedTuple):
    kind: int
    buffer: int
    tensor: int
    region: Region
    reuse: bool


class Compute(NamedTuple):
    kind: int
    unit: str
    op: str
    out_buffer: int
    in_buffers: tuple[int, ...]
    macs: int
    cycles: int
    padded_macs: int


class Store(NamedTuple):
    kind: int
    buffer: int
    tensor: int
    region: Region
    nbytes: int


class Free(NamedTuple):
    kind: int
    buffer: int
    charged_bytes: int


EVENT_TYPES = (Enter, Exit, Alloc, Load, Open, Hit, Compute, Store, Free)


@dataclass(frozen=True)
class TensorInfo:
    """A DDR tensor as the trace knows it: no data, just identity and size."""

    name: str
    shape: tuple[int, ...]
    writable: bool  # outputs and intermediates; inputs are read-only

    @property
    def elements(self) -> int:
        """Number of elements."""
        return shape_elements(self.shape)


@dataclass(frozen=True)
class ScopeInfo:
    """A static SRAM scope (a `GlobalHierarchy` site): its path of names and its buffering ways (N-way: each of
    its buffers' SRAM blocks holds N copies, used by successive instances in turn)."""

    path: tuple[str, ...]
    ways: int

    @property
    def name(self) -> str:
        """The path joined with '/'."""
        return "/".join(self.path)


def format_region(region: Region) -> str:
    """A region as numpy-like slices, e.g. '[0:1, 0:24, 0:2, 0:56]'."""
    return "[" + ", ".join(f"{a}:{b}" for a, b in region) + "]"


class Trace:
    """An append-only event list plus the tensor and scope tables the events index into.

    The session appends while the schedule runs; afterwards the trace is read-only by convention (`freeze()`
    makes the event list an immutable tuple).
    """

    __slots__ = ("events", "tensors", "scopes", "word_bytes")

    def __init__(self, word_bytes: int) -> None:
        self.events: list[tuple] | tuple[tuple, ...] = []
        self.tensors: list[TensorInfo] = []
        self.scopes: list[ScopeInfo] = []
        self.word_bytes = word_bytes

    def freeze(self) -> "Trace":
        """Make the event list immutable; returns self."""
        self.events = tuple(self.events)
        return self

    def __len__(self) -> int:
        return len(self.events)

    def typed(self) -> Iterator[tuple]:
        """The events as named tuples (Enter, Alloc, Load, ...)."""
        types = EVENT_TYPES
        for event in self.events:
            yield types[event[0]]._make(event)

    def tensor_name(self, tensor_id: int) -> str:
        """Name of a tensor by its trace index."""
        return self.tensors[tensor_id].name
