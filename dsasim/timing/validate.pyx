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
  * ENTER/EXIT nest (an EXIT closes the innermost open scope instance, instances count from 0 per scope), a
    scope's buffers are freed before its EXIT, FREE gives back the bytes its ALLOC charged, and at the end every
    scope is closed and every buffer freed.
One check per event kind (`TraceChecker.load`, `.compute`, ...): the lowering's handlers (model.pyx) run them
first; `validate_trace` runs them alone.
"""

from __future__ import annotations

from cpython.list cimport PyList_GET_ITEM

from dsasim.hardware import Accelerator
from dsasim.traced.trace import (ALLOC, COMPUTE, ENTER, EVENT_TYPES, EXIT, FREE, HIT, LOAD, OPEN, STORE, EventKind,
                                 Region, Trace, format_region)
from dsasim.timing.errors import TraceError

UNITS = ("tensorcore", "vector")
_FIELD_COUNTS = tuple(len(t._fields) for t in EVENT_TYPES)
_KIND_LIST = ", ".join(f"{e.name}={e.value}" for e in EventKind)
_ID_FIELDS = frozenset({"buffer", "tensor", "out_buffer", "scope_id", "instance"})
cdef int K_LOAD = LOAD, K_COMPUTE = COMPUTE, K_HIT = HIT, K_ALLOC = ALLOC, K_FREE = FREE, K_STORE = STORE
cdef int K_OPEN = OPEN, K_ENTER = ENTER
# buffer states
cdef object _UNFILLED = 0, _CLEAN = 1, _MODIFIED = 2, _FREED = 3


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


def _fail(idx: int, event: object, what: str) -> TraceError:
    return TraceError(f"trace event {idx} {describe_event(event)}: {what}")


def _bad_buffer(idx: int, event: object, b: object, role: str, b_state: list[int], b_tensor: list[int],
                names: list[str]) -> TraceError:
    if type(b) is not int or not 0 <= b < len(b_state):
        return _fail(idx, event, f"{role} {b!r} was never allocated (buffers are numbered 0, 1, ... by their ALLOC "
                                 f"events; {len(b_state)} so far)")
    return _fail(idx, event, f"{role} {b} ({names[b_tensor[b]]}) is used after its FREE")


def _wrong_tensor(idx: int, event: object, b: int, t: object, b_tensor: list[int], names: list[str]) -> TraceError:
    shown = repr(names[t]) if type(t) is int and 0 <= t < len(names) else "not a tensor id"
    return _fail(idx, event, f"tensor {t!r} ({shown}) is not the tensor of buffer {b} ({names[b_tensor[b]]!r}, "
                             f"tensor {b_tensor[b]}); an access names the tensor its buffer was allocated for")


cdef object _region_nbytes(object region, object shape, object word):
    """Bytes of `region` as a region of a tensor of `shape`, or -1 if it is not one (`_region_problem` says why).

    Hot: a pair that is not a pair raises on unpacking, which the caller's handler turns into a TraceError."""
    cdef Py_ssize_t i, dims = len(shape)
    if type(region) is not tuple or len(<tuple>region) != dims:
        return -1
    n = word
    for i in range(dims):
        start, stop = (<tuple>region)[i]
        if not 0 <= start < stop <= shape[i]:
            return -1
        n *= stop - start
    return n if type(n) is int else -1  # a float bound makes n a float


def _region_problem(region: object, shape: tuple[int, ...]) -> str | None:
    """What is wrong with `region` as a region of a tensor of `shape`, or None if nothing is."""
    if type(region) is not tuple or len(region) != len(shape):
        return (f"region {region!r} must be a tuple of {len(shape)} (start, stop) pairs, one per dimension of "
                f"shape {shape}")
    for dim, (pair, extent) in enumerate(zip(region, shape)):
        if not isinstance(pair, tuple) or len(pair) != 2:
            return f"dimension {dim} of the region is {pair!r}, not a (start, stop) pair"
        start, stop = pair
        if type(start) is not int or type(stop) is not int:
            return f"dimension {dim} of the region is {pair!r}: bounds must be Python ints (element indices)"
        if not 0 <= start < stop <= extent:
            return f"dimension {dim} of the region is {start}:{stop}, empty or outside 0:{extent}"
    return None


