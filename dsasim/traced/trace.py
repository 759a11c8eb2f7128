"""The trace: the ordered, append-only record of what a schedule did to SRAM, DDR and the compute units.

A trace is the one product of running a schedule, and the only input of everything downstream (reports,
the timing simulation, the analytic check). Events are stored as plain tuples, the first field an `EventKind`,
because a schedule emits millions of them and a tuple costs a fraction of an object; `Trace.typed()` yields the
same events as named tuples for readers. The trace stores them packed (`EventLog`, about 26 B an event) and
builds each tuple as it is read. Field layouts (after the kind):

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
                                                 its operand accesses (what its energy prices) are kept beside
                                                 the tuple: `Trace.compute_accesses()`, one row per COMPUTE
  STORE   buffer, tensor, region, nbytes         SRAM->DDR DMA of a modified buffer
  FREE    buffer, charged_bytes                  the buffer's scope ended
  SLIDE   buffer, tensor, region, nbytes         a rotating (line) buffer moves along one axis to hold `region`:
                                                 only the rows it did not hold before come by DMA (nbytes)

Memory levels below the SRAM (`Accelerator.inner_levels`; a scope's level is `ScopeInfo.level`). A session on
such hardware records every allocation as ALLOC_IN (it names the scope, whose level says which memory holds the
buffer: allocations there need not be in the innermost scope, as a level's accesses resolve to the innermost
scope *at a level that holds the tensor*), and moves data between levels with two more kinds:
  ALLOC_IN buffer, tensor, region, nbytes, address, charged_bytes, scope_id
                                                 ALLOC in the open instance of scope `scope_id`; `address` and
                                                 `charged_bytes` are in that scope's level
  STAGE   buffer, tensor, region, nbytes, source  parent level -> inner level: `source` (a buffer of the
                                                 parent level holding region) fills `buffer`
  WRITEBACK buffer, tensor, region, nbytes, target  inner level -> parent level: the modified `buffer` is
                                                 written into `target`, the parent buffer it was staged from
LOAD and STORE stay DDR transfers (of SRAM buffers); OPEN and HIT of an inner buffer are a zero-fill and a hit
in its level; a COMPUTE names the buffers it reads wherever they are.

`tensor` indexes `Trace.tensors`, `scope_id` indexes `Trace.scopes`; a region is a tuple of (start, stop)
pairs, one per tensor dimension, in elements. A strided region (ALLOC, LOAD and HIT only: a strided DMA box, e.g.
the rows and columns a 1x1 stride-2 conv reads) has a (start, stop, step) triple on its stepped dimensions (step
>= 2, stop = its last index + 1); it holds, and its nbytes count, every step-th index from start only.
Buffers are numbered from 0 in allocation order.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Iterator, NamedTuple

import numpy as np

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
    SLIDE = 9
    STAGE = 10
    WRITEBACK = 11
    ALLOC_IN = 12


ENTER, EXIT, ALLOC, LOAD, OPEN, HIT, COMPUTE, STORE, FREE, SLIDE, STAGE, WRITEBACK, ALLOC_IN = (
    int(k) for k in EventKind)


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


class Slide(NamedTuple):
    kind: int
    buffer: int
    tensor: int
    region: Region  # what the buffer holds after the slide
    nbytes: int  # the bytes of `region` it did not hold before: the DMA


class Stage(NamedTuple):
    kind: int
    buffer: int  # the inner-level buffer filled
    tensor: int
    region: Region
    nbytes: int
    source: int  # the parent-level buffer the bytes come from


class WriteBack(NamedTuple):
    kind: int
    buffer: int  # the modified inner-level buffer
    tensor: int
    region: Region
    nbytes: int
    target: int  # the parent-level buffer written


class AllocIn(NamedTuple):
    kind: int
    buffer: int
    tensor: int
    region: Region
    nbytes: int
    address: int  # in the level of scope `scope_id`
    charged_bytes: int
    scope_id: int


EVENT_TYPES = (Enter, Exit, Alloc, Load, Open, Hit, Compute, Store, Free, Slide, Stage, WriteBack, AllocIn)


@dataclass(frozen=True)
class TensorInfo:
    """A DDR tensor as the trace knows it: no data, just identity and size."""

    name: str
    shape: tuple[int, ...]
    writable: bool  # outputs and intermediates; inputs are read-only
    on_chip: bool = False  # scratch and on-chip tensors: never in DDR, never loaded or stored
    layout: str = "row-major"  # how it lies in DDR (`dsasim.layout`): what a transfer costs in runs and bursts

    @property
    def elements(self) -> int:
        """Number of elements."""
        return shape_elements(self.shape)


@dataclass(frozen=True)
class ScopeInfo:
    """A static scope (a `GlobalHierarchy` site): its path of names, its buffering ways (N-way: each of its
    buffers' blocks holds N copies, used by successive instances in turn) and the memory level its buffers
    live in ("SRAM", or an inner level of the hardware)."""

    path: tuple[str, ...]
    ways: int
    level: str = "SRAM"

    @property
    def name(self) -> str:
        """The path joined with '/'."""
        return "/".join(self.path)


def format_region(region: Region) -> str:
    """A region as numpy-like slices, e.g. '[0:1, 0:24, 0:2, 0:56]' (a strided dimension '0:55:2')."""
    return "[" + ", ".join(":".join(map(str, axis)) for axis in region) + "]"


# the columns of `Trace.compute_accesses`
COMPUTE_ACCESS_FIELDS = ("out_buffer", "first_buffer", "second_buffer", "first_reads", "second_reads", "output_reads",
                         "output_writes", "lane_ops", "padded_macs", "tensorcore")


class ListLog:
    """The events as a plain list of tuples: the reference that `EventLog` (the compiled, columnar log of
    _events.pyx) must equal (tests). ~190 B per event."""

    __slots__ = ("items", "accesses")

    def __init__(self, word_bytes: int) -> None:
        self.items: list[tuple] = []
        self.accesses: list[tuple[int, ...]] = []  # per COMPUTE: its row of `Trace.compute_accesses`

    def add_tensor(self, ndim: int) -> None:
        """A new tensor with `ndim` dimensions (the columnar log needs it to read regions back)."""

    def enter(self, scope_id: int, instance: int) -> None:
        self.items.append((ENTER, scope_id, instance))

    def exit(self, scope_id: int, instance: int) -> None:
        self.items.append((EXIT, scope_id, instance))

    def alloc(self, buffer: int, tensor: int, region: Region, nbytes: int, address: int, charged_bytes: int) -> None:
        self.items.append((ALLOC, buffer, tensor, region, nbytes, address, charged_bytes))

    def load(self, buffer: int, tensor: int, region: Region, nbytes: int, reuse: bool) -> None:
        self.items.append((LOAD, buffer, tensor, region, nbytes, reuse))

    def open(self, buffer: int, tensor: int, region: Region, reuse: bool) -> None:
        self.items.append((OPEN, buffer, tensor, region, reuse))

    def hit(self, buffer: int, tensor: int, region: Region, reuse: bool) -> None:
        self.items.append((HIT, buffer, tensor, region, reuse))

    def store(self, buffer: int, tensor: int, region: Region, nbytes: int) -> None:
        self.items.append((STORE, buffer, tensor, region, nbytes))

    def free(self, buffer: int, charged_bytes: int) -> None:
        self.items.append((FREE, buffer, charged_bytes))

    def slide(self, buffer: int, tensor: int, region: Region, nbytes: int) -> None:
        self.items.append((SLIDE, buffer, tensor, region, nbytes))

    def compute(self, unit: str, op: str, out_buffer: int, in_buffers: tuple[int, ...], macs: int, cycles: int,
                padded_macs: int, accesses: tuple[int, ...] = (0, 0, 0, 0, 0)) -> None:
        self.items.append((COMPUTE, unit, op, out_buffer, in_buffers, macs, cycles, padded_macs))
        self.accesses.append((out_buffer, in_buffers[0] if in_buffers else -1,
                              in_buffers[1] if len(in_buffers) > 1 else -1, *accesses, padded_macs,
                              int(unit == "tensorcore")))

    def stage(self, buffer: int, tensor: int, region: Region, nbytes: int, source: int) -> None:
        self.items.append((STAGE, buffer, tensor, region, nbytes, source))

    def writeback(self, buffer: int, tensor: int, region: Region, nbytes: int, target: int) -> None:
        self.items.append((WRITEBACK, buffer, tensor, region, nbytes, target))

    def alloc_in(self, buffer: int, tensor: int, region: Region, nbytes: int, address: int, charged_bytes: int,
                 scope_id: int) -> None:
        self.items.append((ALLOC_IN, buffer, tensor, region, nbytes, address, charged_bytes, scope_id))

    def clear(self) -> None:
        """Drop every event."""
        self.items.clear()
        self.accesses.clear()

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.items)


class NullLog:
    """Records nothing: a Session with record_trace=False, or whose trace outgrew its limit."""

    __slots__ = ()

    def _skip(self, *_fields: object) -> None:
        pass

    enter = exit = alloc = load = open = hit = store = free = slide = compute = add_tensor = _skip
    stage = writeback = alloc_in = _skip


COLUMNAR = True  # the compiled EventLog (_events.pyx); tests switch it off to compare with the reference ListLog


class Events:
    """The events of a trace as a read-only sequence of the tuples documented above. Iterate it: indexing and
    slicing read the events from the start (fine for tests, slow inside a loop)."""

    __slots__ = ("log",)

    def __init__(self, log: "ListLog | _events.EventLog") -> None:
        self.log = log

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.log)

    def __len__(self) -> int:
        return len(self.log)

    def __getitem__(self, index: int | slice) -> tuple | list[tuple]:
        return list(self.log)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Events, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Events({len(self)} events)"


class Trace:
    """An append-only event log plus the tensor and scope tables the events index into.

    The session appends while the schedule runs (through `log`); readers iterate `events`. A hand-built trace
    (tests, tools) may set `events` to a list of tuples instead (and `hand_accesses` to its COMPUTEs' operand
    accesses, rows as `compute_accesses`; without them a timed result has no power).
    """

    __slots__ = ("log", "_events", "tensors", "scopes", "word_bytes", "hand_accesses")

    def __init__(self, word_bytes: int) -> None:
        from dsasim.traced._events import EventLog  # (here: _events imports this module's EventKind)

        self.log = EventLog(word_bytes) if COLUMNAR else ListLog(word_bytes)
        self._events: list[tuple] | None = None
        self.tensors: list[TensorInfo] = []
        self.scopes: list[ScopeInfo] = []
        self.word_bytes = word_bytes
        # a hand-built trace's `compute_accesses` rows, if it has them (its tuples carry none)
        self.hand_accesses: np.ndarray | None = None

    @property
    def events(self) -> "Events | list[tuple]":
        """The events in order, as tuples (see the module docstring for their layouts)."""
        return Events(self.log) if self._events is None else self._events

    @events.setter
    def events(self, events: list[tuple]) -> None:
        self._events = events

    def freeze(self) -> "Trace":
        """End of recording (the Session appends nothing more); returns self."""
        return self

    def __len__(self) -> int:
        return len(self.events)

    def typed(self) -> Iterator[tuple]:
        """The events as named tuples (Enter, Alloc, Load, ...)."""
        types = EVENT_TYPES
        for event in self.events:
            yield types[event[0]]._make(event)

    def multi_level(self) -> bool:
        """True when the trace uses memory levels below the SRAM (inner-level scopes, ALLOC_IN, STAGE or
        WRITEBACK events): readers that know only DDR and one SRAM must refuse it rather than miscount it."""
        if any(scope.level != "SRAM" for scope in self.scopes):
            return True
        if self._events is None and hasattr(self.log, "kind_counts"):
            counts = self.log.kind_counts()
            return any(counts[k] for k in (STAGE, WRITEBACK, ALLOC_IN))
        return any(isinstance(event, tuple) and event and event[0] in (STAGE, WRITEBACK, ALLOC_IN)
                   for event in self.events)  # (a malformed event is the checker's to report)

    def compute_accesses(self) -> "np.ndarray | None":
        """Per COMPUTE event, in order, what its energy prices: an int64 row (out_buffer, first input buffer or -1,
        second input buffer or -1, first_reads, second_reads, output_reads, output_writes, lane_ops, padded_macs,
        1 if a TensorCore op else 0), reads and writes in elements of the tiles' buffers (`COMPUTE_ACCESS_FIELDS`).
        For a hand-built trace (`events` set: its tuples carry no operand accesses), its `hand_accesses` (None
        unless set)."""
        if self._events is not None:
            return self.hand_accesses
        if isinstance(self.log, ListLog):
            return np.array(self.log.accesses, np.int64).reshape(-1, len(COMPUTE_ACCESS_FIELDS))
        return self.log.compute_accesses()

    def tensor_name(self, tensor_id: int) -> str:
        """Name of a tensor by its trace index."""
        return self.tensors[tensor_id].name
