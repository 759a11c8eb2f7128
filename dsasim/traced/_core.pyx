# cython: language_level=3, boundscheck=False, annotation_typing=False
"""The compiled hot path of the memory model: `Session.access`, scope enter and exit, in their common cases.

Each function handles the plain case in C and hands everything else to the Session's pure-Python method of the
same rule (`_access_py`, `_enter_scope_py`, `_exit_scope_py`) *before* changing any state, so the rules and
their error messages live once, in session.py and sram_access.py; what runs here is a faster path to the same
events and counts (tests/test_memory.py compares the two on every demo and on random schedules). The plain case:
no reuse flag, no blog quirks, keys of in-range ints, Segments and unit-step slices, a non-empty scope stack.
"""

import numpy as np

from libc.stdint cimport int64_t
from cpython.tuple cimport PyTuple_New
from cpython.ref cimport Py_INCREF as _incref

from dsasim.traced._events cimport EventLog
from dsasim.traced import trace
from dsasim.traced.segments import Segment
from dsasim.util import region_contains, regions_overlap


cdef object _Tile = None
cdef object _Session = None
cdef object _NULL_LOG = None  # a Session's log when it records nothing: the core skips the call
cdef object _PendingCompute = None
cdef object _SRAM_LEVEL = None  # hardware.SRAM_LEVEL: the name of the level a buffer with level None is in
cdef object _Product = None
cdef object _flat_dot = None


cdef int64_t _ENTER = trace.ENTER, _EXIT = trace.EXIT, _LOAD = trace.LOAD, _OPEN = trace.OPEN, _HIT = trace.HIT
cdef int64_t _STORE = trace.STORE


# -- the log calls: the columnar EventLog through its C methods, any other log (the reference ListLog of the
# tests) through its Python ones. A Session that records nothing has _NULL_LOG, which the callers skip.
cdef inline int _log_scope(log, int64_t kind, long long scope_id, long long instance) except -1:
    if type(log) is EventLog:
        return (<EventLog>log).c_scope(kind, scope_id, instance)
    if kind == _ENTER:
        log.enter(scope_id, instance)
    else:
        log.exit(scope_id, instance)
    return 0


cdef inline int _log_alloc(log, Buffer b, ArrayFields arr, long long address) except -1:
    if type(log) is EventLog:
        return (<EventLog>log).c_alloc(b.id, arr.id, b.region, address, b.charged_bytes)
    log.alloc(b.id, arr.id, b.region, b.nbytes, address, b.charged_bytes)
    return 0


cdef inline int _log_access(log, int64_t kind, long long buffer_id, ArrayFields arr, tuple region,
                            long long nbytes) except -1:
    """A LOAD, OPEN, HIT or STORE without the reuse flag (the core never takes one)."""
    if type(log) is EventLog:
        (<EventLog>log)._access(kind, buffer_id, arr.id, region, False)
    elif kind == _LOAD:
        log.load(buffer_id, arr.id, region, nbytes, False)
    elif kind == _OPEN:
        log.open(buffer_id, arr.id, region, False)
    elif kind == _HIT:
        log.hit(buffer_id, arr.id, region, False)
    else:
        log.store(buffer_id, arr.id, region, nbytes)
    return 0


cdef inline int _log_free(log, Buffer b) except -1:
    if type(log) is EventLog:
        return (<EventLog>log).c_free(b.id, b.charged_bytes)
    log.free(b.id, b.charged_bytes)
    return 0


def bind(tile_type, session_type, null_log, pending_type, sram_level):
    """Give the core the Tile and Session classes, session.py's log that records nothing, the base of compute
    results and the SRAM level's name (they are defined there, once)."""
    global _Tile, _Session, _NULL_LOG, _PendingCompute, _SRAM_LEVEL
    _Tile, _Session, _NULL_LOG = tile_type, session_type, null_log
    _PendingCompute, _SRAM_LEVEL = pending_type, sram_level


def bind_compute(product_type, flat_dot):
    """Give the core tensorcore.py's Product class and the dot's kernel (defined there, once)."""
    global _Product, _flat_dot
    _Product, _flat_dot = product_type, flat_dot


cdef class Buffer:
    """An on-chip buffer: holds one region of one tensor (or scratch data) until its scope exits. `level` is
    None in the SRAM, else the inner memory level's name; an inner buffer's `source` is the parent-level buffer it
    was staged from (and writes back into), as it was at `source_generation`. `fresh_elements`: its elements
    opened as zeros (no load, no stage) that no compute or write-back has written since (`dsasim.dataflow`);
    `fresh_mask`: None while they are all of `region` or none, else a bool array over `region` marking them."""

    cdef public long long id, nbytes, charged_bytes, load_bytes, generation, source_generation, fresh_elements
    cdef public object tensor, region, data, level, source, fresh_mask
    cdef public bint dirty, loaded_from_ddr, stale, freed

    def __init__(self, long long buffer_id, tensor, region, long long nbytes, long long charged_bytes):
        self.id = buffer_id
        self.tensor = tensor
        self.region = region
        self.nbytes = nbytes
        self.charged_bytes = charged_bytes
        self.dirty = False
        self.loaded_from_ddr = False
        self.load_bytes = 0
        self.generation = 0
        self.stale = False
        self.freed = False
        self.data = None
        self.fresh_elements = 0
        self.fresh_mask = None