def validate_trace(trace: Trace, hardware: Accelerator) -> None:
    """Check that `trace` is a well-formed trace for `hardware` (rules: module docstring); raise TraceError."""
    checker = TraceChecker(trace, hardware)
    run = checker.run
    for idx, event in enumerate(trace.events):
        run(idx, event)
    checker.finish()


cdef class TraceChecker:
    """The state of validation while it walks a trace, and one check per event kind (`load`, `compute`, `hit`,
    `alloc`, `free`, `store`, `open`, `enter`, `exit`); `run(idx, event)` checks one event, `finish()` the end.

    Per buffer (index = buffer id): its tensor, allocated bytes and charge, the region it holds (its ALLOC's, then
    its last fill's) and that region's bytes, its state, and the depth in the scope stack of the scope that
    allocated it (-1: none).
    The checks are hot (one call per event): a field of the wrong type (a float buffer id, a region that is not a
    tuple, an event of the wrong length) is caught by the TypeError/ValueError/IndexError it raises, which `run`
    turns into a TraceError, rather than by a type test on every field."""

    # attributes and C methods: validate.pxd
    def __init__(self, trace: Trace, hardware: Accelerator) -> None:
        if trace.word_bytes != hardware.word_bytes:
            raise TraceError(f"the trace was recorded with {trace.word_bytes}-byte words but {hardware.name!r} has "
                             f"{hardware.word_bytes}-byte words; trace the schedule on the hardware you time it on")
        self.scopes = list(trace.scopes)
        self.shapes = [t.shape for t in trace.tensors]
        self.writable = [t.writable for t in trace.tensors]
        self.names = [t.name for t in trace.tensors]
        self.word = trace.word_bytes
        self.b_tensor: list[int] = []
        self.b_nbytes: list[int] = []
        self.b_charged: list[int] = []
        self.b_region: list = []
        self.b_held: list[int] = []
        self.b_state: list[int] = []
        self.b_scope: list = []
        self.open_scope, self.open_instance, self.open_live = [], [], []  # the open scopes, innermost last
        self.next_instance = [0] * len(trace.scopes)
        self.kinds = {int(kind): int(kind) for kind in EventKind}

    cpdef int run(self, Py_ssize_t idx, object event) except -1:
        """Check one event (the idx-th of the trace); its kind."""
        cdef int k
        try:
            kind = event[0]
            if type(kind) is not int or not 0 <= kind <= K_FREE:
                kind = self.kinds.get(kind)  # a dict: 3.0 or True find LOAD or EXIT, as == would
                if kind is None:
                    raise _fail(idx, event, f"unknown event kind {event[0]!r}; kinds are {_KIND_LIST}")
            k = kind
            if k == K_LOAD:
                self.load(idx, event)
            elif k == K_COMPUTE:
                self.compute(idx, event)
            elif k == K_HIT:
                self.hit(idx, event)
            elif k == K_ALLOC:
                self.alloc(idx, event)
            elif k == K_FREE:
                self.free(idx, event)
            elif k == K_STORE:
                self.store(idx, event)
            elif k == K_OPEN:
                self.open(idx, event)
            elif k == K_ENTER:
                self.enter(idx, event)
            else:
                self.exit(idx, event)
            return k
        except TraceError:
            raise
        except (TypeError, ValueError, IndexError, KeyError) as err:
            raise _fail(idx, event, _malformed(event, err, self.shapes)) from None

    cpdef finish(self):
        """The end of the trace: every scope closed, every buffer freed."""
        if self.open_scope:
            scope_id, instance = self.open_scope[-1], self.open_instance[-1]
            raise TraceError(f"the trace ends with scope {scope_id} ({self.scopes[scope_id].name!r}) instance "
                             f"{instance} still open (ENTER without EXIT); a finished session closes every scope")
        for b, state in enumerate(self.b_state):
            if state != _FREED:
                raise TraceError(f"buffer {b} ({self.names[self.b_tensor[b]]}{format_region(self.b_region[b])}) is "
                                 f"never freed: every ALLOC needs a FREE (its scope must end) before the trace ends")

    # -- checks shared by several kinds --------------------------------------------------------------------------
    cdef int live(self, Py_ssize_t idx, object event, object b, str role = "buffer") except -1:
        """`b` is an allocated buffer not yet freed."""
        cdef Py_ssize_t i
        if type(b) is int and 0 <= b < len(self.b_state):  # the common case, in C
            i = b
            if <object>PyList_GET_ITEM(self.b_state, i) is not _FREED:
                return 0
        if not 0 <= b < len(self.b_state) or self.b_state[b] == _FREED:
            raise _bad_buffer(idx, event, b, role, self.b_state, self.b_tensor, self.names)

    cdef int access(self, Py_ssize_t idx, object event, object b, object t) except -1:
        """LOAD, OPEN, HIT, STORE: a live buffer, named with the tensor it was allocated for."""
        self.live(idx, event, b)
        bt = self.b_tensor[b]
        if t is not bt and (t != bt or type(t) is not int):
            raise _wrong_tensor(idx, event, b, t, self.b_tensor, self.names)

    cdef object region_bytes(self, Py_ssize_t idx, object event, object t, object reg):
        """The bytes of `reg`, which must be a region of tensor t."""
        need = _region_nbytes(reg, self.shapes[t], self.word)
        if need < 0:
            raise _fail(idx, event, f"{_region_problem(reg, self.shapes[t])} (tensor {self.names[t]!r} has shape "
                                    f"{self.shapes[t]})")
        return need

    cdef object fill_bytes(self, Py_ssize_t idx, object event, object b, object t, object reg):
        """LOAD, OPEN: the bytes of the filled region, which must fit the buffer."""
        if reg is self.b_region[b]:
            return self.b_held[b]
        need = self.region_bytes(idx, event, t, reg)
        if need > self.b_nbytes[b]:
            raise _fail(idx, event, f"{need} B do not fit buffer {b} ({self.b_nbytes[b]} B)")
        return need

    cdef int reuse_flag(self, Py_ssize_t idx, object event, object reuse) except -1:
        if reuse is not True and reuse is not False:
            raise _fail(idx, event, f"the reuse flag must be True or False, got {reuse!r}")

    cdef int nbytes(self, Py_ssize_t idx, object event, object nb, object need) except -1:
        if nb != need or type(nb) is not int:
            raise _fail(idx, event, f"nbytes is {nb!r}, but the region holds {need} B ({need // self.word} elements "
                                    f"x {self.word}-byte words)")

    # -- one check per event kind --------------------------------------------------------------------------------
    cdef int load(self, Py_ssize_t idx, object event) except -1:
        _, b, t, reg, nb, reuse = event
        self.access(idx, event, b, t)
        need = self.fill_bytes(idx, event, b, t, reg)
        self.nbytes(idx, event, nb, need)
        if self.b_state[b] == _MODIFIED:
            raise _fail(idx, event, f"LOAD into buffer {b}, whose modified contents were never stored: a STORE must "
                                    f"come first, or the results are lost")
        self.reuse_flag(idx, event, reuse)
        self.b_region[b], self.b_held[b], self.b_state[b] = reg, need, _CLEAN

    cdef int open(self, Py_ssize_t idx, object event) except -1:
        _, b, t, reg, reuse = event
        self.access(idx, event, b, t)
        if not self.writable[t]:
            raise _fail(idx, event, f"{self.names[t]!r} is an input (read-only): an OPEN (a zeroed region, no DMA) is "
                                    f"only for outputs, intermediates and scratch tensors; an input is LOADed")
        need = self.fill_bytes(idx, event, b, t, reg)
        self.reuse_flag(idx, event, reuse)
        self.b_region[b], self.b_held[b], self.b_state[b] = reg, need, _CLEAN

    cdef int hit(self, Py_ssize_t idx, object event) except -1:
        _, b, t, reg, reuse = event
        self.access(idx, event, b, t)
        if self.b_state[b] == _UNFILLED:
            raise _fail(idx, event, f"a HIT on buffer {b}, which nothing filled yet (LOAD or OPEN)")
        held = self.b_region[b]
        if reg is not held:
            if type(reg) is not tuple or len(reg) != len(held):
                raise _fail(idx, event, _region_problem(reg, self.shapes[t]) or "malformed region")
            for (start, stop), (h_start, h_stop) in zip(reg, held):
                if not h_start <= start < stop <= h_stop or type(start) is not int or type(stop) is not int:
                    raise _fail(idx, event, f"a HIT region must lie inside the region its buffer {b} holds, "
                                            f"{format_region(held)}")
        self.reuse_flag(idx, event, reuse)

    cdef int compute(self, Py_ssize_t idx, object event) except -1:
        _, unit, _opname, out, ins, m, cyc, pm = event
        if unit != "tensorcore" and unit != "vector":
            raise _fail(idx, event, f"unknown compute unit {unit!r}; units are {', '.join(map(repr, UNITS))}")
        if type(cyc) is not int or cyc < 0:
            raise _fail(idx, event, f"cycles must be an integer >= 0, got {cyc!r}")
        if type(m) is not int or m < 0 or type(pm) is not int or pm < 0:
            raise _fail(idx, event, f"macs and padded_macs must be integers >= 0, got {m!r} and {pm!r}")
        if pm < m and unit == "tensorcore":
            raise _fail(idx, event, f"padded_macs ({pm}) < macs ({m}): the TensorCore's padded MACs include the "
                                    f"useful ones")
        if type(ins) is not tuple:
            raise _fail(idx, event, f"in_buffers must be a tuple of buffer ids, got {ins!r}")
        b_state = self.b_state
        for b in ins:
            self.live(idx, event, b, "input buffer")
            if b_state[b] == _UNFILLED:
                raise _fail(idx, event, f"reads buffer {b} ({self.names[self.b_tensor[b]]}) before anything filled "
                                        f"it (LOAD or OPEN)")
        self.live(idx, event, out, "output buffer")
        t = self.b_tensor[out]
        if not self.writable[t]:
            raise _fail(idx, event, f"writes buffer {out} of {self.names[t]!r}, an input (read-only); computes write "
                                    f"outputs, intermediates or scratch tensors")
        if b_state[out] == _UNFILLED:
            raise _fail(idx, event, f"writes buffer {out} ({self.names[t]}) before it was filled (LOAD or OPEN)")
        b_state[out] = _MODIFIED

    cdef int store(self, Py_ssize_t idx, object event) except -1:
        _, b, t, reg, nb = event
        self.access(idx, event, b, t)
        if not self.writable[t]:
            raise _fail(idx, event, f"{self.names[t]!r} is an input (read-only): nothing may be stored to it")
        held = self.b_region[b]
        if reg is not held and reg != held:
            raise _fail(idx, event, f"a STORE writes back the region its buffer holds, {format_region(held)}, not "
                                    f"{reg!r}")
        self.nbytes(idx, event, nb, self.b_held[b])
        # a filled buffer may be stored with no COMPUTE since its fill: Session.mark_written records a write that
        # needs no arithmetic (an all-padding window leaves an opened tile's zeros to store)
        if self.b_state[b] == _UNFILLED:
            raise _fail(idx, event, f"STORE of buffer {b}, which nothing filled or computed since it was allocated; "
                                    f"only filled, written buffers are written back")
        self.b_state[b] = _CLEAN

    cdef int alloc(self, Py_ssize_t idx, object event) except -1:
        _, b, t, reg, nb, address, charged = event
        n_buf = len(self.b_state)
        if b != n_buf or type(b) is not int:
            raise _fail(idx, event, f"ALLOC of buffer {b!r}, expected buffer {n_buf} (buffers are numbered in "
                                    f"allocation order)")
        if not 0 <= t < len(self.shapes) or type(t) is not int:
            raise _fail(idx, event, f"tensor id {t!r} is not one of the trace's {len(self.shapes)} tensors")
        need = self.region_bytes(idx, event, t, reg)
        self.nbytes(idx, event, nb, need)
        if type(address) is not int or address < 0:
            raise _fail(idx, event, f"address must be an integer >= 0 (a byte offset in SRAM), got {address!r}")
        if type(charged) is not int or charged < nb or charged % nb:
            raise _fail(idx, event, f"charged_bytes must be nbytes x ways (a positive multiple of {nb}), got "
                                    f"{charged!r}")
        self.b_tensor.append(t)
        self.b_nbytes.append(nb)
        self.b_charged.append(charged)
        self.b_region.append(reg)
        self.b_held.append(nb)
        self.b_state.append(_UNFILLED)
        depth = len(self.open_live) - 1  # its scope's place in the stack (-1: none); it is freed before its EXIT
        if depth >= 0:
            self.open_live[depth] += 1
        self.b_scope.append(depth)

    cdef int free(self, Py_ssize_t idx, object event) except -1:
        _, b, charged = event
        self.live(idx, event, b)
        if charged != self.b_charged[b]:
            raise _fail(idx, event, f"charged_bytes {charged!r} differs from the {self.b_charged[b]} B its ALLOC "
                                    f"charged")
        self.b_state[b] = _FREED
        self.b_region[b] = None  # a freed buffer's region is never read again: keep memory to the live ones
        depth = self.b_scope[b]
        if depth >= 0:
            self.open_live[depth] -= 1

    cdef int enter(self, Py_ssize_t idx, object event) except -1:
        _, scope_id, instance = event
        if not 0 <= scope_id < len(self.scopes) or type(scope_id) is not int:
            raise _fail(idx, event, f"scope id {scope_id!r} is not one of the trace's {len(self.scopes)} scopes")
        if instance != self.next_instance[scope_id] or type(instance) is not int:
            raise _fail(idx, event, f"instance {instance!r} of scope {self.scopes[scope_id].name!r}, expected "
                                    f"{self.next_instance[scope_id]} (instances count from 0 per scope)")
        self.next_instance[scope_id] += 1
        self.open_scope.append(scope_id)
        self.open_instance.append(instance)
        self.open_live.append(0)

    cdef int exit(self, Py_ssize_t idx, object event) except -1:
        _, scope_id, instance = event
        if not self.open_scope:
            raise _fail(idx, event, "EXIT with no scope open (no matching ENTER)")
        top, top_instance = self.open_scope[-1], self.open_instance[-1]
        if scope_id != top or instance != top_instance:
            raise _fail(idx, event, f"EXIT of scope {scope_id!r} instance {instance!r}, but the innermost open scope "
                                    f"is {top} ({self.scopes[top].name!r}) instance {top_instance}; scopes must nest")
        if self.open_live[-1]:  # (buffers of closed scopes at this depth are all freed)
            live = _first_live(self.b_scope, self.b_state, len(self.open_live) - 1)
            raise _fail(idx, event, f"the scope ends while buffer {live} ({self.names[self.b_tensor[live]]}) it "
                                    f"allocated is live: a scope FREEs its buffers before its EXIT")
        self.open_scope.pop()
        self.open_instance.pop()
        self.open_live.pop()


def _first_live(b_scope: list, b_state: list, depth: int) -> int:
    """The first buffer allocated by a scope open at `depth` in the stack and not yet freed."""
    return next(b for b, d in enumerate(b_scope) if d == depth and b_state[b] != _FREED)


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
