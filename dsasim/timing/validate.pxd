# The C interface of TraceChecker, so that the lowering (model.pyx, a subclass) calls its checks directly.

cdef class TraceChecker:
    cdef list scopes, shapes, writable, names, b_tensor, b_nbytes, b_charged, b_region, b_held, b_state, b_scope
    cdef list open_scope, open_instance, open_live, next_instance
    cdef object word
    cdef dict kinds

    cpdef int run(self, Py_ssize_t idx, object event) except -1
    cpdef finish(self)
    cdef int live(self, Py_ssize_t idx, object event, object b, str role=*) except -1
    cdef int access(self, Py_ssize_t idx, object event, object b, object t) except -1
    cdef object region_bytes(self, Py_ssize_t idx, object event, object t, object reg)
    cdef object fill_bytes(self, Py_ssize_t idx, object event, object b, object t, object reg)
    cdef int reuse_flag(self, Py_ssize_t idx, object event, object reuse) except -1
    cdef int nbytes(self, Py_ssize_t idx, object event, object nb, object need) except -1
    cdef int load(self, Py_ssize_t idx, object event) except -1
    cdef int open(self, Py_ssize_t idx, object event) except -1
    cdef int hit(self, Py_ssize_t idx, object event) except -1
    cdef int compute(self, Py_ssize_t idx, object event) except -1
    cdef int store(self, Py_ssize_t idx, object event) except -1
    cdef int alloc(self, Py_ssize_t idx, object event) except -1
    cdef int free(self, Py_ssize_t idx, object event) except -1
    cdef int enter(self, Py_ssize_t idx, object event) except -1
    cdef int exit(self, Py_ssize_t idx, object event) except -1
