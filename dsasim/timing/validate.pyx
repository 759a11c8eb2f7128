"""Validation of a trace before it is timed: one pass that rejects what a `Session` can never record.

`lower` (and so `simulate`, with either scheduler) checks each event with `TraceChecker` before it lowers it, so a
hand-built or corrupted trace fails with one `TraceError` naming the event index, the event and what is wrong,
instead of a wrong cycle count or a traceback from deep inside the scheduler. The rules (the trace format of
`dsasim/traced/trace.py`):

  * every event is a tuple whose first field is an `EventKind` and whose length is that kind's field count;
  * ids are Python ints: a tensor id indexes `trace.tensors`, a scope id `trace.scopes`; buffers are numbered
    0, 1, 2, ... in ALLOC order and are used only between their ALLOC and their FREE;
  * a region has one (start, stop) pair of ints per tensor dimension with 0 <= start < stop <= extent, and a
    transfer's or allocation's `nbytes` is its region's elements x `trace.word_bytes`; an access names the
    tensor its buffer was allocated for, and fits the buffer's bytes;
  * an input (read-only tensor) is never OPENed, written by a compute, or STOREd; a compute reads and writes
    only filled buffers; a STORE writes back exactly the region its buffer holds, of a filled buffer (usually one a
    compute modified; `Session.mark_written` may mark a write that needed no arithmetic); a LOAD never overwrites
    modified contents that were not stored;
  * COMPUTE names a known unit ("tensorcore" or "vector") and non-negative integer MACs and cycles;
  * a SLIDE moves a filled buffer of an input along one axis: its new region equals the region it held in every
    dimension but one and fits the buffer, and `nbytes` is the bytes of the new region the buffer did not hold;
  * ENTER/EXIT nest (an EXIT closes the innermost open scope instance, instances count from 0 per scope), a
    scope's buffers are freed before its EXIT, FREE gives back the bytes its ALLOC charged, and at the end every
    scope is closed and every buffer freed.
Memory levels below the SRAM (`hardware.inner_levels`; a scope's level is `ScopeInfo.level`, which the hardware
must have):
  * ALLOC_IN allocates a buffer (numbered with the ALLOC buffers, in allocation order) in the open instance of
    scope `scope_id` (not necessarily the innermost), in that scope's level; it is freed before that instance's
    EXIT. ALLOC allocates an SRAM buffer in the innermost open scope. The live charged bytes of each inner level
    never exceed its `capacity_bytes` (the SRAM is not checked here, as before: the result warns when its timed
    occupancy exceeds `sram_bytes`);
  * LOAD, STORE and SLIDE move data between DDR and SRAM buffers only;
  * a strided region (some dimension a (start, stop, step) triple, step >= 2 and stop = the last index + 1: every
    step-th index from start) is for ALLOC, LOAD and HIT only (a strided DMA box of an SRAM buffer); it holds, and
    its nbytes count, only its indices; a HIT lies in the held region when each dimension's indices are among the
    held ones;
  * STAGE fills an inner buffer from `source`: a live, filled buffer of the parent level of the buffer's level,
    of the same tensor, whose region contains the staged region (which fits the buffer; nbytes = its bytes); like
    a LOAD it never overwrites modified contents that were not written back;
  * WRITEBACK writes the filled inner buffer's region (exactly the region it holds) into `target`: a live, filled
    buffer of the parent level, of the same tensor, whose region contains it; an input is never written back.
    The target is then modified (to be STOREd or written back in turn), the inner buffer clean.
One check per event kind (`TraceChecker.load`, `.compute`, ...), on the event's fields as C integers: the
lowering's handlers (model.pyx) run them first; `validate_trace` runs them alone. A trace recorded by a Session
is read straight from its columnar log (`walk`: no tuple per event; regions are offsets in the log's region
table); a trace of tuples (hand-built, or the reference ListLog) is read by `run`, which checks each field's type
and interns its regions into a region table of its own, then calls the same checks.
"""

from __future__ import annotations

cimport cython
import numpy as np

from dsasim.hardware import Accelerator
from dsasim.traced._events cimport (TENSOR_MASK, Cursor, EventLog, next_event, region_count, region_start,
                                    region_step, region_stepped, region_stop)
from dsasim.hardware import SRAM_LEVEL
from dsasim.traced.trace import (ALLOC, ALLOC_IN, COMPUTE, ENTER, EVENT_TYPES, EXIT, FREE, HIT, LOAD, OPEN, SLIDE,
                                 STAGE, STORE, WRITEBACK, EventKind, Trace, format_region)
from dsasim.timing.errors import TraceError

UNITS = ("tensorcore", "vector")
_FIELD_COUNTS = tuple(len(t._fields) for t in EVENT_TYPES)
_KIND_LIST = ", ".join(f"{e.name}={e.value}" for e in EventKind)
_ID_FIELDS = frozenset({"buffer", "tensor", "out_buffer", "scope_id", "instance", "source", "target"})
cdef int K_LOAD = LOAD, K_COMPUTE = COMPUTE, K_HIT = HIT, K_ALLOC = ALLOC, K_FREE = FREE, K_STORE = STORE
cdef int K_OPEN = OPEN, K_ENTER = ENTER, K_EXIT = EXIT, K_SLIDE = SLIDE
cdef int K_STAGE = STAGE, K_WRITEBACK = WRITEBACK, K_ALLOC_IN = ALLOC_IN
cdef int64_t BAD = INT64_MIN  # a value field of a tuple event that is not an int64 (the value: TraceChecker.bad)


