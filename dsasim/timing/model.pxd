# The C interface of the region column, so that the scheduler (engine.pyx) tests DDR overlaps in C.

from libc.stdint cimport int64_t

from dsasim.traced._events cimport EventLog


cdef class RegionColumn:
    cdef EventLog log
    cdef object offsets_a, tensors_a, ndim_a
    cdef int64_t[::1] offsets, ndim
    cdef int[::1] tensors

    cpdef bint overlaps(self, Py_ssize_t a, Py_ssize_t b)
