"""Half-open index ranges (`Segment`) and the tiling of a range into them (`Segments`).

A `Segment` is a plain named tuple, so it compares equal to, and can be used wherever the trace expects, a
`(start, stop)` pair. All values are element indices.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

_new_tuple = tuple.__new__


class Segment(NamedTuple):
    """The half-open index range [start, stop), in elements."""

    start: int
    stop: int

    @property
    def size(self) -> int:
        """Number of indices in the range (stop - start), in elements."""
        return self.stop - self.start

    def as_slice(self) -> slice:
        """The range as a `slice(start, stop)` for indexing arrays, in elements."""
        return slice(self.start, self.stop)


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"Segments: {name} must be a Python int (element index), got {value!r} of type "
                         f"{type(value).__name__}; pass an integer, e.g. int({value!r}) for a numpy integer")
    return value


class Segments:
    """The tiles [start, start+tile), [start+tile, start+2*tile), ... covering [start, stop), last one clamped."""

    __slots__ = ("start", "stop", "tile")

    def __init__(self, start: int, stop: int, tile: int) -> None:
        """Tile the index range [start, stop) into segments of `tile` elements (the last may be shorter)."""
        self.start = _check_int("start", start)
        self.stop = _check_int("stop", stop)
        self.tile = _check_int("tile", tile)
        if tile <= 0:
            raise ValueError(f"Segments: tile must be a positive number of elements, got {tile}; "
                             f"use tile >= 1 (tile = stop - start gives a single segment)")
        if stop < start:
            raise ValueError(f"Segments: stop ({stop}) is smaller than start ({start}); the range is half-open "
                             f"[start, stop), pass stop >= start (stop == start gives no segments)")

    def __iter__(self) -> Iterator[Segment]:
        """Yield the segments in increasing order, in elements."""
        stop = self.stop
        tile = self.tile
        for s in range(self.start, stop, tile):
            e = s + tile
            # tuple.__new__ skips the named tuple's Python-level __new__: this loop runs in schedule hot paths.
            yield _new_tuple(Segment, (s, e if e < stop else stop))

    def __len__(self) -> int:
        """Number of segments: ceil((stop - start) / tile)."""
        return -(-(self.stop - self.start) // self.tile)

    def __repr__(self) -> str:
        return f"Segments(start={self.start}, stop={self.stop}, tile={self.tile})"
