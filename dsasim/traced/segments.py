"""Half-open index ranges (`Segment`) and the tiling of a range into them (`Segments`).

A `Segment` is a plain named tuple, so it compares equal to, and can be used wherever the trace expects, a
`(start, stop)` pair. All values are element indices.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

from dsasim.util import ceil_div, is_int

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
    if not is_int(value):
        raise ValueError(f"Segments: {name} must be a Python int (element index), got {value!r} of type "
                         f"{type(value).__name__}; pass an integer, e.g. int({value!r}) for a numpy integer")
    return value


class Segments:
    """The tiles [start, start+tile), [start+tile, start+2*tile), ... covering [start, stop), last one clamped.

    clamp=False keeps the last tile full-sized past `stop` (504:528 for Segments(0, 512, 24)), as the blog's
    Segments did: the memory model clamps what it moves, but the blog's counter counted the full tile
    (`dsasim demo --blog-quirks`).
    """

    __slots__ = ("start", "stop", "tile", "clamp")

    def __init__(self, start: int, stop: int, tile: int, clamp: bool = True) -> None:
        """Tile the index range [start, stop) into segments of `tile` elements (the last may be shorter)."""
        self.start = _check_int("start", start)
        self.stop = _check_int("stop", stop)
        self.tile = _check_int("tile", tile)
        if not isinstance(clamp, bool):
            raise ValueError(f"Segments: clamp must be True or False, got {clamp!r}")
        self.clamp = clamp
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
        limit = stop if self.clamp else stop + tile  # unclamped: the last tile keeps its full size
        for s in range(self.start, stop, tile):
            e = s + tile
            # tuple.__new__ skips the named tuple's Python-level __new__: this loop runs in schedule hot paths.
            yield _new_tuple(Segment, (s, e if e < limit else limit))

    def __len__(self) -> int:
        """Number of segments: ceil((stop - start) / tile)."""
        return ceil_div(self.stop - self.start, self.tile)

    def __repr__(self) -> str:
        clamp = "" if self.clamp else ", clamp=False"
        return f"Segments(start={self.start}, stop={self.stop}, tile={self.tile}{clamp})"