cdef class ScopeInstance:
    """One execution of a scope: its buffering ways and the Buffer objects it allocated, in order."""

    cdef public long long scope_id, instance, ways
    cdef public list buffers
    cdef public dict held  # tensor id -> newest buffer of that tensor in this scope
    cdef public object path
    cdef public object level  # None: the SRAM; else an inner memory level's name

    def __init__(self, long long scope_id, long long instance, long long ways, path):
        self.scope_id = scope_id
        self.instance = instance
        self.ways = ways
        self.buffers = []
        self.held = {}
        self.path = path


cdef class TrafficFields:
    """Traffic counters in C integers (`counters.TensorTraffic` adds the rest): bytes moved and counts, read and
    written as plain attributes; the core adds to them without creating Python integers."""

    cdef public long long loaded_bytes, stored_bytes, rmw_bytes, loads, stores, hits, opens, blog_loaded_elements
    # the compute units' reads and writes of this tensor's SRAM buffers (elements; `dsasim.dataflow`)
    cdef public long long operand_read_elements, operand_write_elements


cdef class CounterFields(TrafficFields):
    """A run's counters (`counters.Counters`): the traffic fields, then MACs, cycles and the SRAM peak in bytes."""

    cdef public long long macs, padded_macs, tensorcore_cycles, vector_cycles, peak_sram_bytes
    # the TensorCore's useful MACs (`macs` adds the vector unit's dot products) and the vector lane operations
    cdef public long long tensorcore_macs, vector_lane_ops


cdef class SessionFields:
    """The fields of a `Session` that the core uses (session.py adds the rest and its methods; see its __init__)."""

    cdef public CounterFields counters
    cdef public object blog_quirks, numeric, dtype, trace, pending_products, _log, _trace_event_limit
    cdef public object _stack, _scope_ids, _scope_instances
    # C integers: the core adds to them on every access without creating Python integers. `_sram_limit`: the SRAM's
    # capacity in bytes, or 2**63 - 1 when the Session does not enforce it
    cdef public long long _next_buffer, _live_bytes, _word_bytes, _sram_limit
    cdef public object _broken
    cdef public object _levels  # None on one-level hardware; else the inner levels' state (`levels.LevelState`)


cdef class ScopeFields:
    """The fields of a `GlobalHierarchy` (scope.py adds its methods; see its `_init_py`)."""

    cdef public object session, name, ways, _instance, level


cdef class ArrayFields:
    """The fields of a `TracedArray` (traced_array.py adds its methods; see its __init__): the core reads them directly."""

    cdef public TrafficFields traffic
    cdef public object session, id, name, shape, writable, must_be_written, scratch, data, live, stored
    cdef public object stored_any, nbytes


cdef class LiveFields:
    """The fields of a tensor's live buffers (`live_buffers.LiveBuffers` adds its methods; see its __init__)."""

    cdef public object by_id, dim, block, buckets, wide, scan_max


cdef class TileFields:
    """The fields of a `Tile` (tile.py adds its methods): the buffer, the region it views, and the buffer's
    generation when the tile was taken."""

    cdef public object buffer, region
    cdef public long long generation

    def __init__(self, Buffer buffer, region):
        self.buffer = buffer
        self.region = region
        self.generation = buffer.generation


cdef class ProductFields:
    """The fields of a pending compute (`tensorcore.Product` adds its methods): the session, the unit and op, the
    operand tiles, the result's shape, its MACs, cycles and padded MACs, and the kernel computing its values
    from the operands' arrays. Registered in the session's pending products until written into a tile.
    Operand accesses (elements, `dsasim.dataflow`; the output's reads follow from its fresh elements when written):
    first_reads / second_reads of inputs[0] / inputs[1], output_writes, and lane_ops (vector lane operations).
    By default (a vector op) each operand's elements are read once, each output element written once and one
    lane operation done per output element; the TensorCore and the dot set their own."""

    cdef public object session, unit, op, inputs, out_shape, kernel
    cdef public long long macs, cycles, padded_macs, first_reads, second_reads, output_writes, lane_ops

    def __init__(self, session, unit, op, inputs, out_shape, macs, cycles, padded_macs, kernel):
        self.session = session
        self.unit = unit
        self.op = op
        self.inputs = inputs
        self.out_shape = out_shape
        self.macs = macs
        self.cycles = cycles
        self.padded_macs = padded_macs
        self.kernel = kernel
        cdef long long n = 1
        for extent in out_shape:
            n *= <long long>extent
        self.output_writes = self.lane_ops = n
        if len(inputs) > 0:
            self.first_reads = _region_elements(tuple((<TileFields?>inputs[0]).region))
        if len(inputs) > 1:
            self.second_reads = _region_elements(tuple((<TileFields?>inputs[1]).region))
        session.pending_products[self] = self  # Session.finish reports products never written anywhere


cdef inline object _new_tile(Buffer buffer, tuple region):
    cdef TileFields tile = TileFields.__new__(_Tile)  # (a direct tp_new call: no __init__, no argument tuple)
    tile.buffer = buffer
    tile.region = region
    tile.generation = buffer.generation
    return tile


cdef inline object _tile_data(TileFields tile):
    """`Tile.data` of a tile known live in numeric mode: its buffer's array, or the view of its sub-region."""
    cdef Buffer buf = <Buffer>tile.buffer
    if buf.data is None:
        return tile.data  # the property's error
    region = tile.region
    if region is buf.region or region == buf.region:
        return buf.data
    cdef list slices = []
    for p, q in zip(region, buf.region):
        if len(<tuple>p) == 3 or len(<tuple>q) == 3:  # a strided tile or buffer: the property's stepped slices
            return tile.data
        slices.append(slice((<tuple>p)[0] - (<tuple>q)[0], (<tuple>p)[1] - (<tuple>q)[0]))
    return buf.data[tuple(slices)]


