"""Validation of a trace before it is timed: one pass that rejects what a `Session` can never record.

`lower` (and so `simulate`, with either scheduler) calls `validate_trace` first, so a hand-built or corrupted
trace fails with one `TraceError` naming the event index, the event and what is wrong, instead of a wrong cycle
count or a traceback from deep inside the scheduler. The rules (the trace format of `dsasim/traced/trace.py`):

  * every event is a tuple whose first field is an `EventKind` and whose length is that kind's field count;
  * ids are Python ints: a tensor id indexes `trace.tensors`, a scope id `trace.scopes`; buffers are numbered
    0, 1, 2, ... in ALLOC order and are used only between their ALLOC and their FREE;
  * a region has one (start, stop) pair of ints per tensor dimension with 0 <= start < stop <= extent, and a
    transfer's or allocation's `nbytes` is its region's elements x `trace.word_bytes`; an access names the
    tensor its buffer was allocated for, and fits the buffer's bytes;
  * an input (read-only tensor) is never OPENed, written by a compute, or STOREd; a compute reads and writes
    only filled buffers; a STORE writes back exactly the region its buffer holds, of a filled buffer (usually one a
    compute modified; `Session.mark_written` may mark a write that needed no arithmetic); a LOAD never overwrites modified contents that were not stored;
  * COMPUTE names a known unit ("tensorcore" or "vector") and non-negative integer MACs and cycles;
  * ENTER/EXIT nest (an EXIT closes the innermost open scope instance, instances count from 0 per scope), a
    scope's buffers are freed before its EXIT, FREE gives back the bytes its ALLOC charged, and at the end every
    scope is closed and every buffer freed.
Validation is a single pass over the events with a few list lookups per event, 0.3 to 0.5 us per event on the
bench traces: it adds 16 to 29 % to `simulate` (whose lowering no longer checks anything itself), 8 to 11 % to
tracing plus simulating. Half of it on the demo3/demo5 traces is the bounds check of each reuse load's region.
"""

from __future__ import annotations

from dsasim.hardware import Accelerator
from dsasim.traced.trace import (ALLOC, COMPUTE, ENTER, EVENT_TYPES, EXIT, FREE, HIT, LOAD, OPEN, STORE, EventKind, Region,
                     Trace, format_region)
from dsasim.timing.errors import TraceError

UNITS = ("tensorcore", "vector")
_FIELD_COUNTS = tuple(len(t._fields) for t in EVENT_TYPES)
_ID_FIELDS = frozenset({"buffer", "tensor", "out_buffer", "scope_id", "instance"})
# buffer states
_UNFILLED, _CLEAN, _MODIFIED, _FREED = 0, 1, 2, 3


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


def _wrong_nbytes(idx: int, event: object, nb: object, need: int, word: int) -> TraceError:
    return _fail(idx, event, f"nbytes is {nb!r}, but the region holds {need} B ({need // word} elements x {word}-byte "
                             f"words)")


def _wrong_tensor(idx: int, event: object, b: int, t: object, b_tensor: list[int], names: list[str]) -> TraceError:
    shown = repr(names[t]) if type(t) is int and 0 <= t < len(names) else "not a tensor id"
    return _fail(idx, event, f"tensor {t!r} ({shown}) is not the tensor of buffer {b} ({names[b_tensor[b]]!r}, "
                             f"tensor {b_tensor[b]}); an access names the tensor its buffer was allocated for")


