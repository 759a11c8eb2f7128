"""Regions of a tensor: turning a schedule's index (ints, slices, Segments, (start, stop) pairs, a strided slice)
into a region, a tuple of (start, stop) or (start, stop, step) per dimension in elements, and reading regions.

Every error names the tensor and the dimension and says what to pass instead (a RegionError)."""

from __future__ import annotations

import numbers
import operator
from itertools import starmap
from typing import Any

import numpy as np

from dsasim.errors import RegionError
from dsasim.traced.segments import Segment
from dsasim.traced.trace import Region
from dsasim.util import region_elements

__all__ = ["as_key", "normalize_region", "strided_slices", "strided_within", "is_region_key", "requested_elements",
           "integral_region", "region_slices"]


def as_key(key: Any) -> tuple:
    """An index as the tuple `normalize_region` takes: a list (the blog's Infer returns one) or a tuple as it is."""
    kind = type(key)
    return key if kind is tuple else tuple(key) if kind is list else (key,)


def normalize_region(name: str, shape: tuple[int, ...], key: tuple, strided: bool = False) -> Region:
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
    """One dimension of `normalize_region`: (start, stop) clipped to `extent` (with `strided`, (start, stop, step) for
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


def strided_slices(region: Region, held: Region) -> tuple[slice, ...]:
    """The slices of a buffer's data (holding `held`, either region possibly strided) that give `region`'s
    elements (`strided_within` holds)."""
    out = []
    for axis, box in zip(region, held):
        held_step = box[2] if len(box) == 3 else 1
        step = axis[2] if len(axis) == 3 else 1
        out.append(slice((axis[0] - box[0]) // held_step, (axis[1] - 1 - box[0]) // held_step + 1,
                         max(step // held_step, 1)))
    return tuple(out)


def strided_within(region: Region, held: Region) -> bool:
    """Whether every index of `region` is one `held` holds (either possibly strided), dimension by dimension."""
    for axis, box in zip(region, held):
        held_step = box[2] if len(box) == 3 else 1
        step = axis[2] if len(axis) == 3 else 1
        if axis[0] < box[0] or axis[1] > box[1] or (axis[0] - box[0]) % held_step:
            return False
        if step % held_step and axis[1] - axis[0] > 1:  # one index has no step: only its offset counts
            return False
    return True


def is_region_key(index: Any) -> bool:
    """True for a whole region given as one object: a list, or a plain tuple holding a non-int index.

    A plain tuple of ints stays a (start, stop) pair for one dimension, as before."""
    kind = type(index)
    if kind is list:
        return True
    return kind is tuple and any(type(k) is not int for k in index)


def requested_elements(shape: tuple[int, ...], key: tuple) -> int:
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


def integral_region(name: str, region: Region) -> tuple[Region, int]:
    """A region whose bounds are not all Python ints (e.g. a Segment of floats): ints, or RegionError."""
    fixed = tuple((_index(name, dim, a, "start"), _index(name, dim, b, "stop")) for dim, (a, b) in enumerate(region))
    return fixed, region_elements(fixed)


def region_slices(region: Region) -> tuple[slice, ...]:
    """The slices selecting a dense region (elements) of an array that holds the whole tensor."""
    return tuple(starmap(slice, region))