cdef inline bint _contains(tuple outer, tuple inner):
    cdef Py_ssize_t i, n = len(inner)
    for i in range(n):
        a = (<tuple>outer[i])
        c = (<tuple>inner[i])
        if <long long>c[0] < <long long>a[0] or <long long>c[1] > <long long>a[1]:
            return False
    return True


cdef inline bint _overlap(tuple x, tuple y):
    cdef Py_ssize_t i, n = len(x)
    for i in range(n):
        a = (<tuple>x[i])
        c = (<tuple>y[i])
        if <long long>c[1] <= <long long>a[0] or <long long>c[0] >= <long long>a[1]:
            return False
    return True


cdef extern from "Python.h":
    ctypedef struct PyObject
    PyObject** PySequence_Fast_ITEMS(object)
    Py_ssize_t PySequence_Fast_GET_SIZE(object)
    ctypedef struct _TypeObject "PyTypeObject":
        PyObject* (*tp_alloc)(_TypeObject*, Py_ssize_t) except NULL
    void _PyTuple_SET_ITEM "PyTuple_SET_ITEM"(object, Py_ssize_t, object)
    void _decref "Py_DECREF"(PyObject*)


cdef inline void _set_item(object t, Py_ssize_t i, object item):
    """Fill item i of a new tuple (PyTuple_SET_ITEM steals a reference: give it one)."""
    _incref(item)
    _PyTuple_SET_ITEM(t, i, item)


cdef tuple _plain_region(tuple shape, key, long long* elements):
    """The region of a plain key (a tuple or a list; see the module docstring), or None for anything else."""
    cdef PyObject** items = PySequence_Fast_ITEMS(key)  # (no Python code runs below: the key cannot change)
    cdef Py_ssize_t nd = len(shape), nk = PySequence_Fast_GET_SIZE(key), i
    cdef long long extent, start, stop, n = 1
    if nk > nd:
        return None
    cdef tuple region = PyTuple_New(nd)  # (filled below before anyone sees it)
    for i in range(nd):
        extent = shape[i]
        if i >= nk:
            _set_item(region, i, (0, extent))
            n *= extent
            continue
        k = <object>items[i]
        kind = type(k)
        if kind is Segment:
            a = (<tuple>k)[0]
            b = (<tuple>k)[1]
            if type(a) is not int or type(b) is not int:
                return None
            start = a
            stop = b
            if not (0 <= start < stop <= extent):
                return None
            _set_item(region, i, k)
        elif kind is int:
            start = k
            if not (0 <= start < extent):
                return None
            stop = start + 1
            _set_item(region, i, (k, k + 1))
        elif kind is tuple and len(<tuple>k) == 2:  # a (start, stop) pair, clamped to the extent as the blog's
            a = (<tuple>k)[0]
            b = (<tuple>k)[1]
            if type(a) is not int or type(b) is not int:
                return None
            if b > extent:
                b = extent
            try:
                start = a
                stop = b
            except OverflowError:  # (a bound past a C integer: the Python path's error)
                return None
            if not (0 <= start < stop):
                return None
            _set_item(region, i, (start, stop))
        elif kind is slice:
            if (<slice>k).step is not None:
                return None
            a = (<slice>k).start
            b = (<slice>k).stop
            if a is None:
                start = 0
            elif type(a) is int:
                start = a
            else:
                return None
            if b is None:
                stop = extent
            elif type(b) is int:
                stop = b
                if stop > extent:
                    stop = extent
            else:
                return None
            if not (0 <= start < stop):
                return None
            _set_item(region, i, (start, stop))
        else:
            return None
        n *= stop - start
    elements[0] = n
    return region


cdef tuple _slices(tuple region):
    return tuple([slice((<tuple>pair)[0], (<tuple>pair)[1]) for pair in region])


cdef enum:
    MAX_DIMS = 8

cdef tuple _ZERO_INDEX = tuple([(0,) * nd for nd in range(MAX_DIMS + 1)])  # the one element of a 1-element view
cdef object _float32 = np.float32
cdef object _float64 = np.float64


cdef int _mask_walk(tuple shape, tuple region, unsigned char* mask, bint mark) except -1:
    """Over the elements of `region` in a C-order byte mask of `shape`: with mark, set them all and return 0;
    without, return 1 when one of them is set. -1 never (errors propagate)."""
    cdef Py_ssize_t nd = len(shape), d
    cdef long long lo[MAX_DIMS]
    cdef long long hi[MAX_DIMS]
    cdef long long idx[MAX_DIMS]
    cdef long long stride[MAX_DIMS]
    cdef long long s = 1, base, j, a, b
    for d in range(nd - 1, -1, -1):
        stride[d] = s
        s *= <long long>shape[d]
        pair = <tuple>region[d]
        lo[d] = pair[0]
        hi[d] = pair[1]
        idx[d] = lo[d]
    a = lo[nd - 1]
    b = hi[nd - 1]
    while True:
        base = 0
        for d in range(nd - 1):
            base += idx[d] * stride[d]
        if mark:
            for j in range(base + a, base + b):
                mask[j] = 1
        else:
            for j in range(base + a, base + b):
                if mask[j]:
                    return 1
        d = nd - 2
        while d >= 0:
            idx[d] += 1
            if idx[d] < hi[d]:
                break
            idx[d] = lo[d]
            d -= 1
        if d < 0:
            return 0