def _region_nbytes(region: object, shape: tuple[int, ...], word: int) -> int:
    """Bytes of `region` as a region of a tensor of `shape`, or -1 if it is not one (`_region_problem` says why).

    Hot: a pair that is not a pair raises on unpacking, which the caller's handler turns into a TraceError."""
    if type(region) is not tuple or len(region) != len(shape):
        return -1
    n = word
    for (start, stop), extent in zip(region, shape):
        if not 0 <= start < stop <= extent:
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
    if trace.word_bytes != hardware.word_bytes:
        raise TraceError(f"the trace was recorded with {trace.word_bytes}-byte words but {hardware.name!r} has "
                         f"{hardware.word_bytes}-byte words; trace the schedule on the hardware you time it on")
    # The loop is hot (one pass over millions of events): messages are built by the
    # module-level helpers only when something is wrong, and a field of the wrong type (a float buffer id, a
    # region that is not a tuple, an event of the wrong length) is caught by the TypeError/ValueError/IndexError
    # it raises rather than by a type test on every field.
    tensors = trace.tensors
    shapes = [t.shape for t in tensors]
    writable = [t.writable for t in tensors]
    names = [t.name for t in tensors]
    n_tensors = len(tensors)
    n_scopes = len(trace.scopes)
    word = trace.word_bytes

    # per buffer (index = buffer id)
    b_tensor: list[int] = []
    b_nbytes: list[int] = []  # its allocation's bytes
    b_charged: list[int] = []
    b_region: list = []  # the region it holds (its ALLOC's, then its last fill's)
    b_held: list[int] = []  # the bytes of that region
    b_state: list[int] = []
    b_scope: list = []  # the open-scope record that allocated it, or None
    n_buf = 0
    scope_stack: list[list[int]] = []  # [scope_id, instance, live buffers]
    next_instance = [0] * n_scopes

    # module constants as locals: the loop reads them on every event
    unfilled, clean, modified, freed = _UNFILLED, _CLEAN, _MODIFIED, _FREED
    k_load, k_compute, k_hit, k_alloc, k_free, k_store, k_open = LOAD, COMPUTE, HIT, ALLOC, FREE, STORE, OPEN
    region_nbytes = _region_nbytes
    idx = -1
    event: object = None
    try:
        for idx, event in enumerate(trace.events):
            k = event[0]
            if k == k_load:
                _, b, t, reg, nb, reuse = event
                if not 0 <= b < n_buf or b_state[b] == freed:
                    raise _bad_buffer(idx, event, b, "buffer", b_state, b_tensor, names)
                if t is not b_tensor[b] and (t != b_tensor[b] or type(t) is not int):
                    raise _wrong_tensor(idx, event, b, t, b_tensor, names)
                if reg is b_region[b]:
                    need = b_held[b]
                else:
                    need = region_nbytes(reg, shapes[t], word)
                    if need < 0:
                        raise _fail(idx, event, f"{_region_problem(reg, shapes[t])} (tensor {names[t]!r} has shape "
                                                f"{shapes[t]})")
                    if need > b_nbytes[b]:
                        raise _fail(idx, event, f"{need} B do not fit buffer {b} ({b_nbytes[b]} B)")
                if nb != need or type(nb) is not int:
                    raise _wrong_nbytes(idx, event, nb, need, word)
                if b_state[b] == modified:
                    raise _fail(idx, event, f"LOAD into buffer {b}, whose modified contents were never stored: a "
                                            f"STORE must come first, or the results are lost")
                if reuse is not True and reuse is not False:
                    raise _fail(idx, event, f"the reuse flag must be True or False, got {reuse!r}")
                b_region[b] = reg
                b_held[b] = need
                b_state[b] = clean
            elif k == k_compute:
                _, unit, _opname, out, ins, m, cyc, pm = event
                if unit != "tensorcore" and unit != "vector":
                    raise _fail(idx, event, f"unknown compute unit {unit!r}; units are "
                                            f"{', '.join(map(repr, UNITS))}")
                if type(cyc) is not int or cyc < 0:
                    raise _fail(idx, event, f"cycles must be an integer >= 0, got {cyc!r}")
                if type(m) is not int or m < 0 or type(pm) is not int or pm < 0:
                    raise _fail(idx, event, f"macs and padded_macs must be integers >= 0, got {m!r} and {pm!r}")
                if pm < m and unit == "tensorcore":
                    raise _fail(idx, event, f"padded_macs ({pm}) < macs ({m}): the TensorCore's padded MACs include "
                                            f"the useful ones")
                if type(ins) is not tuple:
                    raise _fail(idx, event, f"in_buffers must be a tuple of buffer ids, got {ins!r}")
                for b in ins:
                    if not 0 <= b < n_buf or b_state[b] == freed:
                        raise _bad_buffer(idx, event, b, "input buffer", b_state, b_tensor, names)
                    if b_state[b] == unfilled:
                        raise _fail(idx, event, f"reads buffer {b} ({names[b_tensor[b]]}) before anything filled it "
                                                f"(LOAD or OPEN)")
                if not 0 <= out < n_buf or b_state[out] == freed:
                    raise _bad_buffer(idx, event, out, "output buffer", b_state, b_tensor, names)
                t = b_tensor[out]
                if not writable[t]:
                    raise _fail(idx, event, f"writes buffer {out} of {names[t]!r}, an input (read-only); computes "
                                            f"write outputs, intermediates or scratch tensors")
                if b_state[out] == unfilled:
                    raise _fail(idx, event, f"writes buffer {out} ({names[t]}) before it was filled (LOAD or OPEN)")
                b_state[out] = modified
            elif k == k_hit:
                _, b, t, reg, reuse = event
                if not 0 <= b < n_buf or b_state[b] == freed:
                    raise _bad_buffer(idx, event, b, "buffer", b_state, b_tensor, names)
                if t is not b_tensor[b] and (t != b_tensor[b] or type(t) is not int):
                    raise _wrong_tensor(idx, event, b, t, b_tensor, names)
                if b_state[b] == unfilled:
                    raise _fail(idx, event, f"a HIT on buffer {b}, which nothing filled yet (LOAD or OPEN)")
                held = b_region[b]
                if reg is not held:
                    if type(reg) is not tuple or len(reg) != len(held):
                        raise _fail(idx, event, _region_problem(reg, shapes[t]) or "malformed region")
                    for (start, stop), (h_start, h_stop) in zip(reg, held):
                        if not h_start <= start < stop <= h_stop or type(start) is not int or type(stop) is not int:
                            raise _fail(idx, event, f"a HIT region must lie inside the region its buffer {b} holds, "
                                                    f"{format_region(held)}")
                if reuse is not True and reuse is not False:
                    raise _fail(idx, event, f"the reuse flag must be True or False, got {reuse!r}")
            elif k == k_alloc:
                _, b, t, reg, nb, address, charged = event
                if b != n_buf or type(b) is not int:
                    raise _fail(idx, event, f"ALLOC of buffer {b!r}, expected buffer {n_buf} (buffers are numbered "
                                            f"in allocation order)")
                if not 0 <= t < n_tensors or type(t) is not int:
                    raise _fail(idx, event, f"tensor id {t!r} is not one of the trace's {n_tensors} tensors")
                need = region_nbytes(reg, shapes[t], word)
                if need < 0:
                    raise _fail(idx, event, f"{_region_problem(reg, shapes[t])} (tensor {names[t]!r} has shape "
                                            f"{shapes[t]})")
                if nb != need or type(nb) is not int:
                    raise _wrong_nbytes(idx, event, nb, need, word)
                if type(address) is not int or address < 0:
                    raise _fail(idx, event, f"address must be an integer >= 0 (a byte offset in SRAM), got "
                                            f"{address!r}")
                if type(charged) is not int or charged < nb or charged % nb:
                    raise _fail(idx, event, f"charged_bytes must be nbytes x ways (a positive multiple of {nb}), "
                                            f"got {charged!r}")
                n_buf += 1
                b_tensor.append(t)
                b_nbytes.append(nb)
                b_charged.append(charged)
                b_region.append(reg)
                b_held.append(nb)
                b_state.append(unfilled)
                if scope_stack:
                    top = scope_stack[-1]
                    top[2] += 1
                    b_scope.append(top)
                else:
                    b_scope.append(None)
            elif k == k_free:
                _, b, charged = event
                if not 0 <= b < n_buf or b_state[b] == freed:
                    raise _bad_buffer(idx, event, b, "buffer", b_state, b_tensor, names)
                if charged != b_charged[b]:
                    raise _fail(idx, event, f"charged_bytes {charged!r} differs from the {b_charged[b]} B its ALLOC "
                                            f"charged")
                b_state[b] = freed
                owner = b_scope[b]
                if owner is not None:
                    owner[2] -= 1
            elif k == k_store:
                _, b, t, reg, nb = event
                if not 0 <= b < n_buf or b_state[b] == freed:
                    raise _bad_buffer(idx, event, b, "buffer", b_state, b_tensor, names)
                if t is not b_tensor[b] and (t != b_tensor[b] or type(t) is not int):
                    raise _wrong_tensor(idx, event, b, t, b_tensor, names)
                if not writable[t]:
                    raise _fail(idx, event, f"{names[t]!r} is an input (read-only): nothing may be stored to it")
                held = b_region[b]
                if reg is not held and reg != held:
                    raise _fail(idx, event, f"a STORE writes back the region its buffer holds, "
                                            f"{format_region(held)}, not {reg!r}")
                if nb != b_held[b] or type(nb) is not int:
                    raise _wrong_nbytes(idx, event, nb, b_held[b], word)
                # a filled buffer may be stored with no COMPUTE since its fill: Session.mark_written records a
                # write that needs no arithmetic (an all-padding window leaves an opened tile's zeros to store)
                if b_state[b] == unfilled:
                    raise _fail(idx, event, f"STORE of buffer {b}, which nothing filled or computed since it was "
                                            f"allocated; only filled, written buffers are written back")
                b_state[b] = clean
            elif k == k_open:
                _, b, t, reg, reuse = event
                if not 0 <= b < n_buf or b_state[b] == freed:
                    raise _bad_buffer(idx, event, b, "buffer", b_state, b_tensor, names)
                if t is not b_tensor[b] and (t != b_tensor[b] or type(t) is not int):
                    raise _wrong_tensor(idx, event, b, t, b_tensor, names)
                if not writable[t]:
                    raise _fail(idx, event, f"{names[t]!r} is an input (read-only): an OPEN (a zeroed region, no "
                                            f"DMA) is only for outputs, intermediates and scratch tensors; an input "
                                            f"is LOADed")
                if reg is b_region[b]:
                    need = b_held[b]
                else:
                    need = region_nbytes(reg, shapes[t], word)
                    if need < 0:
                        raise _fail(idx, event, f"{_region_problem(reg, shapes[t])} (tensor {names[t]!r} has shape "
                                                f"{shapes[t]})")
                    if need > b_nbytes[b]:
                        raise _fail(idx, event, f"{need} B do not fit buffer {b} ({b_nbytes[b]} B)")
                if reuse is not True and reuse is not False:
                    raise _fail(idx, event, f"the reuse flag must be True or False, got {reuse!r}")
                b_region[b] = reg
                b_held[b] = need
                b_state[b] = clean
            elif k == ENTER:
                _, scope_id, instance = event
                if not 0 <= scope_id < n_scopes or type(scope_id) is not int:
                    raise _fail(idx, event, f"scope id {scope_id!r} is not one of the trace's {n_scopes} scopes")
                if instance != next_instance[scope_id] or type(instance) is not int:
                    raise _fail(idx, event, f"instance {instance!r} of scope {trace.scopes[scope_id].name!r}, "
                                            f"expected {next_instance[scope_id]} (instances count from 0 per scope)")
                next_instance[scope_id] += 1
                scope_stack.append([scope_id, instance, 0])
            elif k == EXIT:
                _, scope_id, instance = event
                if not scope_stack:
                    raise _fail(idx, event, "EXIT with no scope open (no matching ENTER)")
                top = scope_stack[-1]
                if scope_id != top[0] or instance != top[1]:
                    raise _fail(idx, event, f"EXIT of scope {scope_id!r} instance {instance!r}, but the innermost "
                                            f"open scope is {top[0]} ({trace.scopes[top[0]].name!r}) instance "
                                            f"{top[1]}; scopes must nest")
                if top[2]:
                    live = next(b for b in range(n_buf) if b_scope[b] is top and b_state[b] != freed)
                    raise _fail(idx, event, f"the scope ends while buffer {live} ({names[b_tensor[live]]}) it "
                                            f"allocated is live: a scope FREEs its buffers before its EXIT")
                scope_stack.pop()
            else:
                raise _fail(idx, event, f"unknown event kind {k!r}; kinds are "
                                        f"{', '.join(f'{e.name}={e.value}' for e in EventKind)}")
    except (TypeError, ValueError, IndexError, KeyError) as err:
        if isinstance(err, TraceError):
            raise
        raise _fail(idx, event, _malformed(event, err, shapes)) from None

    if scope_stack:
        scope_id, instance, _ = scope_stack[-1]
        raise TraceError(f"the trace ends with scope {scope_id} ({trace.scopes[scope_id].name!r}) instance "
                         f"{instance} still open (ENTER without EXIT); a finished session closes every scope")
    for b, state in enumerate(b_state):
        if state != _FREED:
            raise TraceError(f"buffer {b} ({names[b_tensor[b]]}{format_region(b_region[b])}) is never freed: every "
                             f"ALLOC needs a FREE (its scope must end) before the trace ends")


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
    return f"a field has the wrong type or shape ({type(err).__name__}: {err}); see dsasim/traced/trace.py for the layouts"
