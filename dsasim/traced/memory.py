"""The traced memory model: DDR tensors (`TracedArray`), SRAM scopes (`GlobalHierarchy`), buffers and tiles.

Every number dsasim reports rests on these rules (see docs/model/traffic.md):
  1. A `TracedArray` is a DDR tensor; indexing it inside a scope yields a `Tile` backed by an SRAM buffer.
  2. A `GlobalHierarchy` is an SRAM scope; buffers allocated in it live until it exits. Scopes nest.
  3. `arr[region]`: a live buffer of `arr` holding a superset of region with current data is a hit (0 bytes);
     otherwise a DMA load of elements x word_bytes into a new buffer of the current scope.
  4. `arr[region, True]` (the blog's reuse flag) loads into the buffer `arr` already holds in the current scope
     (storing it first if modified) instead of allocating: it saves SRAM, not traffic.
  5. Writable tensors (outputs, intermediates): a region never stored before opens as zeros without DMA; a
     region stored before is loaded (a read-modify-write once modified). A modified buffer is stored exactly
     once per modification: when freed or reused.
  6. The live footprint (buffer bytes x the scope's buffering ways) never exceeds `sram_bytes`.
  7. `arr.slide(key)` (sliding-window reuse) moves the buffer `arr` holds in the current scope along one axis,
     as a rotating (line) buffer: only the rows of the new region it does not hold come by DMA; the
     first slide in a scope allocates it (sized for `capacity=`, the largest region it will hold) and loads.
All state lives in a `Session`; two sessions never interfere.
"""

from __future__ import annotations

import numbers
import operator
import os
import sys
from itertools import starmap
from typing import Any, Mapping

import numpy as np

from dsasim.errors import (CoherenceError, LevelError, ReadOnlyError, RegionError, ReuseError, SessionFinishedError,
                           SessionStateError, SramOverflowError, StaleTileError, UnfinishedError)
from dsasim.hardware import SRAM_LEVEL, Accelerator
from dsasim.layout import DEFAULT_LAYOUT, LAYOUTS, check_layout
from dsasim.traced.levels import LevelState, LevelTraffic, check_role, refuse_modified_overlap
from dsasim.traced.segments import Segment
from dsasim.traced.trace import NullLog, Region, ScopeInfo, TensorInfo, Trace, format_region
from dsasim.util import (ceil_div, format_bytes, is_int, numpy_hugepages_for_tensor_data, region_contains,
                          region_elements, regions_overlap, shape_elements, whole_region)

_NO_LIMIT = 2 ** 63 - 1  # the C-integer limits' "none": `Session._sram_limit` when capacity is not enforced

try:
    from dsasim.traced import _core
except ImportError as err:  # a source tree used without `pip install -e .`
    raise ImportError(f"dsasim's compiled core (dsasim/traced/_core.pyx) is not built ({err}); run `pip install "
                      f"-e .` in the repository (it compiles dsasim/**/*.pyx with Cython and gcc)") from err


class TensorTraffic(_core.TrafficFields):
    """Per-tensor traffic counters, in bytes and counts (C integers: `_core.TrafficFields`)."""

    FIELDS: tuple[str, ...] = ("loaded_bytes", "stored_bytes", "rmw_bytes", "loads", "stores", "hits", "opens",
                               "blog_loaded_elements")  # rmw: loads of stored (partial) results modified again

    def __init__(self, **values: int) -> None:
        for name, value in values.items():
            if name not in self.FIELDS:
                raise TypeError(f"{type(self).__name__} has no counter {name!r}; its counters: "
                                f"{', '.join(self.FIELDS)}")
            setattr(self, name, value)

    def values(self) -> tuple[int, ...]:
        """The counters, in FIELDS order."""
        return tuple([getattr(self, name) for name in self.FIELDS])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.values() == other.values() and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  (mutable, like the dataclass it replaced)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.__dict__.items())
        return (f"{type(self).__name__}("
                + ", ".join(f"{n}={v}" for n, v in zip(self.FIELDS, self.values())) + extra + ")")

    def __reduce__(self) -> tuple:
        return _restore_counters, (type(self), dict(zip(self.FIELDS, self.values())), dict(self.__dict__))


class Counters(TensorTraffic, _core.CounterFields):
    """Whole-run counters, in bytes, elements, MACs and cycles: the traffic of all tensors, then these; and
    `per_tensor`, each tensor's `TensorTraffic` by name."""

    FIELDS = TensorTraffic.FIELDS + ("macs", "padded_macs", "tensorcore_cycles", "vector_cycles", "peak_sram_bytes")

    def __init__(self, per_tensor: dict[str, TensorTraffic] | None = None, **values: int) -> None:
        super().__init__(**values)
        self.per_tensor: dict[str, TensorTraffic] = {} if per_tensor is None else per_tensor
        self.levels: dict[str, LevelTraffic] = {}  # each inner memory level's traffic with its parent, by name


def _restore_counters(kind: type, values: dict[str, int], extra: dict) -> TensorTraffic:
    """Unpickle a TensorTraffic or Counters."""
    counters = kind.__new__(kind)
    for name, value in values.items():
        setattr(counters, name, value)
    counters.__dict__.update(extra)
    return counters


Buffer = _core.Buffer  # an SRAM buffer (a C class: the compiled core reads its fields directly)



class PendingCompute:
    """Base of compute results (`tensorcore.Product`) that a tile accepts in `tile += p` or `tile.assign(p)`."""

    __slots__ = ()

    def apply(self, out: "Tile", accumulate: bool) -> None:
        """Write (or accumulate) the result into `out`."""
        raise NotImplementedError


def _check_product(tile: "Tile", value: Any, how: str) -> None:
    if not isinstance(value, PendingCompute):
        raise TypeError(f"{how} {tile!r} needs a compute unit's result (e.g. tc.conv2d(x, w) or "
                        f"vector.copy(src)), got {type(value).__name__}")


class Tile(_core.TileFields):
    """A view of a region of a buffer: what schedules compute with. Goes stale when its buffer is reused."""

    __slots__ = ()

    @property
    def tensor(self) -> "TracedArray":
        """The DDR tensor (or scratch array) this tile belongs to."""
        return self.buffer.tensor

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the tile in elements."""
        return tuple([axis[1] - axis[0] if len(axis) == 2 else len(range(*axis)) for axis in self.region])

    def check_live(self) -> Buffer:
        """Return the buffer, raising StaleTileError if the tile no longer refers to its data."""
        buf = self.buffer
        if buf.generation != self.generation or buf.freed or buf.stale:
            session = buf.tensor.session
            if session._broken is not None and not session.finished:  # (after finish a freed tile is just stale)
                raise SessionStateError(session._broken)
            why = ("its buffer was freed when its scope exited" if buf.freed else
                   "its buffer was reloaded with another region (reuse flag)" if buf.generation != self.generation
                   else "DDR was overwritten by another buffer's store after it was loaded")
            raise StaleTileError(
                f"tile {buf.tensor.name}{format_region(self.region)} used after {why}; take the tile again "
                f"(index the TracedArray) before using it")
        return buf

    @property
    def data(self) -> np.ndarray:
        """The tile's values (a numpy view into its buffer); numeric mode only."""
        buf = self.check_live()
        if buf.data is None:
            raise RuntimeError("tile data is only available in numeric mode (Session(numeric=True))")
        if self.region is buf.region or self.region == buf.region:
            return buf.data
        if any(len(axis) == 3 for axis in self.region) or any(len(axis) == 3 for axis in buf.region):
            return buf.data[_strided_slices(self.region, buf.region)]
        return buf.data[tuple(slice(a - b0, b - b0) for (a, b), (b0, _) in zip(self.region, buf.region))]

    def __getitem__(self, key: Any) -> "Tile":
        """A sub-tile, indexed relative to this tile (ints, slices or Segments)."""
        self.check_live()
        if any(len(axis) == 3 for axis in self.region):
            raise RegionError(f"{self.buffer.tensor.name}{format_region(self.region)}: a strided tile is not "
                              f"indexed further; index the TracedArray with the strided box you need")
        if type(key) is not tuple:
            key = (key,)
        region = _normalize(self.buffer.tensor.name, self.shape, key)
        if type(region_elements(region)) is not int:
            region = _integral_region(self.buffer.tensor.name, region)[0]
        return Tile(self.buffer, tuple((o + a, o + b) for (o, _), (a, b) in zip(self.region, region)))

    def _iadd_py(self, product: Any) -> "Tile":
        """`tile += product`: accumulate a compute unit's result (the reference of `_core.tile_iadd`)."""
        if not isinstance(product, PendingCompute):
            _check_product(self, product, "`+=` into")
        product.apply(self, accumulate=True)
        return self

    __iadd__ = _iadd_py

    def __setitem__(self, key: Any, value: Any) -> None:
        """`tile[k] += product` lands here with the sub-tile already updated; `tile[k] = product` assigns."""
        if isinstance(value, Tile):
            if value.buffer is self.buffer and value.region == self[key].region:
                return
            raise ValueError("cannot copy one tile into another by assignment; use a compute unit "
                             "(e.g. out.assign(vector.copy(src)))")
        self[key].assign(value)

    def assign(self, product: Any) -> "Tile":
        """Overwrite the tile with a product's result."""
        if not isinstance(product, PendingCompute):
            _check_product(self, product, "assign into")
        product.apply(self, accumulate=False)
        return self

    def __repr__(self) -> str:
        return f"Tile({self.buffer.tensor.name}{format_region(self.region)}, buffer={self.buffer.id})"


