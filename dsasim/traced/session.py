"""The traced memory model: DDR tensors (`TracedArray`), SRAM scopes (`GlobalHierarchy`), buffers and tiles.

Every number dsasim reports rests on these rules (see docs/model/traffic.md):
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
  7. `arr.slide(key)` (sliding-window reuse) moves the buffer `arr` holds in the current scope along one axis,
     as a rotating (line) buffer: only the rows of the new region it does not hold come by DMA; the
     first slide in a scope allocates it (sized for `capacity=`, the largest region it will hold) and loads.
All state lives in a `Session`; two sessions never interfere.

This module holds the Session: its tensors, scopes, computes and end (`finish`), and what the memory levels below
the SRAM may use of it (the `LevelHost` protocol of level_host.py). Its SRAM accesses are its base class
`SramAccess` (sram_access.py); the scope handle is scope.py, DDR tensors traced_array.py, tiles tile.py, index
normalisation regions.py, a tensor's live buffers live_buffers.py and its stored elements stored_elements.py, the
counters counters.py; the compiled core (_core.pyx) is the fast path of the common cases (`_bind_core` below).
"""

from __future__ import annotations

try:
    from dsasim.traced import _core  # noqa: F401  (first: every module below needs it)
except ImportError as err:  # a source tree used without `pip install -e .`
    raise ImportError(f"dsasim's compiled core (dsasim/traced/_core.pyx) is not built ({err}); run `pip install "
                      f"-e .` in the repository (it compiles dsasim/**/*.pyx with Cython and gcc)") from err

import os
import sys
from typing import Any, Mapping

import numpy as np

from dsasim.errors import LevelError, SessionFinishedError, SessionStateError, SramOverflowError, UnfinishedError
from dsasim.hardware import SRAM_LEVEL, Accelerator
from dsasim.layout import DEFAULT_LAYOUT, LAYOUTS, check_layout
from dsasim.traced.counters import Counters
from dsasim.traced.levels import LevelState, check_role
from dsasim.traced.scope import GlobalHierarchy, Scope
from dsasim.traced.sram_access import ScopeInstance, SramAccess
from dsasim.traced.tile import Buffer, PendingCompute, Tile
from dsasim.traced.trace import NullLog, ScopeInfo, TensorInfo, Trace
from dsasim.traced.traced_array import TracedArray, check_shape, check_tensor_name
from dsasim.util import is_int, numpy_hugepages_for_tensor_data, region_elements, whole_region

__all__ = ["Session"]

_NO_LIMIT = 2 ** 63 - 1  # the C-integer limits' "none": `Session._sram_limit` when capacity is not enforced