cdef unsigned char* _dense_mask(ArrayFields arr) except? NULL:
    """The byte mask of `arr`'s stored elements when it is one dense array of at most MAX_DIMS dimensions, else NULL."""
    stored = arr.stored
    if stored is None or len(arr.shape) > MAX_DIMS:
        return NULL
    cdef size_t address = stored.flat_address  # 0 without a dense mask
    return <unsigned char*>address


def getitem(ArrayFields arr, key):
    """`TracedArray.__getitem__` for a tuple or list key without a reuse flag (anything else: `_getitem_py`)."""
    cdef SessionFields session = <SessionFields?>arr.session
    kind = type(key)
    if kind is not tuple and kind is not list:  # (a list: the blog's Infer returns lists)
        return arr._getitem_py(key)
    cdef Py_ssize_t n = len(key)
    if not n or type(key[n - 1]) is bool or session._broken is not None:
        return arr._getitem_py(key)
    if session._levels is not None:
        tile = _level_hit(session, arr, key)
        return tile if tile is not None else arr._getitem_py(key)
    return _access(session, arr, key, False)


cdef object _level_hit(SessionFields session, ArrayFields arr, key):
    """`Session._access_levels` when it is a hit (`LevelState.target`, then `LevelState.hit_below`) on a plain key
    without the reuse flag or the blog's quirks: the counts, the HIT event and the tile; None (nothing changed)
    for anything else, which the Python path resolves."""
    cdef list stack = session._stack
    if session.blog_quirks or not stack:
        return None
    cdef long long elements = 0
    cdef tuple region = _plain_region(arr.shape, key, &elements)
    if region is None:
        return None
    levels = session._levels
    role = (<dict?>levels.roles).get(arr.id)
    cdef dict rank = <dict?>(<dict?>levels.rank)[role]
    cdef Py_ssize_t idx
    cdef bint found = False
    for idx in range(len(stack) - 1, -1, -1):  # (LevelState.target: the innermost scope whose level holds the role)
        level = (<ScopeInstance>stack[idx]).level
        if level in rank:
            found = True
            break
    if not found:
        return None  # (the rule's error)
    cdef dict live_of = <dict?>levels.live
    cdef LiveFields live
    cdef Buffer b
    hit = None
    for name in (<dict?>(<dict?>levels.at_or_below)[role])[level]:  # (LevelState.hit_below: the deepest first)
        obj = live_of.get((name, arr.id))
        if obj is None:
            continue
        live = <LiveFields?>obj
        if not live.by_id:
            continue
        if live.buckets is None:
            for candidate in (<dict>live.by_id).values():
                b = <Buffer>candidate
                if not b.stale and _contains(b.region, region):
                    hit = b
                    break
        else:
            hit = live.containing(region)
        if hit is not None:
            break
    if hit is None:
        return None
    b = <Buffer>hit
    cdef TrafficFields traffic = arr.traffic
    cdef CounterFields counters = session.counters
    traffic.blog_loaded_elements += elements  # (Session._requested: the blog's counter, every access not reused)
    counters.blog_loaded_elements += elements
    levels.traffic[name].add(arr.name, "hits", 1)
    if session._log is not _NULL_LOG:
        _log_access(session._log, _HIT, b.id, arr, region, 0)
    return _new_tile(b, region)


def scope_init(ScopeFields scope, session, name=None, ways=None, buffers=None, level=None):
    """`GlobalHierarchy.__init__` for a named SRAM scope with no ways (anything else: `_init_py`, which checks)."""
    if type(name) is not str or not name or ways is not None or buffers is not None or level is not None \
            or type(session) is not _Session:
        scope._init_py(session, name, ways, buffers, level)
        return
    scope.session = session
    scope.name = name
    scope.ways = None
    scope._instance = None
    scope.level = None


def scope_enter(ScopeFields scope):
    """`GlobalHierarchy.__enter__`."""
    cdef SessionFields session = <SessionFields?>scope.session
    if session._broken is not None:
        scope._instance = session._enter_scope(scope.name, scope.ways)
    elif session._levels is not None:
        scope._instance = session._enter_scope_py(scope.name, scope.ways, scope.level)
    else:
        scope._instance = enter_scope(session, scope.name, scope.ways)
    return scope


def scope_exit(ScopeFields scope, exc_type, exc, tb):
    """`GlobalHierarchy.__exit__`."""
    cdef SessionFields session = <SessionFields?>scope.session
    if session._broken is not None or session._levels is not None:
        session._exit_scope(scope._instance, exc)
    else:
        exit_scope(session, scope._instance, exc)


cpdef access(SessionFields session, array, tuple key, reuse):
    """`Session.access` (see there): a hit, or a load / zero-open into a new buffer of the current scope."""
    return _access(session, array, key, reuse)


cdef inline tuple _as_tuple(key):
    return <tuple>key if type(key) is tuple else tuple(key)