def _as_key(key: Any) -> tuple:
    """An index as the tuple `_normalize` takes: a list (the blog's Infer returns one) or a tuple as it is."""
    kind = type(key)
    return key if kind is tuple else tuple(key) if kind is list else (key,)


def _normalize(name: str, shape: tuple[int, ...], key: tuple, strided: bool = False) -> Region:
    """Turn an index (ints, slices, Segments or (start, stop) pairs) into a region clipped to `shape`; with
    `strided`, a slice with a step gives a strided dimension (start, last + 1, step), or a pair if it holds one
    index."""
    if len(key) > len(shape):
        raise RegionError(f"{name}: {len(key)} indices for a {len(shape)}-d tensor of shape {shape}")
    region = []
    append = region.append
    for k, extent in zip(key, shape):
        if type(k) is Segment:  # the common case in schedules: a Segment inside the tensor is kept as is
            start, stop = k
            if 0 <= start < stop <= extent:
                append(k)
                continue
        append(_normalize_one(name, len(region), extent, k, strided))
    if len(region) < len(shape):
        region.extend((0, extent) for extent in shape[len(region):])
    return tuple(region)


def _index(name: str, dim: int, value: Any, what: str) -> int:
    """An integer index bound (Python or numpy integer), or RegionError naming what to pass instead."""
    if type(value) is int:
        return value
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise RegionError(f"{name}: dimension {dim}: {what} {value!r} ({type(value).__name__}) is not an integer "
                      f"element index; pass ints (e.g. int(x) // tile for computed bounds), never floats or bools")


def _normalize_one(name: str, dim: int, extent: int, k: Any, strided: bool = False) -> tuple[int, ...]:
    """One dimension of `_normalize`: (start, stop) clipped to `extent` (with `strided`, (start, stop, step) for
    a stepped slice), or RegionError."""
    kind = type(k)
    step = 1
    if kind is int:
        if k < 0 or k >= extent:
            raise RegionError(f"{name}: dimension {dim}: index {k} is outside 0:{extent}; negative indices are "
                              f"not supported (a DMA region is absolute)" if k < 0 else
                              f"{name}: dimension {dim}: index {k} is outside 0:{extent}")
        return (k, k + 1)
    if kind is slice:
        if k.step is not None:
            step = _index(name, dim, k.step, "slice step")
            if step != 1 and not (strided and step > 1):
                raise RegionError(
                    f"{name}: dimension {dim}: step {k.step} is not supported here; a positive step (a strided DMA "
                    f"box) only in loading a tile of an input on a single-level SRAM, e.g. x[0:64, 0:56:2, 0:56:2]; "
                    f"elsewhere a region is a contiguous box: use step 1")
        start, stop = k.start, k.stop
        if type(start) is not int:  # (the checks are skipped for plain ints: this is the hot path)
            start = 0 if start is None else _index(name, dim, start, "slice start")
        if type(stop) is not int:
            stop = extent if stop is None else _index(name, dim, stop, "slice stop")
        if stop > extent:
            stop = extent
    elif kind is bool:
        raise RegionError(f"{name}: the reuse flag must be the last index, e.g. arr[seg_a, seg_b, True]")
    elif isinstance(k, np.integer):
        return _normalize_one(name, dim, extent, int(k))
    else:
        try:
            start, stop = k
        except (TypeError, ValueError):
            if isinstance(k, numbers.Number):
                _index(name, dim, k, "index")
            raise RegionError(f"{name}: dimension {dim}: cannot index with {k!r}; use an int, a slice, "
                              f"a Segment or a (start, stop) pair") from None
        start, stop = _index(name, dim, start, "start"), _index(name, dim, stop, "stop")
        stop = min(stop, extent)  # the blog clamps a tile that runs past the edge
    if start < 0 or stop < 0:
        raise RegionError(f"{name}: dimension {dim}: region {start}:{stop} has a negative bound; negative "
                          f"indices are not supported (a DMA region is absolute), use 0 <= start < stop")
    if start >= stop:
        raise RegionError(f"{name}: dimension {dim}: region {start}:{stop} is empty or outside 0:{extent}")
    if step > 1:  # stop just after the last index it holds, so that equal sets of indices are equal regions
        last = start + (stop - 1 - start) // step * step
        return (start, last + 1, step) if last > start else (start, start + 1)
    return (start, stop)