class Session(SramAccess):
    """One run of a schedule: hardware, tensors, live SRAM state, counters and the trace.

    numeric=False is count-only mode: no data, no arithmetic, the same events and counts.
    scope_ways maps scope names to buffering ways, overriding what the schedule declares (`scope_buffers` is an
    alias of it: pass one of them).
    enforce_capacity=False lets a schedule exceed sram_bytes (to measure how much SRAM it would need).
    trace_event_limit: past this many events the trace is dropped (`trace_dropped` is set) to bound memory;
    counters are unaffected.
    blog_quirks=True makes the blog's counter count regions as the schedule wrote them, before clamping (the
    blog's TracedArray did; `dsasim demo --blog-quirks`); schedules read it to tile like the blog
    (`Segments(..., clamp=not s.blog_quirks)`). Honest traffic does not depend on it.
    """

    def __init__(self, hardware: Accelerator, numeric: bool = True, record_trace: bool = True,
                 scope_ways: Mapping[str, int] | None = None, dtype: Any = np.float32,
                 enforce_capacity: bool = True, trace_event_limit: int | None = None,
                 blog_quirks: bool = False, scope_buffers: Mapping[str, int] | None = None,
                 layouts: Mapping[str, str] | None = None) -> None:
        if not isinstance(hardware, Accelerator):
            raise TypeError(f"Session needs an Accelerator, got {type(hardware).__name__}; pass e.g. "
                            f"preset(\"blog\") or load_hardware(path)")
        for flag, value in (("numeric", numeric), ("record_trace", record_trace),
                            ("enforce_capacity", enforce_capacity), ("blog_quirks", blog_quirks)):
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"Session {flag} must be True or False, got {value!r}")
        if trace_event_limit is not None and (not is_int(trace_event_limit) or trace_event_limit < 0):
            raise ValueError(f"Session trace_event_limit must be None or an integer >= 0 (events), got "
                             f"{trace_event_limit!r}")
        try:
            floating = np.issubdtype(np.dtype(dtype), np.floating)
        except TypeError:
            floating = False
        if not floating:
            raise ValueError(f"Session dtype must be a numpy floating dtype (e.g. np.float32) for the numeric check, "
                             f"got {dtype!r}; an integer dtype would truncate every product")
        # messages name the argument the caller used
        self._scope_ways_arg = "scope_ways" if scope_buffers is None else "scope_buffers"
        if scope_buffers is not None:
            if scope_ways is not None:
                raise ValueError("Session: pass scope_ways or its alias scope_buffers, not both")
            scope_ways = scope_buffers
        if scope_ways is not None and not isinstance(scope_ways, Mapping):
            raise ValueError(f"Session {self._scope_ways_arg} must map scope names to buffering ways, e.g. "
                             f"{{\"tile\": 2}}, got {type(scope_ways).__name__}")
        if layouts is not None and not isinstance(layouts, Mapping):
            raise ValueError(f"Session layouts must map tensor names to layouts ({', '.join(LAYOUTS)}), e.g. "
                             f"{{\"image\": \"NHWC\"}}, got {type(layouts).__name__}")
        self.layouts = dict(layouts or {})
        for name, layout in self.layouts.items():
            check_layout(name, None, layout)  # the rank is checked when the tensor is made
        self.blog_quirks = bool(blog_quirks)
        self.hardware = hardware
        self.numeric = numeric
        self.record_trace = record_trace
        self.dtype = dtype
        self.scope_ways = dict(scope_ways or {})
        for name, ways in self.scope_ways.items():
            if not is_int(ways) or ways < 1:
                raise ValueError(f"{self._scope_ways_arg}[{name!r}] must be an integer >= 1, got {ways!r}")
        self.trace = Trace(hardware.word_bytes)
        self._log = self.trace.log if record_trace else _NULL_LOG  # where events go (see trace.py)
        # (an int the core compares as a C integer: a limit past 2**63 - 1 events is no limit)
        self._trace_event_limit = min(int(trace_event_limit), _NO_LIMIT) if record_trace and \
            trace_event_limit is not None else None
        self.trace_dropped = False
        self.counters = Counters()
        self.tensors: dict[str, TracedArray] = {}
        self._stack: list[ScopeInstance] = []
        self._scope_ids: dict[tuple[int, str], int] = {}
        self._scope_instances: list[int] = []
        self._next_buffer = 0
        self._live_bytes = 0
        self._word_bytes = hardware.word_bytes
        self._sram_limit = hardware.sram_bytes if enforce_capacity else _NO_LIMIT
        self._kept: dict[int, tuple[int, int]] = {}  # buffer id -> its [start, end) bytes (`keep_on_chip`)
        self._used_scopes: set[str] = set()
        # computes created but not yet written into a tile, keyed by themselves (identity: no id() integer each)
        self.pending_products: dict[Any, Any] = {}
        self.finished = False
        self._broken: str | None = None  # why the session refuses further use (see _abandon)
        # per tensor id, its strided buffers (`_access_strided`): kept out of `TracedArray.live`, whose compiled hit
        # test reads a region as a dense box; freed ones are skipped (and dropped) when the list is next read
        self._strided: dict[int, list[Buffer]] = {}
        self._levels = (LevelState(hardware, enforce_capacity)
                        if hardware.inner_levels else None)
        if self._levels is not None:  # levels: `_access_levels` (the compiled core takes its hits: `_core.getitem`)
            self.counters.levels = self._levels.traffic
            self.access = self._access_levels  # type: ignore[method-assign]
            self._exit_scope = self._exit_scope_py  # type: ignore[method-assign]

    # -- tensors -------------------------------------------------------------------------------------------
    def _new_tensor(self, name: str, shape: tuple[int, ...], data: np.ndarray | None, writable: bool,
                    must_be_written: bool, scratch: bool, role: str | None = None) -> TracedArray:
        if name in self.tensors:
            raise ValueError(f"a tensor named {name!r} already exists in this session; names must be unique")
        shape = check_shape(name, shape)
        layout = check_layout(name, shape, self.layouts.get(name, DEFAULT_LAYOUT))
        if scratch and layout != DEFAULT_LAYOUT:
            raise ValueError(f"tensor {name!r} is on chip, never in DDR: a DDR layout ({layout!r}) means nothing "
                             f"for it; leave it out of layouts")
        arr = TracedArray(self, len(self.trace.tensors), name, shape, writable, must_be_written, scratch, data)
        self.trace.tensors.append(TensorInfo(name, shape, writable, scratch, layout))
        self.trace.log.add_tensor(len(shape))
        self.counters.per_tensor[name] = arr.traffic
        self.tensors[name] = arr
        if self._levels is not None:
            self._levels.roles[arr.id] = None if scratch else "output" if writable else role
        return arr

    def input(self, name: str, data: np.ndarray | tuple[int, ...], role: str = "input") -> TracedArray:
        """A read-only DDR tensor: numpy data in numeric mode, or just a shape (data is then ignored/absent).
        `role` ("input" or "weight") is the TensorCore operand it feeds: on hardware with memory levels below
        the SRAM it decides which of them hold it."""
        check_tensor_name(name)
        check_role(name, role)
        if isinstance(data, np.ndarray):
            shape = check_shape(name, data.shape)
            if self.numeric and not (np.issubdtype(data.dtype, np.number) or data.dtype == bool) \
                    or np.issubdtype(data.dtype, np.complexfloating):
                raise ValueError(f"input {name!r}: data of dtype {data.dtype} cannot be converted to "
                                 f"{np.dtype(self.dtype).name} without losing values; pass real numbers")
            with numpy_hugepages_for_tensor_data():  # (a copy only when the data is not already ours to use)
                values = np.ascontiguousarray(data, dtype=self.dtype) if self.numeric else None
        else:
            if self.numeric:
                raise ValueError(f"input {name!r}: numeric mode needs data (a numpy array), got "
                                 f"{type(data).__name__}; pass an array or use Session(numeric=False) with a shape")
            shape = check_shape(name, data)
            values = None
        return self._new_tensor(name, shape, values, writable=False, must_be_written=False, scratch=False, role=role)

    def output(self, name: str, shape: tuple[int, ...]) -> TracedArray:
        """A writable DDR tensor, zero-initialised, every element of which the schedule must store."""
        check_tensor_name(name)
        shape = check_shape(name, shape)
        with numpy_hugepages_for_tensor_data():
            data = np.zeros(shape, self.dtype) if self.numeric else None
        return self._new_tensor(name, shape, data, writable=True, must_be_written=True, scratch=False)

    def intermediate(self, name: str, shape: tuple[int, ...]) -> TracedArray:
        """A writable DDR tensor passed between stages; unlike an output it need not be fully written."""
        check_tensor_name(name)
        shape = check_shape(name, shape)
        with numpy_hugepages_for_tensor_data():
            data = np.zeros(shape, self.dtype) if self.numeric else None
        return self._new_tensor(name, shape, data, writable=True, must_be_written=False, scratch=False)

    def on_chip(self, name: str, shape: tuple[int, ...]) -> TracedArray:
        """An on-chip-only tensor of logical `shape` (e.g. a fused chain's intermediate): never in DDR.

        Indexing it opens a zeroed buffer of the region in the current scope (no DMA; SRAM it occupies), a region
        a live buffer holds is a hit, and its buffers are dropped, never stored, when their scope exits.
        `slide(region, capacity=)` keeps the overlap of a rotating (line) buffer and opens the new rows as zeros,
        for the schedule to compute: that is how a fused schedule keeps an intermediate's halo between tiles.
        """
        check_tensor_name(name)
        shape = check_shape(name, shape)
        return self._new_tensor(name, shape, None, writable=True, must_be_written=False, scratch=True)

    def scratch(self, name: str, shape: tuple[int, ...], reuse: bool = False) -> Tile:
        """A zeroed on-chip-only buffer in the current scope: SRAM it occupies, no DDR traffic ever.

        The first call fixes the scratch tensor's (largest) shape; later calls may ask for smaller shapes.
        reuse=True takes the buffer this scope already holds for `name` instead of allocating another.
        """
        check_tensor_name(name)
        shape = check_shape(name, shape)
        if type(reuse) is not bool:
            raise ValueError(f"scratch {name!r}: reuse must be True or False, got {reuse!r}")
        arr = self.tensors.get(name)
        if arr is None:
            arr = self._new_tensor(name, shape, None, writable=True, must_be_written=False, scratch=True)
        elif not arr.scratch:
            raise ValueError(f"scratch {name!r}: a DDR tensor of that name exists ({arr}); pick another name")
        if len(shape) != len(arr.shape) or any(d < 1 or d > e for d, e in zip(shape, arr.shape)):
            raise ValueError(f"scratch {name!r}: shape {shape} must fit inside its first shape {arr.shape}")
        region = whole_region(shape)
        inst = self.current_scope(arr, region)
        nbytes = region_elements(region) * self._word_bytes
        buf = inst.held.get(arr.id) if reuse else None
        if buf is None or nbytes > buf.nbytes:
            buf = self._allocate(arr, region, nbytes, inst)
        else:
            buf.generation += 1
            buf.dirty = False
            arr.live.move(buf, region)
        buf.fresh_elements = region_elements(region)  # zeros: the first write of each is not a read
        buf.fresh_mask = None
        if self.numeric:
            buf.data = np.zeros(shape, self.dtype)
        self._log.open(buf.id, arr.id, region, reuse)
        return Tile(buf, region)

    def keep_on_chip(self, arr: TracedArray, address: int) -> Tile:
        """Hold all of on-chip tensor `arr` in one SRAM buffer at byte `address`, outside every scope, until
        `release_kept(tile)` (a network's result kept in the SRAM for the layers that read it).

        Its bytes [address, address + nbytes) must lie above every byte the scopes hold: the scopes' buffers grow
        from address 0 (SRAM is a stack), so while it is held they must stay below `address` (the capacity check's
        limit becomes the lowest kept address). It opens as zeros (an OPEN: no DMA); accesses inside it are hits;
        it is dropped, never stored, when released. One level only: hardware with levels below the SRAM is refused."""
        if not isinstance(arr, TracedArray) or arr.session is not self or not arr.scratch:
            raise ValueError(f"keep_on_chip needs an on-chip tensor of this session (Session.on_chip), got {arr!r}")
        if self._levels is not None:
            raise LevelError("keep_on_chip models one level: on hardware with levels below the SRAM a result read "
                             "by the next layer is staged into the inner levels by role; keep nothing there")
        if not is_int(address) or address < 0:
            raise ValueError(f"keep_on_chip {arr.name}: address must be an integer >= 0, got {address!r}")
        region = whole_region(arr.shape)
        nbytes = region_elements(region) * self._word_bytes
        capacity = self.hardware.sram_bytes
        if address < self._live_bytes or address + nbytes > capacity \
                or any(address < end and start < address + nbytes for start, end in self._kept.values()):
            raise SramOverflowError(
                f"keeping {arr.name} ({nbytes:,} B) at SRAM byte {address:,} overlaps the scopes' live "
                f"{self._live_bytes:,} B, another kept buffer or the end of the SRAM ({capacity:,} B)",
                capacity, nbytes, [])
        if arr.live.by_id:
            raise ValueError(f"keep_on_chip {arr.name}: a scope already holds part of it; keep it before its first "
                             f"access")
        buf = Buffer(self._next_buffer, arr, region, nbytes, nbytes)
        self._next_buffer += 1
        arr.live.add(buf)
        self._log.alloc(buf.id, arr.id, region, nbytes, address, nbytes)
        self._fill(buf, arr, region, region_elements(region), False)  # an on-chip tensor opens as zeros
        self._kept[buf.id] = (address, address + nbytes)
        if self._sram_limit != _NO_LIMIT:
            self._sram_limit = min(start for start, _ in self._kept.values())
        return Tile(buf, region)

    def release_kept(self, tile: Tile) -> None:
        """Free a buffer `keep_on_chip` holds: its bytes are reusable once every operation on it has ended (the
        timing model's FREE); its contents are dropped, never stored."""
        buf = tile.buffer
        if buf.id not in self._kept or buf.freed:
            raise ValueError(f"release_kept: {tile} is not a buffer keep_on_chip holds (or it was released)")
        del self._kept[buf.id]
        buf.freed = True
        buf.dirty = False
        buf.tensor.live.remove(buf)
        self._log.free(buf.id, buf.charged_bytes)
        if self._sram_limit != _NO_LIMIT:
            self._sram_limit = min((start for start, _ in self._kept.values()), default=self.hardware.sram_bytes)

    # -- scopes ----------------------------------------------------------------------------------------------
    def scope(self, name: str | None = None, ways: int | None = None,
              buffers: int | None = None, level: str | None = None) -> Scope:
        """A new scope in this session (same as GlobalHierarchy(session, ...); `buffers` aliases `ways`; `level`
        names a memory level below the SRAM, on hardware that has one)."""
        if name is None:
            caller = sys._getframe(1)
            name = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
        return Scope(self, name, ways, buffers, level)

    def _enter_scope_py(self, name: str, declared_ways: int | None, level: str | None = None) -> ScopeInstance:
        """Open a scope instance (the reference; see `_bind_core`), in the SRAM or (level) an inner level."""
        parent = self._stack[-1] if self._stack else None
        static_key = (parent.scope_id if parent is not None else -1, name)
        scope_id = self._scope_ids.get(static_key)
        if scope_id is None:
            path = (parent.path if parent is not None else ()) + (name,)
            ways = self.scope_ways.get(name, declared_ways if declared_ways is not None else 1)
            if self._levels is not None:
                self._levels.check_ways(path, level, ways)
            scope_id = len(self.trace.scopes)
            self._scope_ids[static_key] = scope_id
            self.trace.scopes.append(ScopeInfo(path, ways, level or SRAM_LEVEL))
            self._scope_instances.append(0)
            self._used_scopes.add(name)
        elif self._levels is not None and self.trace.scopes[scope_id].level != (level or SRAM_LEVEL):
            raise LevelError(f"scope {self.trace.scopes[scope_id].name} was entered at level "
                             f"{self.trace.scopes[scope_id].level} before and now at {level or SRAM_LEVEL}; a scope "
                             f"site keeps its level (give the other one another name)")
        instance = self._scope_instances[scope_id]
        self._scope_instances[scope_id] = instance + 1
        info = self.trace.scopes[scope_id]
        inst = ScopeInstance(scope_id, instance, info.ways, info.path)
        inst.level = level
        self._stack.append(inst)
        self._log.enter(scope_id, instance)
        return inst

    def _exit_scope_py(self, inst: ScopeInstance, exc: BaseException | None) -> None:
        """End a scope instance: store its modified buffers and free them all (exc: what is leaving it, if any)."""
        if not self._stack or self._stack[-1] is not inst:
            if exc is not None:  # do not hide the exception that is unwinding
                return
            raise UnfinishedError("scopes exited out of order; use `with` blocks so they nest")
        if exc is not None:  # (on a poisoned session `_abandon` replaced this method by `_exit_poisoned`)
            self._abandon(inst, exc)
            return
        log = self._log
        try:
            for buf in reversed(inst.buffers):
                if buf.dirty:
                    if buf.level is None:
                        self._store(buf)
                    else:
                        self._levels.write_back(self, buf)
                buf.freed = True
                self._release(buf)
                log.free(buf.id, buf.charged_bytes)
        except BaseException as err:  # e.g. a CoherenceError from a store: the rest of the scope is uncertain
            self._abandon(inst, err)
            raise
        self._stack.pop()
        log.exit(inst.scope_id, inst.instance)
        if self._trace_event_limit is not None and len(self._log) > self._trace_event_limit:
            self._drop_trace()

    def _exit_poisoned(self, inst: ScopeInstance, exc: BaseException | None) -> None:
        """`_exit_scope` of a poisoned session: free without storing; a normal exit is refused after that."""
        if not self._stack or self._stack[-1] is not inst:
            if exc is not None:
                return
            raise UnfinishedError("scopes exited out of order; use `with` blocks so they nest")
        self._abandon(inst, exc)
        if exc is None:  # the user caught the exception and carried on to the end of an outer scope
            raise SessionStateError(self._broken)

    def _abandon(self, inst: ScopeInstance, exc: BaseException | None) -> None:
        """Free a scope left by an exception without storing anything, and refuse all further use.

        The buffers' data is uncertain (a compute may have run halfway), so storing it would count traffic for
        results that may be wrong; keeping the buffers live would let later accesses hit dead data."""
        if self._broken is None:
            first = str(exc).split("\n", 1)[0] if exc is not None else ""
            self._broken = (f"this Session was left in an uncertain state: {type(exc).__name__}"
                            f"{': ' + first if first else ''} was raised inside scope {'/'.join(inst.path)}, "
                            f"whose unstored results were dropped. Counting on would give wrong numbers; "
                            f"start a new Session to run the schedule again")
            self._refuse_further_use(SessionStateError)
            self._exit_scope = self._exit_poisoned  # type: ignore[method-assign]
        log = self._log
        for buf in reversed(inst.buffers):
            if not buf.freed:
                buf.freed = True
                buf.dirty = False
                self._release(buf)
                log.free(buf.id, buf.charged_bytes)
        self._stack.pop()
        log.exit(inst.scope_id, inst.instance)

    def refusal(self) -> SessionStateError:
        """The error a finished or poisoned session raises on further use (call only when `_broken` is set)."""
        return (SessionFinishedError if self.finished else SessionStateError)(self._broken)

    def _refuse_further_use(self, error: type[SessionStateError]) -> None:
        """Make every method that would trace, count or add a tensor raise `error(self._broken)`.

        Instance attributes shadow the methods: the refusal costs the hot path nothing (the compiled core takes
        its Python path whenever `_broken` is set, and that path calls these)."""
        message = self._broken

        def refuse(*_args: Any, **_kwargs: Any) -> Any:
            raise error(message)

        for method in _REFUSED_WHEN_BROKEN:
            setattr(self, method, refuse)

    def _release(self, buf: Buffer) -> None:
        """A freed buffer leaves its tensor's live buffers and its level's footprint."""
        if buf.level is None:
            buf.tensor.live.remove(buf)
            self._live_bytes -= buf.charged_bytes
        else:
            self._levels.release(buf)

    def _drop_trace(self) -> None:
        """Stop recording and free the events (the trace outgrew `trace_event_limit`)."""
        self._log.clear()
        self._log = _NULL_LOG
        self._trace_event_limit = None
        self.trace_dropped = True

    # -- computes --------------------------------------------------------------------------------------------
    def emit_compute(self, unit: str, op: str, out_buffer: int, in_buffers: tuple[int, ...], macs: int,
                     cycles: int, padded_macs: int, accesses: tuple[int, int, int, int, int]) -> None:
        """Append a compute event, with its operand accesses (`count_operands`), and count its MACs and cycles."""
        counters = self.counters
        counters.macs += macs
        counters.padded_macs += padded_macs
        if unit == "tensorcore":
            counters.tensorcore_cycles += cycles
        else:
            counters.vector_cycles += cycles
        self._log.compute(unit, op, out_buffer, in_buffers, macs, cycles, padded_macs, accesses)

    # -- the end -----------------------------------------------------------------------------------------------
    def finish(self) -> Trace:
        """Check that nothing was left behind (open scopes, unstored outputs); return the frozen trace."""
        if self._stack:
            names = ", ".join("/".join(s.path) for s in self._stack)
            raise UnfinishedError(f"scopes still open at the end of the run: {names}; their buffers were never "
                                  f"freed or stored")
        if self._kept:
            raise UnfinishedError(f"{len(self._kept)} buffer(s) held by keep_on_chip were never released "
                                  f"(release_kept); every buffer must be freed before the end")
        if self.pending_products:
            lost = list(self.pending_products.values())
            raise UnfinishedError(f"{len(lost)} compute result(s) were never written into a tile, e.g. {lost[0]!r}; "
                                  f"write them with `out += product` or `out.assign(product)`")
        for arr in self.tensors.values():
            if arr.must_be_written:
                if arr.stored is None:
                    missing, first = arr.nbytes // self._word_bytes, (0,) * len(arr.shape)
                else:
                    missing, first = arr.stored.missing()
                if missing:
                    where = f", first at index {first}"
                    raise UnfinishedError(f"output {arr.name}: {missing} of {arr.nbytes // self._word_bytes} "
                                          f"elements were never stored{where}; the schedule does not cover the "
                                          f"whole output")
        unknown = sorted(set(self.scope_ways) - self._used_scopes)
        if unknown:
            raise ValueError(f"{self._scope_ways_arg} names scope(s) {unknown} that the schedule never entered; scopes "
                             f"it entered: {sorted(self._used_scopes)}")
        stray = sorted(set(self.layouts) - set(self.tensors))
        if stray:
            raise ValueError(f"layouts names tensor(s) {stray} that the schedule never created; its tensors: "
                             f"{sorted(self.tensors)}")
        self.finished = True
        # the returned Trace is the record of this run: nothing may be appended to it after this
        self._broken = ("this Session has finished: finish() returned its Trace, which must not change; start a "
                        "new Session to trace more")
        self._refuse_further_use(SessionFinishedError)
        return self.trace.freeze()

    @property
    def live_sram_bytes(self) -> int:
        """SRAM bytes held by live buffers right now (times buffering ways)."""
        return self._live_bytes

    # -- what the memory levels below the SRAM use of the session (`LevelHost`, `dsasim.traced.levels`) ----------
    @property
    def word_bytes(self) -> int:
        """Bytes per element of this session's hardware."""
        return self._word_bytes

    @property
    def scope_stack(self) -> list[ScopeInstance]:
        """The open scope instances, outermost first (the session's own list: read it, never change it)."""
        return self._stack

    @property
    def event_log(self) -> Any:
        """Where trace events go now: the trace's log, or one that records nothing (no trace, or dropped)."""
        return self._log

    def take_buffer_id(self) -> int:
        """The id of a new buffer (ids grow with allocation, across all levels)."""
        buffer_id = self._next_buffer
        self._next_buffer = buffer_id + 1
        return buffer_id

    # -- what scopes, tiles and compute units read ------------------------------------------------------------
    @property
    def refusal_reason(self) -> str | None:
        """Why this session refuses further use (it finished, or an exception left it uncertain); None while it
        traces."""
        return self._broken

    @property
    def level_state(self) -> LevelState | None:
        """The state of the memory levels below the SRAM (`dsasim.traced.levels`); None on one-level hardware."""
        return self._levels

    def open_scope(self, name: str, declared_ways: int | None, level: str | None) -> ScopeInstance:
        """Open an instance of the scope `name` (`GlobalHierarchy.__enter__`; `_core.scope_enter` is its fast path)."""
        if self._levels is not None and self._broken is None:
            return self._enter_scope_py(name, declared_ways, level)
        return self._enter_scope(name, declared_ways)

    def close_scope(self, inst: ScopeInstance, exc: BaseException | None) -> None:
        """End scope instance `inst`, `exc` the exception leaving it if any (`GlobalHierarchy.__exit__`)."""
        self._exit_scope(inst, exc)

    access = SramAccess._access_py  # (the compiled core replaces these three, see `_bind_core`)
    _enter_scope = _enter_scope_py
    _exit_scope = _exit_scope_py


