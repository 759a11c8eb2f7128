"""The traced memory model: DDR tensors (`TracedArray`), SRAM scopes (`GlobalHierarchy`), buffers and tiles.

Every number dsasim reports rests on these rules (see README, "Memory model"):
  1. A `TracedArray` is a DDR tensor; indexing it inside a scope yields a `Tile` backed by an SRAM buffer.
  2. A `GlobalHierarchy` is an SRAM scope; buffers allocated in it live until it exits. Scopes nest.
  3. `arr[region]`: a live buffer of `arr` holding a superset of region with current data is a hit (0 bytes);
     otherwise a DMA load of elements x word_bytes into a new buffer of the current scope.
  4. `arr[region, True]` (the blog's reuse flag) loads into the buffer `arr` already holds in the current scope
     (storing it first if modified) instead of allocating: it saves SRAM, not traffic.
  5. Writable tensors (outputs, intermediates): a region never stored before opens as zeros without DMA; a
     region stored before is loaded (a read-modify-write once modified). A modified buffer is stored exactly
     once per modification: when freed or reused.
  6. The live footprint (buffer bytes x the scope's buffering ways) never exceeds `sram_bytes`.
All state lives in a `Session`; two sessions never interfere.
"""

from __future__ import annotations

import operator
import os
import sys
from dataclasses import dataclass, field
from itertools import starmap
from typing import Any, Mapping

import numpy as np

from .errors import (CoherenceError, ReadOnlyError, RegionError, ReuseError, SramOverflowError,
                     StaleTileError, UnfinishedError)
from .hardware import Accelerator
from .segments import Segment
from .trace import (ALLOC, COMPUTE, ENTER, EXIT, FREE, HIT, LOAD, OPEN, STORE, Region, ScopeInfo,
                    TensorInfo, Trace, format_region)


@dataclass
class TensorTraffic:
    """Per-tensor traffic counters, in bytes and counts."""

    loaded_bytes: int = 0
    stored_bytes: int = 0
    rmw_bytes: int = 0  # loads of previously stored (partial) results that were then modified again
    loads: int = 0
    stores: int = 0
    hits: int = 0
    opens: int = 0
    blog_loaded_elements: int = 0


@dataclass
class Counters:
    """Whole-run counters, in bytes, elements, MACs and cycles."""

    loaded_bytes: int = 0
    stored_bytes: int = 0
    rmw_bytes: int = 0
    loads: int = 0
    stores: int = 0
    hits: int = 0
    opens: int = 0
    blog_loaded_elements: int = 0
    macs: int = 0
    padded_macs: int = 0
    tensorcore_cycles: int = 0
    vector_cycles: int = 0
    peak_sram_bytes: int = 0
    per_tensor: dict[str, TensorTraffic] = field(default_factory=dict)


class Buffer:
    """An SRAM buffer: holds one region of one tensor (or scratch data) until its scope exits."""

    __slots__ = ("id", "tensor", "region", "nbytes", "charged_bytes", "scope", "dirty", "loaded_from_ddr",
                 "load_bytes", "generation", "stale", "freed", "data")

    def __init__(self, buffer_id: int, tensor: "TracedArray", region: Region, nbytes: int, charged_bytes: int,
                 scope: "_ScopeInstance") -> None:
        self.id = buffer_id
        self.tensor = tensor
        self.region = region
        self.nbytes = nbytes
        self.charged_bytes = charged_bytes
        self.scope = scope
        self.dirty = False
        self.loaded_from_ddr = False
        self.load_bytes = 0
        self.generation = 0
        self.stale = False
        self.freed = False
        self.data: np.ndarray | None = None