def _strided_slices(region: Region, held: Region) -> tuple[slice, ...]:
    """The slices of a buffer's data (holding `held`, either region possibly strided) that give `region`'s
    elements (`_strided_within` holds)."""
    out = []
    for axis, box in zip(region, held):
        held_step = box[2] if len(box) == 3 else 1
        step = axis[2] if len(axis) == 3 else 1
        out.append(slice((axis[0] - box[0]) // held_step, (axis[1] - 1 - box[0]) // held_step + 1,
                         max(step // held_step, 1)))
    return tuple(out)


def _strided_within(region: Region, held: Region) -> bool:
    """Whether every index of `region` is one `held` holds (either possibly strided), dimension by dimension."""
    for axis, box in zip(region, held):
        held_step = box[2] if len(box) == 3 else 1
        step = axis[2] if len(axis) == 3 else 1
        if axis[0] < box[0] or axis[1] > box[1] or (axis[0] - box[0]) % held_step:
            return False
        if step % held_step and axis[1] - axis[0] > 1:  # one index has no step: only its offset counts
            return False
    return True


def _is_region(index: Any) -> bool:
    """True for a whole region given as one object: a list, or a plain tuple holding a non-int index.

    A plain tuple of ints stays a (start, stop) pair for one dimension, as before."""
    kind = type(index)
    if kind is list:
        return True
    return kind is tuple and any(type(k) is not int for k in index)


def _requested_elements(shape: tuple[int, ...], key: tuple) -> int:
    """Elements of a region as the schedule wrote it, before clamping to `shape` (the blog's counter)."""
    n = 1
    for dim, extent in enumerate(shape):
        if dim >= len(key):
            n *= extent
            continue
        k = key[dim]
        if type(k) is slice:
            n *= (extent if k.stop is None else k.stop) - (0 if k.start is None else k.start)
        elif isinstance(k, tuple):
            n *= k[1] - k[0]
        # an int index is one element
    return n


def _integral_region(name: str, region: Region) -> tuple[Region, int]:
    """A region whose bounds are not all Python ints (e.g. a Segment of floats): ints, or RegionError."""
    fixed = tuple((_index(name, dim, a, "start"), _index(name, dim, b, "stop")) for dim, (a, b) in enumerate(region))
    return fixed, region_elements(fixed)


def _check_shape(name: str, shape: Any) -> tuple[int, ...]:
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


def _check_name(name: Any) -> None:
    """Tensor names are non-empty strings: they key reports, traces and JSON."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"tensor name {name!r} must be a non-empty string, e.g. \"output\"")


def _slices(region: Region) -> tuple[slice, ...]:
    return tuple(starmap(slice, region))


# Which elements of a writable tensor were ever stored (rule 5 and `finish`). A dense bool mask is the fastest
# for the tensors schedules usually write, so it is kept up to _DENSE_MASK_MAX_ELEMENTS elements (16 MiB);
# larger tensors (a search confirming an h=20000 layer) use a grid of blocks of at most _BLOCK_ELEMENTS
# elements, each absent, fully stored, or partial with its own small mask, so memory follows what was stored.
_DENSE_MASK_MAX_ELEMENTS = 1 << 24
_BLOCK_ELEMENTS = 1 << 16
_NONE, _PARTIAL, _FULL = 0, 1, 2


def _block_shape(shape: tuple[int, ...], budget: int) -> tuple[int, ...]:
    """Block extents, in elements, of at most `budget` elements in all, shared evenly over the dimensions.

    Near-cubic blocks keep the number of blocks a tile only partly covers small whatever the tile's shape."""
    block = [1] * len(shape)
    left = budget
    order = sorted(range(len(shape)), key=lambda d: shape[d])
    for i, d in enumerate(order):
        share = max(1, int(round(left ** (1.0 / (len(shape) - i)))))
        while share > 1 and share ** (len(shape) - i) > left:
            share -= 1
        block[d] = min(shape[d], share)
        left //= block[d]
    return tuple(block)


class _StoredElements:
    """The set of stored elements of one tensor, exact. Memory: `nbytes` (see there for the bound)."""

    __slots__ = ("shape", "dense", "flat", "flat_address", "block", "grid", "masks")

    def __init__(self, shape: tuple[int, ...], dense_max_elements: int = _DENSE_MASK_MAX_ELEMENTS,
                 block_elements: int = _BLOCK_ELEMENTS) -> None:
        self.shape = shape
        self.masks: dict[tuple[int, ...], np.ndarray] = {}
        if shape_elements(shape) <= dense_max_elements:
            self.dense: np.ndarray | None = np.zeros(shape, bool)
            self.flat: np.ndarray | None = self.dense.reshape(-1).view(np.uint8)  # the same bytes, for _core.pyx
            # where they are: the core reads them through this pointer (no buffer request per access); `flat`
            # keeps them alive, and the mask is never reallocated
            self.flat_address = self.flat.ctypes.data
            self.block = shape
            self.grid = np.full((1,) * len(shape), _NONE, np.uint8)
        else:
            self.dense = self.flat = None
            self.flat_address = 0
            self.block = _block_shape(shape, block_elements)
            self.grid = np.zeros(tuple(ceil_div(d, b) for d, b in zip(shape, self.block)), np.uint8)

    @property
    def nbytes(self) -> int:
        """Bytes held: the dense mask (1 B per element), or 1 B per block + 1 B per element of partial blocks."""
        if self.dense is not None:
            return self.dense.nbytes
        return self.grid.nbytes + sum(m.nbytes for m in self.masks.values())

    def _block_box(self, idx: tuple[int, ...]) -> Region:
        return tuple((i * b, min((i + 1) * b, d)) for i, b, d in zip(idx, self.block, self.shape))

    def add(self, region: Region) -> None:
        """Mark every element of `region` stored."""
        if self.dense is not None:
            self.dense[_slices(region)] = True
            return
        outer, inner = [], []
        for (a, b), blk, extent in zip(region, self.block, self.shape):
            outer.append((a // blk, ceil_div(b, blk)))
            # block k = [k*blk, min((k+1)*blk, extent)) is covered iff a <= k*blk and its end <= b
            f1 = ceil_div(b, blk) if b == extent else b // blk
            inner.append((ceil_div(a, blk), f1))
        grid, masks = self.grid, self.masks
        if all(f0 < f1 for f0, f1 in inner):
            grid[_slices(tuple(inner))] = _FULL
            for idx in [i for i in masks if region_contains(inner, tuple((k, k + 1) for k in i))]:
                del masks[idx]
        for idx in np.ndindex(*(f1 - f0 for f0, f1 in outer)):
            idx = tuple(f0 + i for (f0, _), i in zip(outer, idx))
            if all(f0 <= i < f1 for i, (f0, f1) in zip(idx, inner)) or grid[idx] == _FULL:
                continue
            box = self._block_box(idx)
            mask = masks.get(idx)
            if mask is None:
                mask = np.zeros(tuple(e - s for s, e in box), bool)
            mask[tuple(slice(max(a, s) - s, min(b, e) - s) for (a, b), (s, e) in zip(region, box))] = True
            if mask.all():
                grid[idx] = _FULL
                masks.pop(idx, None)
            else:
                grid[idx] = _PARTIAL
                masks[idx] = mask

    def any_in(self, region: Region) -> bool:
        """True when some element of `region` was stored."""
        if self.dense is not None:
            # tobytes + `in` is several times faster than ndarray.any() on the small regions of hot loops
            return b"\x01" in self.dense[_slices(region)].tobytes()
        outer = tuple((a // blk, ceil_div(b, blk)) for (a, b), blk in zip(region, self.block))
        states = self.grid[_slices(outer)]
        raw = states.tobytes()
        if b"\x02" in raw:
            return True
        if b"\x01" not in raw:
            return False
        for rel in np.argwhere(states == _PARTIAL):
            idx = tuple(int(f0 + i) for (f0, _), i in zip(outer, rel))
            box = self._block_box(idx)
            sub = tuple(slice(max(a, s) - s, min(b, e) - s) for (a, b), (s, e) in zip(region, box))
            if self.masks[idx][sub].any():
                return True
        return False

    def missing(self) -> tuple[int, tuple[int, ...] | None]:
        """(number of elements never stored, the first of them in C order or None), without an index array."""
        if self.dense is not None:
            flat = self.dense.reshape(-1)
            count = int(flat.size - np.count_nonzero(flat))
            if not count:
                return 0, None
            return count, tuple(int(i) for i in np.unravel_index(int(np.argmin(flat)), self.shape))
        sizes = np.ones(self.grid.shape, np.int64)
        for dim, (blk, extent) in enumerate(zip(self.block, self.shape)):
            n = self.grid.shape[dim]
            along = np.full(n, blk, np.int64)
            along[-1] = extent - blk * (n - 1)
            sizes = sizes * along.reshape((n,) + (1,) * (len(self.shape) - dim - 1))
        count = int(sizes[self.grid == _NONE].sum())
        firsts = []
        flat = self.grid.reshape(-1)
        empty = int(np.argmin(flat != _NONE))  # first untouched block in C order; its origin is a candidate
        if flat[empty] == _NONE:
            idx = np.unravel_index(empty, self.grid.shape)
            firsts.append(tuple(int(i) * b for i, b in zip(idx, self.block)))
        for idx, mask in self.masks.items():
            m = mask.reshape(-1)
            count += int(m.size - np.count_nonzero(m))
            local = np.unravel_index(int(np.argmin(m)), mask.shape)
            firsts.append(tuple(int(i) * b + int(j) for i, b, j in zip(idx, self.block, local)))
        return count, (min(firsts) if firsts else None)


# A tensor with more live buffers than this is looked up through an index along its longest dimension instead
# of visiting every buffer: a schedule holding 10,000 tiles of one tensor would otherwise pay 10,000 region
# comparisons per access. Below it a scan is cheaper than keeping the index up to date.
_SCAN_MAX_BUFFERS = 16
_MAX_BUCKETS = 4096  # index blocks along the indexed dimension (each block spans ceil(extent / 4096) elements)
_WIDE_BLOCKS = 8  # a buffer spanning more blocks than this sits in one list that every lookup visits
_NO_BUFFERS: dict[int, Buffer] = {}


class _LiveBuffers(_core.LiveFields):
    """The live buffers of one tensor by id (allocation order), and, past `scan_max` of them, an index of their
    extents along the tensor's longest dimension: lookups visit only buffers that can contain or overlap."""

    __slots__ = ()  # the fields, set in __init__, are C fields of _core.LiveFields: the compiled core reads them

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.by_id: dict[int, Buffer] = {}  # ids grow with allocation, so insertion order is id order
        self.dim = max(range(len(shape)), key=shape.__getitem__)
        self.block = ceil_div(shape[self.dim], _MAX_BUCKETS)
        self.buckets: dict[int, dict[int, Buffer]] | None = None  # None while the scan is cheaper
        self.wide: dict[int, Buffer] = {}
        self.scan_max = _SCAN_MAX_BUFFERS

    def _blocks(self, region: Region) -> range:
        start, stop = region[self.dim]
        return range(start // self.block, (stop - 1) // self.block + 1)

    def _index(self, buf: Buffer) -> None:
        blocks = self._blocks(buf.region)
        if len(blocks) > _WIDE_BLOCKS:
            self.wide[buf.id] = buf
            return
        buckets = self.buckets
        for k in blocks:
            bucket = buckets.get(k)
            if bucket is None:
                bucket = buckets[k] = {}
            bucket[buf.id] = buf

    def _unindex(self, buf: Buffer) -> None:
        blocks = self._blocks(buf.region)
        if len(blocks) > _WIDE_BLOCKS:
            del self.wide[buf.id]
            return
        buckets = self.buckets
        for k in blocks:
            bucket = buckets[k]
            del bucket[buf.id]
            if not bucket:
                del buckets[k]

    def add(self, buf: Buffer) -> None:
        """A new buffer (its id above every live one)."""
        self.by_id[buf.id] = buf
        if self.buckets is not None:
            self._index(buf)
        elif len(self.by_id) > self.scan_max:
            self.buckets = {}
            for live in self.by_id.values():
                self._index(live)

    def remove(self, buf: Buffer) -> None:
        """A freed buffer (a strided one, never added, is skipped: `Session._strided` holds it)."""
        if self.by_id.pop(buf.id, None) is None:
            return
        if self.buckets is not None:
            if self.by_id:
                self._unindex(buf)
            else:
                self.buckets = None
                self.wide = {}

    def move(self, buf: Buffer, region: Region) -> None:
        """Set `buf.region` to `region` (a reuse load), keeping the index right."""
        if self.buckets is not None:
            self._unindex(buf)
            buf.region = region
            self._index(buf)
        else:
            buf.region = region

    def containing(self, region: Region) -> Buffer | None:
        """The lowest-id live buffer with current data (not stale) whose region contains `region`, or None."""
        buckets = self.buckets
        if buckets is None:
            for buf in self.by_id.values():
                if not buf.stale and region_contains(buf.region, region):
                    return buf
            return None
        best = None
        for group in (buckets.get(region[self.dim][0] // self.block, _NO_BUFFERS), self.wide):
            for buf in group.values():
                if (best is None or buf.id < best.id) and not buf.stale and region_contains(buf.region, region):
                    best = buf
        return best

    def overlapping(self, region: Region) -> list[Buffer]:
        """The live buffers whose regions overlap `region`, by id."""
        buckets = self.buckets
        blocks = self._blocks(region) if buckets is not None else ()
        if buckets is None or len(blocks) > len(buckets):
            return [buf for buf in self.by_id.values() if regions_overlap(buf.region, region)]
        found = {buf.id: buf for buf in self.wide.values() if regions_overlap(buf.region, region)}
        for k in blocks:
            for buf in buckets.get(k, _NO_BUFFERS).values():
                if regions_overlap(buf.region, region):
                    found[buf.id] = buf
        return [found[i] for i in sorted(found)]

    def __len__(self) -> int:
        return len(self.by_id)


class TracedArray(_core.ArrayFields):
    """A DDR tensor whose every access from a schedule is traced."""

    __slots__ = ()  # the fields, set in __init__, are C fields of _core.ArrayFields: the compiled core reads them

    def __init__(self, session: "Session", tensor_id: int, name: str, shape: tuple[int, ...], writable: bool,
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
        self.live = _LiveBuffers(shape)
        self.stored: _StoredElements | None = None  # created at the first store
        self.stored_any = False
        self.nbytes = shape_elements(shape) * session.hardware.word_bytes

    def _getitem_py(self, key: Any) -> Tile:
        """`arr[key]`, `arr[key, reuse]` (the reference; see `_bind_core`)."""
        kind = type(key)
        if kind is not tuple:
            key = tuple(key) if kind is list else (key,)
        reuse = False
        if key and type(key[-1]) is bool:
            reuse = key[-1]
            key = key[:-1]
            if len(key) == 1 and _is_region(key[0]):  # the blog's arr[seg_list, reuse], arr[(b, c, h, w), reuse]
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
        return self.session.slide(self, _as_key(key), None if capacity is None else _as_key(capacity))

    def __repr__(self) -> str:
        return f"TracedArray({self.name!r}, shape={self.shape})"

    __getitem__ = _getitem_py


_ScopeInstance = _core.ScopeInstance  # one execution of a scope (a C class: the compiled core reads its fields)


class GlobalHierarchy(_core.ScopeFields):
    """An SRAM scope (the blog's name): `with GlobalHierarchy(session):` frees its buffers on exit.

    `level="L1w"` opens it in a memory level below the SRAM instead, on hardware that has one (`dsasim.traced.levels`).

    `ways=N` makes it N-way buffered: each buffer's SRAM block holds N copies that successive instances use in
    turn, so the next instance's loads can overlap this one's compute; the capacity check counts N x its buffers.
    `buffers=N` is an alias of `ways=N` (the blog-style spelling; pass one of them). `name` identifies the scope
    for buffering overrides (`Session(scope_ways=...)`) and reports (default: its source line).
    """

    __slots__ = ()  # the fields (session, name, ways, _instance) are C fields of _core.ScopeFields

    def _init_py(self, session: "Session", name: str | None = None, ways: int | None = None,
                 buffers: int | None = None, level: str | None = None) -> None:
        """Check and keep the arguments (the reference; see `_bind_core`)."""
        if not isinstance(session, Session):
            raise TypeError(f"GlobalHierarchy needs the Session to trace into as its first argument, got "
                            f"{type(session).__name__}")
        if buffers is not None:
            if ways is not None:
                raise ValueError(f"GlobalHierarchy: pass ways={ways!r} or its alias buffers={buffers!r}, not both")
            ways = buffers
        if ways is not None and (not is_int(ways) or ways < 1):
            raise ValueError(f"GlobalHierarchy {'ways' if buffers is None else 'buffers'} must be an integer >= 1 "
                             f"(1 = single, 2 = ping-pong), got {ways!r}")
        if name is None:
            caller = sys._getframe(1)
            name = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
        elif type(name) is not str or not name:
            raise ValueError(f"GlobalHierarchy name must be a non-empty string, got {name!r}")
        if level is not None:
            names = [lv.name for lv in session.hardware.levels]
            if level not in names:
                # (a LevelError: a schedule written for other hardware fails like any schedule, as a status)
                raise LevelError(f"GlobalHierarchy {name!r}: level {level!r} is not a memory level of hardware "
                                 f"{session.hardware.name!r}; its levels: {names}")
            if level == SRAM_LEVEL:
                level = None
        self.session = session
        self.name = name
        self.ways = ways
        self.level = level
        self._instance: _ScopeInstance | None = None

    def _enter_py(self) -> "GlobalHierarchy":
        """Open an instance of this scope (the reference; see `_bind_core`)."""
        session = self.session
        if session._levels is not None and session._broken is None:
            self._instance = session._enter_scope_py(self.name, self.ways, self.level)
        else:
            self._instance = session._enter_scope(self.name, self.ways)
        return self

    def _exit_py(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Close it: store its modified buffers and free them all."""
        self.session._exit_scope(self._instance, exc)

    __init__ = _init_py
    __enter__ = _enter_py
    __exit__ = _exit_py

    def scratch(self, name: str, shape: tuple[int, ...], reuse: bool = False) -> Tile:
        """An on-chip-only zeroed buffer (no DDR backing, never loaded or stored); see Session.scratch."""
        return self.session.scratch(name, shape, reuse)


class Session(_core.SessionFields):
    """One run of a schedule: hardware, tensors, live SRAM state, counters and the trace.

    numeric=False is count-only mode: no data, no arithmetic, the same events and counts.
    scope_ways maps scope names to buffering ways, overriding what the schedule declares (`scope_buffers` is an
    alias of it: pass one of them).
    enforce_capacity=False lets a schedule exceed sram_bytes (to measure how much SRAM it would need).
    trace_event_limit: past this many events the trace is dropped (`trace_dropped` is set) to bound memory;
    counters are unaffected.
    blog_quirks=True makes the blog's counter count regions as the schedule wrote them, before clamping (the
    blog's TracedArray did; `dsasim demo --blog-quirks`); schedules read it to tile like the blog
    (`Segments(..., clamp=not s.blog_quirks)`). Honest traffic does not depend on it.
    """

    def __init__(self, hardware: Accelerator, numeric: bool = True, record_trace: bool = True,
                 scope_ways: Mapping[str, int] | None = None, dtype: Any = np.float32,
                 enforce_capacity: bool = True, trace_event_limit: int | None = None,
                 blog_quirks: bool = False, scope_buffers: Mapping[str, int] | None = None,
                 layouts: Mapping[str, str] | None = None) -> None:
        if not isinstance(hardware, Accelerator):
            raise TypeError(f"Session needs an Accelerator, got {type(hardware).__name__}; pass e.g. "
                            f"preset(\"blog\") or load_hardware(path)")
        for flag, value in (("numeric", numeric), ("record_trace", record_trace),
                            ("enforce_capacity", enforce_capacity), ("blog_quirks", blog_quirks)):
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"Session {flag} must be True or False, got {value!r}")
        if trace_event_limit is not None and (not is_int(trace_event_limit) or trace_event_limit < 0):
            raise ValueError(f"Session trace_event_limit must be None or an integer >= 0 (events), got "
                             f"{trace_event_limit!r}")
        try:
            floating = np.issubdtype(np.dtype(dtype), np.floating)
        except TypeError:
            floating = False
        if not floating:
            raise ValueError(f"Session dtype must be a numpy floating dtype (e.g. np.float32) for the numeric check, "
                             f"got {dtype!r}; an integer dtype would truncate every product")
        # messages name the argument the caller used
        self._scope_ways_arg = "scope_ways" if scope_buffers is None else "scope_buffers"
        if scope_buffers is not None:
            if scope_ways is not None:
                raise ValueError("Session: pass scope_ways or its alias scope_buffers, not both")
            scope_ways = scope_buffers
        if scope_ways is not None and not isinstance(scope_ways, Mapping):
            raise ValueError(f"Session {self._scope_ways_arg} must map scope names to buffering ways, e.g. "
                             f"{{\"tile\": 2}}, got {type(scope_ways).__name__}")
        if layouts is not None and not isinstance(layouts, Mapping):
            raise ValueError(f"Session layouts must map tensor names to layouts ({', '.join(LAYOUTS)}), e.g. "
                             f"{{\"image\": \"NHWC\"}}, got {type(layouts).__name__}")
        self.layouts = dict(layouts or {})
        for name, layout in self.layouts.items():
            check_layout(name, None, layout)  # the rank is checked when the tensor is made
        self.blog_quirks = bool(blog_quirks)
        self.hardware = hardware
        self.numeric = numeric
        self.record_trace = record_trace
        self.dtype = dtype
        self.scope_ways = dict(scope_ways or {})
        for name, ways in self.scope_ways.items():
            if not is_int(ways) or ways < 1:
                raise ValueError(f"{self._scope_ways_arg}[{name!r}] must be an integer >= 1, got {ways!r}")
        self.trace = Trace(hardware.word_bytes)
        self._log = self.trace.log if record_trace else _NULL_LOG  # where events go (see trace.py)
        # (an int the core compares as a C integer: a limit past 2**63 - 1 events is no limit)
        self._trace_event_limit = min(int(trace_event_limit), _NO_LIMIT) if record_trace and \
            trace_event_limit is not None else None
        self.trace_dropped = False
        self.counters = Counters()
        self.tensors: dict[str, TracedArray] = {}
        self._stack: list[_ScopeInstance] = []
        self._scope_ids: dict[tuple[int, str], int] = {}
        self._scope_instances: list[int] = []
        self._next_buffer = 0
        self._live_bytes = 0
        self._word_bytes = hardware.word_bytes
        self._sram_limit = hardware.sram_bytes if enforce_capacity else _NO_LIMIT
        self._used_scopes: set[str] = set()
        # computes created but not yet written into a tile, keyed by themselves (identity: no id() integer each)
        self.pending_products: dict[Any, Any] = {}
        self.finished = False
        self._broken: str | None = None  # why the session refuses further use (see _abandon)
        # per tensor id, its strided buffers (`_access_strided`): kept out of `TracedArray.live`, whose compiled hit
        # test reads a region as a dense box; freed ones are skipped (and dropped) when the list is next read
        self._strided: dict[int, list[Buffer]] = {}
        self._levels = (LevelState(hardware, enforce_capacity, _LiveBuffers, _StoredElements)
                        if hardware.inner_levels else None)
        if self._levels is not None:  # the pure-Python path: the compiled core models one level
            self.counters.levels = self._levels.traffic
            self.access = self._access_levels  # type: ignore[method-assign]
            self._exit_scope = self._exit_scope_py  # type: ignore[method-assign]

    # -- tensors -------------------------------------------------------------------------------------------
    def _new_tensor(self, name: str, shape: tuple[int, ...], data: np.ndarray | None, writable: bool,
                    must_be_written: bool, scratch: bool, role: str | None = None) -> TracedArray:
        if name in self.tensors:
            raise ValueError(f"a tensor named {name!r} already exists in this session; names must be unique")
        shape = _check_shape(name, shape)
        layout = check_layout(name, shape, self.layouts.get(name, DEFAULT_LAYOUT))
        if scratch and layout != DEFAULT_LAYOUT:
            raise ValueError(f"tensor {name!r} is on chip, never in DDR: a DDR layout ({layout!r}) means nothing "
                             f"for it; leave it out of layouts")
        arr = TracedArray(self, len(self.trace.tensors), name, shape, writable, must_be_written, scratch, data)
        self.trace.tensors.append(TensorInfo(name, shape, writable, scratch, layout))
        self.trace.log.add_tensor(len(shape))
        self.counters.per_tensor[name] = arr.traffic
        self.tensors[name] = arr
        if self._levels is not None:
            self._levels.roles[arr.id] = None if scratch else "output" if writable else role
        return arr

    def input(self, name: str, data: np.ndarray | tuple[int, ...], role: str = "input") -> TracedArray:
        """A read-only DDR tensor: numpy data in numeric mode, or just a shape (data is then ignored/absent).
        `role` ("input" or "weight") is the TensorCore operand it feeds: on hardware with memory levels below
        the SRAM it decides which of them hold it."""
        _check_name(name)
        check_role(name, role)
        if isinstance(data, np.ndarray):
            shape = _check_shape(name, data.shape)
            if self.numeric and not (np.issubdtype(data.dtype, np.number) or data.dtype == bool) \
                    or np.issubdtype(data.dtype, np.complexfloating):
                raise ValueError(f"input {name!r}: data of dtype {data.dtype} cannot be converted to "
                                 f"{np.dtype(self.dtype).name} without losing values; pass real numbers")
            with numpy_hugepages_for_tensor_data():  # (a copy only when the data is not already ours to use)
                values = np.ascontiguousarray(data, dtype=self.dtype) if self.numeric else None
        else:
            if self.numeric:
                raise ValueError(f"input {name!r}: numeric mode needs data (a numpy array), got "
                                 f"{type(data).__name__}; pass an array or use Session(numeric=False) with a shape")
            shape = _check_shape(name, data)
            values = None
        return self._new_tensor(name, shape, values, writable=False, must_be_written=False, scratch=False, role=role)

    def output(self, name: str, shape: tuple[int, ...]) -> TracedArray:
        """A writable DDR tensor, zero-initialised, every element of which the schedule must store."""
        _check_name(name)
        shape = _check_shape(name, shape)
        with numpy_hugepages_for_tensor_data():
            data = np.zeros(shape, self.dtype) if self.numeric else None
        return self._new_tensor(name, shape, data, writable=True, must_be_written=True, scratch=False)

    def intermediate(self, name: str, shape: tuple[int, ...]) -> TracedArray:
        """A writable DDR tensor passed between stages; unlike an output it need not be fully written."""
        _check_name(name)
        shape = _check_shape(name, shape)
        with numpy_hugepages_for_tensor_data():
            data = np.zeros(shape, self.dtype) if self.numeric else None
        return self._new_tensor(name, shape, data, writable=True, must_be_written=False, scratch=False)

    def on_chip(self, name: str, shape: tuple[int, ...]) -> TracedArray:
        """An on-chip-only tensor of logical `shape` (e.g. a fused chain's intermediate): never in DDR.

        Indexing it opens a zeroed buffer of the region in the current scope (no DMA; SRAM it occupies), a region
        a live buffer holds is a hit, and its buffers are dropped, never stored, when their scope exits.
        `slide(region, capacity=)` keeps the overlap of a rotating (line) buffer and opens the new rows as zeros,
        for the schedule to compute: that is how a fused schedule keeps an intermediate's halo between tiles.
        """
        _check_name(name)
        shape = _check_shape(name, shape)
        return self._new_tensor(name, shape, None, writable=True, must_be_written=False, scratch=True)

    def scratch(self, name: str, shape: tuple[int, ...], reuse: bool = False) -> Tile:
        """A zeroed on-chip-only buffer in the current scope: SRAM it occupies, no DDR traffic ever.

        The first call fixes the scratch tensor's (largest) shape; later calls may ask for smaller shapes.
        reuse=True takes the buffer this scope already holds for `name` instead of allocating another.
        """
        _check_name(name)
        shape = _check_shape(name, shape)
        if type(reuse) is not bool:
            raise ValueError(f"scratch {name!r}: reuse must be True or False, got {reuse!r}")
        arr = self.tensors.get(name)
        if arr is None:
            arr = self._new_tensor(name, shape, None, writable=True, must_be_written=False, scratch=True)
        elif not arr.scratch:
            raise ValueError(f"scratch {name!r}: a DDR tensor of that name exists ({arr}); pick another name")
        if len(shape) != len(arr.shape) or any(d < 1 or d > e for d, e in zip(shape, arr.shape)):
            raise ValueError(f"scratch {name!r}: shape {shape} must fit inside its first shape {arr.shape}")
        region = whole_region(shape)
        inst = self._current_scope(arr, region)
        nbytes = region_elements(region) * self._word_bytes
        buf = inst.held.get(arr.id) if reuse else None
        if buf is None or nbytes > buf.nbytes:
            buf = self._allocate(arr, region, nbytes, inst)
        else:
            buf.generation += 1
            buf.dirty = False
            arr.live.move(buf, region)
        if self.numeric:
            buf.data = np.zeros(shape, self.dtype)
        self._log.open(buf.id, arr.id, region, reuse)
        return Tile(buf, region)

    # -- scopes ----------------------------------------------------------------------------------------------
    def scope(self, name: str | None = None, ways: int | None = None,
              buffers: int | None = None, level: str | None = None) -> GlobalHierarchy:
        """A new scope in this session (same as GlobalHierarchy(session, ...); `buffers` aliases `ways`; `level`
        names a memory level below the SRAM, on hardware that has one)."""
        if name is None:
            caller = sys._getframe(1)
            name = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
        return GlobalHierarchy(self, name, ways, buffers, level)

    def _enter_scope_py(self, name: str, declared_ways: int | None, level: str | None = None) -> _ScopeInstance:
        """Open a scope instance (the reference; see `_bind_core`), in the SRAM or (level) an inner level."""
        parent = self._stack[-1] if self._stack else None
        static_key = (parent.scope_id if parent is not None else -1, name)
        scope_id = self._scope_ids.get(static_key)
        if scope_id is None:
            path = (parent.path if parent is not None else ()) + (name,)
            ways = self.scope_ways.get(name, declared_ways if declared_ways is not None else 1)
            if self._levels is not None:
                self._levels.check_ways(path, level, ways)
            scope_id = len(self.trace.scopes)
            self._scope_ids[static_key] = scope_id
            self.trace.scopes.append(ScopeInfo(path, ways, level or SRAM_LEVEL))
            self._scope_instances.append(0)
            self._used_scopes.add(name)
        elif self._levels is not None and self.trace.scopes[scope_id].level != (level or SRAM_LEVEL):
            raise LevelError(f"scope {self.trace.scopes[scope_id].name} was entered at level "
                             f"{self.trace.scopes[scope_id].level} before and now at {level or SRAM_LEVEL}; a scope "
                             f"site keeps its level (give the other one another name)")
        instance = self._scope_instances[scope_id]
        self._scope_instances[scope_id] = instance + 1
        info = self.trace.scopes[scope_id]
        inst = _ScopeInstance(scope_id, instance, info.ways, info.path)
        inst.level = level
        self._stack.append(inst)
        self._log.enter(scope_id, instance)
        return inst

    def _exit_scope_py(self, inst: _ScopeInstance, exc: BaseException | None) -> None:
        """End a scope instance: store its modified buffers and free them all (exc: what is leaving it, if any)."""
        if not self._stack or self._stack[-1] is not inst:
            if exc is not None:  # do not hide the exception that is unwinding
                return
            raise UnfinishedError("scopes exited out of order; use `with` blocks so they nest")
        if exc is not None:  # (on a poisoned session `_abandon` replaced this method by `_exit_poisoned`)
            self._abandon(inst, exc)
            return
        log = self._log
        try:
            for buf in reversed(inst.buffers):
                if buf.dirty:
                    if buf.level is None:
                        self._store(buf)
                    else:
                        self._levels.write_back(self, buf)
                buf.freed = True
                self._release(buf)
                log.free(buf.id, buf.charged_bytes)
        except BaseException as err:  # e.g. a CoherenceError from a store: the rest of the scope is uncertain
            self._abandon(inst, err)
            raise
        self._stack.pop()
        log.exit(inst.scope_id, inst.instance)
        if self._trace_event_limit is not None and len(self._log) > self._trace_event_limit:
            self._drop_trace()

    def _exit_poisoned(self, inst: _ScopeInstance, exc: BaseException | None) -> None:
        """`_exit_scope` of a poisoned session: free without storing; a normal exit is refused after that."""
        if not self._stack or self._stack[-1] is not inst:
            if exc is not None:
                return
            raise UnfinishedError("scopes exited out of order; use `with` blocks so they nest")
        self._abandon(inst, exc)
        if exc is None:  # the user caught the exception and carried on to the end of an outer scope
            raise SessionStateError(self._broken)

    def _abandon(self, inst: _ScopeInstance, exc: BaseException | None) -> None:
        """Free a scope left by an exception without storing anything, and refuse all further use.

        The buffers' data is uncertain (a compute may have run halfway), so storing it would count traffic for
        results that may be wrong; keeping the buffers live would let later accesses hit dead data."""
        if self._broken is None:
            first = str(exc).split("\n", 1)[0] if exc is not None else ""
            self._broken = (f"this Session was left in an uncertain state: {type(exc).__name__}"
                            f"{': ' + first if first else ''} was raised inside scope {'/'.join(inst.path)}, "
                            f"whose unstored results were dropped. Counting on would give wrong numbers; "
                            f"start a new Session to run the schedule again")
            self._refuse_further_use(SessionStateError)
            self._exit_scope = self._exit_poisoned  # type: ignore[method-assign]
        log = self._log
        for buf in reversed(inst.buffers):
            if not buf.freed:
                buf.freed = True
                buf.dirty = False
                self._release(buf)
                log.free(buf.id, buf.charged_bytes)
        self._stack.pop()
        log.exit(inst.scope_id, inst.instance)

    def refusal(self) -> SessionStateError:
        """The error a finished or poisoned session raises on further use (call only when `_broken` is set)."""
        return (SessionFinishedError if self.finished else SessionStateError)(self._broken)

    def _refuse_further_use(self, error: type[SessionStateError]) -> None:
        """Make every method that would trace, count or add a tensor raise `error(self._broken)`.

        Instance attributes shadow the methods: the refusal costs the hot path nothing (the compiled core takes
        its Python path whenever `_broken` is set, and that path calls these)."""
        message = self._broken

        def refuse(*_args: Any, **_kwargs: Any) -> Any:
            raise error(message)

        for method in _REFUSED_WHEN_BROKEN:
            setattr(self, method, refuse)

    def _release(self, buf: Buffer) -> None:
        """A freed buffer leaves its tensor's live buffers and its level's footprint."""
        if buf.level is None:
            buf.tensor.live.remove(buf)
            self._live_bytes -= buf.charged_bytes
        else:
            self._levels.release(buf)

    def _drop_trace(self) -> None:
        """Stop recording and free the events (the trace outgrew `trace_event_limit`)."""
        self._log.clear()
        self._log = _NULL_LOG
        self._trace_event_limit = None
        self.trace_dropped = True

    def _current_scope(self, arr: TracedArray, region: Region) -> _ScopeInstance:
        if not self._stack:
            raise RegionError(f"{arr.name}{format_region(region)} accessed outside any GlobalHierarchy scope; "
                              f"wrap the access in `with GlobalHierarchy(session):` so its SRAM buffer has a "
                              f"lifetime")
        if self._levels is not None:  # on-chip and sliding buffers live in the SRAM
            for inst in reversed(self._stack):
                if inst.level is None:
                    return inst
            raise RegionError(f"{arr.name}{format_region(region)} needs an SRAM buffer but is accessed only inside "
                              f"scopes of levels below the SRAM; open an SRAM scope (`with GlobalHierarchy(s):`) "
                              f"around them")
        return self._stack[-1]

    # -- buffers -------------------------------------------------------------------------------------------
    def _allocate(self, arr: TracedArray, region: Region, nbytes: int, inst: _ScopeInstance,
                  strided: bool = False) -> Buffer:
        """A new buffer of `nbytes` holding `region` in scope instance `inst` (a strided one: kept in `_strided`,
        out of the tensor's dense live buffers)."""
        charged = nbytes * inst.ways
        live = self._live_bytes + charged
        if live > self._sram_limit:
            self._overflow(arr, region, charged, inst)
        self._live_bytes = live
        counters = self.counters
        if live > counters.peak_sram_bytes:
            counters.peak_sram_bytes = live
        # Buffers are freed in exactly the reverse order of allocation (scopes nest, a scope frees all its
        # buffers), so SRAM is a stack: this buffer's block starts at the old top. An N-way scope's block holds
        # N copies; instance i uses copy i mod N, so consecutive instances never share bytes.
        address = live - charged + (inst.instance % inst.ways) * nbytes
        buf = Buffer(self._next_buffer, arr, region, nbytes, charged)
        self._next_buffer += 1
        inst.buffers.append(buf)
        inst.held[arr.id] = buf
        if strided:
            self._strided.setdefault(arr.id, []).append(buf)
        else:
            arr.live.add(buf)
        if self._levels is None:
            self._log.alloc(buf.id, arr.id, region, nbytes, address, charged)
        else:  # the scope need not be the innermost one: the event names it
            self._log.alloc_in(buf.id, arr.id, region, nbytes, address, charged, inst.scope_id)
        return buf

    def _overflow(self, arr: TracedArray, region: Region, charged: int, inst: _ScopeInstance) -> None:
        live = []
        for scope in self._stack:
            for buf in scope.buffers:
                live.append((buf.tensor.name, format_region(buf.region), buf.charged_bytes, "/".join(scope.path)))
        # past a screenful, group the buffers of one tensor in one scope (the exception's .live lists each)
        grouped = len(live) > 32
        groups: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for tensor, reg, nbytes, scope in live:
            groups.setdefault((tensor, scope), []).append((reg, nbytes))
        lines = []
        for (tensor, scope), bufs in groups.items():
            if grouped and len(bufs) > 1:
                total = sum(nbytes for _, nbytes in bufs)
                lines.append(f"  {tensor}: {len(bufs)} buffers, {total:,} B in scope {scope} ({bufs[0][0]} ... "
                             f"{bufs[-1][0]})")
            else:
                lines.extend(f"  {tensor}{reg}: {nbytes:,} B in scope {scope}" for reg, nbytes in bufs)
        listing = "\n" + "\n".join(lines) if lines else " none"
        ways = f" ({inst.ways}-way buffered)" if inst.ways > 1 else ""
        raise SramOverflowError(
            f"SRAM overflow: allocating {charged:,} B for {arr.name}{format_region(region)}{ways} in scope "
            f"{'/'.join(inst.path)} would make the live footprint {self._live_bytes + charged:,} B > capacity "
            f"{self._sram_limit:,} B ({format_bytes(self._sram_limit)}). Live buffers ({self._live_bytes:,} B):"
            f"{listing}\n"
            f"Use smaller tiles, free buffers earlier (tighter scopes), or the reuse flag.",
            self._sram_limit, charged, live)

    def _store(self, buf: Buffer) -> None:
        arr = buf.tensor
        if arr.scratch:  # on-chip only: dropping it at scope exit is the point
            buf.dirty = False
            return
        region = buf.region
        for other in arr.live.overlapping(region):
            if other is not buf:
                if other.dirty:
                    raise CoherenceError(
                        f"two live modified buffers of {arr.name} overlap: {format_region(region)} (buffer "
                        f"{buf.id}) and {format_region(other.region)} (buffer {other.id}); storing one would "
                        f"overwrite the other's results. Give each output element one live buffer at a time.")
                other.stale = True
        nbytes = region_elements(region) * self._word_bytes
        slices = _slices(region)
        stored = arr.stored
        if stored is None:
            stored = arr.stored = _StoredElements(arr.shape)
        if stored.dense is not None:  # inlined `stored.add` for the common small tensor: stores are hot
            stored.dense[slices] = True
        else:
            stored.add(region)
        arr.stored_any = True
        if buf.data is not None:
            arr.data[slices] = buf.data
        buf.dirty = False
        counters = self.counters
        counters.stored_bytes += nbytes
        counters.stores += 1
        traffic = arr.traffic
        traffic.stored_bytes += nbytes
        traffic.stores += 1
        self._log.store(buf.id, arr.id, region, nbytes)

    def _fill(self, buf: Buffer, arr: TracedArray, region: Region, elements: int, reuse: bool) -> None:
        """Bring region into buf: a DMA load, or a zero-open for a writable region never stored."""
        # `stored.any_in` inlined for a dense mask (the common case: every miss of an output comes here);
        # tobytes + `in` is several times faster than ndarray.any() on the small regions of hot loops
        if arr.writable and (not arr.stored_any or not (
                b"\x01" in arr.stored.dense[_slices(region)].tobytes() if arr.stored.dense is not None
                else arr.stored.any_in(region))):
            buf.loaded_from_ddr = False
            buf.load_bytes = 0
            if self.numeric:
                buf.data = np.zeros(tuple(b - a for a, b in region), self.dtype)
            arr.traffic.opens += 1
            self.counters.opens += 1
            self._log.open(buf.id, arr.id, region, reuse)
            return
        nbytes = elements * self._word_bytes
        buf.loaded_from_ddr = True
        buf.load_bytes = nbytes
        if self.numeric:
            # an input is never written, so a view is as good as a copy and saves the memcpy
            view = arr.data[_slices(region)]
            buf.data = view.copy() if arr.writable else view
        counters = self.counters
        counters.loaded_bytes += nbytes
        counters.loads += 1
        traffic = arr.traffic
        traffic.loaded_bytes += nbytes
        traffic.loads += 1
        self._log.load(buf.id, arr.id, region, nbytes, reuse)

    # -- the hot path ----------------------------------------------------------------------------------------
    def _access_py(self, arr: TracedArray, key: tuple, reuse: bool) -> Tile:
        """Resolve `arr[key]` (reuse flag as given): a hit, a load into a new buffer, or a reuse load."""
        for k in key:
            if type(k) is slice and k.step is not None and k.step != 1:
                return self._access_strided(arr, key, reuse)
        region, elements = self._requested(arr, key, reuse)
        return self._access_in(arr, region, elements, reuse, None)

    def _access_strided(self, arr: TracedArray, key: tuple, reuse: bool) -> Tile:
        """`arr[key]` with a stepped slice: a strided DMA box (every step-th row, e.g. what a 1x1 stride-2 conv
        reads), whose buffer holds, and whose load moves, only the indices it names. A hit when a live buffer
        (dense, or strided with the same phase) holds them all; else a LOAD of the strided box into a new buffer."""
        region = _normalize(arr.name, arr.shape, key, strided=True)
        if type(region_elements(region)) is not int:
            raise RegionError(f"{arr.name}: a strided box takes Python int bounds, got {key!r}")
        elements = region_elements(region)
        if all(len(axis) == 2 for axis in region):  # every stepped slice holds one index: a dense box, a hit
            held = None                                # also in a strided buffer holding its indices
            if not reuse and self._strided.get(arr.id) and not (arr.live.by_id and arr.live.containing(region)):
                held = next((b for b in self._strided[arr.id] if not b.freed and _strided_within(region, b.region)),
                            None)
            if held is None:
                return self._access_in(arr, region, elements, reuse, None)
            arr.traffic.blog_loaded_elements += elements
            self.counters.blog_loaded_elements += elements
            arr.traffic.hits += 1
            self.counters.hits += 1
            self._log.hit(held.id, arr.id, region, reuse)
            return Tile(held, region)
        if arr.writable:
            raise RegionError(f"{arr.name}{format_region(region)}: a strided box is loaded from a read-only input "
                              f"only (a written tensor's buffers are checked for coherence as dense boxes); load "
                              f"the dense box {format_region(tuple(axis[:2] for axis in region))}")
        if reuse:
            raise ReuseError(f"{arr.name}{format_region(region)}: the reuse flag is not supported with a strided "
                             f"box; drop it")
        traffic = arr.traffic
        counters = self.counters
        traffic.blog_loaded_elements += elements
        counters.blog_loaded_elements += elements
        box = tuple(axis[:2] for axis in region)
        held = arr.live.containing(box) if arr.live.by_id else None
        if held is None:
            bufs = self._strided.get(arr.id)
            if bufs:
                bufs[:] = [b for b in bufs if not b.freed]
                held = next((b for b in bufs if _strided_within(region, b.region)), None)
        if held is not None:
            traffic.hits += 1
            counters.hits += 1
            self._log.hit(held.id, arr.id, region, reuse)
            return Tile(held, region)
        inst = self._stack[-1] if self._stack else self._current_scope(arr, region)
        nbytes = elements * self._word_bytes
        buf = self._allocate(arr, region, nbytes, inst, strided=True)
        buf.loaded_from_ddr = True
        buf.load_bytes = nbytes
        if self.numeric:
            buf.data = arr.data[tuple(slice(*axis) for axis in region)]  # (a view: an input is never written)
        counters.loaded_bytes += nbytes
        counters.loads += 1
        traffic.loaded_bytes += nbytes
        traffic.loads += 1
        self._log.load(buf.id, arr.id, region, nbytes, reuse)
        return Tile(buf, region)

    def _requested(self, arr: TracedArray, key: tuple, reuse: bool) -> tuple[Region, int]:
        """The region `key` names in arr and its elements; counted by the blog's counter unless reuse."""
        region = _normalize(arr.name, arr.shape, key)
        elements = 1
        for a, b in region:
            elements *= b - a
        if type(elements) is not int:  # a hand-built Segment of floats or numpy ints passed the fast path
            region, elements = _integral_region(arr.name, region)
        if not reuse:
            blog = _requested_elements(arr.shape, key) if self.blog_quirks else elements
            arr.traffic.blog_loaded_elements += blog
            self.counters.blog_loaded_elements += blog
        return region, elements

    def _access_levels(self, arr: TracedArray, key: tuple, reuse: bool) -> Tile:
        """`access` on hardware with inner levels: resolved in the innermost scope whose level holds the tensor
        (`dsasim.traced.levels`, rule 2)."""
        region, elements = self._requested(arr, key, reuse)
        levels = self._levels
        idx = levels.target(self, arr, region)
        inst = self._stack[idx]
        buf = levels.hit_below(self, arr, region, inst.level, reuse)
        if buf is None and inst.level is not None:
            buf = levels.stage(self, arr, region, elements, reuse, idx)
        if buf is not None:
            return Tile(buf, region)
        levels.check_no_dirty_copy(arr, region)
        return self._access_in(arr, region, elements, reuse, inst)

    def _access_in(self, arr: TracedArray, region: Region, elements: int, reuse: bool,
                   inst: _ScopeInstance | None) -> Tile:
        """An SRAM access of a normalised region: a hit, else a load or zero-open into a new buffer of `inst`
        (None: the innermost scope), or a reuse load into the buffer `inst` holds."""
        traffic = arr.traffic
        counters = self.counters
        live = arr.live
        if live.by_id:
            buf = live.containing(region)
            if buf is not None:
                traffic.hits += 1
                counters.hits += 1
                self._log.hit(buf.id, arr.id, region, reuse)
                return Tile(buf, region)
            if arr.writable:
                holder = inst if inst is not None else self._stack[-1] if self._stack else None
                held = holder.held.get(arr.id) if reuse and holder is not None else None
                # (the buffer a reuse load replaces is stored first, so it is no hazard)
                refuse_modified_overlap(arr, region, live.overlapping(region), held, "must be read from DDR but",
                                        "stored")
        if inst is None:
            stack = self._stack
            if not stack:
                self._current_scope(arr, region)
            inst = stack[-1]
        nbytes = elements * self._word_bytes
        buf = inst.held.get(arr.id) if reuse else None
        if buf is None:
            buf = self._allocate(arr, region, nbytes, inst)
        else:
            if nbytes > buf.nbytes:
                raise ReuseError(
                    f"{arr.name}{format_region(region)} ({nbytes:,} B) does not fit the buffer it reuses "
                    f"(buffer {buf.id}, {buf.nbytes:,} B, allocated for {format_region(buf.region)}); access "
                    f"the largest tile first or drop the reuse flag")
            if buf.dirty:
                self._store(buf)
            buf.generation += 1
            buf.stale = False
            arr.live.move(buf, region)
        self._fill(buf, arr, region, elements, reuse)
        return Tile(buf, region)

    def slide(self, arr: TracedArray, key: tuple, capacity: tuple | None = None) -> Tile:
        """`arr.slide(key, capacity)`: see TracedArray.slide (rule 7 of the module docstring)."""
        region = _normalize(arr.name, arr.shape, key)
        if type(region_elements(region)) is not int:
            region = _integral_region(arr.name, region)[0]
        inst = self._current_scope(arr, region)
        on_chip = arr.scratch  # an on-chip tensor's new rows open as zeros, for the schedule to compute
        if arr.writable and not on_chip:
            raise ReuseError(f"{arr.name}{format_region(region)}: only an input or an on-chip tensor slides; "
                             f"{arr.name} is written by the schedule to DDR, so rows kept on chip could differ "
                             f"from DDR. Index it instead")
        elements = region_elements(region)
        word = self._word_bytes
        if not on_chip:  # (the blog's counter: every DDR access not flagged reuse)
            self.counters.blog_loaded_elements += elements
            arr.traffic.blog_loaded_elements += elements
        buf = inst.held.get(arr.id)
        if buf is None:  # the first slide of this scope: a new buffer, sized for the capacity region
            size = region if capacity is None else _normalize(arr.name, arr.shape, capacity)
            if region_elements(size) < elements:
                raise ReuseError(f"{arr.name}{format_region(region)} ({elements * word:,} B) does not fit the "
                                 f"capacity {format_region(size)} ({region_elements(size) * word:,} B) given for its "
                                 f"rotating buffer; give capacity= the largest region the buffer will hold")
            buf = self._allocate(arr, size, region_elements(size) * word, inst)
            arr.live.move(buf, region)
            self._fill(buf, arr, region, elements, False)
            return Tile(buf, region)
        if capacity is not None and region_elements(_normalize(arr.name, arr.shape, capacity)) * word != buf.nbytes:
            raise ReuseError(f"{arr.name}: capacity {format_region(_normalize(arr.name, arr.shape, capacity))} differs "
                             f"from the {buf.nbytes:,} B of the rotating buffer {buf.id} its first slide in scope "
                             f"{'/'.join(inst.path)} allocated; a buffer keeps its size")
        held = buf.region
        axes = [i for i, (a, b) in enumerate(zip(region, held)) if a != b]
        if len(axes) > 1:
            raise ReuseError(f"{arr.name}{format_region(region)}: a slide moves the rotating buffer along one axis, "
                             f"but it holds {format_region(held)}; index the tensor for other moves")
        if elements * word > buf.nbytes:
            raise ReuseError(f"{arr.name}{format_region(region)} ({elements * word:,} B) does not fit its rotating "
                             f"buffer (buffer {buf.id}, {buf.nbytes:,} B); give the first slide capacity= the "
                             f"largest region")
        i = axes[0] if axes else 0
        (start, stop), (held_start, held_stop) = region[i], held[i]
        kept_start, kept_stop = max(start, held_start), min(stop, held_stop)  # the rows that stay on chip
        if kept_stop <= kept_start:
            kept_start = kept_stop = start
        nbytes = (elements - elements // (stop - start) * (kept_stop - kept_start)) * word
        if self.numeric and nbytes:  # kept rows from SRAM, the others from DDR: a wrong kept row is a wrong number
            def rows(a: int, b: int, source: np.ndarray, origin: int) -> np.ndarray:
                return source[(slice(None),) * i + (slice(a - origin, b - origin),)]

            # an on-chip tensor's new rows are zeros until the schedule computes them
            outside = (np.zeros(tuple(b - a for a, b in region), self.dtype) if on_chip
                       else arr.data[_slices(region)])
            buf.data = np.concatenate([rows(start, kept_start, outside, start),
                                       rows(kept_start, kept_stop, buf.data, held_start),
                                       rows(kept_stop, stop, outside, start)], axis=i)
        elif self.numeric:  # every row it needs is held
            buf.data = buf.data[(slice(None),) * i + (slice(start - held_start, stop - held_start),)]
        buf.generation += 1
        arr.live.move(buf, region)
        if on_chip:
            nbytes = 0  # nothing comes from DDR
        if nbytes:
            counters, traffic = self.counters, arr.traffic
            counters.loaded_bytes += nbytes
            counters.loads += 1
            traffic.loaded_bytes += nbytes
            traffic.loads += 1
            buf.load_bytes = nbytes
        self._log.slide(buf.id, arr.id, region, nbytes)
        return Tile(buf, region)

    def _mark_region_written(self, buf: Buffer, region: Region) -> None:
        """`mark_written` of region of buf (an inner level's write-back into its parent buffer)."""
        self.mark_written(Tile(buf, region))

    def mark_written(self, tile: Tile) -> Buffer:
        """Record that a compute wrote `tile`: its buffer becomes modified (stored on free/reuse)."""
        buf = tile.check_live()
        arr = buf.tensor
        if not arr.writable:
            raise ReadOnlyError(f"cannot write into {arr.name}{format_region(tile.region)}: {arr.name} is an "
                                f"input; write into an output, intermediate or scratch tile")
        if not buf.dirty:
            buf.dirty = True
            if buf.loaded_from_ddr:
                buf.loaded_from_ddr = False  # count the read-modify-write once per load
                if buf.level is not None:
                    self._levels.count_rmw(buf)
                else:
                    self.counters.rmw_bytes += buf.load_bytes
                    arr.traffic.rmw_bytes += buf.load_bytes
        if self._levels is not None:
            self._levels.wrote(buf, tile.region)
        return buf

    def emit_compute(self, unit: str, op: str, out_buffer: int, in_buffers: tuple[int, ...], macs: int,
                     cycles: int, padded_macs: int) -> None:
        """Append a compute event and count its MACs and cycles."""
        counters = self.counters
        counters.macs += macs
        counters.padded_macs += padded_macs
        if unit == "tensorcore":
            counters.tensorcore_cycles += cycles
        else:
            counters.vector_cycles += cycles
        self._log.compute(unit, op, out_buffer, in_buffers, macs, cycles, padded_macs)

    # -- the end -----------------------------------------------------------------------------------------------
    def finish(self) -> Trace:
        """Check that nothing was left behind (open scopes, unstored outputs); return the frozen trace."""
        if self._stack:
            names = ", ".join("/".join(s.path) for s in self._stack)
            raise UnfinishedError(f"scopes still open at the end of the run: {names}; their buffers were never "
                                  f"freed or stored")
        if self.pending_products:
            lost = list(self.pending_products.values())
            raise UnfinishedError(f"{len(lost)} compute result(s) were never written into a tile, e.g. {lost[0]!r}; "
                                  f"write them with `out += product` or `out.assign(product)`")
        for arr in self.tensors.values():
            if arr.must_be_written:
                if arr.stored is None:
                    missing, first = arr.nbytes // self._word_bytes, (0,) * len(arr.shape)
                else:
                    missing, first = arr.stored.missing()
                if missing:
                    where = f", first at index {first}"
                    raise UnfinishedError(f"output {arr.name}: {missing} of {arr.nbytes // self._word_bytes} "
                                          f"elements were never stored{where}; the schedule does not cover the "
                                          f"whole output")
        unknown = sorted(set(self.scope_ways) - self._used_scopes)
        if unknown:
            raise ValueError(f"{self._scope_ways_arg} names scope(s) {unknown} that the schedule never entered; scopes "
                             f"it entered: {sorted(self._used_scopes)}")
        stray = sorted(set(self.layouts) - set(self.tensors))
        if stray:
            raise ValueError(f"layouts names tensor(s) {stray} that the schedule never created; its tensors: "
                             f"{sorted(self.tensors)}")
        self.finished = True
        # the returned Trace is the record of this run: nothing may be appended to it after this
        self._broken = ("this Session has finished: finish() returned its Trace, which must not change; start a "
                        "new Session to trace more")
        self._refuse_further_use(SessionFinishedError)
        return self.trace.freeze()

    @property
    def live_sram_bytes(self) -> int:
        """SRAM bytes held by live buffers right now (times buffering ways)."""
        return self._live_bytes

    access = _access_py  # (the compiled core replaces these three, see `_bind_core`)
    _enter_scope = _enter_scope_py
    _exit_scope = _exit_scope_py


_NULL_LOG = NullLog()
# the Session methods a poisoned or finished session refuses: every way to trace, count or add a tensor
_REFUSED_WHEN_BROKEN = ("access", "slide", "scratch", "_enter_scope", "_new_tensor", "mark_written", "emit_compute",
                        "finish")

_core.bind(Tile, Session, _NULL_LOG, PendingCompute)


def _bind_core(compiled: bool) -> None:
    """Route Session's hot methods to the compiled core (_core.pyx), or to their pure-Python reference (tests)."""
    use = compiled
    Session.access = _core.access if use else Session._access_py  # type: ignore[method-assign]
    Session._enter_scope = _core.enter_scope if use else Session._enter_scope_py  # type: ignore[method-assign]
    Session._exit_scope = _core.exit_scope if use else Session._exit_scope_py  # type: ignore[method-assign]
    TracedArray.__getitem__ = _core.getitem if use else TracedArray._getitem_py  # type: ignore[method-assign]
    Tile.__iadd__ = _core.tile_iadd if use else Tile._iadd_py  # type: ignore[method-assign]
    GlobalHierarchy.__init__ = _core.scope_init if use else GlobalHierarchy._init_py  # type: ignore
    GlobalHierarchy.__enter__ = _core.scope_enter if use else GlobalHierarchy._enter_py  # type: ignore
    GlobalHierarchy.__exit__ = _core.scope_exit if use else GlobalHierarchy._exit_py  # type: ignore


_bind_core(True)


