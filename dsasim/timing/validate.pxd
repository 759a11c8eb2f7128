# The C interface of TraceChecker, so that the lowering (model.pyx, a subclass) overrides its checks, one per event
# kind, and calls them directly with the event's fields as C integers.

from libc.stdint cimport INT64_MIN, int64_t

from dsasim.traced._events cimport EventLog

cdef enum:
    NO_REGION = -1  # a region id for a HIT region outside the tensor (it lies inside no buffer)

cdef enum:  # a buffer's state (TraceChecker.b_state)
    UNFILLED = 0
    CLEAN = 1
    MODIFIED = 2
    FREED = 3


cdef class TraceChecker:
    cdef list scopes, shapes, names, interned
    # the open scopes, innermost last: scope id, instance, live buffers it allocated (C stacks of depth n_open)
    cdef Py_ssize_t n_open
    cdef object open_a
    cdef int64_t[:, ::1] open_stack
    cdef dict kinds
    cdef int64_t word
    cdef Py_ssize_t n_tensors, n_scopes
    cdef unsigned char[::1] writable, on_chip
    cdef int64_t[::1] ndim, shape_at, dims, next_instance  # a tensor's extents: dims[shape_at[t]:][:ndim[t]]
    cdef EventLog log  # the region table (the trace's columnar log, or our own for a trace of tuples)
    # per buffer (index = buffer id): its tensor, allocated bytes and charge, the region it holds (an offset in
    # the region table: its ALLOC's, then its last fill's) and that region's bytes, its state, and the depth in
    # the scope stack of the scope that allocated it (-1: none)
    cdef Py_ssize_t n_buf, buf_cap
    cdef object b_tensor_a, b_scope_a, b_nbytes_a, b_charged_a, b_region_a, b_held_a, b_state_a
    cdef int[::1] b_tensor, b_scope
    cdef int64_t[::1] b_nbytes, b_charged, b_region, b_held
    cdef signed char[::1] b_state
    # memory levels (index 0: the SRAM, then `hardware.inner_levels`): per level its parent's index (-1 for the
    # SRAM), capacity and live charged bytes; per scope its level; per buffer its level
    cdef list level_names
    cdef Py_ssize_t n_levels
    cdef object level_parent_a, level_capacity_a, level_live_a, scope_level_a, b_level_a
    cdef int64_t[::1] level_parent, level_capacity, level_live
    cdef int[::1] scope_level, b_level
    # the event being checked, for messages: a tuple, or (cur_word != NULL) its first word in the columnar log
    cdef object cur_event, bad
    cdef int64_t* cur_word
    cdef object ins_a
    cdef int64_t[::1] ins  # a tuple COMPUTE's input buffers, as C integers

    cpdef check(self, object trace)
    cpdef int run(self, Py_ssize_t idx, object event) except -1
    cdef int walk(self, EventLog log) except -1
    cpdef finish(self)
    cdef object fail(self, Py_ssize_t idx, str what)
    cdef object shown(self, int64_t value)
    cdef int64_t value(self, object x) except? -1
    cdef int64_t region_id(self, Py_ssize_t idx, int64_t t, object reg, bint hit) except? -2
    cdef tuple region(self, int64_t t, int64_t reg)
    cdef void grow_buffers(self, Py_ssize_t cap) except *
    cdef int live(self, Py_ssize_t idx, int64_t b, str role=*) except -1
    cdef int access(self, Py_ssize_t idx, int64_t b, int64_t t) except -1
    cdef int64_t region_bytes(self, Py_ssize_t idx, int64_t t, int64_t reg) except -1
    cdef bint same_region(self, int64_t t, int64_t a, int64_t b)
    cdef int64_t fill_bytes(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg) except -1
    cdef int reuse_flag(self, Py_ssize_t idx, int reuse) except -1
    cdef int nbytes(self, Py_ssize_t idx, int64_t nb, int64_t need) except -1
    cdef int load(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                  int reuse) except -1
    cdef int open(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int reuse) except -1
    cdef int hit(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int reuse) except -1
    cdef int compute(self, Py_ssize_t idx, int unit, int64_t out, int64_t* ins, Py_ssize_t n_in, int64_t macs,
                     int64_t cycles, int64_t padded) except -1
    cdef int dense(self, Py_ssize_t idx, int64_t t, int64_t reg, str what) except -1
    cdef int store(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb) except -1
    cdef int alloc(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                   int64_t address, int64_t charged) except -1
    cdef int alloc_in(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                      int64_t address, int64_t charged, int64_t scope_id) except -1
    cdef int new_buffer(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                        int64_t address, int64_t charged, Py_ssize_t depth, int level) except -1
    cdef int stage(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                   int64_t source) except -1
    cdef int writeback(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                       int64_t target) except -1
    cdef int in_sram(self, Py_ssize_t idx, int64_t b, str what) except -1
    cdef int parent_buffer(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t other,
                           str role) except -1
    cdef int free(self, Py_ssize_t idx, int64_t b, int64_t charged) except -1
    cdef int64_t slide(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb) except -1
    cdef int enter(self, Py_ssize_t idx, int64_t scope_id, int64_t instance) except -1
    cdef int exit(self, Py_ssize_t idx, int64_t scope_id, int64_t instance) except -1