class Tile:
    """A view of a region of a buffer: what schedules compute with. Goes stale when its buffer is reused."""

    __slots__ = ("buffer", "region", "generation")

    def __init__(self, buffer: Buffer, region: Region) -> None:
        self.buffer = buffer
        self.region = region
        self.generation = buffer.generation

    @property
    def tensor(self) -> "TracedArray":
        """The DDR tensor (or scratch array) this tile belongs to."""
        return self.buffer.tensor

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the tile in elements."""
        return tuple([b - a for a, b in self.region])

    def check_live(self) -> Buffer:
        """Return the buffer, raising StaleTileError if the tile no longer refers to its data."""
        buf = self.buffer
        if buf.generation != self.generation or buf.freed or buf.stale:
            why = ("its buffer was freed when its scope exited" if buf.freed else
                   "its buffer was reloaded with another region (reuse flag)" if buf.generation != self.generation
                   else "DDR was overwritten by another buffer's store after it was loaded")
            raise StaleTileError(
                f"tile {buf.tensor.name}{format_region(self.region)} used after {why}; take the tile again "
                f"(index the TracedArray) before using it")
        return buf

    @property
    def data(self) -> np.ndarray:
        """The tile's values (a numpy view into its buffer); numeric mode only."""
        buf = self.check_live()
        if buf.data is None:
            raise RuntimeError("tile data is only available in numeric mode (Session(numeric=True))")
        if self.region is buf.region or self.region == buf.region:
            return buf.data
        return buf.data[tuple(slice(a - b0, b - b0) for (a, b), (b0, _) in zip(self.region, buf.region))]

    def __getitem__(self, key: Any) -> "Tile":
        """A sub-tile, indexed relative to this tile (ints, slices or Segments)."""
        self.check_live()
        if type(key) is not tuple:
            key = (key,)
        region = _normalize(self.buffer.tensor.name, self.shape, key)
        return Tile(self.buffer, tuple((o + a, o + b) for (o, _), (a, b) in zip(self.region, region)))

    def __iadd__(self, product: Any) -> "Tile":
        product.apply(self, accumulate=True)
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        """`tile[k] += product` lands here with the sub-tile already updated; `tile[k] = product` assigns."""
        if isinstance(value, Tile):
            if value.buffer is self.buffer and value.region == self[key].region:
                return
            raise ValueError("cannot copy one tile into another by assignment; use a compute unit "
                             "(e.g. out.assign(vector.copy(src)))")
        self[key].assign(value)

    def assign(self, product: Any) -> "Tile":
        """Overwrite the tile with a product's result."""
        product.apply(self, accumulate=False)
        return self

    def __repr__(self) -> str:
        return f"Tile({self.buffer.tensor.name}{format_region(self.region)}, buffer={self.buffer.id})"


def _normalize(name: str, shape: tuple[int, ...], key: tuple) -> Region:
    """Turn an index (ints, slices, Segments or (start, stop) pairs) into a region clipped to `shape`."""
    if len(key) > len(shape):
        raise RegionError(f"{name}: {len(key)} indices for a {len(shape)}-d tensor of shape {shape}")
    region = []
    append = region.append
    for k, extent in zip(key, shape):
        if type(k) is Segment:  # the common case in schedules: a Segment inside the tensor is kept as is
            start, stop = k
            if 0 <= start < stop <= extent:
                append(k)
                continue
        append(_normalize_one(name, len(region), extent, k))
    if len(region) < len(shape):
        region.extend((0, extent) for extent in shape[len(region):])
    return tuple(region)


def _normalize_one(name: str, dim: int, extent: int, k: Any) -> tuple[int, int]:
    """One dimension of `_normalize`: (start, stop) clipped to `extent`, or RegionError."""
    kind = type(k)
    if kind is int:
        if k < 0 or k >= extent:
            raise RegionError(f"{name}: dimension {dim}: index {k} is outside 0:{extent}")
        return (k, k + 1)
    if kind is slice:
        if k.step not in (None, 1):
            raise RegionError(f"{name}: dimension {dim}: step {k.step} is not supported; a DMA tile is a "
                              f"contiguous box, use step 1")
        start = 0 if k.start is None else k.start
        stop = extent if k.stop is None or k.stop > extent else k.stop
    elif kind is bool:
        raise RegionError(f"{name}: the reuse flag must be the last index, e.g. arr[seg_a, seg_b, True]")
    else:
        try:
            start, stop = k
        except (TypeError, ValueError):
            raise RegionError(f"{name}: dimension {dim}: cannot index with {k!r}; use an int, a slice, "
                              f"a Segment or a (start, stop) pair") from None
        if type(start) is not int or type(stop) is not int:
            try:
                start, stop = operator.index(start), operator.index(stop)
            except TypeError:
                raise RegionError(f"{name}: dimension {dim}: cannot index with {k!r}; bounds must be "
                                  f"integers") from None
        stop = min(stop, extent)  # the blog clamps a tile that runs past the edge
    if start < 0 or start >= stop:
        raise RegionError(f"{name}: dimension {dim}: region {start}:{stop} is empty or outside 0:{extent}")
    return (start, stop)


