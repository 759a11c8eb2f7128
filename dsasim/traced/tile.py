"""Tiles: views of a region of an SRAM buffer, what schedules compute with (`tile += product`,
`tile.assign(product)`), and `PendingCompute`, the base of the compute results a tile accepts.

`Buffer` (an SRAM buffer) is a C class of the compiled core, which reads its fields directly."""

from __future__ import annotations

from typing import Any

import numpy as np

from dsasim.errors import RegionError, SessionStateError, StaleTileError
from dsasim.traced import _core
from dsasim.traced.regions import integral_region, normalize_region, strided_slices
from dsasim.traced.trace import format_region
from dsasim.util import region_elements

__all__ = ["Buffer", "PendingCompute", "Tile"]

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
    def tensor(self) -> _core.ArrayFields:
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
            reason = session.refusal_reason
            if reason is not None and not session.finished:  # (after finish a freed tile is just stale)
                raise SessionStateError(reason)
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
            return buf.data[strided_slices(self.region, buf.region)]
        return buf.data[tuple(slice(a - b0, b - b0) for (a, b), (b0, _) in zip(self.region, buf.region))]

    def __getitem__(self, key: Any) -> "Tile":
        """A sub-tile, indexed relative to this tile (ints, slices or Segments)."""
        self.check_live()
        if any(len(axis) == 3 for axis in self.region):
            raise RegionError(f"{self.buffer.tensor.name}{format_region(self.region)}: a strided tile is not "
                              f"indexed further; index the TracedArray with the strided box you need")
        if type(key) is not tuple:
            key = (key,)
        region = normalize_region(self.buffer.tensor.name, self.shape, key)
        if type(region_elements(region)) is not int:
            region = integral_region(self.buffer.tensor.name, region)[0]
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
