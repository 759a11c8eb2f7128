# cython: language_level=3, boundscheck=False, wraparound=False, annotation_typing=False
"""The columnar event log: a trace's events packed into int64 words, about 26 B per event instead of ~190.

`EventLog` has one append method per event kind, called by the Session, and yields the documented tuples of
trace.py back (`iter`), so every reader sees the same events as `ListLog`, the plain list of tuples it replaces
(the tested reference: tests/test_memory.py compares the two on every demo and on random schedules).

Packing (words are int64, stored in fixed chunks so that growing never copies): the first word of an event is
kind | reuse << 4 | id << 8, id being the buffer (the out buffer of a COMPUTE, the scope of ENTER/EXIT);
  ENTER/EXIT    instance
  ALLOC         tensor | region << 24, address, charged_bytes
  LOAD/OPEN/HIT/STORE  tensor | region << 24
  FREE          charged_bytes
  SLIDE         tensor | region << 24, nbytes (the bytes it loaded: not the region's)
  STAGE/WRITEBACK  tensor | region << 24, the other buffer (source / target)
  ALLOC_IN      tensor | region << 24, address, charged_bytes, scope_id
  COMPUTE       compute | len(in_buffers) << 40, then one word per input buffer
`region` is an offset into the region table (a word per dimension, start | stop << 32; a strided region, one
with a (start, stop, step) dimension, marks bit 31 of its first word and has its steps in the next words), shared
by the events of one buffer; `compute` indexes a table of (unit, op, macs, cycles, padded_macs, first_reads,
second_reads, output_reads, output_writes, lane_ops): a COMPUTE's operand accesses (`Trace.compute_accesses`) are
part of its key, so they cost no word of their own (a loop's computes share a few keys). The nbytes of
ALLOC, LOAD and STORE are the region's elements (a strided region's: the indices it holds) x word_bytes (the
trace's rule), so they are not stored.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, realloc

import numpy as np


from dsasim.traced import trace

cdef int64_t BOUND_LIMIT = 1 << 31

cdef int64_t ENTER = trace.ENTER, EXIT = trace.EXIT, ALLOC = trace.ALLOC, LOAD = trace.LOAD, OPEN = trace.OPEN
cdef int64_t HIT = trace.HIT, COMPUTE = trace.COMPUTE, STORE = trace.STORE, FREE = trace.FREE, SLIDE = trace.SLIDE
cdef int64_t STAGE = trace.STAGE, WRITEBACK = trace.WRITEBACK, ALLOC_IN = trace.ALLOC_IN
assert ALLOC_KIND == ALLOC and COMPUTE_KIND == COMPUTE and SLIDE_KIND == SLIDE and STAGE_KIND == STAGE \
    and WRITEBACK_KIND == WRITEBACK and ALLOC_IN_KIND == ALLOC_IN, \
    "_events.pxd's kinds differ from trace.EventKind"


cdef class _Words:
    """A growing sequence of int64 words in fixed chunks (attributes: _events.pxd); `ptrs` holds each chunk's
    first word, so that a reader finds any word by its offset in C."""

    def __cinit__(self):
        self.chunks = []
        self.ptrs = NULL
        self.cur = NULL
        self.pos = CHUNK
        self.size = -CHUNK

    def __dealloc__(self):
        free(self.ptrs)

    cdef int add_chunk(self, object arr) except -1:
        cdef int64_t[::1] view = arr
        cdef Py_ssize_t n = len(self.chunks)
        cdef int64_t** grown = <int64_t**>realloc(self.ptrs, (n + 1) * sizeof(int64_t*))
        if grown == NULL:
            raise MemoryError
        self.ptrs = grown
        self.chunks.append(arr)
        self.ptrs[n] = &view[0]
        self.cur = self.ptrs[n]
        return 0

    cdef int64_t* room(self, int64_t n) except NULL:
        """Pointer to n free words in one chunk (starting a chunk, with a filler, when the current is short)."""
        if self.pos + n > CHUNK:
            if n > CHUNK:
                raise ValueError(f"an event of {n} words does not fit a chunk of {CHUNK}")
            if self.cur != NULL:
                self.cur[self.pos] = SKIP
            self.add_chunk(np.empty(CHUNK, np.int64))
            self.size += CHUNK
            self.pos = 0
        cdef int64_t* p = self.cur + self.pos
        self.pos += n
        return p

    cdef tuple state(self):
        return (list(self.chunks), self.pos)

    cdef void restore(self, list chunks, int64_t pos) except *:
        for arr in chunks:
            self.add_chunk(arr)
        self.size = (len(chunks) - 1) * CHUNK
        self.pos = pos

    cdef int64_t offset(self, int64_t* p):
        return self.size + (p - self.cur)

    cdef int64_t* at(self, int64_t offset):
        """Pointer to the word at `offset` (words never move: chunks are fixed)."""
        return self.ptrs[offset >> CHUNK_BITS] + (offset & (CHUNK - 1))

    def nbytes(self):
        return len(self.chunks) * CHUNK * 8


cdef class EventLog:
    """A trace's events, columnar; the append methods mirror `ListLog`'s (see trace.py). Attributes:
    _events.pxd (the timing model reads the words directly)."""

    def __cinit__(self, int64_t word_bytes):
        self.words = _Words()
        self.regions = _Words()
        self.ndims = []
        self.last_region = []
        self.last_offset = []
        self.compute_ids = {}
        self.computes = []
        self.last_unit = self.last_op = object()  # (matches no key until the first COMPUTE)
        self.last_compute = -1
        self.word_bytes = word_bytes
        self.count = 0
        self.kinds[:] = [0] * 16

    def add_tensor(self, int ndim):
        """A new tensor (ids in order) with `ndim` dimensions."""
        self.ndims.append(ndim)
        self.last_region.append(None)
        self.last_offset.append(-1)

    cdef int64_t _region(self, int64_t tensor, tuple region) except -1:
        """The region's offset in the region table, reusing the tensor's last one when equal."""
        if not 0 <= tensor < len(self.ndims):
            raise ValueError(f"tensor {tensor}: the log knows {len(self.ndims)} tensors (add_tensor)")
        last = self.last_region[tensor]
        if last is region or last == region:  # (checked when it was stored)
            return self.last_offset[tensor]
        if len(region) != <Py_ssize_t>self.ndims[tensor]:
            raise ValueError(f"region {region!r} of tensor {tensor}: a region has one (start, stop) pair per "
                             f"dimension of its tensor ({self.ndims[tensor]})")
        cdef Py_ssize_t n = len(region), i
        cdef bint stepped = False
        for i in range(n):  # a strided region has a (start, stop, step) triple on some dimension
            if len(region[i]) == 3:
                stepped = True
        cdef int64_t* p = self.regions.room(2 * n if stepped else n)
        cdef int64_t start, stop, step
        for i in range(n):
            pair = region[i]
            if isinstance(pair, tuple):  # (a Segment is one)
                start, stop = (<tuple>pair)[0], (<tuple>pair)[1]
            else:
                start, stop = pair[0], pair[1]
            if not (0 <= start < BOUND_LIMIT and 0 <= stop < BOUND_LIMIT):
                raise ValueError(f"region {region!r}: the log stores bounds 0 <= start, stop < 2**31")
            p[i] = start | stop << 32
            if stepped:
                step = pair[2] if len(pair) == 3 else 1
                if len(pair) == 3 and step < 2:
                    raise ValueError(f"region {region!r}: a (start, stop, step) dimension has a step >= 2; write "
                                     f"a dense dimension as a (start, stop) pair")
                p[n + i] = step
        if stepped:
            p[0] |= <int64_t>1 << 31  # the mark `region_stepped` reads
        cdef int64_t off = self.regions.offset(p)
        self.last_region[tensor] = region
        self.last_offset[tensor] = off
        return off

    def __reduce__(self):
        # (pickling, e.g. a trace sent between processes: the chunks themselves, pointers rebuilt on load)
        return (_restore, (self.word_bytes, self.ndims, self.computes, self.count, self.words.state(),
                           self.regions.state()))

    def clear(self):
        """Drop every event (the tables of tensors stay)."""
        self.words = _Words()
        self.regions = _Words()
        self.last_region = [None] * len(self.ndims)
        self.last_offset = [-1] * len(self.ndims)
        self.count = 0
        self.kinds[:] = [0] * 16

    def __len__(self):
        return self.count

    def nbytes(self):
        """Bytes held by the event words and the region table."""
        return self.words.nbytes() + self.regions.nbytes()

    # -- appends, one per kind (argument order = the tuple layout of trace.py after the kind) ------------------
    def enter(self, int64_t scope_id, int64_t instance):
        self.c_scope(ENTER, scope_id, instance)

    def exit(self, int64_t scope_id, int64_t instance):
        self.c_scope(EXIT, scope_id, instance)

    def alloc(self, int64_t buffer, int64_t tensor, tuple region, int64_t nbytes, int64_t address,
              int64_t charged_bytes):
        self.c_alloc(buffer, tensor, region, address, charged_bytes)

    def load(self, int64_t buffer, int64_t tensor, tuple region, int64_t nbytes, bint reuse):
        self._access(LOAD, buffer, tensor, region, reuse)

    def open(self, int64_t buffer, int64_t tensor, tuple region, bint reuse):
        self._access(OPEN, buffer, tensor, region, reuse)

    def hit(self, int64_t buffer, int64_t tensor, tuple region, bint reuse):
        self._access(HIT, buffer, tensor, region, reuse)

    def store(self, int64_t buffer, int64_t tensor, tuple region, int64_t nbytes):
        self._access(STORE, buffer, tensor, region, False)

    def free(self, int64_t buffer, int64_t charged_bytes):
        self.c_free(buffer, charged_bytes)

    def slide(self, int64_t buffer, int64_t tensor, tuple region, int64_t nbytes):
        self.c_slide(buffer, tensor, region, nbytes)

    def stage(self, int64_t buffer, int64_t tensor, tuple region, int64_t nbytes, int64_t source):
        self.c_link(STAGE, buffer, tensor, region, source)

    def writeback(self, int64_t buffer, int64_t tensor, tuple region, int64_t nbytes, int64_t target):
        self.c_link(WRITEBACK, buffer, tensor, region, target)

    def alloc_in(self, int64_t buffer, int64_t tensor, tuple region, int64_t nbytes, int64_t address,
                 int64_t charged_bytes, int64_t scope_id):
        self._place(ALLOC_IN, 5, buffer, tensor, region, address, charged_bytes)[4] = scope_id

    def compute(self, str unit, str op, int64_t out_buffer, tuple in_buffers, int64_t macs, int64_t cycles,
                int64_t padded_macs, tuple accesses=(0, 0, 0, 0, 0)):
        cdef Py_ssize_t n = len(in_buffers), i
        if len(accesses) != 5:
            raise ValueError(f"a COMPUTE's accesses are (first_reads, second_reads, output_reads, output_writes, "
                             f"lane_ops), got {accesses!r}")
        cdef int64_t* p = self.c_compute(unit, op, out_buffer, n, macs, cycles, padded_macs, accesses[0],
                                         accesses[1], accesses[2], accesses[3], accesses[4])
        for i in range(n):
            p[i] = in_buffers[i]

    # -- the same appends for the compiled memory core (_core.pyx), without Python argument parsing ------------
    cdef int c_scope(self, int64_t kind, int64_t scope_id, int64_t instance) except -1:
        """An ENTER or EXIT."""
        cdef int64_t* p = self.words.room(2)
        p[0] = kind | scope_id << 8
        p[1] = instance
        self.count += 1
        self.kinds[kind] += 1
        return 0

    cdef int c_alloc(self, int64_t buffer, int64_t tensor, tuple region, int64_t address,
                     int64_t charged_bytes) except -1:
        self._place(ALLOC, 4, buffer, tensor, region, address, charged_bytes)
        return 0

    cdef int64_t* _place(self, int64_t kind, int64_t n_words, int64_t buffer, int64_t tensor, tuple region,
                         int64_t address, int64_t charged_bytes) except NULL:
        """An ALLOC (4 words) or ALLOC_IN (5: the caller writes the scope id in the last): the words."""
        cdef int64_t off = self._region(tensor, region)
        cdef int64_t* p = self.words.room(n_words)
        p[0] = kind | buffer << 8
        p[1] = tensor | off << 24
        p[2] = address
        p[3] = charged_bytes
        self.count += 1
        self.kinds[kind] += 1
        return p

    cdef void _access(self, int64_t kind, int64_t buffer, int64_t tensor, tuple region, bint reuse) except *:
        """A LOAD, OPEN, HIT or STORE."""
        cdef int64_t off = self._region(tensor, region)
        cdef int64_t* p = self.words.room(2)
        p[0] = kind | (<int64_t>reuse) << 4 | buffer << 8
        p[1] = tensor | off << 24
        self.count += 1
        self.kinds[kind] += 1

    cdef int c_link(self, int64_t kind, int64_t buffer, int64_t tensor, tuple region, int64_t other) except -1:
        """A STAGE or WRITEBACK (`other`: the parent-level buffer, source or target), or a SLIDE (its nbytes)."""
        cdef int64_t off = self._region(tensor, region)
        cdef int64_t* p = self.words.room(3)
        p[0] = kind | buffer << 8
        p[1] = tensor | off << 24
        p[2] = other
        self.count += 1
        self.kinds[kind] += 1
        return 0

    cdef int c_free(self, int64_t buffer, int64_t charged_bytes) except -1:
        cdef int64_t* p = self.words.room(2)
        p[0] = FREE | buffer << 8
        p[1] = charged_bytes
        self.count += 1
        self.kinds[FREE] += 1
        return 0

    cdef int c_slide(self, int64_t buffer, int64_t tensor, tuple region, int64_t nbytes) except -1:
        return self.c_link(SLIDE, buffer, tensor, region, nbytes)  # (the same three words, nbytes third)

    cdef int64_t* c_compute(self, str unit, str op, int64_t out_buffer, Py_ssize_t n_inputs, int64_t macs,
                            int64_t cycles, int64_t padded_macs, int64_t first_reads, int64_t second_reads,
                            int64_t output_reads, int64_t output_writes, int64_t lane_ops) except NULL:
        """A COMPUTE with `n_inputs` operand buffers and these operand accesses (elements; lane operations): the
        words where the caller writes the buffers' ids."""
        cdef int64_t cid
        cdef int64_t* last = self.last_accesses
        if unit is self.last_unit and op is self.last_op and macs == self.last_macs and cycles == self.last_cycles \
                and padded_macs == self.last_padded and first_reads == last[0] and second_reads == last[1] \
                and output_reads == last[2] and output_writes == last[3] and lane_ops == last[4]:
            cid = self.last_compute  # (a loop computes the same shape again and again)
        else:
            key = (unit, op, macs, cycles, padded_macs, first_reads, second_reads, output_reads, output_writes,
                   lane_ops)
            found = self.compute_ids.get(key)
            if found is None:
                found = self.compute_ids[key] = len(self.computes)
                self.computes.append(key)
            cid = found
            self.last_unit, self.last_op, self.last_compute = unit, op, cid
            self.last_macs, self.last_cycles, self.last_padded = macs, cycles, padded_macs
            last[0], last[1], last[2], last[3], last[4] = first_reads, second_reads, output_reads, output_writes, \
                lane_ops
        cdef int64_t* p = self.words.room(2 + n_inputs)
        p[0] = COMPUTE | out_buffer << 8
        p[1] = cid | (<int64_t>n_inputs) << 40
        self.count += 1
        self.kinds[COMPUTE] += 1
        return p + 2

    # -- reading -------------------------------------------------------------------------------------------------
    cdef tuple region_at(self, int64_t offset, int64_t ndim):
        """The region stored at `offset` of the region table, as ((start, stop), ...)."""
        cdef int64_t* r = self.regions.at(offset)
        cdef list axes
        if region_stepped(r):
            axes = []
            for i in range(ndim):
                if region_step(r, ndim, i) == 1:
                    axes.append((region_start(r, i), region_stop(r, i)))
                else:
                    axes.append((region_start(r, i), region_stop(r, i), region_step(r, ndim, i)))
            return tuple(axes)
        return tuple([(region_start(r, i), region_stop(r, i)) for i in range(ndim)])

    cdef tuple decode(self, int64_t* w):
        """The event whose first word is w[0], as the tuple of trace.py."""
        cdef int64_t head = w[0], kind = head & 15, ident = head >> 8, second, tensor, elements, i, n
        cdef int64_t* r
        if kind == ENTER or kind == EXIT or kind == FREE:
            return (kind, ident, w[1])
        second = w[1]
        if kind == COMPUTE:
            n = second >> 40
            unit, op, macs, cycles, padded = self.computes[second & ((1 << 40) - 1)][:5]
            return (COMPUTE, unit, op, ident, tuple([w[2 + i] for i in range(n)]), macs, cycles, padded)
        tensor = second & TENSOR_MASK
        region = self.region_at(second >> 24, self.ndims[tensor])
        elements = 1
        r = self.regions.at(second >> 24)
        for i in range(self.ndims[tensor]):
            elements *= region_count(r, self.ndims[tensor], i)
        if kind == ALLOC:
            return (ALLOC, ident, tensor, region, elements * self.word_bytes, w[2], w[3])
        if kind == LOAD:
            return (LOAD, ident, tensor, region, elements * self.word_bytes, bool(head & 16))
        if kind == STORE:
            return (STORE, ident, tensor, region, elements * self.word_bytes)
        if kind == SLIDE:
            return (SLIDE, ident, tensor, region, w[2])
        if kind == STAGE or kind == WRITEBACK:
            return (kind, ident, tensor, region, elements * self.word_bytes, w[2])
        if kind == ALLOC_IN:
            return (ALLOC_IN, ident, tensor, region, elements * self.word_bytes, w[2], w[3], w[4])
        return (kind, ident, tensor, region, bool(head & 16))

    def compute_accesses(self):
        """Per COMPUTE event, in order, an int64 row (out_buffer, first input buffer or -1, second input buffer or
        -1, first_reads, second_reads, output_reads, output_writes, lane_ops, padded_macs, tensorcore?): what its
        energy prices (`Trace.compute_accesses`)."""
        cdef Py_ssize_t n = self.kinds[COMPUTE], k = 0, j
        out = np.zeros((n, 10), np.int64)
        cdef int64_t[:, ::1] rows = out
        table = np.array([list(e[5:]) + [e[4], e[0] == "tensorcore"] for e in self.computes] or [[0] * 7],
                         np.int64).reshape(-1, 7)
        cdef int64_t[:, ::1] fields = table
        cdef Cursor c = Cursor(0, 0, self.count)
        cdef int64_t* w = next_event(self, &c)
        cdef int64_t cid, n_in
        while w != NULL:
            if (w[0] & 15) == COMPUTE:
                cid = w[1] & ((<int64_t>1 << 40) - 1)
                n_in = w[1] >> 40
                rows[k, 0] = w[0] >> 8
                rows[k, 1] = w[2] if n_in > 0 else -1
                rows[k, 2] = w[3] if n_in > 1 else -1
                for j in range(7):
                    rows[k, 3 + j] = fields[cid, j]
                k += 1
            w = next_event(self, &c)
        return out

    def kind_counts(self):
        """How many events of each kind (a list indexed by EventKind), counted as they were appended."""
        return [self.kinds[k] for k in range(ALLOC_IN + 1)]

    cdef void count_kinds(self):
        """Recount `kinds` from the words (a log restored from its pickled state)."""
        cdef int64_t[16] counts
        cdef Cursor c = Cursor(0, 0, self.count)
        cdef int64_t* w = next_event(self, &c)
        cdef Py_ssize_t k
        for k in range(16):
            counts[k] = 0
        while w != NULL:
            counts[w[0] & 15] += 1
            w = next_event(self, &c)
        for k in range(16):
            self.kinds[k] = counts[k]

    def __iter__(self):
        """The events as the tuples of trace.py, in order."""
        cdef Cursor c = Cursor(0, 0, self.count)
        cdef int64_t* w = next_event(self, &c)
        while w != NULL:
            yield self.decode(w)
            w = next_event(self, &c)


def _restore(word_bytes, ndims, computes, count, words, regions):
    """An EventLog from the state `EventLog.__reduce__` gave (no further appends: the region cache is empty)."""
    cdef EventLog log = EventLog(word_bytes)
    for ndim in ndims:
        log.add_tensor(ndim)
    log.computes = list(computes)
    log.compute_ids = {key: i for i, key in enumerate(computes)}
    log.count = count
    log.words.restore(words[0], words[1])
    log.regions.restore(regions[0], regions[1])
    log.count_kinds()
    return log