def describe_event(event: object) -> str:
    """A readable one-line form of a trace event, e.g. 'STORE(buffer=0, tensor=1, region=[0:1, 0:8], nbytes=8)';
    falls back to repr (shortened) for anything that is not a well-formed event."""
    try:
        kind = EventKind(event[0])  # type: ignore[index]
        fields = EVENT_TYPES[kind]._fields[1:]
        if len(event) != len(fields) + 1:  # type: ignore[arg-type]
            raise ValueError
        parts = []
        for name, value in zip(fields, event[1:]):  # type: ignore[index]
            if name == "region":
                try:
                    value = format_region(value)
                except (TypeError, ValueError):
                    value = repr(value)
            else:
                value = repr(value)
            parts.append(f"{name}={value}")
        text = f"{kind.name}({', '.join(parts)})"
    except (TypeError, ValueError, IndexError, KeyError):
        text = repr(event)
    return text if len(text) <= 240 else text[:237] + "..."


def _region_problem(region: object, shape: tuple[int, ...]) -> str | None:
    """What is wrong with `region` as a region of a tensor of `shape`, or None if nothing is."""
    if type(region) is not tuple or len(region) != len(shape):
        return (f"region {region!r} must be a tuple of {len(shape)} (start, stop) pairs, one per dimension of "
                f"shape {shape}")
    for dim, (pair, extent) in enumerate(zip(region, shape)):
        if not isinstance(pair, tuple) or len(pair) not in (2, 3):
            return f"dimension {dim} of the region is {pair!r}, not a (start, stop) pair or (start, stop, step)"
        if any(type(v) is not int for v in pair):
            return f"dimension {dim} of the region is {pair!r}: bounds must be Python ints (element indices)"
        start, stop = pair[0], pair[1]
        if not 0 <= start < stop <= extent:
            return f"dimension {dim} of the region is {start}:{stop}, empty or outside 0:{extent}"
        if len(pair) == 3 and (pair[2] < 2 or (stop - 1 - start) % pair[2]):
            return (f"dimension {dim} of the region is {pair!r}: a strided dimension has a step >= 2 and stops "
                    f"just after its last index (start + a multiple of step, + 1); write a dense one as a pair")
    return None


def validate_trace(trace: Trace, hardware: Accelerator) -> None:
    """Check that `trace` is a well-formed trace for `hardware` (rules: module docstring); raise TraceError."""
    TraceChecker(trace, hardware).check(trace)