cdef _access(SessionFields session, array, key, reuse):
    """`access` for a key that is a tuple or a list (`getitem` passes the blog's Infer lists as they are, the
    Python paths get a tuple)."""
    cdef long long elements = 0
    if session._levels is not None:
        return session._access_levels(array, _as_tuple(key), reuse)
    if reuse is not False or session.blog_quirks or not isinstance(array, ArrayFields):
        return session._access_py(array, _as_tuple(key), reuse)
    cdef ArrayFields arr = <ArrayFields>array
    cdef list stack = session._stack
    if not stack:
        return session._access_py(arr, _as_tuple(key), reuse)
    cdef tuple region = _plain_region(arr.shape, key, &elements)
    if region is None:
        return session._access_py(arr, _as_tuple(key), reuse)
    cdef LiveFields live = <LiveFields?>arr.live
    cdef dict by_id = live.by_id
    hit = None
    cdef Buffer b
    if by_id:
        if live.buckets is None:
            for obj in by_id.values():
                b = <Buffer>obj
                if not b.stale and _contains(b.region, region):
                    hit = b
                    break
        else:
            hit = live.containing(region)
        if hit is None and arr.writable:
            for obj in (by_id.values() if live.buckets is None else live.overlapping(region)):
                b = <Buffer>obj
                if b.dirty and _overlap(b.region, region):
                    return session._access_py(arr, _as_tuple(key), reuse)  # the rule's CoherenceError
    cdef TrafficFields traffic = arr.traffic
    cdef CounterFields counters = session.counters
    traffic.blog_loaded_elements += elements
    counters.blog_loaded_elements += elements
    if hit is not None:
        traffic.hits += 1
        counters.hits += 1
        if session._log is not _NULL_LOG:
            _log_access(session._log, _HIT, (<Buffer>hit).id, arr, region, 0)
        return _new_tile(<Buffer>hit, region)
    cdef ScopeInstance inst = <ScopeInstance?>stack[-1]
    cdef long long nbytes = elements * <long long>session._word_bytes
    # (Session._allocate, inlined)
    cdef long long ways = inst.ways
    cdef long long charged = nbytes * ways
    cdef long long live_bytes = session._live_bytes + charged
    if live_bytes > session._sram_limit:
        session._overflow(arr, region, charged, inst)
    session._live_bytes = live_bytes
    if live_bytes > counters.peak_sram_bytes:
        counters.peak_sram_bytes = live_bytes
    buf = b = Buffer.__new__(Buffer)  # (Buffer.__init__ inlined: a direct tp_new call, no argument parsing)
    b.id = session._next_buffer
    b.tensor = arr
    b.region = region
    b.nbytes = nbytes
    b.charged_bytes = charged
    session._next_buffer += 1
    inst.buffers.append(buf)
    inst.held[arr.id] = buf
    if live.buckets is None and len(by_id) < live.scan_max:
        by_id[b.id] = buf
    else:
        live.add(buf)
    if session._log is not _NULL_LOG:
        _log_alloc(session._log, b, arr, live_bytes - charged + (inst.instance % ways) * nbytes)
    # (Session._fill, inlined for a dense stored mask)
    cdef unsigned char* mask = NULL
    cdef bint opens
    if not arr.writable:
        opens = False
    elif not arr.stored_any:
        opens = True
    else:
        mask = _dense_mask(arr)
        if mask == NULL:
            session._fill(buf, arr, region, elements, False)
            return _new_tile(b, region)
        opens = not _mask_walk(arr.shape, region, mask, False)
    if opens:  # a writable region never stored: zeros on chip, no DMA
        b.loaded_from_ddr = False
        b.load_bytes = 0
        b.fresh_elements = elements
        if session.numeric:
            b.data = np.zeros(tuple([(<tuple>pair)[1] - (<tuple>pair)[0] for pair in region]), session.dtype)
        traffic.opens += 1
        counters.opens += 1
        if session._log is not _NULL_LOG:
            _log_access(session._log, _OPEN, b.id, arr, region, 0)
    else:
        b.loaded_from_ddr = True
        b.load_bytes = nbytes
        if session.numeric:  # an input is never written, so a view is as good as a copy
            view = arr.data[_slices(region)]
            b.data = view.copy() if arr.writable else view
        counters.loaded_bytes += nbytes
        counters.loads += 1
        traffic.loaded_bytes += nbytes
        traffic.loads += 1
        if session._log is not _NULL_LOG:
            _log_access(session._log, _LOAD, b.id, arr, region, nbytes)
    return _new_tile(b, region)


cpdef enter_scope(SessionFields session, name, declared_ways):
    """`Session._enter_scope` for a scope entered before (a new one is registered by the Python method)."""
    cdef list stack = session._stack
    parent = stack[-1] if stack else None
    scope_id = session._scope_ids.get((parent.scope_id if parent is not None else -1, name))
    if scope_id is None:
        return session._enter_scope_py(name, declared_ways)
    cdef list instances = session._scope_instances
    instance = instances[scope_id]
    instances[scope_id] = instance + 1
    info = session.trace.scopes[scope_id]
    cdef ScopeInstance inst = ScopeInstance.__new__(ScopeInstance)  # (__init__ inlined, as for Buffer)
    inst.scope_id = scope_id
    inst.instance = instance
    inst.ways = info.ways
    inst.buffers = []
    inst.held = {}
    inst.path = info.path
    stack.append(inst)
    if session._log is not _NULL_LOG:
        _log_scope(session._log, _ENTER, scope_id, instance)
    return inst


cpdef exit_scope(SessionFields session, inst, exc):
    """`Session._exit_scope` of a scope left normally: store its modified buffers, free them all."""
    cdef list stack = session._stack
    if exc is not None or not stack or stack[-1] is not inst:
        return session._exit_scope_py(inst, exc)
    log = session._log
    cdef list buffers = (<ScopeInstance?>inst).buffers
    cdef Py_ssize_t i
    cdef Buffer b
    cdef long long freed_bytes = 0
    try:
        for i in range(len(buffers) - 1, -1, -1):
            b = <Buffer>buffers[i]
            if b.dirty:
                _store(session, b)
            b.freed = True
            live = <LiveFields?>(<ArrayFields?>b.tensor).live
            if live.buckets is None:
                (<LiveFields>live).by_id.pop(b.id, None)  # (a strided buffer is not there: Session._strided)
            else:
                live.remove(b)
            session._live_bytes -= b.charged_bytes
            if log is not _NULL_LOG:
                _log_free(log, b)
    except BaseException as err:  # e.g. a CoherenceError from a store: the rest of the scope is uncertain
        session._abandon(inst, err)
        raise
    stack.pop()
    if log is not _NULL_LOG:
        _log_scope(log, _EXIT, (<ScopeInstance>inst).scope_id, (<ScopeInstance>inst).instance)
    limit = session._trace_event_limit
    if limit is not None and <long long>len(log) > <long long>limit:  # (C integers: no int object per scope)
        session._drop_trace()