def _is_region(index: Any) -> bool:
    """True for a whole region given as one object: a list, or a plain tuple holding a non-int index.

    A plain tuple of ints stays a (start, stop) pair for one dimension, as before."""
    kind = type(index)
    if kind is list:
        return True
    return kind is tuple and any(type(k) is not int for k in index)


def _requested_elements(shape: tuple[int, ...], key: tuple) -> int:
    """Elements of a region as the schedule wrote it, before clamping to `shape` (the blog's counter)."""
    n = 1
    for dim, extent in enumerate(shape):
        if dim >= len(key):
            n *= extent
            continue
        k = key[dim]
        if type(k) is slice:
            n *= (extent if k.stop is None else k.stop) - (0 if k.start is None else k.start)
        elif isinstance(k, tuple):
            n *= k[1] - k[0]
        # an int index is one element
    return n


def _slices(region: Region) -> tuple[slice, ...]:
    return tuple(starmap(slice, region))


class TracedArray:
    """A DDR tensor whose every access from a schedule is traced."""

    __slots__ = ("session", "id", "name", "shape", "writable", "must_be_written", "scratch", "data", "traffic",
                 "live", "stored_mask", "stored_any", "nbytes")

    def __init__(self, session: "Session", tensor_id: int, name: str, shape: tuple[int, ...], writable: bool,
                 must_be_written: bool, scratch: bool, data: np.ndarray | None) -> None:
        self.session = session
        self.id = tensor_id
        self.name = name
        self.shape = shape
        self.writable = writable
        self.must_be_written = must_be_written
        self.scratch = scratch
        self.data = data
        self.traffic = TensorTraffic()
        self.live: list[Buffer] = []
        self.stored_mask: np.ndarray | None = None
        self.stored_any = False
        n = 1
        for d in shape:
            n *= d
        self.nbytes = n * session.hardware.word_bytes

    def __getitem__(self, key: Any) -> Tile:
        kind = type(key)
        if kind is not tuple:
            key = tuple(key) if kind is list else (key,)
        reuse = False
        if key and type(key[-1]) is bool:
            reuse = key[-1]
            key = key[:-1]
            if len(key) == 1 and _is_region(key[0]):  # the blog's arr[seg_list, reuse], arr[(b, c, h, w), reuse]
                key = tuple(key[0])
        return self.session.access(self, key, reuse)

    def load(self, key: Any, reuse: bool = False) -> Tile:
        """Same as `arr[key]` (or `arr[key, True]` with reuse=True)."""
        if type(key) is not tuple:
            key = (key,)
        return self.session.access(self, key, reuse)

    def __repr__(self) -> str:
        return f"TracedArray({self.name!r}, shape={self.shape})"


class _ScopeInstance:
    """One execution of a scope: the buffers it allocated, in order."""

    __slots__ = ("scope_id", "instance", "ways", "buffers", "held", "path")

    def __init__(self, scope_id: int, instance: int, ways: int, path: tuple[str, ...]) -> None:
        self.scope_id = scope_id
        self.instance = instance
        self.ways = ways
        self.buffers: list[Buffer] = []
        self.held: dict[int, Buffer] = {}  # tensor id -> newest buffer of that tensor in this scope
        self.path = path


