# The C interface of the columnar event log, so that the timing model (validate.pyx, model.pyx) reads the words
# and the region table directly instead of decoding every event into tuples.

from libc.stdint cimport int64_t

cdef enum:
    CHUNK_BITS = 16
    CHUNK = 1 << 16  # words per chunk (512 KiB)
    SKIP = 15  # kind of the filler that ends a chunk early (a record never straddles two chunks)
    TENSOR_MASK = (1 << 24) - 1
    ALLOC_KIND = 2  # EventKind.ALLOC, .COMPUTE and .SLIDE (_events.pyx checks them against trace.py at import):
    COMPUTE_KIND = 6  # the kinds whose events take other than 2 words
    SLIDE_KIND = 9
    STAGE_KIND = 10  # STAGE and WRITEBACK: 3 words (the other buffer in the third)
    WRITEBACK_KIND = 11
    ALLOC_IN_KIND = 12  # 5 words: ALLOC's four and the scope id


cdef inline int64_t region_stop(int64_t* r, int64_t dim):
    return r[dim] >> 32


cdef inline int64_t region_start(int64_t* r, int64_t dim):
    """The start of dimension `dim` of the region stored at r (one word per dimension: start | stop << 32; bit 31
    of the first word marks a strided region, whose per-dimension steps follow its bounds: `region_step`)."""
    return r[dim] & ((<int64_t>1 << 31) - 1)  # (a typed mask: a bare 0x7FFFFFFF would be a Python int)


cdef inline bint region_stepped(int64_t* r):
    """Whether the region stored at r is strided (some dimension holds every step-th index only)."""
    return (r[0] >> 31) & 1


cdef inline int64_t region_step(int64_t* r, int64_t ndim, int64_t dim):
    """The step of dimension `dim` of the region stored at r (of `ndim` dimensions): 1 unless it is strided."""
    return r[ndim + dim] if (r[0] >> 31) & 1 else 1


cdef inline int64_t region_count(int64_t* r, int64_t ndim, int64_t dim):
    """How many indices dimension `dim` of the region stored at r holds: (stop - start) / step, rounded up."""
    cdef int64_t step = region_step(r, ndim, dim)
    return (region_stop(r, dim) - region_start(r, dim) + step - 1) // step


cdef class _Words:
    cdef list chunks
    cdef int64_t** ptrs  # each chunk's first word
    cdef int64_t* cur
    cdef int64_t pos  # next free word of the current chunk
    cdef int64_t size  # words before the current chunk

    cdef int64_t* room(self, int64_t n) except NULL
    cdef tuple state(self)
    cdef int add_chunk(self, object arr) except -1
    cdef void restore(self, list chunks, int64_t pos) except *
    cdef int64_t offset(self, int64_t* p)
    cdef int64_t* at(self, int64_t offset)


cdef class EventLog:
    cdef _Words words
    cdef _Words regions
    cdef list ndims  # per tensor
    cdef list last_region  # per tensor: the region last interned, and its offset
    cdef list last_offset
    cdef dict compute_ids
    cdef list computes
    cdef object last_unit, last_op  # the last COMPUTE's key and id (see c_compute)
    cdef int64_t last_macs, last_cycles, last_padded, last_compute
    cdef int64_t[5] last_accesses  # the last COMPUTE's operand accesses (its key's last five fields)
    cdef public int64_t word_bytes
    cdef int64_t count
    cdef int64_t[16] kinds  # events per kind (low 4 bits of the first word), kept as they are appended

    cdef int64_t _region(self, int64_t tensor, tuple region) except -1
    cdef tuple region_at(self, int64_t offset, int64_t ndim)
    cdef tuple decode(self, int64_t* w)
    cdef void count_kinds(self)
    cdef void _access(self, int64_t kind, int64_t buffer, int64_t tensor, tuple region, bint reuse) except *
    cdef int c_scope(self, int64_t kind, int64_t scope_id, int64_t instance) except -1
    cdef int c_alloc(self, int64_t buffer, int64_t tensor, tuple region, int64_t address,
                     int64_t charged_bytes) except -1
    cdef int64_t* _place(self, int64_t kind, int64_t n_words, int64_t buffer, int64_t tensor, tuple region,
                         int64_t address, int64_t charged_bytes) except NULL
    cdef int c_link(self, int64_t kind, int64_t buffer, int64_t tensor, tuple region, int64_t other) except -1
    cdef int c_free(self, int64_t buffer, int64_t charged_bytes) except -1
    cdef int c_slide(self, int64_t buffer, int64_t tensor, tuple region, int64_t nbytes) except -1
    cdef int64_t* c_compute(self, str unit, str op, int64_t out_buffer, Py_ssize_t n_inputs, int64_t macs,
                            int64_t cycles, int64_t padded_macs, int64_t first_reads, int64_t second_reads,
                            int64_t output_reads, int64_t output_writes, int64_t lane_ops) except NULL


cdef inline int64_t event_words(int64_t* w):
    """How many words the event starting at w[0] takes."""
    cdef int64_t kind = w[0] & 15
    if kind == ALLOC_KIND:
        return 4
    if kind == COMPUTE_KIND:
        return 2 + (w[1] >> 40)
    if kind == SLIDE_KIND or kind == STAGE_KIND or kind == WRITEBACK_KIND:
        return 3
    if kind == ALLOC_IN_KIND:
        return 5
    return 2


cdef struct Cursor:  # a reader's place in an EventLog: start from Cursor(0, 0, len(log))
    Py_ssize_t chunk  # the chunk of words being read
    int64_t pos  # the next word in it
    int64_t left  # events not read yet


cdef inline int64_t* next_event(EventLog log, Cursor* c):
    """The first word of the next event of `log`, or NULL after the last (every reader walks the words so)."""
    cdef int64_t* w
    while c.left > 0 and c.chunk < len(log.words.chunks):
        w = log.words.ptrs[c.chunk]
        if c.pos < CHUNK and (w[c.pos] & 15) != SKIP:
            w += c.pos
            c.pos += event_words(w)
            c.left -= 1
            return w
        c.chunk += 1
        c.pos = 0
    return NULL