_NULL_LOG = NullLog()
# the Session methods a poisoned or finished session refuses: every way to trace, count or add a tensor
_REFUSED_WHEN_BROKEN = ("access", "slide", "scratch", "_enter_scope", "_new_tensor", "mark_written", "emit_compute",
                        "finish")

_core.bind(Tile, Session, _NULL_LOG, PendingCompute, SRAM_LEVEL)


def _bind_core(compiled: bool) -> None:
    """Route Session's hot methods to the compiled core (_core.pyx), or to their pure-Python reference (tests)."""
    use = compiled
    Session.access = _core.access if use else Session._access_py  # type: ignore[method-assign]
    Session._enter_scope = _core.enter_scope if use else Session._enter_scope_py  # type: ignore[method-assign]
    Session._exit_scope = _core.exit_scope if use else Session._exit_scope_py  # type: ignore[method-assign]
    TracedArray.__getitem__ = _core.getitem if use else TracedArray._getitem_py  # type: ignore[method-assign]
    Tile.__iadd__ = _core.tile_iadd if use else Tile._iadd_py  # type: ignore[method-assign]
    GlobalHierarchy.__init__ = _core.scope_init if use else GlobalHierarchy._init_py  # type: ignore
    GlobalHierarchy.__enter__ = _core.scope_enter if use else GlobalHierarchy._enter_py  # type: ignore
    GlobalHierarchy.__exit__ = _core.scope_exit if use else GlobalHierarchy._exit_py  # type: ignore


_bind_core(True)