class GlobalHierarchy:
    """An SRAM scope (the blog's name): `with GlobalHierarchy(session):` frees its buffers on exit.

    `buffers=N` makes it N-way buffered: each buffer's SRAM block holds N copies that successive instances use in
    turn, so the next instance's loads can overlap this one's compute; the capacity check counts N x its buffers.
    `name` identifies the scope for buffering overrides and reports (default: its source line).
    """

    __slots__ = ("session", "name", "buffers", "_instance")

    def __init__(self, session: "Session", name: str | None = None, buffers: int | None = None) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"GlobalHierarchy needs the Session to trace into as its first argument, got "
                            f"{type(session).__name__}")
        if buffers is not None and (isinstance(buffers, bool) or not isinstance(buffers, int) or buffers < 1):
            raise ValueError(f"GlobalHierarchy buffers must be an integer >= 1 (1 = single, 2 = ping-pong), "
                             f"got {buffers!r}")
        if name is None:
            caller = sys._getframe(1)
            name = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
        self.session = session
        self.name = name
        self.buffers = buffers
        self._instance: _ScopeInstance | None = None

    def __enter__(self) -> "GlobalHierarchy":
        self._instance = self.session._enter_scope(self.name, self.buffers)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.session._exit_scope(self._instance, failed=exc_type is not None)

    def scratch(self, name: str, shape: tuple[int, ...], reuse: bool = False) -> Tile:
        """An on-chip-only zeroed buffer (no DDR backing, never loaded or stored); see Session.scratch."""
        return self.session.scratch(name, shape, reuse)