# every id a per-event check indexes with is checked first (or comes from a checked event), so its C arrays are
# read without Cython's bounds and wraparound checks; `run` keeps them: it indexes a tuple event as it came
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.initializedcheck(False)
cdef class TraceChecker:
    """The state of validation while it walks a trace, and one check per event kind (`load`, `compute`, `hit`,
    `alloc`, `free`, `store`, `open`, `enter`, `exit`); `check(trace)` checks a whole trace, `run(idx, event)` one
    event tuple, `finish()` the end. Attributes: validate.pxd."""

    def __init__(self, trace: Trace, hardware: Accelerator) -> None:
        if trace.word_bytes != hardware.word_bytes:
            raise TraceError(f"the trace was recorded with {trace.word_bytes}-byte words but {hardware.name!r} has "
                             f"{hardware.word_bytes}-byte words; trace the schedule on the hardware you time it on")
        self.scopes = list(trace.scopes)
        levels = hardware.levels  # the SRAM first, then the inner levels, parents before children
        self.level_names = [lv.name for lv in levels]
        self.n_levels = len(levels)
        self.level_parent_a = np.array([-1] + [self.level_names.index(lv.parent) for lv in levels[1:]], np.int64)
        self.level_capacity_a = np.array([lv.capacity_bytes for lv in levels], np.int64)
        self.level_live_a = np.zeros(self.n_levels, np.int64)
        self.level_parent, self.level_capacity, self.level_live = (self.level_parent_a, self.level_capacity_a,
                                                                   self.level_live_a)
        scope_levels = []
        for scope in self.scopes:
            name = getattr(scope, "level", SRAM_LEVEL)
            if name not in self.level_names:
                raise TraceError(f"trace scope {scope.name!r} lives in memory level {name!r}, but hardware "
                                 f"{hardware.name!r} has the levels {self.level_names}; trace the schedule on the "
                                 f"hardware you time it on")
            scope_levels.append(self.level_names.index(name))
        self.scope_level_a = np.array(scope_levels or [0], np.intc)
        self.scope_level = self.scope_level_a
        self.shapes = [tuple(t.shape) for t in trace.tensors]
        self.names = [t.name for t in trace.tensors]
        self.n_tensors, self.n_scopes = len(self.shapes), len(self.scopes)
        self.writable = np.array([bool(t.writable) for t in trace.tensors] or [False], np.uint8)
        self.on_chip = np.array([bool(getattr(t, "on_chip", False)) for t in trace.tensors] or [False], np.uint8)
        self.ndim = np.array([len(shape) for shape in self.shapes] or [0], np.int64)
        self.shape_at = np.concatenate([[0], np.cumsum(self.ndim)]).astype(np.int64)
        self.dims = np.array([d for shape in self.shapes for d in shape] or [0], np.int64)
        self.word = trace.word_bytes
        columnar = trace._events is None and isinstance(trace.log, EventLog)
        if columnar:
            self.log = trace.log
        else:
            self.log = EventLog(trace.word_bytes)
            for shape in self.shapes:
                self.log.add_tensor(len(shape))
        self.interned = [{} for _ in self.shapes]  # per tensor: region tuple -> its offset in our table
        self.kinds = {int(kind): int(kind) for kind in EventKind}
        self.n_buf = 0
        self.grow_buffers(max(16, self.log.kind_counts()[K_ALLOC] + self.log.kind_counts()[K_ALLOC_IN])
                          if columnar else 256)  # (exact: no regrowth)
        self.n_open = 0
        self.open_a = np.zeros((64, 3), np.int64)  # the open scopes, innermost last: (scope id, instance, live)
        self.open_stack = self.open_a
        self.next_instance = np.zeros(max(1, self.n_scopes), np.int64)
        self.cur_word = NULL
        self.ins_a = np.zeros(16, np.int64)
        self.ins = self.ins_a

    cdef void grow_buffers(self, Py_ssize_t cap) except *:
        self.buf_cap = cap
        self.b_tensor_a, self.b_scope_a, self.b_level_a = [_grown(a, cap, np.intc) for a in (
            self.b_tensor_a, self.b_scope_a, self.b_level_a)]
        self.b_nbytes_a, self.b_charged_a, self.b_region_a, self.b_held_a = [_grown(a, cap, np.int64) for a in (
            self.b_nbytes_a, self.b_charged_a, self.b_region_a, self.b_held_a)]
        self.b_state_a = _grown(self.b_state_a, cap, np.int8)
        self.b_tensor, self.b_scope, self.b_state, self.b_level = (self.b_tensor_a, self.b_scope_a, self.b_state_a,
                                                                   self.b_level_a)
        self.b_nbytes, self.b_charged, self.b_region, self.b_held = (self.b_nbytes_a, self.b_charged_a,
                                                                     self.b_region_a, self.b_held_a)

    # -- reading events ------------------------------------------------------------------------------------------
    cpdef check(self, object trace):
        """Check every event of `trace`, then its end."""
        cdef Py_ssize_t idx = 0
        if trace._events is None and trace.log is self.log:
            self.walk(self.log)
        else:
            for event in trace.events:
                self.run(idx, event)
                idx += 1
        self.finish()

    cdef int walk(self, EventLog log) except -1:
        """Check every event of a columnar log, reading its words (fields are int64 by construction; a COMPUTE's
        unit and costs are Python objects in the log's table: they are checked once per distinct COMPUTE)."""
        cdef Py_ssize_t idx = 0
        cdef Cursor at = Cursor(0, 0, len(log))
        cdef int64_t* w
        cdef int64_t head, kind, ident, second, cid
        # each distinct COMPUTE (unit, op, macs, cycles, padded_macs, then its accesses) of the log's table, checked
        # and unpacked once
        units = np.array([UNITS.index(e[0]) if e[0] in UNITS else -1 for e in log.computes] or [0], np.intc)
        costs = np.array([e[2:5] for e in log.computes] or [(0, 0, 0)], np.int64).reshape(-1, 3)
        cdef int[::1] unit = units
        cdef int64_t[:, ::1] cost = costs
        w = next_event(log, &at)
        while w != NULL:
            self.cur_word = w
            head = w[0]
            kind = head & 15
            ident = head >> 8
            second = w[1]
            if kind == K_LOAD:
                self.load(idx, ident, second & TENSOR_MASK, second >> 24, 0, False, (head >> 4) & 1)
            elif kind == K_HIT:
                self.hit(idx, ident, second & TENSOR_MASK, second >> 24, (head >> 4) & 1)
            elif kind == K_COMPUTE:
                cid = second & ((<int64_t>1 << 40) - 1)
                if unit[cid] < 0:  # (an unknown unit: `run` says so)
                    self.cur_word = NULL
                    self.run(idx, log.decode(w))
                self.compute(idx, unit[cid], ident, w + 2, second >> 40, cost[cid, 0], cost[cid, 1],
                             cost[cid, 2])
            elif kind == K_ALLOC:
                self.alloc(idx, ident, second & TENSOR_MASK, second >> 24, 0, False, w[2], w[3])
            elif kind == K_FREE:
                self.free(idx, ident, second)
            elif kind == K_STORE:
                self.store(idx, ident, second & TENSOR_MASK, second >> 24, 0, False)
            elif kind == K_OPEN:
                self.open(idx, ident, second & TENSOR_MASK, second >> 24, (head >> 4) & 1)
            elif kind == K_ENTER:
                self.enter(idx, ident, second)
            elif kind == K_SLIDE:
                self.slide(idx, ident, second & TENSOR_MASK, second >> 24, w[2])
            elif kind == K_STAGE:
                self.stage(idx, ident, second & TENSOR_MASK, second >> 24, 0, False, w[2])
            elif kind == K_WRITEBACK:
                self.writeback(idx, ident, second & TENSOR_MASK, second >> 24, 0, False, w[2])
            elif kind == K_ALLOC_IN:
                self.alloc_in(idx, ident, second & TENSOR_MASK, second >> 24, 0, False, w[2], w[3], w[4])
            else:
                self.exit(idx, ident, second)
            idx += 1
            w = next_event(log, &at)
        self.cur_word = NULL
        return 0

    @cython.boundscheck(True)
    @cython.wraparound(True)
    cpdef int run(self, Py_ssize_t idx, object event) except -1:
        """Check one event tuple (the idx-th of the trace): its fields' types, then its kind's check; its kind."""
        cdef int k
        cdef Py_ssize_t i, n_in
        cdef int64_t t
        self.cur_event, self.bad = event, None
        try:
            kind = event[0]
            if type(kind) is not int or not 0 <= kind <= K_ALLOC_IN:
                kind = self.kinds.get(kind)  # a dict: 3.0 or True find LOAD or EXIT, as == would
                if kind is None:
                    raise self.fail(idx, f"unknown event kind {event[0]!r}; kinds are {_KIND_LIST}")
            k = kind
            if len(event) != _FIELD_COUNTS[k]:
                raise ValueError("field count")
            if k == K_LOAD or k == K_OPEN or k == K_HIT or k == K_STORE or k == K_ALLOC or k == K_SLIDE or \
                    k == K_STAGE or k == K_WRITEBACK or k == K_ALLOC_IN:
                b, t_obj, reg = _int_id(event[1]), _int_id(event[2]), event[3]
                t = t_obj
                if (k == K_ALLOC or k == K_ALLOC_IN) and not 0 <= t < self.n_tensors:
                    raise self.fail(idx, f"tensor id {t} is not one of the trace's {self.n_tensors} tensors")
                r = self.region_id(idx, t, reg, k == K_HIT) if 0 <= t < self.n_tensors else NO_REGION
                if k == K_LOAD:
                    self.load(idx, b, t, r, self.value(event[4]), True, _flag(event[5]))
                elif k == K_OPEN:
                    self.open(idx, b, t, r, _flag(event[4]))
                elif k == K_HIT:
                    self.hit(idx, b, t, r, _flag(event[4]))
                elif k == K_STORE:
                    self.store(idx, b, t, r, self.value(event[4]), True)
                elif k == K_SLIDE:
                    self.slide(idx, b, t, r, self.value(event[4]))
                elif k == K_STAGE:
                    self.stage(idx, b, t, r, self.value(event[4]), True, _int_id(event[5]))
                elif k == K_WRITEBACK:
                    self.writeback(idx, b, t, r, self.value(event[4]), True, _int_id(event[5]))
                elif k == K_ALLOC_IN:
                    self.alloc_in(idx, b, t, r, self.value(event[4]), True, self.value(event[5]),
                                  self.value(event[6]), _int_id(event[7]))
                else:
                    self.alloc(idx, b, t, r, self.value(event[4]), True, self.value(event[5]),
                               self.value(event[6]))
            elif k == K_COMPUTE:
                _, unit, _opname, out, ins, macs, cycles, padded = event
                if unit != "tensorcore" and unit != "vector":
                    raise self.fail(idx, f"unknown compute unit {unit!r}; units are {', '.join(map(repr, UNITS))}")
                if type(ins) is not tuple:
                    raise self.fail(idx, f"in_buffers must be a tuple of buffer ids, got {ins!r}")
                n_in = len(ins)
                if n_in > len(self.ins_a):
                    self.ins_a = np.zeros(2 * n_in, np.int64)
                    self.ins = self.ins_a
                for i in range(n_in):
                    self.ins[i] = self.value(ins[i])
                self.compute(idx, 0 if unit == "tensorcore" else 1, _int_id(out), &self.ins[0], n_in,
                             self.value(macs), self.value(cycles), self.value(padded))
            elif k == K_FREE:
                self.free(idx, _int_id(event[1]), self.value(event[2]))
            elif k == K_ENTER:
                self.enter(idx, _int_id(event[1]), _int_id(event[2]))
            else:
                self.exit(idx, _int_id(event[1]), _int_id(event[2]))
            return k
        except TraceError:
            raise
        except (TypeError, ValueError, IndexError, KeyError, OverflowError) as err:
            raise self.fail(idx, _malformed(event, err, self.shapes)) from None

    cdef int64_t value(self, object x) except? -1:
        """A value field of a tuple event as an int64; BAD (remembered in `bad` for the message) if it is not one."""
        if type(x) is int and -(1 << 62) <= x < (1 << 62):
            return x
        if self.bad is None:
            self.bad = (x,)
        return BAD

    cdef object shown(self, int64_t value):
        """A field's value as the event had it (repr)."""
        return repr(self.bad[0]) if value == BAD and self.bad is not None else repr(value)

    cdef int64_t region_id(self, Py_ssize_t idx, int64_t t, object reg, bint hit) except? -2:
        """A tuple event's region of tensor t as an offset in our region table, checked once per distinct region;
        a HIT region of int pairs outside the tensor is NO_REGION (its check says it lies in no buffer)."""
        cdef dict known = self.interned[t]
        shape = self.shapes[t]
        if _int_pairs(reg, len(shape)):  # (first: 8.0 would find 8 in the dict)
            offset = known.get(reg)
            if offset is not None:
                return offset
        problem = _region_problem(reg, shape)
        if problem is not None:
            if hit and _int_pairs(reg, len(shape)):
                return NO_REGION
            raise self.fail(idx, f"{problem} (tensor {self.names[t]!r} has shape {shape})")
        offset = self.log._region(t, reg)
        known[reg] = offset
        return offset

    cdef tuple region(self, int64_t t, int64_t reg):
        """The region at offset `reg` of the region table, as a tuple of (start, stop) pairs."""
        return self.log.region_at(reg, self.ndim[t])

    cdef object fail(self, Py_ssize_t idx, str what):
        """The TraceError for the event being checked."""
        event = self.log.decode(self.cur_word) if self.cur_word != NULL else self.cur_event
        return TraceError(f"trace event {idx} {describe_event(event)}: {what}")

    cpdef finish(self):
        """The end of the trace: every scope closed, every buffer freed."""
        cdef Py_ssize_t b
        if self.n_open:
            scope_id, instance = self.open_stack[self.n_open - 1, 0], self.open_stack[self.n_open - 1, 1]
            raise TraceError(f"the trace ends with scope {scope_id} ({self.scopes[scope_id].name!r}) instance "
                             f"{instance} still open (ENTER without EXIT); a finished session closes every scope")
        for b in range(self.n_buf):
            if self.b_state[b] != FREED:
                t = self.b_tensor[b]
                raise TraceError(f"buffer {b} ({self.names[t]}{format_region(self.region(t, self.b_region[b]))}) "
                                 f"is never freed: every ALLOC needs a FREE (its scope must end) before the trace "
                                 f"ends")

    # -- checks shared by several kinds --------------------------------------------------------------------------
    cdef int live(self, Py_ssize_t idx, int64_t b, str role = "buffer") except -1:
        """`b` is an allocated buffer not yet freed."""
        if 0 <= b < self.n_buf and self.b_state[b] != FREED:
            return 0
        if not 0 <= b < self.n_buf:
            raise self.fail(idx, f"{role} {self.shown(b)} was never allocated (buffers are numbered 0, 1, ... by "
                                 f"their ALLOC events; {self.n_buf} so far)")
        raise self.fail(idx, f"{role} {b} ({self.names[self.b_tensor[b]]}) is used after its FREE")

    cdef int access(self, Py_ssize_t idx, int64_t b, int64_t t) except -1:
        """LOAD, OPEN, HIT, STORE: a live buffer, named with the tensor it was allocated for."""
        self.live(idx, b)
        cdef int64_t bt = self.b_tensor[b]
        if t != bt:
            shown = repr(self.names[t]) if 0 <= t < self.n_tensors else "not a tensor id"
            raise self.fail(idx, f"tensor {t} ({shown}) is not the tensor of buffer {b} ({self.names[bt]!r}, "
                                 f"tensor {bt}); an access names the tensor its buffer was allocated for")

    cdef int64_t region_bytes(self, Py_ssize_t idx, int64_t t, int64_t reg) except -1:
        """The bytes of the region at offset `reg`, which must be a region of tensor t."""
        cdef int64_t* r = self.log.regions.at(reg)
        cdef int64_t i, n = self.word, at = self.shape_at[t], nd = self.ndim[t]
        for i in range(nd):
            if not 0 <= region_start(r, i) < region_stop(r, i) <= self.dims[at + i] or \
                    (region_stop(r, i) - 1 - region_start(r, i)) % region_step(r, nd, i):
                shape = self.shapes[t]
                raise self.fail(idx, f"{_region_problem(self.region(t, reg), shape)} (tensor {self.names[t]!r} has "
                                     f"shape {shape})")
            n *= region_count(r, nd, i)  # (a strided dimension: only its indices)
        return n

    cdef int dense(self, Py_ssize_t idx, int64_t t, int64_t reg, str what) except -1:
        """The region at offset `reg` is not strided: only ALLOC, LOAD and HIT take strided regions."""
        if reg >= 0 and region_stepped(self.log.regions.at(reg)):
            raise self.fail(idx, f"a strided region {format_region(self.region(t, reg))} in a {what}: only an "
                                 f"ALLOC, LOAD or HIT (a strided DMA box of an SRAM buffer) takes one; "
                                 f"{what} dense (start, stop) boxes")
        return 0

    cdef bint same_region(self, int64_t t, int64_t a, int64_t b):
        """Whether the regions at offsets a and b of tensor t are equal."""
        if a == b:
            return True
        cdef int64_t* ra = self.log.regions.at(a)
        cdef int64_t* rb = self.log.regions.at(b)
        cdef int64_t i, nd = self.ndim[t]
        for i in range(nd):
            if ra[i] != rb[i] or region_step(ra, nd, i) != region_step(rb, nd, i):  # (the mark is in ra[0])
                return False
        return True

    cdef int64_t fill_bytes(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg) except -1:
        """LOAD, OPEN: the bytes of the filled region, which must fit the buffer."""
        if reg == self.b_region[b]:
            return self.b_held[b]
        cdef int64_t need = self.region_bytes(idx, t, reg)
        if need > self.b_nbytes[b]:
            raise self.fail(idx, f"{need:,} B do not fit buffer {b} ({self.b_nbytes[b]:,} B)")
        return need

    cdef int reuse_flag(self, Py_ssize_t idx, int reuse) except -1:
        if reuse < 0:
            flag = self.cur_event[len(self.cur_event) - 1]
            raise self.fail(idx, f"the reuse flag must be True or False, got {flag!r}")

    cdef int nbytes(self, Py_ssize_t idx, int64_t nb, int64_t need) except -1:
        if nb != need:
            raise self.fail(idx, f"nbytes is {self.shown(nb)}, but the region holds {need} B ({need // self.word} "
                                 f"elements x {self.word}-byte words)")

    # -- one check per event kind --------------------------------------------------------------------------------
    cdef int load(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                  int reuse) except -1:
        self.access(idx, b, t)
        self.in_sram(idx, b, "LOAD into")
        cdef int64_t need = self.fill_bytes(idx, b, t, reg)
        if has_nb:
            self.nbytes(idx, nb, need)
        if self.b_state[b] == MODIFIED:
            raise self.fail(idx, f"LOAD into buffer {b}, whose modified contents were never stored: a STORE must "
                                 f"come first, or the results are lost")
        self.reuse_flag(idx, reuse)
        self.b_region[b], self.b_held[b], self.b_state[b] = reg, need, CLEAN

    cdef int open(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int reuse) except -1:
        self.access(idx, b, t)
        self.dense(idx, t, reg, "OPEN")
        if not self.writable[t]:
            raise self.fail(idx, f"{self.names[t]!r} is an input (read-only): an OPEN (a zeroed region, no DMA) is "
                                 f"only for outputs, intermediates and scratch tensors; an input is LOADed")
        cdef int64_t need = self.fill_bytes(idx, b, t, reg)
        self.reuse_flag(idx, reuse)
        self.b_region[b], self.b_held[b], self.b_state[b] = reg, need, CLEAN

    cdef int hit(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int reuse) except -1:
        self.access(idx, b, t)
        if self.b_state[b] == UNFILLED:
            raise self.fail(idx, f"a HIT on buffer {b}, which nothing filled yet (LOAD or OPEN)")
        cdef int64_t held = self.b_region[b], i, nd = self.ndim[t], h_step
        cdef int64_t* r
        cdef int64_t* h
        if reg != held:
            r, h = self.log.regions.at(reg) if reg != NO_REGION else NULL, self.log.regions.at(held)
            for i in range(nd):
                h_step = region_step(h, nd, i) if r != NULL else 1
                # inside the held bounds, and on the held indices: every step-th from its start (a strided
                # hit's step a multiple of the held step, or a single index)
                if r == NULL or not (region_start(h, i) <= region_start(r, i) < region_stop(r, i)
                                     <= region_stop(h, i)) or \
                        (region_start(r, i) - region_start(h, i)) % h_step or \
                        (region_count(r, nd, i) > 1 and region_step(r, nd, i) % h_step):
                    raise self.fail(idx, f"a HIT region must lie inside the region its buffer {b} holds, "
                                         f"{format_region(self.region(t, held))}")
        self.reuse_flag(idx, reuse)

    cdef int compute(self, Py_ssize_t idx, int unit, int64_t out, int64_t* ins, Py_ssize_t n_in, int64_t macs,
                     int64_t cycles, int64_t padded) except -1:
        cdef Py_ssize_t i
        cdef int64_t b, t
        if cycles < 0:
            raise self.fail(idx, f"cycles must be an integer >= 0, got {self.shown(cycles)}")
        if macs < 0 or padded < 0:
            raise self.fail(idx, f"macs and padded_macs must be integers >= 0, got {self.shown(macs)} and "
                                 f"{self.shown(padded)}")
        if padded < macs and unit == 0:
            raise self.fail(idx, f"padded_macs ({padded}) < macs ({macs}): the TensorCore's padded MACs include the "
                                 f"useful ones")
        for i in range(n_in):
            b = ins[i]
            self.live(idx, b, "input buffer")
            if self.b_state[b] == UNFILLED:
                raise self.fail(idx, f"reads buffer {b} ({self.names[self.b_tensor[b]]}) before anything filled "
                                     f"it (LOAD or OPEN)")
        self.live(idx, out, "output buffer")
        t = self.b_tensor[out]
        if not self.writable[t]:
            raise self.fail(idx, f"writes buffer {out} of {self.names[t]!r}, an input (read-only); computes write "
                                 f"outputs, intermediates or scratch tensors")
        if self.b_state[out] == UNFILLED:
            raise self.fail(idx, f"writes buffer {out} ({self.names[t]}) before it was filled (LOAD or OPEN)")
        self.b_state[out] = MODIFIED

    cdef int store(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb) except -1:
        self.access(idx, b, t)
        self.dense(idx, t, reg, "STORE")
        self.in_sram(idx, b, "STORE of")
        if not self.writable[t]:
            raise self.fail(idx, f"{self.names[t]!r} is an input (read-only): nothing may be stored to it")
        cdef int64_t held = self.b_region[b]
        if not self.same_region(t, reg, held):
            raise self.fail(idx, f"a STORE writes back the region its buffer holds, "
                                 f"{format_region(self.region(t, held))}, not {format_region(self.region(t, reg))}")
        if has_nb:
            self.nbytes(idx, nb, self.b_held[b])
        # a filled buffer may be stored with no COMPUTE since its fill: Session.mark_written records a write that
        # needs no arithmetic (an all-padding window leaves an opened tile's zeros to store)
        if self.b_state[b] == UNFILLED:
            raise self.fail(idx, f"STORE of buffer {b}, which nothing filled or computed since it was allocated; "
                                 f"only filled, written buffers are written back")
        self.b_state[b] = CLEAN

    cdef int alloc(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                   int64_t address, int64_t charged) except -1:
        """ALLOC: an SRAM buffer of the innermost open scope (-1: none)."""
        self.new_buffer(idx, b, t, reg, nb, has_nb, address, charged, self.n_open - 1, 0)

    cdef int alloc_in(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                      int64_t address, int64_t charged, int64_t scope_id) except -1:
        """ALLOC_IN: a buffer of the open instance of scope `scope_id`, in that scope's level."""
        self.dense(idx, t, reg, "ALLOC_IN")
        cdef Py_ssize_t depth = self.n_open - 1
        while depth >= 0 and self.open_stack[depth, 0] != scope_id:
            depth -= 1
        if depth < 0:
            if not 0 <= scope_id < self.n_scopes:
                raise self.fail(idx, f"scope id {scope_id} is not one of the trace's {self.n_scopes} scopes")
            raise self.fail(idx, f"ALLOC_IN into scope {scope_id} ({self.scopes[scope_id].name!r}), which is not open "
                                 f"(no ENTER of it, or its EXIT came already); a buffer belongs to an open scope "
                                 f"instance")
        self.new_buffer(idx, b, t, reg, nb, has_nb, address, charged, depth, self.scope_level[scope_id])

    cdef int new_buffer(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                        int64_t address, int64_t charged, Py_ssize_t depth, int level) except -1:
        """An ALLOC or ALLOC_IN of buffer b in memory level `level`, owned by the scope at `depth` in the stack."""
        if b != self.n_buf:
            raise self.fail(idx, f"ALLOC of buffer {b}, expected buffer {self.n_buf} (buffers are numbered in "
                                 f"allocation order)")
        if not 0 <= t < self.n_tensors:
            raise self.fail(idx, f"tensor id {t} is not one of the trace's {self.n_tensors} tensors")
        cdef int64_t need = self.region_bytes(idx, t, reg)
        if has_nb:
            self.nbytes(idx, nb, need)
        if address < 0:
            raise self.fail(idx, f"address must be an integer >= 0 (a byte offset in "
                                 f"{self.level_names[level]}), got {self.shown(address)}")
        if charged < need or charged % need:
            raise self.fail(idx, f"charged_bytes must be nbytes x ways (a positive multiple of {need}), got "
                                 f"{self.shown(charged)}")
        if level > 0 and self.level_live[level] + charged > self.level_capacity[level]:
            raise self.fail(idx, f"{self.level_names[level]} overflows: {self.level_live[level]:,} B live + "
                                 f"{charged:,} B charged here > its capacity {self.level_capacity[level]:,} B; use smaller tiles "
                                 f"or tighter scopes in {self.level_names[level]}")
        if b == self.buf_cap:
            self.grow_buffers(2 * self.buf_cap)
        self.b_tensor[b], self.b_nbytes[b], self.b_charged[b] = t, need, charged
        self.b_region[b], self.b_held[b], self.b_state[b] = reg, need, UNFILLED
        self.b_level[b] = level
        self.level_live[level] += charged
        if depth >= 0:  # its scope's place in the stack (-1: none); freed before its EXIT
            self.open_stack[depth, 2] += 1
        self.b_scope[b] = depth
        self.n_buf = b + 1

    cdef int in_sram(self, Py_ssize_t idx, int64_t b, str what) except -1:
        """LOAD, STORE, SLIDE: DDR transfers, of SRAM buffers only."""
        cdef int level = self.b_level[b]
        if level:
            raise self.fail(idx, f"{what} buffer {b}, which lives in {self.level_names[level]}: LOAD, STORE and SLIDE "
                                 f"move data between DDR and the SRAM; an inner level is filled by STAGE from its "
                                 f"parent level and written back by WRITEBACK")

    cdef int parent_buffer(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t other,
                           str role) except -1:
        """STAGE, WRITEBACK: inner buffer b and `other`, a live, filled buffer of the same tensor in the parent level
        of b's level, whose region contains `reg`."""
        cdef int level = self.b_level[b]
        if not level:
            raise self.fail(idx, f"buffer {b} is an SRAM buffer: STAGE and WRITEBACK move data between an inner level "
                                 f"and its parent; the SRAM is filled by LOAD and written back by STORE")
        self.live(idx, other, role + " buffer")
        cdef int64_t parent = self.level_parent[level], ot = self.b_tensor[other], i
        if self.b_level[other] != parent:
            raise self.fail(idx, f"{role} buffer {other} lives in {self.level_names[self.b_level[other]]}, but buffer "
                                 f"{b} lives in {self.level_names[level]}, whose parent level is "
                                 f"{self.level_names[parent]}: data moves between a level and its parent only")
        if ot != t:
            raise self.fail(idx, f"{role} buffer {other} holds {self.names[ot]!r}, not {self.names[t]!r}: a STAGE or "
                                 f"WRITEBACK moves a tensor's region between two buffers of that tensor")
        if self.b_state[other] == UNFILLED:
            raise self.fail(idx, f"{role} buffer {other} ({self.names[t]}) was never filled")
        cdef int64_t held = self.b_region[other]
        self.dense(idx, t, held, f"{role} buffer of a STAGE or WRITEBACK")
        cdef int64_t* r = self.log.regions.at(reg)
        cdef int64_t* h = self.log.regions.at(held)
        if reg != held:
            for i in range(self.ndim[t]):
                if not region_start(h, i) <= region_start(r, i) < region_stop(r, i) <= region_stop(h, i):
                    raise self.fail(idx, f"the region {format_region(self.region(t, reg))} is not inside the region "
                                         f"{format_region(self.region(t, held))} that {role} buffer {other} holds")

    cdef int stage(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                   int64_t source) except -1:
        self.access(idx, b, t)
        self.dense(idx, t, reg, "STAGE")
        self.parent_buffer(idx, b, t, reg, source, "source")
        cdef int64_t need = self.fill_bytes(idx, b, t, reg)
        if has_nb:
            self.nbytes(idx, nb, need)
        if self.b_state[b] == MODIFIED:
            raise self.fail(idx, f"STAGE into buffer {b}, whose modified contents were never written back: a "
                                 f"WRITEBACK must come first, or the results are lost")
        self.b_region[b], self.b_held[b], self.b_state[b] = reg, need, CLEAN

    cdef int writeback(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                       int64_t target) except -1:
        self.access(idx, b, t)
        self.dense(idx, t, reg, "WRITEBACK")
        if not self.writable[t]:
            raise self.fail(idx, f"{self.names[t]!r} is an input (read-only): nothing is written back to it")
        cdef int64_t held = self.b_region[b]
        if not self.same_region(t, reg, held):
            raise self.fail(idx, f"a WRITEBACK writes back the region its buffer holds, "
                                 f"{format_region(self.region(t, held))}, not {format_region(self.region(t, reg))}")
        if has_nb:
            self.nbytes(idx, nb, self.b_held[b])
        if self.b_state[b] == UNFILLED:
            raise self.fail(idx, f"WRITEBACK of buffer {b}, which nothing filled or computed since it was allocated")
        self.parent_buffer(idx, b, t, reg, target, "target")
        self.b_state[b] = CLEAN
        self.b_state[target] = MODIFIED

    cdef int free(self, Py_ssize_t idx, int64_t b, int64_t charged) except -1:
        self.live(idx, b)
        if charged != self.b_charged[b]:
            raise self.fail(idx, f"charged_bytes {self.shown(charged)} differs from the {self.b_charged[b]} B its "
                                 f"ALLOC charged")
        self.b_state[b] = FREED
        self.level_live[self.b_level[b]] -= charged
        cdef int depth = self.b_scope[b]
        if depth >= 0:
            self.open_stack[depth, 2] -= 1

    cdef int64_t slide(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb) except -1:
        """SLIDE; the bytes it moves."""
        self.access(idx, b, t)
        self.dense(idx, t, reg, "SLIDE")
        self.dense(idx, t, self.b_region[b], "SLIDE")
        self.in_sram(idx, b, "SLIDE of")
        if self.writable[t] and not self.on_chip[t]:
            raise self.fail(idx, f"{self.names[t]!r} is written by the schedule to DDR: only the buffer of an input or "
                                 f"of an on-chip tensor slides (the rows it keeps must equal DDR's)")
        if self.b_state[b] == UNFILLED:
            raise self.fail(idx, f"a SLIDE of buffer {b}, which nothing filled yet: its first region is LOADed")
        cdef int64_t need = self.fill_bytes(idx, b, t, reg), held = self.b_region[b], i, axis = -1, kept = 0
        cdef int64_t* r = self.log.regions.at(reg)
        cdef int64_t* h = self.log.regions.at(held)
        for i in range(self.ndim[t]):
            if r[i] != h[i]:
                if axis >= 0:
                    raise self.fail(idx, f"a SLIDE moves its buffer along one axis, but buffer {b} holds "
                                         f"{format_region(self.region(t, held))}")
                axis = i
        cdef int64_t new = 0
        if axis >= 0:  # the rows it held stay; the others come by DMA
            kept = min(region_stop(r, axis), region_stop(h, axis)) - max(region_start(r, axis), region_start(h, axis))
            new = need - need // (region_stop(r, axis) - region_start(r, axis)) * max(kept, 0)
        if self.on_chip[t]:  # its new rows open as zeros for the schedule to compute: nothing comes from DDR
            new = 0
        if nb != new:
            raise self.fail(idx, f"nbytes is {self.shown(nb)}, but {new} B of the region are not in the region the "
                                 f"buffer held, {format_region(self.region(t, held))}"
                                 + (" (an on-chip tensor's slide moves nothing from DDR)" if self.on_chip[t] else ""))
        self.b_region[b], self.b_held[b] = reg, need
        return new

    cdef int enter(self, Py_ssize_t idx, int64_t scope_id, int64_t instance) except -1:
        if not 0 <= scope_id < self.n_scopes:
            raise self.fail(idx, f"scope id {scope_id} is not one of the trace's {self.n_scopes} scopes")
        if instance != self.next_instance[scope_id]:
            raise self.fail(idx, f"instance {instance} of scope {self.scopes[scope_id].name!r}, expected "
                                 f"{self.next_instance[scope_id]} (instances count from 0 per scope)")
        self.next_instance[scope_id] += 1
        if self.n_open == len(self.open_a):
            self.open_a = np.concatenate([self.open_a, np.zeros_like(self.open_a)])
            self.open_stack = self.open_a
        self.open_stack[self.n_open, 0], self.open_stack[self.n_open, 1] = scope_id, instance
        self.open_stack[self.n_open, 2] = 0
        self.n_open += 1

    cdef int exit(self, Py_ssize_t idx, int64_t scope_id, int64_t instance) except -1:
        if not self.n_open:
            raise self.fail(idx, "EXIT with no scope open (no matching ENTER)")
        cdef Py_ssize_t depth = self.n_open - 1, b
        cdef int64_t top = self.open_stack[depth, 0], top_instance = self.open_stack[depth, 1]
        if scope_id != top or instance != top_instance:
            raise self.fail(idx, f"EXIT of scope {scope_id} instance {instance}, but the innermost open scope is "
                                 f"{top} ({self.scopes[top].name!r}) instance {top_instance}; scopes must nest")
        if self.open_stack[depth, 2]:  # (buffers of closed scopes at this depth are all freed)
            b = next(b for b in range(self.n_buf) if self.b_scope[b] == depth and self.b_state[b] != FREED)
            raise self.fail(idx, f"the scope ends while buffer {b} ({self.names[self.b_tensor[b]]}) it allocated is "
                                 f"live: a scope FREEs its buffers before its EXIT")
        self.n_open -= 1