cdef _store(SessionFields session, Buffer buf):
    """`Session._store` for a buffer of a DDR tensor with a dense stored mask, else the method."""
    cdef ArrayFields arr = <ArrayFields?>buf.tensor
    if arr.scratch:
        return session._store(buf)
    cdef LiveFields live = <LiveFields?>arr.live
    region = buf.region
    if live.buckets is not None:
        return session._store(buf)
    cdef Buffer other
    for obj in live.by_id.values():
        other = <Buffer>obj
        if other is not buf and _overlap(other.region, region):
            if other.dirty:
                return session._store(buf)  # the rule's CoherenceError
            other.stale = True
    if arr.stored is None:
        return session._store(buf)
    cdef unsigned char* mask = _dense_mask(arr)
    if mask == NULL:
        return session._store(buf)
    _mask_walk(arr.shape, region, mask, True)
    arr.stored_any = True
    cdef long long elements = 1
    for pair in region:
        elements *= <long long>pair[1] - <long long>pair[0]
    data = buf.data
    if data is not None:
        if elements == 1 and len(region) <= MAX_DIMS:  # one element (demo1's): a scalar store, no slice objects
            arr.data[tuple([(<tuple>pair)[0] for pair in region])] = data[_ZERO_INDEX[len(region)]]
        else:
            arr.data[_slices(region)] = data
    buf.dirty = False
    cdef long long nbytes = elements * <long long>session._word_bytes
    cdef CounterFields counters = session.counters
    counters.stored_bytes += nbytes
    counters.stores += 1
    cdef TrafficFields traffic = arr.traffic
    traffic.stored_bytes += nbytes
    traffic.stores += 1
    if session._log is not _NULL_LOG:
        _log_access(session._log, _STORE, buf.id, arr, region, nbytes)


def tile_iadd(tile, product):
    """`Tile.__iadd__`: `tile += product` accumulates a compute unit's result (anything else: `_iadd_py`)."""
    if not isinstance(product, _PendingCompute):
        return tile._iadd_py(product)
    product.apply(tile, True)
    return tile


cdef long long _region_elements(tuple region) except -1:
    cdef long long n = 1
    for pair in region:
        n *= <long long>(<tuple>pair)[1] - <long long>(<tuple>pair)[0]
    return n