class Session:
    """One run of a schedule: hardware, tensors, live SRAM state, counters and the trace.

    numeric=False is count-only mode: no data, no arithmetic, the same events and counts.
    scope_buffers maps scope names to buffering ways, overriding what the schedule declares.
    enforce_capacity=False lets a schedule exceed sram_bytes (to measure how much SRAM it would need).
    trace_event_limit: past this many events the trace is dropped (`trace_dropped` is set) to bound memory;
    counters are unaffected.
    blog_quirks=True makes the blog's counter count regions as the schedule wrote them, before clamping (the
    blog's TracedArray did; `dsasim demo --blog-quirks`); schedules read it to tile like the blog
    (`Segments(..., clamp=not s.blog_quirks)`). Honest traffic does not depend on it.
    """

    def __init__(self, hardware: Accelerator, numeric: bool = True, record_trace: bool = True,
                 scope_buffers: Mapping[str, int] | None = None, dtype: Any = np.float32,
                 enforce_capacity: bool = True, trace_event_limit: int | None = None,
                 blog_quirks: bool = False) -> None:
        if not isinstance(hardware, Accelerator):
            raise TypeError(f"Session needs an Accelerator, got {type(hardware).__name__}")
        if not isinstance(blog_quirks, bool):
            raise ValueError(f"Session: blog_quirks must be True or False, got {blog_quirks!r}")
        self.blog_quirks = blog_quirks
        self.hardware = hardware
        self.numeric = numeric
        self.record_trace = record_trace
        self.dtype = dtype
        self.scope_buffers = dict(scope_buffers or {})
        for name, ways in self.scope_buffers.items():
            if isinstance(ways, bool) or not isinstance(ways, int) or ways < 1:
                raise ValueError(f"scope_buffers[{name!r}] must be an integer >= 1, got {ways!r}")
        self.trace = Trace(hardware.word_bytes)
        self._events: list[tuple] = self.trace.events  # type: ignore[assignment]
        self._emit = self._events.append if record_trace else _discard
        self._trace_event_limit = trace_event_limit if record_trace else None
        self.trace_dropped = False
        self.counters = Counters()
        self.tensors: dict[str, TracedArray] = {}
        self._stack: list[_ScopeInstance] = []
        self._scope_ids: dict[tuple[int, str], int] = {}
        self._scope_instances: list[int] = []
        self._next_buffer = 0
        self._live_bytes = 0
        self._word_bytes = hardware.word_bytes
        self._sram_bytes = hardware.sram_bytes if enforce_capacity else float("inf")
        self._used_scopes: set[str] = set()
        self.pending_products: dict[int, Any] = {}  # computes created but not yet written into a tile
        self.finished = False

    # -- tensors -------------------------------------------------------------------------------------------
    def _new_tensor(self, name: str, shape: tuple[int, ...], data: np.ndarray | None, writable: bool,
                    must_be_written: bool, scratch: bool) -> TracedArray:
        if name in self.tensors:
            raise ValueError(f"a tensor named {name!r} already exists in this session; names must be unique")
        shape = tuple(int(d) for d in shape)
        if not shape or any(d <= 0 for d in shape):
            raise ValueError(f"tensor {name!r}: shape {shape} must have at least one dimension, all positive")
        arr = TracedArray(self, len(self.trace.tensors), name, shape, writable, must_be_written, scratch, data)
        self.trace.tensors.append(TensorInfo(name, shape, writable))
        self.counters.per_tensor[name] = arr.traffic
        self.tensors[name] = arr
        return arr

    def input(self, name: str, data: np.ndarray | tuple[int, ...]) -> TracedArray:
        """A read-only DDR tensor: numpy data in numeric mode, or just a shape (data is then ignored/absent)."""
        if isinstance(data, np.ndarray):
            shape = data.shape
            values = np.ascontiguousarray(data, dtype=self.dtype) if self.numeric else None
        else:
            shape = tuple(data)
            if self.numeric:
                raise ValueError(f"input {name!r}: numeric mode needs data (a numpy array), got only a shape; "
                                 f"pass an array or use Session(numeric=False)")
            values = None
        return self._new_tensor(name, shape, values, writable=False, must_be_written=False, scratch=False)

    def output(self, name: str, shape: tuple[int, ...]) -> TracedArray:
        """A writable DDR tensor, zero-initialised, every element of which the schedule must store."""
        data = np.zeros(shape, self.dtype) if self.numeric else None
        return self._new_tensor(name, shape, data, writable=True, must_be_written=True, scratch=False)

    def intermediate(self, name: str, shape: tuple[int, ...]) -> TracedArray:
        """A writable DDR tensor passed between stages; unlike an output it need not be fully written."""
        data = np.zeros(shape, self.dtype) if self.numeric else None
        return self._new_tensor(name, shape, data, writable=True, must_be_written=False, scratch=False)

    def scratch(self, name: str, shape: tuple[int, ...], reuse: bool = False) -> Tile:
        """A zeroed on-chip-only buffer in the current scope: SRAM it occupies, no DDR traffic ever.

        The first call fixes the scratch tensor's (largest) shape; later calls may ask for smaller shapes.
        reuse=True takes the buffer this scope already holds for `name` instead of allocating another.
        """
        shape = tuple(int(d) for d in shape)
        arr = self.tensors.get(name)
        if arr is None:
            arr = self._new_tensor(name, shape, None, writable=True, must_be_written=False, scratch=True)
        elif not arr.scratch:
            raise ValueError(f"scratch {name!r}: a DDR tensor of that name exists ({arr}); pick another name")
        if len(shape) != len(arr.shape) or any(d < 1 or d > e for d, e in zip(shape, arr.shape)):
            raise ValueError(f"scratch {name!r}: shape {shape} must fit inside its first shape {arr.shape}")
        region = tuple((0, d) for d in shape)
        inst = self._current_scope(arr, region)
        nbytes = _elements(region) * self._word_bytes
        buf = inst.held.get(arr.id) if reuse else None
        if buf is None or nbytes > buf.nbytes:
            buf = self._allocate(arr, region, nbytes, inst)
        else:
            buf.generation += 1
            buf.dirty = False
            buf.region = region
        if self.numeric:
            buf.data = np.zeros(shape, self.dtype)
        self._emit((OPEN, buf.id, arr.id, region, reuse))
        return Tile(buf, region)

    # -- scopes ----------------------------------------------------------------------------------------------
    def scope(self, name: str | None = None, buffers: int | None = None) -> GlobalHierarchy:
        """A new SRAM scope in this session (same as GlobalHierarchy(session, ...))."""
        if name is None:
            caller = sys._getframe(1)
            name = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
        return GlobalHierarchy(self, name, buffers)

    def _enter_scope(self, name: str, buffers: int | None) -> _ScopeInstance:
        parent = self._stack[-1] if self._stack else None
        static_key = (parent.scope_id if parent is not None else -1, name)
        scope_id = self._scope_ids.get(static_key)
        if scope_id is None:
            path = (parent.path if parent is not None else ()) + (name,)
            ways = self.scope_buffers.get(name, buffers if buffers is not None else 1)
            scope_id = len(self.trace.scopes)
            self._scope_ids[static_key] = scope_id
            self.trace.scopes.append(ScopeInfo(path, ways))
            self._scope_instances.append(0)
            self._used_scopes.add(name)
        instance = self._scope_instances[scope_id]
        self._scope_instances[scope_id] = instance + 1
        info = self.trace.scopes[scope_id]
        inst = _ScopeInstance(scope_id, instance, info.buffers, info.path)
        self._stack.append(inst)
        self._emit((ENTER, scope_id, instance))
        return inst

    def _exit_scope(self, inst: _ScopeInstance, failed: bool) -> None:
        if not self._stack or self._stack[-1] is not inst:
            raise UnfinishedError("scopes exited out of order; use `with` blocks so they nest")
        if failed:  # leave the state as it was when the error happened, for the report
            self._stack.pop()
            return
        emit = self._emit
        for buf in reversed(inst.buffers):
            if buf.dirty:
                self._store(buf)
            buf.freed = True
            buf.tensor.live.remove(buf)
            self._live_bytes -= buf.charged_bytes
            emit((FREE, buf.id, buf.charged_bytes))
        self._stack.pop()
        emit((EXIT, inst.scope_id, inst.instance))
        if self._trace_event_limit is not None and len(self._events) > self._trace_event_limit:
            self._drop_trace()

    def _drop_trace(self) -> None:
        """Stop recording and free the events (the trace outgrew `trace_event_limit`)."""
        self._events.clear()
        self._emit = _discard
        self._trace_event_limit = None
        self.trace_dropped = True

    def _current_scope(self, arr: TracedArray, region: Region) -> _ScopeInstance:
        if not self._stack:
            raise RegionError(f"{arr.name}{format_region(region)} accessed outside any GlobalHierarchy scope; "
                              f"wrap the access in `with GlobalHierarchy(session):` so its SRAM buffer has a "
                              f"lifetime")
        return self._stack[-1]

    # -- buffers -------------------------------------------------------------------------------------------
    def _allocate(self, arr: TracedArray, region: Region, nbytes: int, inst: _ScopeInstance) -> Buffer:
        charged = nbytes * inst.ways
        live = self._live_bytes + charged
        if live > self._sram_bytes:
            self._overflow(arr, region, charged, inst)
        self._live_bytes = live
        counters = self.counters
        if live > counters.peak_sram_bytes:
            counters.peak_sram_bytes = live
        # Buffers are freed in exactly the reverse order of allocation (scopes nest, a scope frees all its
        # buffers), so SRAM is a stack: this buffer's block starts at the old top. An N-way scope's block holds
        # N copies; instance i uses copy i mod N, so consecutive instances never share bytes.
        address = live - charged + (inst.instance % inst.ways) * nbytes
        buf = Buffer(self._next_buffer, arr, region, nbytes, charged, inst)
        self._next_buffer += 1
        inst.buffers.append(buf)
        inst.held[arr.id] = buf
        arr.live.append(buf)
        self._emit((ALLOC, buf.id, arr.id, region, nbytes, address, charged))
        return buf

    def _overflow(self, arr: TracedArray, region: Region, charged: int, inst: _ScopeInstance) -> None:
        live = []
        for scope in self._stack:
            for buf in scope.buffers:
                live.append((buf.tensor.name, format_region(buf.region), buf.charged_bytes, "/".join(scope.path)))
        # past a screenful, group the buffers of one tensor in one scope (the exception's .live lists each)
        grouped = len(live) > 32
        groups: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for tensor, reg, nbytes, scope in live:
            groups.setdefault((tensor, scope), []).append((reg, nbytes))
        lines = []
        for (tensor, scope), bufs in groups.items():
            if grouped and len(bufs) > 1:
                total = sum(nbytes for _, nbytes in bufs)
                lines.append(f"  {tensor}: {len(bufs)} buffers, {total} B in scope {scope} ({bufs[0][0]} ... "
                             f"{bufs[-1][0]})")
            else:
                lines.extend(f"  {tensor}{reg}: {nbytes} B in scope {scope}" for reg, nbytes in bufs)
        listing = "\n" + "\n".join(lines) if lines else " none"
        ways = f" ({inst.ways}-way buffered)" if inst.ways > 1 else ""
        raise SramOverflowError(
            f"SRAM overflow: allocating {charged} B for {arr.name}{format_region(region)}{ways} in scope "
            f"{'/'.join(inst.path)} would make the live footprint {self._live_bytes + charged} B > capacity "
            f"{self._sram_bytes} B. Live buffers ({self._live_bytes} B):{listing}\n"
            f"Use smaller tiles, free buffers earlier (tighter scopes), or the reuse flag.",
            self._sram_bytes, charged, live)

    def _store(self, buf: Buffer) -> None:
        arr = buf.tensor
        if arr.scratch:  # on-chip only: dropping it at scope exit is the point
            buf.dirty = False
            return
        region = buf.region
        for other in arr.live:
            if other is not buf and _overlaps(other.region, region):
                if other.dirty:
                    raise CoherenceError(
                        f"two live modified buffers of {arr.name} overlap: {format_region(region)} (buffer "
                        f"{buf.id}) and {format_region(other.region)} (buffer {other.id}); storing one would "
                        f"overwrite the other's results. Give each output element one live buffer at a time.")
                other.stale = True
        nbytes = _elements(region) * self._word_bytes
        slices = _slices(region)
        if arr.stored_mask is None:
            arr.stored_mask = np.zeros(arr.shape, bool)
        arr.stored_mask[slices] = True
        arr.stored_any = True
        if buf.data is not None:
            arr.data[slices] = buf.data
        buf.dirty = False
        counters = self.counters
        counters.stored_bytes += nbytes
        counters.stores += 1
        traffic = arr.traffic
        traffic.stored_bytes += nbytes
        traffic.stores += 1
        self._emit((STORE, buf.id, arr.id, region, nbytes))

    def _fill(self, buf: Buffer, arr: TracedArray, region: Region, elements: int, reuse: bool) -> None:
        """Bring region into buf: a DMA load, or a zero-open for a writable region never stored."""
        # tobytes + `in` is several times faster than ndarray.any() on the small regions of hot loops
        if arr.writable and (not arr.stored_any or b"\x01" not in arr.stored_mask[_slices(region)].tobytes()):
            buf.loaded_from_ddr = False
            buf.load_bytes = 0
            if self.numeric:
                buf.data = np.zeros(tuple(b - a for a, b in region), self.dtype)
            arr.traffic.opens += 1
            self.counters.opens += 1
            self._emit((OPEN, buf.id, arr.id, region, reuse))
            return
        nbytes = elements * self._word_bytes
        buf.loaded_from_ddr = True
        buf.load_bytes = nbytes
        if self.numeric:
            # an input is never written, so a view is as good as a copy and saves the memcpy
            view = arr.data[_slices(region)]
            buf.data = view.copy() if arr.writable else view
        counters = self.counters
        counters.loaded_bytes += nbytes
        counters.loads += 1
        traffic = arr.traffic
        traffic.loaded_bytes += nbytes
        traffic.loads += 1
        self._emit((LOAD, buf.id, arr.id, region, nbytes, reuse))

    # -- the hot path ----------------------------------------------------------------------------------------
    def access(self, arr: TracedArray, key: tuple, reuse: bool) -> Tile:
        """Resolve `arr[key]` (reuse flag as given): a hit, a load into a new buffer, or a reuse load."""
        # The hottest path of the simulator (millions of calls): helpers are inlined on purpose.
        region = _normalize(arr.name, arr.shape, key)
        elements = 1
        for a, b in region:
            elements *= b - a
        traffic = arr.traffic
        counters = self.counters
        if not reuse:
            blog = _requested_elements(arr.shape, key) if self.blog_quirks else elements
            traffic.blog_loaded_elements += blog
            counters.blog_loaded_elements += blog
        live = arr.live
        if live:
            for buf in live:
                if not buf.stale and _contains(buf.region, region):
                    traffic.hits += 1
                    counters.hits += 1
                    self._emit((HIT, buf.id, arr.id, region, reuse))
                    return Tile(buf, region)
            if arr.writable:
                held = self._stack[-1].held.get(arr.id) if reuse and self._stack else None
                for buf in live:
                    # the buffer a reuse load replaces is stored first, so it is no hazard
                    if buf.dirty and buf is not held and _overlaps(buf.region, region):
                        raise CoherenceError(
                            f"{arr.name}{format_region(region)} must be read from DDR but buffer {buf.id} holds "
                            f"modified data for {format_region(buf.region)} that overlaps it and is not stored "
                            f"yet; access a region inside that buffer, or let its scope end first")
        stack = self._stack
        if not stack:
            self._current_scope(arr, region)
        inst = stack[-1]
        nbytes = elements * self._word_bytes
        buf = inst.held.get(arr.id) if reuse else None
        if buf is None:
            buf = self._allocate(arr, region, nbytes, inst)
        else:
            if nbytes > buf.nbytes:
                raise ReuseError(
                    f"{arr.name}{format_region(region)} ({nbytes} B) does not fit the buffer it reuses "
                    f"(buffer {buf.id}, {buf.nbytes} B, allocated for {format_region(buf.region)}); access "
                    f"the largest tile first or drop the reuse flag")
            if buf.dirty:
                self._store(buf)
            buf.generation += 1
            buf.stale = False
            buf.region = region
        self._fill(buf, arr, region, elements, reuse)
        return Tile(buf, region)

    def mark_written(self, tile: Tile) -> Buffer:
        """Record that a compute wrote `tile`: its buffer becomes modified (stored on free/reuse)."""
        buf = tile.check_live()
        arr = buf.tensor
        if not arr.writable:
            raise ReadOnlyError(f"cannot write into {arr.name}{format_region(tile.region)}: {arr.name} is an "
                                f"input; write into an output, intermediate or scratch tile")
        if not buf.dirty:
            buf.dirty = True
            if buf.loaded_from_ddr:
                buf.loaded_from_ddr = False  # count the read-modify-write once per load
                self.counters.rmw_bytes += buf.load_bytes
                arr.traffic.rmw_bytes += buf.load_bytes
        return buf

    def emit_compute(self, unit: str, op: str, out_buffer: int, in_buffers: tuple[int, ...], macs: int,
                     cycles: int, padded_macs: int) -> None:
        """Append a compute event and count its MACs and cycles."""
        counters = self.counters
        counters.macs += macs
        counters.padded_macs += padded_macs
        if unit == "tensorcore":
            counters.tensorcore_cycles += cycles
        else:
            counters.vector_cycles += cycles
        self._emit((COMPUTE, unit, op, out_buffer, in_buffers, macs, cycles, padded_macs))

    # -- the end -----------------------------------------------------------------------------------------------
    def finish(self) -> Trace:
        """Check that nothing was left behind (open scopes, unstored outputs); return the frozen trace."""
        if self._stack:
            names = ", ".join("/".join(s.path) for s in self._stack)
            raise UnfinishedError(f"scopes still open at the end of the run: {names}; their buffers were never "
                                  f"freed or stored")
        if self.pending_products:
            lost = list(self.pending_products.values())
            raise UnfinishedError(f"{len(lost)} compute result(s) were never written into a tile, e.g. {lost[0]!r}; "
                                  f"write them with `out += product` or `out.assign(product)`")
        for arr in self.tensors.values():
            if arr.must_be_written:
                if arr.stored_mask is None:
                    missing = arr.nbytes // self._word_bytes
                else:
                    missing = int(arr.stored_mask.size - np.count_nonzero(arr.stored_mask))
                if missing:
                    where = ""
                    if arr.stored_mask is not None:
                        first = tuple(int(i) for i in np.argwhere(~arr.stored_mask)[0])
                        where = f", first at index {first}"
                    raise UnfinishedError(f"output {arr.name}: {missing} of {arr.nbytes // self._word_bytes} "
                                          f"elements were never stored{where}; the schedule does not cover the "
                                          f"whole output")
        unknown = sorted(set(self.scope_buffers) - self._used_scopes)
        if unknown:
            raise ValueError(f"scope_buffers names scope(s) {unknown} that the schedule never entered; scopes "
                             f"it entered: {sorted(self._used_scopes)}")
        self.finished = True
        return self.trace.freeze()

    @property
    def live_sram_bytes(self) -> int:
        """SRAM bytes held by live buffers right now (times buffering ways)."""
        return self._live_bytes


def _discard(_event: tuple) -> None:
    pass


def _contains(outer: Region, inner: Region) -> bool:
    for (a, b), (c, d) in zip(outer, inner):
        if c < a or d > b:
            return False
    return True


def _overlaps(x: Region, y: Region) -> bool:
    for (a, b), (c, d) in zip(x, y):
        if d <= a or c >= b:
            return False
    return True


def _elements(region: Region) -> int:
    n = 1
    for a, b in region:
        n *= b - a
    return n
