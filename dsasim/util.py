"""Small helpers shared across dsasim, each written once: integer checks, reading whole numbers typed by a user
(ASCII digits only), ceiling division, element counts, region tests, sizes for people (`format_bytes`) and
pausing the cyclic garbage collector.

A region is a tuple of half-open (start, stop) pairs, one per dimension, in elements (see `dsasim.traced.trace`).
Only the standard library and numpy are imported here, so every module can use these helpers.
"""

from __future__ import annotations

import gc
import math
import os
import re
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

Region = tuple[tuple[int, int], ...]

_ASCII_WHOLE = re.compile(r"[0-9]+")
MAX_WHOLE_DIGITS = 30  # longer numbers are refused before int() (its own limit, 4,300 digits, has an odd message)


def is_ascii_whole(text: str) -> bool:
    """True when `text` is a whole number written in ASCII digits 0-9 only: `str.isdigit` and `\\d` also accept
    '²' (which int() rejects) and '٣' (which int() reads as 3), neither of which a user means as a number."""
    return _ASCII_WHOLE.fullmatch(text) is not None


def parse_whole(text: str, what: str) -> int:
    """`text` (ASCII digits, spaces around allowed) as a non-negative int; ValueError naming `what` otherwise."""
    body = text.strip()
    if not is_ascii_whole(body):
        raise ValueError(f"{what} {text!r} is not a whole number (write it in digits 0-9, e.g. 64)")
    if len(body) > MAX_WHOLE_DIGITS:
        raise ValueError(f"{what} {text!r} is too large ({len(body)} digits; at most {MAX_WHOLE_DIGITS})")
    return int(body)


def ceil_div(a: int, b: int) -> int:
    """ceil(a / b) for integers (b > 0), exact for any size: -(-a // b)."""
    return -(-a // b)


def is_int(value: object, numpy: bool = False) -> bool:
    """True for a Python int that is not a bool; numpy=True also accepts numpy integers (not numpy bools)."""
    if numpy:
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    return isinstance(value, int) and not isinstance(value, bool)


def check_int(what: str, value: object, minimum: int) -> int:
    """`value` if it is a Python int >= minimum, else ValueError "{what} must be an integer >= {minimum}, got ..."."""
    if not is_int(value) or value < minimum:  # type: ignore[operator]
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return value  # type: ignore[return-value]


def int_pair(value: object, numpy: bool = False) -> tuple[int, int] | None:
    """An int or an (h, w) pair of ints as a pair of Python ints; None when `value` is neither (the caller says
    what it expected). numpy=True also accepts numpy integers. A bare int v gives (v, v)."""
    if is_int(value, numpy):
        return int(value), int(value)  # type: ignore[call-overload]
    if isinstance(value, (str, bytes)):
        return None
    try:
        a, b = value  # type: ignore[misc]
    except (TypeError, ValueError):
        return None
    if is_int(a, numpy) and is_int(b, numpy):
        return int(a), int(b)
    return None


def shape_elements(shape: Iterable[int]) -> int:
    """Number of elements of a tensor of this shape (the product of its dimensions; 1 for a 0-d shape)."""
    return math.prod(shape)


def region_elements(region: Region) -> int:
    """Number of elements in a region (a strided dimension, (start, stop, step), counts the indices it holds)."""
    n = 1
    for axis in region:
        n *= axis[1] - axis[0] if len(axis) == 2 else len(range(*axis))
    return n


def region_contains(outer: Region, inner: Region) -> bool:
    """True when every element of `inner` lies in `outer` (regions of the same tensor)."""
    for (a, b), (c, d) in zip(outer, inner):
        if c < a or d > b:
            return False
    return True


def regions_overlap(x: Region, y: Region) -> bool:
    """True when two regions of the same tensor share at least one element (of a strided region, its bounding
    box: conservative, as the timing model's DDR dependencies are)."""
    for p, q in zip(x, y):
        if q[1] <= p[0] or q[0] >= p[1]:
            return False
    return True


def whole_region(shape: Sequence[int]) -> Region:
    """The region covering a whole tensor of this shape."""
    return tuple((0, d) for d in shape)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (restored after, even on an exception).

    Traces and timing graphs are millions of small acyclic tuples: cyclic GC passes over them only cost time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _hugepage_switch() -> Callable[[bool], bool] | None:
    """numpy's switch of its huge-page advice (`_set_madvise_hugepage`: sets it, returns the previous setting), or
    None where this numpy has none or the user chose with NUMPY_MADVISE_HUGEPAGE (the user's choice wins)."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return None
    try:
        from numpy._core.multiarray import _set_madvise_hugepage  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x, or a numpy without the switch
        try:
            from numpy.core.multiarray import _set_madvise_hugepage  # type: ignore[no-redef]
        except ImportError:
            return None
    return _set_madvise_hugepage


def numpy_hugepages_off() -> bool:
    """Stop numpy advising transparent huge pages for its new arrays, unless NUMPY_MADVISE_HUGEPAGE is set (the
    user's choice wins); True when this call turned it off.

    On a VM whose kernel compacts memory for every huge-page fault (THP defrag "madvise"), numpy's default advice
    makes the first touch of a large array cost ~2 s per GiB instead of ~0.35 s (bench/bench_first_touch.py), and a
    timed demo1 touches ~2 GiB. The command line calls this once per process; a library user may call it too.
    Tensor data is the exception (`numpy_hugepages_for_tensor_data`)."""
    switch = _hugepage_switch()
    if switch is None:
        return False
    switch(False)
    return True


@contextmanager
def numpy_hugepages_for_tensor_data() -> Iterator[None]:
    """numpy's huge-page advice on for the arrays made in the block (restored after), unless the user chose with
    NUMPY_MADVISE_HUGEPAGE.

    A schedule's tensor data lives for the whole run and its tiles are strided views: a 1x1 conv's image column
    reads one float from each of 2,048 pages of 4 KiB, so without huge pages demo1's dots spend a third of their
    time on TLB misses (bench/bench_first_touch.py --tile-dot: ~10 us per pixel against ~7.5 us). The first touch
    of these few large arrays costs little more with the advice; it is the timing model's gigabytes of fresh,
    short-lived columns that `numpy_hugepages_off` is for."""
    switch = _hugepage_switch()
    if switch is None:
        yield
        return
    was = switch(True)
    try:
        yield
    finally:
        switch(was)


_BINARY_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def format_bytes(n_bytes: int) -> str:
    """A size in bytes for people: the largest binary unit it reaches, to 3 significant digits (the whole part is
    never rounded), trailing zeros dropped: 1000 -> '1000 B', 141312 -> '138 KiB', 1572864 -> '1.5 MiB',
    6498304 -> '6.2 MiB', 8388608 -> '8 MiB'. Exact figures belong in JSON and byte columns ('{n:,} B')."""
    if not is_int(n_bytes, numpy=True):
        raise TypeError(f"format_bytes takes an integer number of bytes, got {n_bytes!r}")
    n = int(n_bytes)
    for k, (unit, size) in enumerate(_BINARY_UNITS):
        if abs(n) >= size:
            text = _three_digits(n / size)
            if k and abs(float(text)) >= 1024:  # 1023.9 KiB rounds to the next unit: '1 MiB', not '1024 KiB'
                unit, size = _BINARY_UNITS[k - 1]
                text = _three_digits(n / size)
            return f"{text} {unit}"
    return f"{n} B"


def _three_digits(value: float) -> str:
    """`value` to 3 significant digits, its whole part kept: 6.197 -> '6.2', 1023.6 -> '1024', 1.5 -> '1.5'."""
    decimals = max(0, 3 - len(str(int(abs(value)))))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
