"""DDR tensors (`TracedArray`): every access a schedule makes to one is traced by its Session (rules 1, 3, 4 and 7
of `dsasim.traced.session`); and the checks of a tensor's name and shape."""

from __future__ import annotations

from typing import Any

import numpy as np

from dsasim.traced import _core
from dsasim.traced.counters import TensorTraffic
from dsasim.traced.live_buffers import LiveBuffers
from dsasim.traced.regions import as_key, is_region_key
from dsasim.traced.stored_elements import StoredElements
from dsasim.traced.tile import Tile
from dsasim.util import is_int, shape_elements

__all__ = ["TracedArray", "check_shape", "check_tensor_name"]


class TracedArray(_core.ArrayFields):
    """A DDR tensor whose every access from a schedule is traced."""

    __slots__ = ()  # the fields, set in __init__, are C fields of _core.ArrayFields: the compiled core reads them

    def __init__(self, session: _core.SessionFields, tensor_id: int, name: str, shape: tuple[int, ...], writable: bool,
                 must_be_written: bool, scratch: bool, data: np.ndarray | None) -> None:
        self.session = session
        self.id = tensor_id
        self.name = name
        self.shape = shape
        self.writable = writable
        self.must_be_written = must_be_written
        self.scratch = scratch
        self.data = data
        self.traffic = TensorTraffic()
        self.live = LiveBuffers(shape)
        self.stored: StoredElements | None = None  # created at the first store
        self.stored_any = False
        self.nbytes = shape_elements(shape) * session.hardware.word_bytes

    def _getitem_py(self, key: Any) -> Tile:
        """`arr[key]`, `arr[key, reuse]` (the reference; see `session._bind_core`)."""
        kind = type(key)
        if kind is not tuple:
            key = tuple(key) if kind is list else (key,)
        reuse = False
        if key and type(key[-1]) is bool:
            reuse = key[-1]
            key = key[:-1]
            if len(key) == 1 and is_region_key(key[0]):  # the blog's arr[seg_list, reuse], arr[(b, c, h, w), reuse]
                key = tuple(key[0])
        return self.session.access(self, key, reuse)

    def load(self, key: Any, reuse: bool = False) -> Tile:
        """Same as `arr[key]` (or `arr[key, True]` with reuse=True)."""
        if type(key) is not tuple:
            key = (key,)
        return self.session.access(self, key, reuse)

    def slide(self, key: Any, capacity: Any = None) -> Tile:
        """Sliding-window reuse: the rotating buffer this input holds in the current scope moves along one axis
        to `key`, loading only the rows it did not hold (the overlap stays on chip). The first slide in
        a scope allocates the buffer for `capacity` (a region of this tensor as large as the largest `key` it
        will hold; default `key`) and loads `key`. Raises ReuseError for anything else."""
        return self.session.slide(self, as_key(key), None if capacity is None else as_key(capacity))

    def __repr__(self) -> str:
        return f"TracedArray({self.name!r}, shape={self.shape})"

    __getitem__ = _getitem_py


def check_shape(name: str, shape: Any) -> tuple[int, ...]:
    """A tensor shape as a tuple of positive Python ints, or ValueError saying what to pass."""
    if is_int(shape, numpy=True):
        raise ValueError(f"tensor {name!r}: shape {shape!r} must be a tuple of dimensions, e.g. ({shape},)")
    try:
        dims = tuple(shape)
    except TypeError:
        raise ValueError(f"tensor {name!r}: shape {shape!r} ({type(shape).__name__}) must be a tuple of positive "
                         f"integers, e.g. (1, 64, 56, 56)") from None
    out = []
    for d in dims:
        if not is_int(d, numpy=True):
            raise ValueError(f"tensor {name!r}: shape {shape!r}: dimension {d!r} ({type(d).__name__}) is not an "
                             f"integer; pass whole numbers of elements (a fractional size has no meaning)")
        out.append(int(d))
    if not out or any(d <= 0 for d in out):
        raise ValueError(f"tensor {name!r}: shape {tuple(out)} must have at least one dimension, all positive")
    return tuple(out)


def check_tensor_name(name: Any) -> None:
    """Tensor names are non-empty strings: they key reports, traces and JSON."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"tensor name {name!r} must be a non-empty string, e.g. \"output\"")
