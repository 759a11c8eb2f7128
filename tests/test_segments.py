"""Segment and Segments: tiling a half-open range, the clamped last tile, validation."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dsasim.traced.segments import Segment, Segments


def test_segment_basics() -> None:
    seg = Segment(3, 7)
    assert seg.size == 4
    assert seg.as_slice() == slice(3, 7)
    assert seg == (3, 7)
    start, stop = seg
    assert (start, stop) == (3, 7)
    assert list(range(10))[seg.as_slice()] == [3, 4, 5, 6]
    assert Segment(5, 5).size == 0


def test_clamped_last_tile() -> None:
    segs = Segments(0, 10, 4)
    assert list(segs) == [(0, 4), (4, 8), (8, 10)]
    assert all(type(s) is Segment for s in segs)
    assert len(segs) == 3
    assert list(segs)[-1].size == 2


def test_exact_multiple_and_single_tile() -> None:
    assert list(Segments(0, 12, 4)) == [(0, 4), (4, 8), (8, 12)]
    assert list(Segments(2, 5, 100)) == [(2, 5)]
    assert len(Segments(2, 5, 100)) == 1
    assert list(Segments(-3, 2, 2)) == [(-3, -1), (-1, 1), (1, 2)]


def test_empty_range() -> None:
    segs = Segments(7, 7, 3)
    assert list(segs) == []
    assert len(segs) == 0


def test_reiterable_and_repr() -> None:
    segs = Segments(1, 6, 2)
    assert list(segs) == list(segs)
    assert repr(segs) == "Segments(start=1, stop=6, tile=2)"


@pytest.mark.parametrize("seed", range(20))
def test_exact_cover(seed: int) -> None:
    rng = random.Random(seed)
    start = rng.randint(-20, 20)
    stop = start + rng.randint(0, 50)
    tile = rng.randint(1, 60)
    segs = list(Segments(start, stop, tile))
    assert len(segs) == len(Segments(start, stop, tile))
    covered = [i for s in segs for i in range(s.start, s.stop)]
    assert covered == list(range(start, stop))
    assert all(0 < s.size <= tile for s in segs)
    assert all(s.size == tile for s in segs[:-1])


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 10, 0), "tile must be a positive"),
        ((0, 10, -2), "tile must be a positive"),
        ((5, 4, 1), "stop .* is smaller than start"),
        ((0, 10.0, 2), "stop must be a Python int"),
        ((0.5, 10, 2), "start must be a Python int"),
        ((0, 10, 2.0), "tile must be a Python int"),
        ((False, 10, 2), "start must be a Python int"),
        ((0, 10, True), "tile must be a Python int"),
        ((0, np.int64(10), 2), "stop must be a Python int"),
    ],
)
def test_validation(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Segments(*args)