cdef object _int_id(object x):
    """An id field of a tuple event: a Python int (anything else raises TypeError, which `run` reports)."""
    if type(x) is not int:
        raise TypeError("id")
    return x


cdef int _flag(object reuse):
    """A reuse flag: 1, 0, or -1 if it is not a bool."""
    return 1 if reuse is True else 0 if reuse is False else -1


cdef bint _int_pairs(object region, Py_ssize_t dims):
    """Whether `region` is a tuple of `dims` (int, int) pairs."""
    if type(region) is not tuple or len(region) != dims:
        return False
    for pair in region:
        if not isinstance(pair, tuple) or len(pair) != 2 or type(pair[0]) is not int or type(pair[1]) is not int:
            return False
    return True


def _grown(old: np.ndarray | None, cap: int, dtype=None) -> np.ndarray:
    """A copy of `old` with room for `cap` entries (zeros after the old ones); dtype: of a new one (old is None)."""
    new = np.zeros(cap, dtype if old is None else old.dtype)
    if old is not None:
        new[:len(old)] = old
    return new


def _malformed(event: object, err: Exception, shapes: list[tuple[int, ...]]) -> str:
    """What is wrong with an event whose fields raised `err` when read: its shape, its region, or a field's type."""
    if type(event) is not tuple or not event:
        return "not an event tuple (kind, fields...); see dsasim/traced/trace.py for the layouts"
    k = event[0]
    if type(k) in (int, EventKind) and 0 <= k < len(_FIELD_COUNTS):
        if len(event) != _FIELD_COUNTS[k]:
            return (f"a {EventKind(k).name} event has {_FIELD_COUNTS[k]} fields (kind included), this one has "
                    f"{len(event)}")
        fields = EVENT_TYPES[k]._fields
        for name, value in zip(fields, event):
            if name in _ID_FIELDS and type(value) is not int:
                return f"{name} must be a Python int, got {value!r} ({type(value).__name__})"
        if "region" in fields:
            t = event[fields.index("tensor")]
            if type(t) is int and 0 <= t < len(shapes):
                problem = _region_problem(event[fields.index("region")], shapes[t])
                if problem:
                    return problem
    return (f"a field has the wrong type or shape ({type(err).__name__}: {err}); see dsasim/traced/trace.py for the "
            f"layouts")
