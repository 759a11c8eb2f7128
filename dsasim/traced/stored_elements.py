"""The set of elements of a writable tensor ever stored to DDR (`StoredElements`): what decides whether a region
opens as zeros or is loaded (rule 5 of `dsasim.traced.session`), and what `Session.finish` checks an output for."""

from __future__ import annotations

import numpy as np

from dsasim.traced.regions import region_slices
from dsasim.traced.trace import Region
from dsasim.util import ceil_div, region_contains, shape_elements

__all__ = ["StoredElements"]

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


class StoredElements:
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
            self.dense[region_slices(region)] = True
            return
        outer, inner = [], []
        for (a, b), blk, extent in zip(region, self.block, self.shape):
            outer.append((a // blk, ceil_div(b, blk)))
            # block k = [k*blk, min((k+1)*blk, extent)) is covered iff a <= k*blk and its end <= b
            f1 = ceil_div(b, blk) if b == extent else b // blk
            inner.append((ceil_div(a, blk), f1))
        grid, masks = self.grid, self.masks
        if all(f0 < f1 for f0, f1 in inner):
            grid[region_slices(tuple(inner))] = _FULL
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
            return b"\x01" in self.dense[region_slices(region)].tobytes()
        outer = tuple((a // blk, ceil_div(b, blk)) for (a, b), blk in zip(region, self.block))
        states = self.grid[region_slices(outer)]
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