def vector_dot(unit, a, b):
    """`VectorUnit.dot` (see `_dot_py`): sum(a * b) over all elements into a 1-element tile; ceil(elements /
    lanes) cycles, one MAC each."""
    session = unit.session
    if type(a) is not _Tile or type(b) is not _Tile \
            or (<ArrayFields?>(<Buffer>(<TileFields>a).buffer).tensor).session is not session \
            or (<ArrayFields?>(<Buffer>(<TileFields>b).buffer).tensor).session is not session:
        return unit._dot_py(a, b)  # the rule's error
    cdef long long n = _region_elements((<TileFields>a).region)
    if n != _region_elements((<TileFields>b).region):
        return unit._dot_py(a, b)
    cdef long long lanes = unit.lanes
    p = _new_product(session, "vector", "dot", (a, b), (1,), n, (n + lanes - 1) // lanes, 0, _flat_dot)
    (<ProductFields>p).first_reads = (<ProductFields>p).second_reads = (<ProductFields>p).lane_ops = n
    (<ProductFields>p).output_writes = 1
    return p


cdef _new_product(session, unit, op, tuple inputs, tuple out_shape, long long macs, long long cycles,
                  long long padded_macs, kernel):
    """`Product(...)` without the call's argument tuple and __init__ (ProductFields.__init__'s fields, and its
    registration among the session's pending products)."""
    cdef ProductFields p = ProductFields.__new__(_Product)
    p.session = session
    p.unit = unit
    p.op = op
    p.inputs = inputs
    p.out_shape = out_shape
    p.macs = macs
    p.cycles = cycles
    p.padded_macs = padded_macs
    p.kernel = kernel
    p.first_reads = p.second_reads = p.output_writes = p.lane_ops = 0  # (the caller sets them)
    session.pending_products[p] = p
    return p


def product_apply(product, out, accumulate):
    """`Product.apply`: check the operands live, mark the output written, compute (numeric mode), trace it."""
    cdef ProductFields p = <ProductFields?>product
    cdef SessionFields session = <SessionFields?>p.session
    if type(out) is not _Tile or session._broken is not None:
        return product._apply_py(out, accumulate)
    cdef TileFields out_tile = <TileFields>out  # (a Tile: its fields are C fields)
    cdef Buffer ob = <Buffer?>out_tile.buffer
    cdef ArrayFields arr = <ArrayFields?>ob.tensor
    if arr.session is not session or not arr.writable or ob.generation != out_tile.generation \
            or ob.freed or ob.stale:
        return product._apply_py(out, accumulate)  # the rule's error
    cdef tuple region = out_tile.region
    cdef tuple shape = p.out_shape
    cdef Py_ssize_t nd = len(region), i
    cdef long long elements = 1, extent
    same = len(shape) == nd
    for i in range(nd):
        pair = <tuple>region[i]
        extent = <long long>pair[1] - <long long>pair[0]
        elements *= extent
        if same and extent != <long long>shape[i]:
            same = False
    if not same and not (shape == (1,) and elements == 1):
        return product._apply_py(out, accumulate)
    cdef list ids = []  # the input buffers (their ids are C integers: no int object each)
    cdef Buffer tb
    cdef tuple inputs = p.inputs
    for t in inputs:
        if type(t) is not _Tile:
            return product._apply_py(out, accumulate)
        tb = <Buffer?>(<TileFields>t).buffer
        if tb.generation != (<TileFields>t).generation or tb.freed or tb.stale:
            return product._apply_py(out, accumulate)
        ids.append(tb)
    levels = session._levels
    if levels is not None and p.unit == "tensorcore" and not _operands_in_place(levels, ids, ob):
        return product._apply_py(out, accumulate)  # (LevelState.check_operands: the rule's error)
    session.pending_products.pop(product, None)
    cdef CounterFields counters = session.counters
    if not ob.dirty:  # (Session.mark_written)
        ob.dirty = True
        if ob.loaded_from_ddr:
            ob.loaded_from_ddr = False
            if ob.level is not None:
                levels.count_rmw(ob)
            else:
                counters.rmw_bytes += ob.load_bytes
                arr.traffic.rmw_bytes += ob.load_bytes
    if levels is not None:
        levels.wrote(ob, region)
    # (Session.count_operands: the output's fresh elements are not read; an overwrite reads none of them)
    cdef long long fresh = 0
    if ob.fresh_elements:
        if ob.fresh_mask is None and ob.fresh_elements == elements:
            fresh = elements
            ob.fresh_elements = 0
        else:
            fresh = session.take_fresh(ob, region)
    if not accumulate:
        fresh = elements
    if levels is None:
        arr.traffic.operand_write_elements += p.output_writes
        arr.traffic.operand_read_elements += p.output_writes - fresh
        if len(ids) > 0:
            (<ArrayFields>(<Buffer>ids[0]).tensor).traffic.operand_read_elements += p.first_reads
        if len(ids) > 1:
            (<ArrayFields>(<Buffer>ids[1]).tensor).traffic.operand_read_elements += p.second_reads
    else:  # (Session._add_operand: each in the level its buffer is in, the output first)
        _add_operand(levels, ob, p.output_writes - fresh, p.output_writes)
        if len(ids) > 0:
            _add_operand(levels, <Buffer>ids[0], p.first_reads, 0)
        if len(ids) > 1:
            _add_operand(levels, <Buffer>ids[1], p.second_reads, 0)
    if session.numeric:  # (Product.compute with `Tile.data` inlined: the operands were checked live above)
        result = p.kernel(*[_tile_data(<TileFields?>t) for t in inputs])
        view = _tile_data(<TileFields>out)
        kind = type(result)
        if accumulate and elements == 1 and nd <= MAX_DIMS and (kind is _float32 or kind is _float64) \
                and view.dtype.type is kind:
            # a scalar (a dot) into one element: the same IEEE add as the array's `+=` (float32 + float32 in
            # float32, float64 in float64), without a ufunc call's setup (~0.9 µs, a third of a vector dot)
            index = _ZERO_INDEX[nd]
            view[index] = view[index] + result
        else:
            if result.shape != view.shape and result.ndim:  # a 0-d result (a dot) broadcasts as it is
                result = result.reshape(view.shape)
            if accumulate:
                view += result
            else:
                view[...] = result
    unit = p.unit
    cdef long long macs = p.macs, cycles = p.cycles, padded = p.padded_macs
    counters.macs += macs  # (Session.emit_compute)
    counters.padded_macs += padded
    if unit == "tensorcore":
        counters.tensorcore_cycles += cycles
        counters.tensorcore_macs += macs
    else:
        counters.vector_cycles += cycles
        counters.vector_lane_ops += p.lane_ops
    log = session._log
    cdef int64_t* words
    # the event's operand accesses, as counted above (elements; lane operations of the vector unit only)
    cdef long long first = p.first_reads if len(ids) > 0 else 0, second = p.second_reads if len(ids) > 1 else 0
    cdef long long lanes = 0 if unit == "tensorcore" else p.lane_ops
    if log is not _NULL_LOG:
        op = p.op
        if type(log) is EventLog and type(unit) is str and type(op) is str:
            words = (<EventLog>log).c_compute(unit, op, ob.id, len(ids), macs, cycles, padded, first, second,
                                              p.output_writes - fresh, p.output_writes, lanes)
            for i in range(len(ids)):
                words[i] = (<Buffer>ids[i]).id
        else:
            log.compute(unit, op, ob.id, tuple([(<Buffer>b).id for b in ids]), macs, cycles, padded,
                        (first, second, p.output_writes - fresh, p.output_writes, lanes))


cdef tuple _TENSORCORE_ROLES = ("input", "weight")


cdef bint _operands_in_place(levels, list ids, Buffer ob) except -1:
    """`LevelState.check_operands` without its errors: True when the TensorCore's two inputs and output each are in
    the innermost level of their declared role's path (or belong to an on-chip tensor, which has none)."""
    if len(ids) != 2:
        return False
    cdef dict roles = <dict?>levels.roles
    cdef dict deepest = <dict?>levels.deepest
    cdef Buffer b
    for i in range(3):
        b = <Buffer>ids[i] if i < 2 else ob
        role = _TENSORCORE_ROLES[i] if i < 2 else "output"
        declared = roles.get((<ArrayFields?>b.tensor).id)
        if declared is None:
            continue
        if declared != role:
            return False
        where = b.level
        if where is None:
            where = _SRAM_LEVEL
        if where != deepest[role]:
            return False
    return True


cdef int _add_operand(levels, Buffer b, long long read_elements, long long write_elements) except -1:
    """`Session._add_operand`: a compute's reads and writes of b's tensor, in the level b is in (elements)."""
    cdef ArrayFields arr = <ArrayFields?>b.tensor
    if b.level is None:
        arr.traffic.operand_read_elements += read_elements
        arr.traffic.operand_write_elements += write_elements
    else:
        levels.traffic[b.level].add_operand(arr.name, read_elements, write_elements)
    return 0


# -- the blog's Infer (bounds.py): the common case of get_input_segment / get_w_segment --------------------------
cdef inline object _new_segment(long long start, long long stop):
    """`Segment(start, stop)` allocated directly (a tuple subclass: tp_alloc and two items, no call)."""
    cdef PyObject* raw = (<_TypeObject*>Segment).tp_alloc(<_TypeObject*>Segment, 2)
    seg = <object>raw  # (a new reference of its own: tp_alloc's is released)
    _decref(raw)
    _set_item(seg, 0, start)
    _set_item(seg, 1, stop)
    return seg


cdef class _InferGeometry:
    """A `Conv2dBoundsInfer`'s fields as C integers, read once per Infer (its dataclass is frozen), and the three
    constant Segments of every `get_w_segment` result (immutable, so shared)."""

    cdef long long n, oc, oh, ow, ih, iw, ocpg, icpg, kh, kw, sh, sw, ph, pw, dh, dw
    cdef object w_tail


cdef _InferGeometry _geometry(infer):
    """The C copy of `infer`'s fields, made on first use and kept in its instance dict."""
    geo = infer.__dict__.get("_c_geometry")
    if geo is not None:
        return <_InferGeometry>geo
    cdef _InferGeometry g = _InferGeometry.__new__(_InferGeometry)
    g.n, g.oc, g.oh, g.ow = infer.output_shape
    _, _, g.ih, g.iw = infer.input_shape
    groups = infer.groups
    g.ocpg, g.icpg = infer.out_channels // groups, infer.in_channels // groups
    (g.kh, g.kw), (g.sh, g.sw), (g.ph, g.pw), (g.dh, g.dw) = infer.kernel_size, infer.stride, infer.padding, \
        infer.dilation
    g.w_tail = (_new_segment(0, g.icpg), _new_segment(0, g.kh), _new_segment(0, g.kw))
    object.__setattr__(infer, "_c_geometry", g)  # (frozen dataclass: a cache, not a field)
    return g


def infer_input_segment(infer, n, oc, oh, ow):
    """`Conv2dBoundsInfer.get_input_segment` for Segment arguments that start inside the output and windows
    inside the image (the reference: `_get_input_segment_py`, which takes everything else)."""
    if type(n) is not Segment or type(oc) is not Segment or type(oh) is not Segment or type(ow) is not Segment:
        return infer._get_input_segment_py(n, oc, oh, ow)
    cdef _InferGeometry g = _geometry(infer)
    cdef long long n0, n1, c0, c1, h0, h1, w0, w1, lo_h, hi_h, lo_w, hi_w
    try:
        n0, n1, c0, c1 = (<tuple>n)[0], (<tuple>n)[1], (<tuple>oc)[0], (<tuple>oc)[1]
        h0, h1, w0, w1 = (<tuple>oh)[0], (<tuple>oh)[1], (<tuple>ow)[0], (<tuple>ow)[1]
    except (OverflowError, TypeError):
        return infer._get_input_segment_py(n, oc, oh, ow)
    if not (0 <= n0 < n1 and n0 < g.n and 0 <= c0 < c1 and c0 < g.oc
            and 0 <= h0 < h1 and h0 < g.oh and 0 <= w0 < w1 and w0 < g.ow):
        return infer._get_input_segment_py(n, oc, oh, ow)  # (its errors, and unclamped tiles past the end)
    if h1 > g.oh:
        h1 = g.oh
    if w1 > g.ow:
        w1 = g.ow
    lo_h, hi_h = h0 * g.sh - g.ph, (h1 - 1) * g.sh + (g.kh - 1) * g.dh - g.ph  # geometry.window_rows in the image
    lo_w, hi_w = w0 * g.sw - g.pw, (w1 - 1) * g.sw + (g.kw - 1) * g.dw - g.pw
    if lo_h < 0 or hi_h >= g.ih or lo_w < 0 or hi_w >= g.iw:
        return infer._get_input_segment_py(n, oc, oh, ow)  # (a border: the rows really read)
    return [n, _new_segment(c0 // g.ocpg * g.icpg, ((c1 - 1) // g.ocpg + 1) * g.icpg),
            _new_segment(lo_h, hi_h + 1), _new_segment(lo_w, hi_w + 1)]


def infer_w_segment(infer, oc):
    """`Conv2dBoundsInfer.get_w_segment` for a Segment starting inside the output channels (the reference:
    `_get_w_segment_py`)."""
    if type(oc) is not Segment:
        return infer._get_w_segment_py(oc)
    cdef _InferGeometry g = _geometry(infer)
    if not 0 <= (<tuple>oc)[0] < (<tuple>oc)[1] or (<tuple>oc)[0] >= g.oc:
        return infer._get_w_segment_py(oc)
    cdef tuple tail = g.w_tail
    return [oc, tail[0], tail[1], tail[2]]
