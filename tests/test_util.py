"""dsasim.util: the small helpers every module shares (expected values worked out by hand)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from dsasim.util import (ceil_div, check_int, gc_paused, int_pair, is_int, region_contains, region_elements,
                         regions_overlap, shape_elements, whole_region)


def test_ceil_div_rounds_up_exactly_even_past_float_precision():
    assert [ceil_div(a, 4) for a in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    assert ceil_div(-5, 4) == -1                     # ceil(-1.25)
    assert ceil_div(10 ** 30 + 1, 10 ** 15) == 10 ** 15 + 1   # a float division would round this to 10**15


def test_is_int_rejects_bools_and_floats_and_takes_numpy_ints_only_when_asked():
    assert is_int(3) and is_int(-2) and not is_int(True) and not is_int(3.0) and not is_int("3")
    assert not is_int(np.int64(3)) and is_int(np.int64(3), numpy=True)
    assert not is_int(np.bool_(True), numpy=True) and not is_int(np.float32(1), numpy=True)


def test_check_int_names_what_and_the_minimum():
    assert check_int("tile", 5, 1) == 5
    for bad in (0, 2.0, True, None):
        with pytest.raises(ValueError, match=r"^tile must be an integer >= 1, got "):
            check_int("tile", bad, 1)


def test_int_pair_of_an_int_or_a_pair():
    assert int_pair(3) == (3, 3) and int_pair((2, 5)) == (2, 5) and int_pair([1, 0]) == (1, 0)
    assert int_pair(np.int32(2)) is None and int_pair(np.int32(2), numpy=True) == (2, 2)
    pair = int_pair((np.int64(2), 3), numpy=True)
    assert pair == (2, 3) and all(type(v) is int for v in pair)
    for bad in ((1, 2, 3), (1,), 1.0, (1.0, 2), "ab", b"ab", None, (True, 1)):
        assert int_pair(bad, numpy=True) is None, bad


def test_element_counts_and_region_tests():
    assert shape_elements((2, 3, 4)) == 24 and shape_elements(()) == 1
    assert region_elements(((0, 2), (3, 6))) == 6 and region_elements(()) == 1
    assert whole_region((2, 3)) == ((0, 2), (0, 3))
    box = ((0, 4), (2, 6))
    assert region_contains(box, ((1, 4), (2, 3))) and not region_contains(box, ((1, 5), (2, 3)))
    assert regions_overlap(box, ((3, 9), (5, 7)))                 # share element (3, 5)
    assert not regions_overlap(box, ((4, 9), (0, 9)))             # touch at row 4 only: half-open, no overlap
    assert not regions_overlap(box, ((0, 4), (6, 8)))


def test_gc_paused_restores_the_previous_state_even_on_an_exception():
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with gc_paused():
            assert not gc.isenabled()
            raise RuntimeError("inside")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()                                 # it was off before: it stays off
    finally:
        gc.enable()


def test_numpy_hugepages_off_turns_the_advice_off_unless_the_user_chose(monkeypatch):
    from numpy._core.multiarray import _set_madvise_hugepage
    from dsasim.util import numpy_hugepages_off
    before = _set_madvise_hugepage(True)  # (returns the previous setting)
    try:
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
        assert numpy_hugepages_off() is False and _set_madvise_hugepage(True) is True  # the user's choice stands
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE")
        assert numpy_hugepages_off() is True and _set_madvise_hugepage(True) is False  # it was turned off
    finally:
        _set_madvise_hugepage(before)


def test_tensor_data_is_made_with_the_huge_page_advice_on_and_the_setting_comes_back(monkeypatch):
    from numpy._core.multiarray import _set_madvise_hugepage
    from dsasim import Session, preset
    from dsasim.util import numpy_hugepages_for_tensor_data
    seen = []
    real_zeros = np.zeros

    def zeros_seeing_the_advice(*args, **kwargs):  # the advice in force when the tensor's array is made
        setting = _set_madvise_hugepage(False)
        _set_madvise_hugepage(setting)
        array = real_zeros(*args, **kwargs)
        seen.append((array.dtype, setting))
        return array

    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    before = _set_madvise_hugepage(False)
    try:
        with numpy_hugepages_for_tensor_data():
            assert _set_madvise_hugepage(True) is True                 # on inside
        assert _set_madvise_hugepage(False) is False                   # off again after
        with pytest.raises(RuntimeError), numpy_hugepages_for_tensor_data():
            raise RuntimeError                                         # restored on an exception too
        assert _set_madvise_hugepage(False) is False
        monkeypatch.setattr(np, "zeros", zeros_seeing_the_advice)     # a Session's output data is made with it on
        Session(preset("blog"), numeric=True).output("y", (1, 4, 2, 2))
        assert (np.dtype(np.float32), True) in seen and _set_madvise_hugepage(False) is False
        assert (np.dtype(np.float32), False) not in seen
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "0")               # the user's choice stands
        with numpy_hugepages_for_tensor_data():
            assert _set_madvise_hugepage(False) is False
    finally:
        _set_madvise_hugepage(before)


def test_the_command_line_turns_the_huge_page_advice_off(monkeypatch):
    from numpy._core.multiarray import _set_madvise_hugepage
    from dsasim.cli import main
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    before = _set_madvise_hugepage(True)
    try:
        assert main(["search", "resnet50.res2a_branch2a", "--sram", "256KiB"]) == 0
        assert _set_madvise_hugepage(True) is False
    finally:
        _set_madvise_hugepage(before)
